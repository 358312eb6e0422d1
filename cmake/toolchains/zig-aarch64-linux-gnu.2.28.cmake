# zig's clang for 64-bit ARM Linux, glibc >= 2.28 (manylinux_2_28): cmake/toolchains/zig.cmake.
set(RNNX_ZIG_TARGET aarch64-linux-gnu.2.28)
include(${CMAKE_CURRENT_LIST_DIR}/zig.cmake)
