# A BLAS for the cpu backend's float64 GEMMs (cblas_dgemm), as RNNX_WITH_BLAS says: AUTO uses
# one when found, ON requires it, OFF leaves it out (float64 then runs rnnx's own `plain`
# loops, docs/cpu.md). Found the CMake way: FindBLAS (BLA_VENDOR, CMAKE_PREFIX_PATH and the
# other find_package hints choose which), plus its cblas.h, and a test that cblas_dgemm links.
#
# Preferred where it exists and BLA_VENDOR is not set: Debian's OpenMP build of OpenBLAS
# (libopenblas-openmp-dev, in RNNX_OPENBLAS_OPENMP_DIR), so that rnnx runs one threading
# runtime (OpenBLAS's pthreads beside OpenMP fight on small machines). Debian selects the
# BLAS variant by alternatives (/usr/lib/<arch>/libopenblas.so.0 may be any build), so the
# library is found in that folder and kept with an rpath.
#
# Result: RNNX_HAVE_BLAS (TRUE/FALSE); when TRUE RNNX_BLAS_LIBRARIES, RNNX_BLAS_INCLUDE_DIR,
# RNNX_BLAS_RPATH (the library's folders outside the linker's default ones) and
# RNNX_BLAS_DGEMM_NAME (the engine's name in impl_name(): openblas-dgemm, or blas-dgemm for
# another BLAS); RNNX_BLAS_SUMMARY (one line for the configure summary).
include(${CMAKE_CURRENT_LIST_DIR}/TriState.cmake)
include(CheckCXXSourceCompiles)
rnnx_tristate_option(RNNX_WITH_BLAS "Use a BLAS (cblas_dgemm) for the cpu backend's float64 GEMMs")
set(RNNX_OPENBLAS_OPENMP_DIR "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp" CACHE PATH
    "Folder of the OpenMP build of OpenBLAS, preferred when BLA_VENDOR is not set")

# Sets RNNX_HAVE_BLAS and the results above in the caller's scope; a function, so that the
# hints given to FindBLAS (BLA_VENDOR, CMAKE_LIBRARY_PATH) stay here.
function(rnnx_find_blas)
  set(RNNX_HAVE_BLAS FALSE PARENT_SCOPE)
  if(RNNX_WITH_BLAS STREQUAL "OFF")
    set(RNNX_BLAS_SUMMARY "off (RNNX_WITH_BLAS=OFF)" PARENT_SCOPE)
    return()
  endif()
  set(openmp_build FALSE)
  if(NOT BLA_VENDOR AND "$ENV{BLA_VENDOR}" STREQUAL "" AND
     EXISTS "${RNNX_OPENBLAS_OPENMP_DIR}/libopenblas.so")
    set(openmp_build TRUE)
    set(BLA_VENDOR OpenBLAS)
    list(PREPEND CMAKE_LIBRARY_PATH "${RNNX_OPENBLAS_OPENMP_DIR}")
  endif()
  find_package(BLAS QUIET)
  set(why "")
  if(NOT BLAS_FOUND)
    set(why "no BLAS found (FindBLAS, BLA_VENDOR = \"${BLA_VENDOR}\"; Debian: libopenblas-openmp-dev)")
  else()
    # The header of the OpenMP build beside its library, else wherever the prefixes have one.
    get_filename_component(arch_include "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}" ABSOLUTE)
    if(openmp_build)
      find_path(RNNX_BLAS_INCLUDE_DIR cblas.h PATHS "${arch_include}/openblas-openmp"
                NO_DEFAULT_PATH)
    endif()
    find_path(RNNX_BLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
    if(NOT RNNX_BLAS_INCLUDE_DIR)
      set(why "BLAS found (${BLAS_LIBRARIES}) but no cblas.h (set RNNX_BLAS_INCLUDE_DIR)")
    else()
      # Keyed by what it tests, so that another BLAS is tested afresh.
      string(MD5 key "${BLAS_LIBRARIES};${BLAS_LINKER_FLAGS};${RNNX_BLAS_INCLUDE_DIR}")
      set(CMAKE_REQUIRED_INCLUDES ${RNNX_BLAS_INCLUDE_DIR})
      set(CMAKE_REQUIRED_LIBRARIES ${BLAS_LINKER_FLAGS} ${BLAS_LIBRARIES})
      set(CMAKE_REQUIRED_QUIET ON)
      check_cxx_source_compiles([=[
#include <cblas.h>
int main() {
  double a = 2, b = 3, c = 0;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, 1, 1, 1.0, &a, 1, &b, 1, 0.0, &c, 1);
  return c == 6 ? 0 : 1;
}]=] RNNX_CBLAS_DGEMM_LINKS_${key})
      if(NOT RNNX_CBLAS_DGEMM_LINKS_${key})
        set(why "cblas_dgemm does not compile and link with ${RNNX_BLAS_INCLUDE_DIR}/cblas.h and ${BLAS_LIBRARIES}")
      endif()
    endif()
  endif()
  if(why)
    if(RNNX_WITH_BLAS STREQUAL "ON")
      message(FATAL_ERROR "RNNX_WITH_BLAS=ON: ${why}")
    endif()
    set(RNNX_BLAS_SUMMARY "not found (RNNX_WITH_BLAS=AUTO): ${why}" PARENT_SCOPE)
    return()
  endif()

  set(rpath "")
  foreach(lib IN LISTS BLAS_LIBRARIES)
    if(IS_ABSOLUTE "${lib}")
      get_filename_component(dir "${lib}" DIRECTORY)
      if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND
         NOT dir IN_LIST CMAKE_PLATFORM_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND rpath "${dir}")
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES rpath)
  set(name blas-dgemm)
  if(BLAS_LIBRARIES MATCHES "openblas")
    set(name openblas-dgemm)
  endif()
  set(RNNX_HAVE_BLAS TRUE PARENT_SCOPE)
  set(RNNX_BLAS_LIBRARIES ${BLAS_LINKER_FLAGS} ${BLAS_LIBRARIES} PARENT_SCOPE)
  set(RNNX_BLAS_INCLUDE_DIR "${RNNX_BLAS_INCLUDE_DIR}" PARENT_SCOPE)
  set(RNNX_BLAS_RPATH "${rpath}" PARENT_SCOPE)
  set(RNNX_BLAS_DGEMM_NAME ${name} PARENT_SCOPE)
  set(RNNX_BLAS_SUMMARY "${BLAS_LIBRARIES} with ${RNNX_BLAS_INCLUDE_DIR}/cblas.h" PARENT_SCOPE)
endfunction()
rnnx_find_blas()
