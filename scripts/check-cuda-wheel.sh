#!/usr/bin/env bash
# Installs the rnnx wheel and the rnnx-cuda wheel side by side as a user would, beside the
# current PyTorch and NVIDIA's CUDA 13 wheels, and checks the pair from outside the source
# tree: the plugin loads with cuDNN from site-packages/nvidia/cudnn/lib (ldd, and
# /proc/self/maps in the suite), build_info() and `rnnx info` name it with cuDNN's run-time
# version, a cuda plan's error from inside the plugin arrives intact (no GPU here: "no CUDA
# device"), a copy of the plugin where no cuDNN can be found is refused naming libcudnn.so.9,
# the loader's refusals are named (python/tests/test_cuda_plugin.py), and the
# cuda suite python/tests/test_torch_cuda.py runs (it skips without a GPU).
#
#   scripts/check-cuda-wheel.sh RNNX_WHEEL RNNX_CUDA_WHEEL [PYTHON]
#
# PYTHON: the interpreter of an existing virtual environment to install into (the GPU
# machine's, say: tools/gpu-check). Without it, the environment is a hard-linked copy of the
# pip-PyTorch one (scripts/pip-env.sh: PyTorch with its nvidia-cudnn-cu13 and nvidia-cublas
# wheels, all in one site-packages, which the plugin's RUNPATH needs) in a temporary folder:
# made in a second, and the shared environment is left as it was.
set -euo pipefail
rnnx_wheel=$(realpath "$1")
cuda_wheel=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
unset LD_LIBRARY_PATH PYTHONPATH RNNX_CUDA_PLUGIN
export PYTHONDONTWRITEBYTECODE=1
log() { echo "check-cuda-wheel: $*"; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rnnx-check-cuda.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
t0=$SECONDS

if [ $# -ge 3 ]; then
  py=$3
else
  env_dir=$("$root/scripts/pip-env.sh")
  # Hard links: pip replaces files (it never writes into an installed one), so the copy's
  # installs leave the original's files alone.
  cp -al "$env_dir" "$scratch/venv"
  py=$scratch/venv/bin/python
  log "environment: a hard-linked copy of $env_dir"
fi
"$py" -m pip install -q --force-reinstall --no-deps "$rnnx_wheel" "$cuda_wheel"
"$py" -m pip install -q "$rnnx_wheel" "$cuda_wheel"  # their dependencies, where missing
"$py" -m pip check >/dev/null || { "$py" -m pip check; log "FAILED: pip check"; exit 1; }
log "installed: $("$py" -m pip list --format=freeze 2>/dev/null |
  grep -Ei '^(rnnx|rnnx-cuda|torch|nvidia-cudnn-cu13|nvidia-cublas)==' | tr '\n' ' ')"
bin=$(dirname "$py")

cd "$scratch"  # not the source tree: the installed packages are the ones imported
plugin=$("$py" -c 'import rnnx_cuda; print(rnnx_cuda.library_path())')
case $plugin in
  "$root"/*) log "FAILED: rnnx_cuda imports from the source tree ($plugin)"; exit 1 ;;
esac
log "readelf -d $plugin:"
readelf -d "$plugin" | grep -E 'NEEDED|RUNPATH|RPATH' | sed 's/^ */  /'
cudnn=$(ldd "$plugin" | awk '$1 == "libcudnn.so.9" {print $3}')
cudnn=$(realpath -m "${cudnn:-not-found}")  # ldd shows the RUNPATH's ../.. as it is
log "ldd: libcudnn.so.9 => $cudnn"
case $cudnn in
  */site-packages/nvidia/cudnn/lib/libcudnn.so.9) ;;
  *) log "FAILED: libcudnn.so.9 does not resolve to NVIDIA's wheel"; exit 1 ;;
esac

"$py" - <<'PY'
import rnnx
info = rnnx.build_info()
print("check-cuda-wheel: build_info: backends", info["backends"], "| plugins", info["plugins"])
assert info["plugins"].startswith("cuda from "), info["plugins"]
try:
    rnnx.LSTM(input_size=3, hidden_size=5, backend="cuda")
    print("check-cuda-wheel: a cuda plan was built (a GPU is there)")
except rnnx.Error as e:
    print(f"check-cuda-wheel: cuda plan: {type(e).__name__}: {e}")
PY
# Without cuDNN: the plugin copied out of site-packages (its RUNPATH then reaches no NVIDIA
# wheel) and the loader's cache ignored (this machine's cache knows the toolkit's cuDNN).
mkdir -p "$scratch/alone"
cp "$plugin" "$scratch/alone/"
interp=$(readelf -l "$(readlink -f "$py")" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
"$interp" --inhibit-cache "$py" - "$scratch/alone/librnnx_cuda.so" <<'PY'
import sys
import rnnx
try:
    rnnx._rnnx.load_backend_plugin(sys.argv[1])
    sys.exit("check-cuda-wheel: FAILED: the plugin loaded without cuDNN")
except rnnx.InvalidArgumentError as e:
    assert "libcudnn.so.9" in str(e) and sys.argv[1] in str(e), e
    print(f"check-cuda-wheel: without cuDNN: {e}")
PY
"$bin/rnnx" info >"$scratch/info.txt"
log "rnnx info: $(grep -E '^(plugins|backend: +cuda)' "$scratch/info.txt" | tr '\n' ' ')"
grep -q '^plugins: *cuda from ' "$scratch/info.txt" || { log "FAILED: rnnx info names no plugin"; exit 1; }

log "pytest test_cuda_plugin.py test_torch_cuda.py"
RNNX_EXPECT_BUILD_TREE=$(dirname "$("$py" -c 'import os, rnnx; print(os.path.realpath(rnnx.__file__))')") \
  "$py" -m pytest -q -p no:cacheprovider -rs --rootdir="$root/python/tests" \
  "$root/python/tests/test_cuda_plugin.py" "$root/python/tests/test_torch_cuda.py"
log "done in $((SECONDS - t0)) s"
