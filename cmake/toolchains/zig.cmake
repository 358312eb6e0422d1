# Cross toolchain on zig's clang (the `ziglang` package from PyPI), for wheels that run on any
# Linux with glibc >= the target's: zig links against stubs of that glibc version and links
# its own libc++, libc++abi and libunwind statically (docs/packaging.md). Included by the
# per-target files beside it, which set RNNX_ZIG_TARGET (e.g. x86_64-linux-gnu.2.28).
#
# zig is found as: -DRNNX_ZIG=... or $RNNX_ZIG (the executable), else `zig` on PATH, else the
# ziglang package of $RNNX_ZIG_PYTHON or the python3 on PATH. CMake wants one executable per
# tool, so the toolchain writes tiny wrappers (zig cc/c++/ar/ranlib with the target) into
# <build>/zig-<target>/ and hands their folder to its try_compile projects.
if(NOT RNNX_ZIG_TARGET)
  message(FATAL_ERROR "cmake/toolchains/zig.cmake: set RNNX_ZIG_TARGET (use a zig-<target>.cmake file)")
endif()

if(NOT RNNX_ZIG_WRAPPERS)
  if(NOT RNNX_ZIG AND DEFINED ENV{RNNX_ZIG})
    set(RNNX_ZIG "$ENV{RNNX_ZIG}")
  endif()
  if(NOT RNNX_ZIG)
    find_program(rnnx_zig_on_path zig)
    if(rnnx_zig_on_path)
      set(RNNX_ZIG "${rnnx_zig_on_path}")
    else()
      set(py "$ENV{RNNX_ZIG_PYTHON}")
      if(NOT py)
        find_program(py NAMES python3 python)
      endif()
      if(py)
        execute_process(COMMAND "${py}" -c
          "import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))"
          OUTPUT_VARIABLE RNNX_ZIG OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      endif()
    endif()
  endif()
  if(NOT RNNX_ZIG OR NOT EXISTS "${RNNX_ZIG}")
    message(FATAL_ERROR "zig toolchain: no zig found (pip install ziglang; or RNNX_ZIG=/path/to/zig)")
  endif()
  set(RNNX_ZIG "${RNNX_ZIG}" CACHE FILEPATH "The zig executable of the zig toolchain")
  set(RNNX_ZIG_WRAPPERS "${CMAKE_BINARY_DIR}/zig-${RNNX_ZIG_TARGET}")
  foreach(tool cc c++ ar ranlib)
    set(target_flag "")
    if(tool MATCHES "^c")
      set(target_flag "-target ${RNNX_ZIG_TARGET} ")
    endif()
    file(WRITE "${RNNX_ZIG_WRAPPERS}/zig-${tool}"
         "#!/bin/sh\nexec '${RNNX_ZIG}' ${tool} ${target_flag}\"$@\"\n")
    file(CHMOD "${RNNX_ZIG_WRAPPERS}/zig-${tool}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
         GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  endforeach()
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RNNX_ZIG_WRAPPERS RNNX_ZIG_TARGET)

set(CMAKE_C_COMPILER "${RNNX_ZIG_WRAPPERS}/zig-cc")
set(CMAKE_CXX_COMPILER "${RNNX_ZIG_WRAPPERS}/zig-c++")
set(CMAKE_AR "${RNNX_ZIG_WRAPPERS}/zig-ar" CACHE FILEPATH "zig ar")
set(CMAKE_RANLIB "${RNNX_ZIG_WRAPPERS}/zig-ranlib" CACHE FILEPATH "zig ranlib")

# A cross build only where the target's architecture differs from this machine's: a native
# target keeps try_run and the interpreter-driven configure steps working.
string(REGEX MATCH "^[^-]+" rnnx_zig_arch "${RNNX_ZIG_TARGET}")
if(NOT rnnx_zig_arch STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR ${rnnx_zig_arch})
endif()

# What zig links into every binary from its own sources (rnnx's wheel carries these licences,
# cmake/BundledLicenses.cmake): libc++, libc++abi and libunwind statically, compiler-rt and
# the glibc start-up and non-shared parts.
get_filename_component(rnnx_zig_lib "${RNNX_ZIG}" DIRECTORY)
set(RNNX_TOOLCHAIN_LICENSES
  "libcxx|${rnnx_zig_lib}/lib/libcxx/LICENSE.TXT|LLVM libc++, linked statically by zig into every binary"
  "libcxxabi|${rnnx_zig_lib}/lib/libcxxabi/LICENSE.TXT|LLVM libc++abi, linked statically by zig into every binary"
  "libunwind|${rnnx_zig_lib}/lib/libunwind/LICENSE.TXT|LLVM libunwind, linked statically by zig into every binary"
  "zig|${rnnx_zig_lib}/LICENSE|zig's compiler-rt and libc glue, linked statically into every binary"
  "glibc|${rnnx_zig_lib}/lib/libc/glibc/LICENSES|glibc's start-up files and libc_nonshared, linked statically by zig (glibc itself is the system's)")
