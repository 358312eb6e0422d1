#!/usr/bin/env bash
# rnnx on aarch64 from an x86-64 Debian 12 machine: cross-builds the library, the C++ tests,
# the rnnx command and the Python extension with Debian's cross g++
# (cmake/toolchains/aarch64-linux-gnu.cmake) and runs them under qemu-aarch64 (qemu-user).
#   scripts/test-aarch64.sh          the kernel and cpu-vs-reference suites, and the Python
#                                    suite on the extension (CI)
#   scripts/test-aarch64.sh --full   every suite of rnnx_tests, and ctest's other C++ checks
#   --no-python                      leaves the Python extension out
# RNNX_JOBS: build jobs (default: the cores). rnnx_tests runs in RNNX_AARCH64_SHARDS processes
# at once (GoogleTest's shards; default twice the jobs: a shard takes every n-th test, so a
# few long ones make shards uneven, and more of them even it out: the default run took 111 s
# in 4 shards, 138 s in 2, on 2 cores). The build is in build/aarch64 (RNNX_AARCH64_BUILD).
# The Python suite runs on Debian's arm64 CPython 3.11, NumPy and pytest, unpacked (dpkg -x,
# nothing installed) into build/aarch64-python from the machine's own apt sources through a
# private apt state there. Ends with the time each stage took.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

full=0 python=1
for arg in "$@"; do
  case $arg in
    --full) full=1 ;;
    --no-python) python=0 ;;
    *) echo "usage: scripts/test-aarch64.sh [--full] [--no-python]" >&2; exit 2 ;;
  esac
