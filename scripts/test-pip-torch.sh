#!/usr/bin/env bash
# The Python side of the test command on the current PyTorch from pip (Debian's 1.13 is
# tested by ctest): makes or reuses the virtual environment (scripts/pip-env.sh), installs
# rnnx into it as a user would (`pip install .` from the repository's root: pyproject.toml,
# scikit-build-core and pybind11 from the package index, the wheel's configuration), then
# runs the package's pytest suite and the main job's test (examples/charlm) with it, from
# outside the source tree so that the installed package is the one imported. Each run
# compiles the whole wheel configuration (about 3 minutes on 2 cores): a kept build folder
# would not help, since scikit-build-core clears its cache for every new isolated build
# environment.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
env_dir=$(./scripts/pip-env.sh)
py="$env_dir/bin/python"
start=$SECONDS
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
cd "${TMPDIR:-/tmp}"  # not the source tree: `import rnnx` must find the installed package
package=$("$py" -c 'import os, rnnx; print(os.path.dirname(os.path.realpath(rnnx.__file__)))' \
  2>/dev/null || true)
if [ -z "$package" ] || [ "${package#"$root"}" != "$package" ]; then
  echo "test-pip-torch: rnnx does not import from the environment (got '$package')" >&2
  exit 1
fi
export PYTHONDONTWRITEBYTECODE=1 RNNX_EXPECT_BUILD_TREE=$package
"$py" -m pytest -q -p no:cacheprovider "$root/python/tests"
OMP_NUM_THREADS=1 "$py" -m pytest -q -p no:cacheprovider "$root/examples/charlm"
# The per-call cost script runs there too (a smoke run: it works, not how fast).
"$py" "$root/bench/torch_call_overhead.py" --calls 5 --rounds 1 >/dev/null
