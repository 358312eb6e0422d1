# zig's clang for x86-64 Linux, glibc >= 2.28 (manylinux_2_28, PyTorch's floor): cmake/toolchains/zig.cmake.
set(RNNX_ZIG_TARGET x86_64-linux-gnu.2.28)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
