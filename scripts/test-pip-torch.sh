#!/usr/bin/env bash
# The Python side of the test command on the current PyTorch from pip (Debian's 1.13 is
# tested by ctest): makes or reuses the virtual environment (scripts/pip-env.sh), installs
# rnnx into it as a user would, then runs the package's pytest suite, the main job's test
# (examples/charlm) and the per-call cost script with it, from outside the source tree so
# that the installed package is the one imported.
#
#   scripts/test-pip-torch.sh WHEEL   the wheel (scripts/build-wheel.sh) installed over any rnnx
#                                     there, through scripts/check-wheel.sh (its checks too)
#   scripts/test-pip-torch.sh         `pip install .` from the repository's root: the sdist
#                                     route, compiled on this machine (about 3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
env_dir=$(./scripts/pip-env.sh)
py="$env_dir/bin/python"
start=$SECONDS
if [ $# -ge 1 ]; then
  # Installs, checks the console script and the CMake package, runs python/tests.
  ./scripts/check-wheel.sh "$1" "$py"
else
  ./scripts/stage-third-party.sh >/dev/null  # the command's header-only libraries
  echo "test-pip-torch: pip install . (into $env_dir)"
  log=${TMPDIR:-/tmp}/rnnx-pip-install.log
  if ! CMAKE_BUILD_PARALLEL_LEVEL=${RNNX_BUILD_JOBS:-$(nproc)} "$py" -m pip install -v --no-deps \
      --force-reinstall . >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "test-pip-torch: the install failed (log: $log)" >&2
    exit 1
  fi
  grep -E '^ *-- rnnx: Python bindings' "$log" | sed 's/^ */test-pip-torch: /' || true
  echo "test-pip-torch: installed in $((SECONDS - start)) s"
fi
cd "${TMPDIR:-/tmp}"  # not the source tree: `import rnnx` must find the installed package
package=$("$py" -c 'import os, rnnx; print(os.path.dirname(os.path.realpath(rnnx.__file__)))' \
  2>/dev/null || true)
if [ -z "$package" ] || [ "${package#"$root"}" != "$package" ]; then
  echo "test-pip-torch: rnnx does not import from the environment (got '$package')" >&2
  exit 1
fi
export PYTHONDONTWRITEBYTECODE=1 RNNX_EXPECT_BUILD_TREE=$package
if [ $# -eq 0 ]; then
  "$py" -m pytest -q -p no:cacheprovider "$root/python/tests"
fi
OMP_NUM_THREADS=1 "$py" -m pytest -q -p no:cacheprovider "$root/examples/charlm"
# The per-call cost script runs there too (a smoke run: it works, not how fast).
"$py" "$root/bench/torch_call_overhead.py" --calls 5 --rounds 1 >/dev/null
echo "test-pip-torch: done in $((SECONDS - start)) s"
