#!/usr/bin/env bash
# The README's test command: installs dependencies, builds rnnx optimised and runs every
# default test (GoogleTest suites, the PyTorch cross-check, the command-line checks), then
# builds again with AddressSanitizer + UndefinedBehaviorSanitizer and runs the suite there.
# RNNX_SKIP_ASAN=1 skips the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release
cmake --build build/release -j "$jobs"
(cd build/release && ctest --output-on-failure -LE slow -j "$jobs")

if [ "${RNNX_SKIP_ASAN:-0}" != "1" ]; then
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRNNX_WITH_SANITIZERS=ON \
    -DRNNX_BUILD_EXAMPLES=OFF
  cmake --build build/asan -j "$jobs"
  # OpenMP's runtime keeps its thread pool alive at exit; LeakSanitizer would report it.
  (cd build/asan && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -LE "slow|bench" -j "$jobs")
fi
