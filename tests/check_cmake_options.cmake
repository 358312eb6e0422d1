# Configures rnnx (library only) with its dependency and build options set wrong or
# unsatisfiable and checks what CMake says: a value other than AUTO, ON or OFF is refused naming
# the option and the value; ON without the dependency fails naming it; AUTO without it
# configures and the summary says what runs instead (docs/cpu.md, "Building without oneDNN or
# BLAS"; RNNX_BUILD_PYTHON the same way; the command without CLI11 fails configuring).
#   cmake -DSOURCE=<rnnx> -DWORK=<scratch folder> -DCXX=<compiler> [-DTOOLCHAIN=<file>]
#         -P check_cmake_options.cmake
# TOOLCHAIN: a cross build's CMAKE_TOOLCHAIN_FILE, with which every configure here runs.
if(NOT SOURCE OR NOT WORK)
  message(FATAL_ERROR "check_cmake_options.cmake: give -DSOURCE=... and -DWORK=...")
endif()
set(failures "")

# configure(NAME SUCCEED|FAIL PATTERN CMAKE_ARGS...): PATTERN is a regular expression that
# CMake's output must match.
function(configure name outcome pattern)
  set(dir "${WORK}/${name}")
  file(REMOVE_RECURSE "${dir}")
  set(toolchain "")
  if(TOOLCHAIN)
    set(toolchain -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN})
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${dir} -DCMAKE_CXX_COMPILER=${CXX} ${toolchain}
            -DRNNX_BUILD_TESTS=OFF -DRNNX_BUILD_TOOLS=OFF -DRNNX_BUILD_EXAMPLES=OFF
            -DRNNX_BUILD_BENCH=OFF -DRNNX_BUILD_PYTHON=OFF ${ARGN}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(problem "")
  if(outcome STREQUAL "SUCCEED" AND NOT status EQUAL 0)
    set(problem "configuring failed")
  elseif(outcome STREQUAL "FAIL" AND status EQUAL 0)
    set(problem "configuring succeeded")
  endif()
  # CMake wraps long messages: compare with the line breaks and indents gone.
  string(REGEX REPLACE "\n *" " " text "${out}${err}")
  if(NOT text MATCHES "${pattern}")
    string(APPEND problem " (output does not match \"${pattern}\")")
  endif()
  if(problem)
    set(failures "${failures}\n${name}: ${problem}:\n${out}${err}" PARENT_SCOPE)
  else()
    message(STATUS "${name}: ${outcome} as expected")
  endif()
  file(REMOVE_RECURSE "${dir}")
endfunction()

configure(onednn_value_unknown FAIL "RNNX_WITH_ONEDNN \\(= \"maybe\"\\) must be AUTO, ON or OFF"
  -DRNNX_WITH_ONEDNN=maybe)
configure(blas_value_unknown FAIL "RNNX_WITH_BLAS \\(= \"2\"\\) must be AUTO, ON or OFF"
  -DRNNX_WITH_BLAS=2)
configure(onednn_required_missing FAIL "RNNX_WITH_ONEDNN=ON: oneDNN not found"
  -DRNNX_WITH_ONEDNN=ON -DCMAKE_DISABLE_FIND_PACKAGE_oneDNN=ON)
configure(blas_required_missing FAIL "RNNX_WITH_BLAS=ON: no BLAS found"
  -DRNNX_WITH_BLAS=ON -DBLA_VENDOR=NoSuchVendor)
configure(both_auto_missing SUCCEED
  "rnnx: oneDNN  not found.*rnnx: BLAS    not found.*float32 packed \\((avx512, avx2 or scalar kernels, the ISA level's|scalar kernels, the only level built for aarch64)\\); float64 plain"
  -DRNNX_WITH_ONEDNN=AUTO -DCMAKE_DISABLE_FIND_PACKAGE_oneDNN=ON -DRNNX_WITH_BLAS=AUTO
  -DBLA_VENDOR=NoSuchVendor)
configure(both_off SUCCEED "rnnx: oneDNN  off \\(RNNX_WITH_ONEDNN=OFF\\).*rnnx: BLAS    off"
  -DRNNX_WITH_ONEDNN=OFF -DRNNX_WITH_BLAS=false)
configure(cuda_value_unknown FAIL "RNNX_WITH_CUDA \\(= \"gpu\"\\) must be AUTO, ON or OFF"
  -DRNNX_WITH_CUDA=gpu)
configure(cuda_required_missing FAIL "RNNX_WITH_CUDA=ON: (no CUDA compiler|CUDA toolkit not found|cuDNN not found)"
  -DRNNX_WITH_CUDA=ON -DCUDNN_ROOT=/nonexistent -DRNNX_CUDNN_INCLUDE_DIR=RNNX_CUDNN_INCLUDE_DIR-NOTFOUND
  -DRNNX_CUDNN_LIBRARY=RNNX_CUDNN_LIBRARY-NOTFOUND -DCMAKE_IGNORE_PREFIX_PATH=/usr/local/cuda)
configure(cuda_off SUCCEED "rnnx: cuda    off \\(RNNX_WITH_CUDA=OFF\\)" -DRNNX_WITH_CUDA=OFF)
# The Python bindings (RNNX_BUILD_PYTHON): asked for and impossible fails; AUTO skips saying why.
configure(python_value_unknown FAIL "RNNX_BUILD_PYTHON \\(= \"sometimes\"\\) must be AUTO, ON or OFF"
  -DRNNX_BUILD_PYTHON=sometimes)
# A cross build's configures here have no Python of the target (its build names one with
# Python_EXECUTABLE): what is missing there is the interpreter and headers, found first.
set(python_missing "pybind11 not found")
if(TOOLCHAIN)
  set(python_missing "(pybind11|Python interpreter or headers) not found")
endif()
configure(python_required_missing FAIL "RNNX_BUILD_PYTHON=ON: ${python_missing}"
  -DRNNX_BUILD_PYTHON=ON -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON)
configure(python_auto_missing SUCCEED "${python_missing}.*Python bindings not built \\(RNNX_BUILD_PYTHON=AUTO\\)"
  -DRNNX_BUILD_PYTHON=AUTO -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON)
configure(python_required_sanitizers FAIL "RNNX_BUILD_PYTHON=ON: the Python bindings cannot be built under sanitizers"
  -DRNNX_BUILD_PYTHON=ON -DRNNX_WITH_SANITIZERS=ON)
# The command's header-only libraries: none staged, no package, nothing on the include path.
configure(tools_cli11_missing FAIL "RNNX_BUILD_TOOLS: the rnnx command needs CLI11::CLI11's headers"
  -DRNNX_BUILD_TOOLS=ON -DRNNX_THIRD_PARTY_DIR=/nonexistent -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON
  -DCMAKE_IGNORE_PREFIX_PATH=/usr)

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