done
jobs=${RNNX_JOBS:-$(nproc)}
shards=${RNNX_AARCH64_SHARDS:-$((2 * jobs))}
build=${RNNX_AARCH64_BUILD:-build/aarch64}
mkdir -p "$build"
build=$(cd "$build" && pwd)
pyroot=$src/build/aarch64-python
sysroot=${RNNX_AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
emulator=(qemu-aarch64 -L "$sysroot")
exe=$build/tests/rnnx_tests

# The kernel and cpu-vs-reference suites: the step kernels and the GEMMs' (of every level the
# build has: scalar alone here), CPU detection and the ISA cap, the thread pool, the cell math
# they share with the reference, and the cpu backend against the reference, its invariants and
# its determinism. Each pattern must select a test (tests/run_filtered.cmake). Without the
# medium problems (as the sanitizer pass's reruns, tests/CMakeLists.txt), which --full runs:
# they add the GEMMs' multi-panel and threading paths, the same C++ on every architecture,
# and under qemu took 220 of the 510 s of CPU time the suites took with them.
kernel_suites="CpuKernels.*:Isas/PerIsa.*:CpuIsa.*:CpuFeatures.*:ThreadPool.*:*PackedGemm*"
kernel_suites+=":PlainGemm.*:ColumnSums.*:*/PeepholeGrad.*:*CellMath*"
kernel_suites+=":*CpuVsReference*:*/Invariants.*:*Determinism*-*_medium*:*Medium*"

stages_script=test-aarch64.sh stages_width=44
source scripts/stages.sh

# Debian's arm64 CPython, NumPy and pytest (with libstdc++ for librnnx) unpacked into
# $pyroot/sysroot, their headers there for the build, and $pyroot/python3.11, which runs that
# interpreter under qemu. Redone when the package list changes.
python_packages=(python3.11 python3-numpy python3-pytest libpython3.11-dev libstdc++6)
python_root() {
  local stamp=$pyroot/packages
  if [ -x "$pyroot/python3.11" ] && [ "$(cat "$stamp" 2>/dev/null)" = "${python_packages[*]}" ]; then
    echo "python root: ${python_packages[*]} already unpacked in $pyroot"
    return 0
  fi
  rm -rf "$pyroot"
  mkdir -p "$pyroot"/apt/lists/partial "$pyroot"/apt/cache/archives/partial "$pyroot"/sysroot
  : >"$pyroot"/apt/status
  # An apt of its own: the machine's sources, architecture arm64, an empty package database,
  # lists and downloads in $pyroot; the machine's apt state and dpkg are not touched.
  local apt=(apt-get -q -o Dir::State::Lists="$pyroot/apt/lists"
             -o Dir::State::status="$pyroot/apt/status" -o Dir::Cache="$pyroot/apt/cache"
             -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
             -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Debug::NoLocking=1
             -o APT::Sandbox::User="$(id -un)")
  local log=$pyroot/apt.log
  if ! { "${apt[@]}" update && "${apt[@]}" -y --no-install-recommends install --download-only \
           "${python_packages[@]}"; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    return 1
  fi
  local deb
  for deb in "$pyroot"/apt/cache/archives/*.deb; do
    dpkg -x "$deb" "$pyroot/sysroot" || return 1
  done
  echo "python root: $(ls "$pyroot"/apt/cache/archives/*.deb | wc -l) packages unpacked," \
    "$(du -sh "$pyroot/sysroot" | cut -f1)"
  rm -rf "$pyroot"/apt/cache/archives
  local lib=$pyroot/sysroot/usr/lib/aarch64-linux-gnu
  # What the packages' scripts would have made: the alternatives NumPy loads BLAS and LAPACK
  # through. (Debian's multiarch pyconfig.h, python/CMakeLists.txt deals with.)
  ln -sf blas/libblas.so.3 "$lib"/libblas.so.3 &&
    ln -sf lapack/liblapack.so.3 "$lib"/liblapack.so.3 || return 1
  cat >"$pyroot/python3.11" <<EOF
#!/bin/sh
# Debian's arm64 CPython 3.11 under qemu-aarch64 (scripts/test-aarch64.sh)
exec qemu-aarch64 -L "$pyroot/sysroot" "$pyroot/sysroot/usr/bin/python3.11" "\$@"
EOF
  chmod +x "$pyroot/python3.11"
  "$pyroot/python3.11" -c "import numpy, pytest, platform, sys
print('python root:', platform.machine(), 'Python', sys.version.split()[0], 'NumPy', numpy.__version__)" ||
    return 1
  echo "${python_packages[*]}" >"$stamp"
}

configure() {
  local args=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchains/aarch64-linux-gnu.cmake"
              -DCMAKE_BUILD_TYPE=Release -DRNNX_AARCH64_SYSROOT="$sysroot"
              -DRNNX_WITH_ONEDNN=OFF -DRNNX_WITH_BLAS=OFF -DRNNX_WITH_CUDA=OFF
              -DRNNX_BUILD_EXAMPLES=OFF -DRNNX_BUILD_BENCH=OFF
              -DRNNX_GTEST_SOURCE_DIR=/usr/src/googletest)
  if command -v ccache >/dev/null; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  if [ $python -eq 1 ]; then
    args+=(-DRNNX_BUILD_PYTHON=ON -DPython_EXECUTABLE="$pyroot/python3.11"
           -DPython_INCLUDE_DIR="$pyroot/sysroot/usr/include/python3.11"
           -DRNNX_AARCH64_PYTHON_ROOT="$pyroot/sysroot")
  else
    args+=(-DRNNX_BUILD_PYTHON=OFF)
  fi
  cmake -S "$src" -B "$build" "${args[@]}" >"$build/configure.log" 2>&1 ||
    { tail -n 30 "$build/configure.log" >&2; return 1; }
  grep -E '^-- rnnx: (cpu GEMMs|Python)' "$build/configure.log" || true
}

build_targets() {
  if [ $full -eq 1 ]; then
    cmake --build "$build" -j "$jobs" || return 1  # everything ctest runs
  else
    local targets=(rnnx_tests rnnx_cli)
    [ $python -eq 1 ] && targets+=(rnnx_python)
    cmake --build "$build" -j "$jobs" --target "${targets[@]}" || return 1
  fi
  echo "librnnx: $(file -b "$build"/librnnx.so.*.*.* | cut -d, -f1-2)"
  # The command runs there and says what the cpu backend chose.
  "${emulator[@]}" "$build/tools/rnnx/rnnx" info | grep -E '^(backend: +cpu|cpu isa|gemm)'
}

# rnnx_tests under qemu on a --gtest_filter, in $shards processes at once (GoogleTest's shards),
# each with its own log in $build/test-logs/NAME; prints the counts of all shards together.
# CpuFeatures.DetectedLevelFollowsTheFeatures checks that the level detected is scalar.
run_gtest() {
  local name=$1 filter=$2 logs=$build/test-logs/$1
  cmake -DEXE="$exe" "-DEMULATOR=$(IFS='|'; echo "${emulator[*]}")" "-DFILTER=$filter" \
    -DCHECK_ONLY=1 -P tests/run_filtered.cmake | sed 's/^-- /  /' || return 1
  rm -rf "$logs"
  mkdir -p "$logs"
  local i pids=()
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i RNNX_TEST_EXPECT_ISA=scalar \
      "${emulator[@]}" "$exe" --gtest_filter="$filter" >"$logs/shard$i.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for ((i = 0; i < shards; i++)); do
    wait "${pids[$i]}" || { status=1; echo "shard $i of $shards failed: $logs/shard$i.log"; }
  done
  count() { sed -n "s/^\[  $1 *\] \([0-9]*\) tests\{0,1\}[,.].*/\1/p" "$logs"/shard*.log |
            awk '{s += $1} END {print s + 0}'; }
  echo "$name: $(count PASSED) passed, $(count SKIPPED) skipped, $(count FAILED) failed" \
    "(shards: $shards; logs: $logs)"
  grep -h '^\[  FAILED  \] .*(' "$logs"/shard*.log || true
  return $status
}

# ctest's C++ checks besides rnnx_tests' discovered tests (run whole above: one process per
# test costs qemu's start-up 1,500 times): the C API, the exported symbols, the kernel
# objects, the CMake options, the installed package. Left out: the slow suite, the
# forced-choice reruns of the cpu suites (label algo: the same C++ on every architecture,
# run on x86-64 by scripts/test.sh) and cpu_isa_scalar (the default run again: scalar is the
# only level).
other_checks() {
  (cd "$build" && ctest --output-on-failure -j "$jobs" -LE 'slow|algo' \
     -E '\.|^cpu_isa_scalar$' | grep -vE '^ *(Start|Test project)')
}

# The Python suite from the build tree on the aarch64 interpreter. Deselected: tests that
# start an aarch64 program (the rnnx command, a second interpreter), which the kernel cannot
# exec without a qemu binfmt_misc handler (subprocess: Exec format error).
python_tests() {
  local so=("$build"/python/rnnx/_rnnx.cpython-*.so)
  echo "${so[0]#"$src"/}: $(file -b "${so[0]}" | cut -d, -f1-2)"
  (cd python/tests && PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 \
     "$pyroot/python3.11" -m pytest . -q -p no:cacheprovider --rootdir=. \
       --deselect test_empty_batch.py::test_rnnx_run_empty_batch \
       --deselect test_incomplete_package.py::test_missing_extension_names_the_target_to_build |
     tail -n 3)
}

stage "packages (install-deps.sh --aarch64)" ./scripts/install-deps.sh --aarch64
[ $python -eq 1 ] && stage "python root (Debian arm64, unpacked)" python_root
stage "configure ($build)" configure
stage "build (-j $jobs)" build_targets
if [ $full -eq 1 ]; then
  stage "rnnx_tests whole, under qemu" run_gtest all '*'
  stage "other C++ checks (ctest), under qemu" other_checks
else
  stage "kernel and cpu-vs-reference suites, qemu" run_gtest kernels "$kernel_suites"
fi
[ $python -eq 1 ] && stage "python suite on the extension, qemu" python_tests
exit 0
