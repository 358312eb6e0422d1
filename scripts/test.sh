#!/usr/bin/env bash
# The README's test command: installs dependencies, builds rnnx optimised and runs every
# default test (GoogleTest suites, the PyTorch cross-check, the command-line checks), then
# builds the wheel (without oneDNN, BLAS or OpenMP, manylinux_2_28) and tests it installed,
# cross-builds for aarch64 and runs the kernel suites under qemu-aarch64, builds again
# without oneDNN and BLAS and runs the C++ suites there, then builds with AddressSanitizer +
# UndefinedBehaviorSanitizer and runs the suite there. First it checks the format
# (scripts/check-format.sh). Before the sanitizer build it runs the fuzz targets 30 s each
# (scripts/fuzz.sh); last, the concurrency tests under ThreadSanitizer. RNNX_SKIP_WHEEL=1
# skips the wheel's stages, RNNX_SKIP_AARCH64=1 the aarch64 stage, RNNX_SKIP_NODEPS=1 the
# build without the libraries, RNNX_SKIP_ASAN=1 the sanitizer pass, RNNX_SKIP_FUZZ=1 the
# fuzzing, RNNX_SKIP_TSAN=1 the ThreadSanitizer pass, RNNX_SKIP_PIP_TORCH=1 the Python suites
# on the current PyTorch from pip (scripts/test-pip-torch.sh). Ends with the time each stage
# took.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

# Tests run two at a time on CI's 2 cores while each uses every core (rnnx's thread pool,
# and OpenMP in oneDNN and OpenBLAS): spinning waits at the per-step barriers then cost
# several times the work itself (measured: the forced-choice entries took 10x longer).
# Passive waiting (which rnnx's pool honours too) changes timing only, not results.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

stages_script=test.sh stages_width=34
source scripts/stages.sh

stage "install dependencies" ./scripts/install-deps.sh
stage "format (clang-format 14)" ./scripts/check-format.sh
stage "release: configure and build" bash -c \
  "cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build/release -j $jobs"
stage "release: tests" bash -c \
  "cd build/release && ctest --output-on-failure -LE slow -j $jobs"

# The wheel users install with pip (docs/packaging.md): an sdist, a manylinux_2_28 wheel built
# from it with zig's clang (the CPU library without oneDNN, BLAS or OpenMP: the configuration
# the nodeps stage below builds with g++), repaired by auditwheel, its tag and contents
# checked (scripts/build-wheel.sh); then, installed with pip from outside the source tree:
# into a clean environment with NumPy alone (scripts/check-wheel.sh: import, console script,
# C and C++ consumers of its CMake package, the NumPy suites), into the environment with the
# current PyTorch from pip (scripts/test-pip-torch.sh; the first run downloads about 5 GB:
# scripts/pip-env.sh), and into a clean environment run under qemu as older CPUs (-cpu
# Westmere: scalar kernels, -cpu Haswell: AVX2; scripts/test-qemu-levels.sh).
# RNNX_SKIP_WHEEL=1 skips them all, RNNX_SKIP_PIP_TORCH=1 the PyTorch one.
if [ "${RNNX_SKIP_WHEEL:-0}" != "1" ]; then
  wheel_out=build/wheel
  stage "wheel: sdist, build (zig), repair, contents" bash -o pipefail -c \
    "./scripts/build-wheel.sh --out $wheel_out | tail -n 1 >build/wheel.path"
  wheel=$(cat build/wheel.path)
  stage "wheel: clean venv (NumPy only)" ./scripts/check-wheel.sh "$wheel"
  if [ "${RNNX_SKIP_PIP_TORCH:-0}" != "1" ]; then
    stage "wheel: on PyTorch from pip" ./scripts/test-pip-torch.sh "$wheel"
  fi
  stage "wheel: under qemu (Westmere, Haswell)" ./scripts/test-qemu-levels.sh "$wheel"
  # The rnnx-cuda wheel (the cuda backend plugin) from the same sdist, checked beside the rnnx
  # wheel and PyTorch (docs/packaging.md); RNNX_SKIP_CUDA_WHEEL=1 skips it.
  if [ "${RNNX_SKIP_CUDA_WHEEL:-0}" != "1" ]; then
    stage "wheel: rnnx-cuda plugin (build, check)" ./scripts/test-cuda-wheel.sh "$wheel"
  fi
