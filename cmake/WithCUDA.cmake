# The cuda backend (src/cuda: cuDNN 9's RNN plus rnnx's own kernels on cuBLAS), as
# RNNX_WITH_CUDA says: AUTO builds it when nvcc, the CUDA toolkit (with cuBLAS) and cuDNN 9 are found, ON requires them, OFF
# leaves it out. The sanitizer and fuzzing builds leave it out (nvcc takes none of their
# flags, and nothing there runs on a GPU).
#
# cuDNN is looked for in CUDNN_ROOT (variable or environment), in the CUDA toolkit's folder,
# and in the site-packages folder of the nvidia-cudnn wheel (nvidia/cudnn/{include,lib}) of
# the Python found first on PATH, whose lib/ holds only libcudnn.so.9 (no unversioned name).
# Code is built for CMAKE_CUDA_ARCHITECTURES, by default sm_90 (H100/H200) machine code plus
# compute_90 PTX that newer GPUs compile when they load it.
#
# Result: RNNX_HAVE_CUDA (TRUE/FALSE); when TRUE the CUDA language enabled,
# RNNX_CUDNN_INCLUDE_DIR, RNNX_CUDNN_LIBRARY, RNNX_CUDNN_VERSION; RNNX_CUDA_SUMMARY (one line
# for the configure summary).
include(${CMAKE_CURRENT_LIST_DIR}/TriState.cmake)
rnnx_tristate_option(RNNX_WITH_CUDA "Build the cuda backend (CUDA toolkit and cuDNN 9)")

function(rnnx_find_cudnn)
  set(hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_program(rnnx_python NAMES python3 python)
  if(rnnx_python)
    execute_process(COMMAND ${rnnx_python} -c
      "import os, nvidia.cudnn as m; print(os.path.dirname(m.__file__) if m.__file__ else list(m.__path__)[0])"
      OUTPUT_VARIABLE wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0 AND wheel)
      list(APPEND hints ${wheel})
    endif()
  endif()
  # cudnn.h names the folder (a wheel may ship cudnn_version.h elsewhere or not at all: the
  # version is then read from the library when it loads, and configure goes on).
  find_path(RNNX_CUDNN_INCLUDE_DIR NAMES cudnn.h cudnn_version.h HINTS ${hints}
            ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  # The library beside the headers first (the wheel's, say, whose headers were found), each
  # folder searched for both names before the next (NAMES_PER_DIR): else the toolkit's
  # libcudnn.so could pair with the wheel's headers of another version.
  set(lib_hints ${hints})
  if(RNNX_CUDNN_INCLUDE_DIR)
    get_filename_component(root ${RNNX_CUDNN_INCLUDE_DIR} DIRECTORY)
    list(PREPEND lib_hints ${root})
  endif()
  find_library(RNNX_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 NAMES_PER_DIR HINTS ${lib_hints}
               PATH_SUFFIXES lib lib64 lib/x64)
  set(version "")
  set(version_h "")
  foreach(name cudnn_version.h cudnn_version_v9.h)  # the wheels ship both, or one
    if(RNNX_CUDNN_INCLUDE_DIR AND version_h STREQUAL "" AND EXISTS ${RNNX_CUDNN_INCLUDE_DIR}/${name})
      set(version_h ${RNNX_CUDNN_INCLUDE_DIR}/${name})
    endif()
  endforeach()
  if(version_h)
    file(STRINGS ${version_h} lines REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    foreach(part MAJOR MINOR PATCHLEVEL)
      string(REGEX MATCH "CUDNN_${part} +([0-9]+)" m "${lines}")
      list(APPEND version ${CMAKE_MATCH_1})
    endforeach()
    list(JOIN version "." version)
  endif()
  set(RNNX_CUDNN_VERSION "${version}" PARENT_SCOPE)
endfunction()

set(RNNX_HAVE_CUDA FALSE)
if(RNNX_WITH_CUDA STREQUAL "OFF")
  set(RNNX_CUDA_SUMMARY "off (RNNX_WITH_CUDA=OFF)")
elseif(RNNX_WITH_SANITIZERS OR RNNX_WITH_TSAN OR RNNX_BUILD_FUZZERS)
  if(RNNX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RNNX_WITH_CUDA=ON cannot be combined with the sanitizer or fuzzing builds")
  endif()
  set(RNNX_CUDA_SUMMARY "off (sanitizer or fuzzing build)")
else()
  include(CheckLanguage)
  check_language(CUDA)
  set(why "")
  if(NOT CMAKE_CUDA_COMPILER)
    set(why "no CUDA compiler (nvcc on PATH or CMAKE_CUDA_COMPILER)")
  else()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      set(why "CUDA toolkit not found (CUDAToolkit_ROOT)")
    elseif(NOT TARGET CUDA::cublas)
      set(why "the CUDA toolkit has no cuBLAS (the own kernels' GEMMs)")
    else()
      rnnx_find_cudnn()
      if(NOT RNNX_CUDNN_INCLUDE_DIR OR NOT RNNX_CUDNN_LIBRARY)
        set(why "cuDNN not found (CUDNN_ROOT names its folder)")
      elseif(NOT RNNX_CUDNN_VERSION STREQUAL "" AND NOT RNNX_CUDNN_VERSION MATCHES "^9\\.")
        set(why "cuDNN ${RNNX_CUDNN_VERSION} found, rnnx needs cuDNN 9")
      elseif(RNNX_CUDNN_VERSION STREQUAL "")
        # The backend checks cudnnGetVersion() when it first makes a plan.
        set(RNNX_CUDNN_VERSION "(no cudnn_version.h: the version is checked when it loads)")
      endif()
    endif()
  endif()
  if(why STREQUAL "")
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no C++20 flag for nvcc; the kernels need 17
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(RNNX_HAVE_CUDA TRUE)
    list(JOIN CMAKE_CUDA_ARCHITECTURES "," archs)
    string(CONCAT RNNX_CUDA_SUMMARY "CUDA ${CUDAToolkit_VERSION} for ${archs}, cuBLAS, cuDNN "
                  "${RNNX_CUDNN_VERSION} (${RNNX_CUDNN_LIBRARY})")
  elseif(RNNX_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RNNX_WITH_CUDA=ON: ${why}")
  else()
    set(RNNX_CUDA_SUMMARY "not built: ${why} (RNNX_WITH_CUDA=AUTO)")
  endif()
endif()
