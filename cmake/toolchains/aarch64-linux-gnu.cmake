# Cross-builds rnnx for 64-bit ARM Linux on an x86-64 Debian machine with Debian's cross
# g++ (g++-aarch64-linux-gnu) and runs what it builds under qemu-user (qemu-aarch64), so
# that ctest and gtest_discover_tests work unchanged. scripts/test-aarch64.sh uses it:
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# RNNX_AARCH64_SYSROOT (cache or environment) names the target's root, where Debian's cross
# packages put the C library and libstdc++ (/usr/aarch64-linux-gnu); qemu reads the
# dynamic loader and the shared libraries from it too. RNNX_AARCH64_PYTHON_ROOT, when set,
# is a root holding an aarch64 CPython with its headers (Debian's arm64 packages unpacked
# by scripts/test-aarch64.sh), searched too: the Python bindings' headers. The bindings also
# need Python_EXECUTABLE to name an interpreter of the target (the script's runs Debian's
# arm64 python3.11 under qemu): FindPython and pybind11 take the extension's suffix from it,
# and the host's would give x86-64's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(RNNX_AARCH64_TRIPLE aarch64-linux-gnu)
if(NOT RNNX_AARCH64_SYSROOT)
  if(DEFINED ENV{RNNX_AARCH64_SYSROOT})
    set(RNNX_AARCH64_SYSROOT $ENV{RNNX_AARCH64_SYSROOT})
  else()
    set(RNNX_AARCH64_SYSROOT /usr/${RNNX_AARCH64_TRIPLE})
  endif()
endif()
set(RNNX_AARCH64_SYSROOT ${RNNX_AARCH64_SYSROOT} CACHE PATH "aarch64 target root (libc, libstdc++)")

set(CMAKE_C_COMPILER ${RNNX_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${RNNX_AARCH64_TRIPLE}-g++)
# Tools that read target objects (tests/check_*.cmake run nm and objdump on them).
find_program(CMAKE_NM ${RNNX_AARCH64_TRIPLE}-nm)
find_program(CMAKE_OBJDUMP ${RNNX_AARCH64_TRIPLE}-objdump)

# Test programs run under qemu-user; -L points it at the target's loader and libraries.
find_program(RNNX_QEMU_AARCH64 qemu-aarch64)
if(RNNX_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RNNX_QEMU_AARCH64} -L ${RNNX_AARCH64_SYSROOT})
endif()

# Libraries and headers of the target only; programs (cmake, python, qemu) of the host.
# The host's header-only packages (CLI11 and nlohmann_json for the rnnx command, pybind11
# for the bindings) are the same on every architecture: a folder of the build tree links to
# them alone, with their CMake packages, and is searched beside the target's root, so that
# the host's /usr/include (x86-64 headers) never reaches the compiler.
set(RNNX_AARCH64_PYTHON_ROOT "${RNNX_AARCH64_PYTHON_ROOT}" CACHE PATH
    "aarch64 root with CPython and its headers (optional: the Python bindings)")
set(CMAKE_FIND_ROOT_PATH ${RNNX_AARCH64_SYSROOT} ${RNNX_AARCH64_PYTHON_ROOT})
get_property(rnnx_in_try_compile GLOBAL PROPERTY IN_TRY_COMPILE)
if(NOT rnnx_in_try_compile)
  set(rnnx_noarch ${CMAKE_BINARY_DIR}/host-noarch)
  foreach(link IN ITEMS include/CLI share/cmake/CLI11 include/nlohmann share/cmake/nlohmann_json
                        include/pybind11 lib/cmake/pybind11)
    if(EXISTS /usr/${link} AND NOT EXISTS ${rnnx_noarch}/usr/${link})
      get_filename_component(parent ${rnnx_noarch}/usr/${link} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(CREATE_LINK /usr/${link} ${rnnx_noarch}/usr/${link} SYMBOLIC)
    endif()
  endforeach()
  list(APPEND CMAKE_FIND_ROOT_PATH ${rnnx_noarch})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
