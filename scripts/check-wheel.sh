#!/usr/bin/env bash
# Installs a built rnnx wheel as a user would and checks it from outside the source tree:
# `import rnnx`, the `rnnx` console script, C and C++ projects finding the wheel's CMake
# package (tests/install_consumer, CMAKE_PREFIX_PATH=rnnx.cmake_prefix_path), and the pytest
# suite (python/tests; the files that need PyTorch or ONNX skip themselves where those are
# missing). No LD_LIBRARY_PATH or PYTHONPATH anywhere.
#
#   scripts/check-wheel.sh WHEEL [PYTHON]
#
# PYTHON: a base interpreter (default Debian's /usr/bin/python3), in which case a fresh
# virtual environment without system site packages is made in a temporary folder and the
# wheel's dependencies (numpy) come from the package index; or the python of an existing
# virtual environment (the pip-PyTorch one of scripts/pip-env.sh, say), into which the wheel
# is installed over any rnnx already there, its other packages kept.
set -euo pipefail
wheel=$(realpath "$1")
base=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
unset LD_LIBRARY_PATH PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1
log() { echo "check-wheel: $*"; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rnnx-check-wheel.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
t0=$SECONDS

if "$base" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)'; then
  py=$base
  log "installing into the existing environment of $py"
  "$py" -m pip install -q --force-reinstall --no-deps "$wheel"
  "$py" -m pip install -q "$wheel"  # its dependencies, where missing
else
  log "a new environment on $base (no system site packages)"
  "$base" -m venv "$scratch/venv"
  py=$scratch/venv/bin/python
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q "$wheel"
  log "installed: $("$py" -m pip list --format=freeze 2>/dev/null | tr '\n' ' ')"
fi
"$py" -c 'import pytest' 2>/dev/null || "$py" -m pip install -q pytest
bin=$(dirname "$py")

cd "$scratch"  # not the source tree: the installed package is the one imported
package=$("$py" -c 'import os, rnnx; print(os.path.dirname(os.path.realpath(rnnx.__file__)))')
case $package in
  "$root"/*) log "FAILED: rnnx imports from the source tree ($package)"; exit 1 ;;
esac
"$py" -c 'import rnnx, numpy as np
y, h = rnnx.LSTM(3, 4)(np.ones((5, 2, 3), np.float32))
assert y.shape == (5, 2, 4) and np.isfinite(y).all()
i = rnnx.build_info()
print("check-wheel: import rnnx", rnnx.__version__, "from", rnnx.cmake_prefix_path, "-",
      i["cpu_isa_used"], i["gemm_engine"])'

# The console script is the bundled command: same output, same exit status.
"$bin/rnnx" info >"$scratch/info.txt"
log "rnnx info: $(head -n 3 "$scratch/info.txt" | tr '\n' ' ')"
status=0
"$bin/rnnx" no-such-command >/dev/null 2>&1 || status=$?
direct=0
"$package/bin/rnnx" no-such-command >/dev/null 2>&1 || direct=$?
if [ "$status" = 0 ] || [ "$status" != "$direct" ]; then
  log "FAILED: rnnx no-such-command exited $status through the console script, $direct directly"
  exit 1
fi
log "console script passes the exit status ($status for an unknown subcommand)"

# C and C++ projects using find_package(rnnx) with the wheel's folder as their prefix
# (tests/install_consumer). The C one with the default compiler; the C++ one with a compiler
# on the C++ standard library librnnx was built with (the package says which): the wheel's is
# LLVM libc++ (zig's), for which Debian's clang++ with -stdlib=libc++ (libc++-dev) stands in.
prefix=$("$py" -c 'import rnnx; print(rnnx.cmake_prefix_path)')
consumer() {  # consumer NAME CMAKE_ARGS...: configure, build; the log is shown on failure
  local dir=$scratch/$1
  shift
  if ! { cmake -S "$root/tests/install_consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" "$@" &&
         cmake --build "$dir"; } >"$dir.log" 2>&1; then
    cat "$dir.log"
    log "FAILED: the consumer did not build against $prefix ($*)"
    exit 1
  fi
}
consumer c -DCONSUMER_CXX=OFF
"$scratch/c/consumer_c" >/dev/null
log "C consumer (examples/readme_c.c, find_package(rnnx) in $prefix) ran"
stdlib=$(sed -n 's/^set(rnnx_CXX_STDLIB "\(.*\)")$/\1/p' "$prefix/lib/cmake/rnnx/rnnxConfig.cmake")
if [ "$stdlib" = "libc++" ]; then
  # clang-14 as scripts/install-deps.sh installs it (Debian's unversioned `clang` is another
  # package, which a new machine lacks).
  consumer cxx -DCMAKE_C_COMPILER="${RNNX_LIBCXX_CC:-clang-14}" \
    -DCMAKE_CXX_COMPILER="${RNNX_LIBCXX_CXX:-clang++-14}" -DCMAKE_CXX_FLAGS=-stdlib=libc++ \
    -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++
else
  consumer cxx
fi
log "C++ consumer ($stdlib): $("$scratch/cxx/consumer")"

# The pytest suite against the installed package (conftest.py asserts where it comes from).
log "pytest python/tests with $("$py" -c 'import sys; print(sys.version.split()[0])')"
RNNX_EXPECT_BUILD_TREE=$package RNNX_CLI=$bin/rnnx "$py" -m pytest -q -p no:cacheprovider -rs \
  --rootdir="$root/python/tests" "$root/python/tests"
log "done in $((SECONDS - t0)) s"
