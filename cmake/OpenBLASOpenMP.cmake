# The OpenMP build of OpenBLAS (Debian's libopenblas-openmp-dev), used for float64 GEMMs.
# The OpenMP build is required so that rnnx runs one threading runtime: two (OpenMP plus
# OpenBLAS's pthreads) fight on small machines. Debian selects the BLAS variant by
# alternatives, so rnnx links the OpenMP variant by path and keeps it with an rpath.
set(RNNX_OPENBLAS_DIR "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp" CACHE PATH
    "Folder of the OpenMP build of OpenBLAS")
find_library(RNNX_OPENBLAS_LIB NAMES openblas PATHS ${RNNX_OPENBLAS_DIR} NO_DEFAULT_PATH)
find_path(RNNX_OPENBLAS_INCLUDE cblas.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
          NO_DEFAULT_PATH)
if(NOT RNNX_OPENBLAS_LIB OR NOT RNNX_OPENBLAS_INCLUDE)
  message(FATAL_ERROR "OpenMP OpenBLAS not found in ${RNNX_OPENBLAS_DIR} (apt-get install libopenblas-openmp-dev)")
endif()
