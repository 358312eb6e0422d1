# librnnx links oneDNN, a BLAS and cuDNN exactly when CMake chose them (RNNX_WITH_ONEDNN,
# RNNX_WITH_BLAS, RNNX_WITH_CUDA): a build configured without them must not need them at run
# time (the GPU machine has neither oneDNN nor a BLAS; a CPU machine has no cuDNN).
#   cmake -DOBJDUMP=<objdump> -DLIB=<librnnx.so> -DONEDNN=<TRUE|FALSE> -DBLAS=<TRUE|FALSE>
#         -DCUDA=<TRUE|FALSE> -P check_needed_libraries.cmake
set(NOTHING FALSE)  # the libraries no build may need at start-up
execute_process(COMMAND ${OBJDUMP} -p ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -p ${LIB} failed")
endif()
string(REGEX MATCHALL "NEEDED +[^\n]+" needed "${out}")
list(TRANSFORM needed REPLACE "NEEDED +" "")
message(STATUS "${LIB} needs ${needed}")
set(problems "")
# (A BLAS is any lib*blas but cuBLAS; the cuda backend loads cuBLAS at run time, never at
# start-up: see src/cuda/cublas_loader.hpp.)
foreach(check "ONEDNN;dnnl" "BLAS;lib(open|flexi|)blas" "CUDA;cudnn" "NOTHING;cublas")
  list(GET check 0 option)
  list(GET check 1 pattern)
  string(REGEX MATCH "[^;]*${pattern}[^;]*" found "${needed}")
  if(${option} AND NOT found)
    string(APPEND problems " configured with ${option} but needs no ${pattern} library;")
  elseif(NOT ${option} AND found)
    string(APPEND problems " configured without ${option} but needs ${found};")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "${LIB}:${problems}")
endif()