fi

# aarch64: the library, the C++ suites, the command and the Python extension cross-built with
# Debian's g++-aarch64-linux-gnu, the kernel and cpu-vs-reference suites and the Python suite
# run under qemu-aarch64 (scripts/test-aarch64.sh; --full there runs every suite, the `slow`
# check). RNNX_SKIP_AARCH64=1 skips it.
if [ "${RNNX_SKIP_AARCH64:-0}" != "1" ]; then
  stage "aarch64: cross build, tests under qemu" ./scripts/test-aarch64.sh
fi

# The cpu backend without oneDNN and BLAS (RNNX_WITH_ONEDNN=OFF, RNNX_WITH_BLAS=OFF: the GPU
# machine has neither), so on rnnx's own GEMMs (packed-avx512, plain): every C++ suite, the
# forced-choice and per-ISA entries and the command's checks; no Python package, examples
# or bench/ (which needs oneDNN). The configure summary's lines say what it found and chose.
if [ "${RNNX_SKIP_NODEPS:-0}" != "1" ]; then
  stage "nodeps: configure and build" bash -o pipefail -c \
    "cmake -S . -B build/nodeps -DCMAKE_BUILD_TYPE=Release -DRNNX_WITH_ONEDNN=OFF \
       -DRNNX_WITH_BLAS=OFF -DRNNX_BUILD_PYTHON=OFF -DRNNX_BUILD_EXAMPLES=OFF \
       -DRNNX_BUILD_BENCH=OFF | { grep -E '^-- rnnx: (oneDNN|BLAS|cpu GEMMs)' || true; } &&
     cmake --build build/nodeps -j $jobs"
  stage "nodeps: tests" bash -c \
    "cd build/nodeps && ctest --output-on-failure -LE 'slow|bench' -j $jobs"
fi

# libFuzzer targets (tests/fuzz) built with clang, ASan+UBSan, about 30 s each on their
# seed corpus, two at a time; a finding fails the stage. RNNX_SKIP_FUZZ=1 skips it.
if [ "${RNNX_SKIP_FUZZ:-0}" != "1" ]; then
  stage "fuzz: build and run (30 s each)" ./scripts/fuzz.sh "${RNNX_FUZZ_SECONDS:-30}"
fi

# The sanitizer builds keep -O2 but take only line tables (-g1), which is all a sanitizer's
# report needs (function, file, line): full -g made GCC's variable tracking half of each
# compile (test_autotune.cpp under ASan: 60 s with -O2 -g, 33 s with -O2 -g1).
sanitizer_flags='-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG'

if [ "${RNNX_SKIP_ASAN:-0}" != "1" ]; then
  # The library, the C++ test suites and the C API's test program; nothing the sanitizers
  # cannot load (Python extensions) or do not need (examples, benchmarks).
  stage "asan: configure and build" bash -c \
    "cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo '$sanitizer_flags' \
       -DRNNX_WITH_SANITIZERS=ON -DRNNX_BUILD_EXAMPLES=OFF -DRNNX_BUILD_BENCH=OFF >/dev/null &&
     cmake --build build/asan -j $jobs"
  # OpenMP's runtime keeps its thread pool alive at exit; LeakSanitizer would report it.
  # The allocation-failure and concurrency suites run with it on (label leaks,
  # tests/lsan.supp).
  stage "asan: tests" bash -c \
    "cd build/asan && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure -LE 'slow|bench' -j $jobs"
fi

if [ "${RNNX_SKIP_TSAN:-0}" != "1" ]; then
  # Several threads on one plan (tests/test_concurrency.cpp) under ThreadSanitizer: the
  # library and the C++ suites only. RNNX_SKIP_TSAN=1 skips it.
  stage "tsan: configure and build" bash -c \
    "cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo '$sanitizer_flags' -DRNNX_WITH_TSAN=ON \
       -DRNNX_BUILD_EXAMPLES=OFF -DRNNX_BUILD_BENCH=OFF -DRNNX_BUILD_PYTHON=OFF \
       -DRNNX_BUILD_TOOLS=OFF >/dev/null && cmake --build build/tsan -j $jobs --target rnnx_tests"
  stage "tsan: concurrency tests" bash -c "cd build/tsan && ctest --output-on-failure -L tsan"
fi
