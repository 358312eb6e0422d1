#!/usr/bin/env bash
# scripts/test.sh's rnnx-cuda stage: builds the rnnx-cuda wheel from the sdist beside the
# given rnnx wheel (scripts/build-cuda-wheel.sh) and checks the pair installed beside the
# current PyTorch (scripts/check-cuda-wheel.sh). Skips, saying so and succeeding, where nvcc
# or cuDNN 9's headers are missing (the plugin cannot be built there).
#
#   scripts/test-cuda-wheel.sh RNNX_WHEEL
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(realpath "$1")
out=$(dirname "$wheel")
log() { echo "test-cuda-wheel: $*"; }
t0=$SECONDS
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] ||
  nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
cudnn=""
for dir in ${CUDNN_ROOT:-} "${CUDA_HOME:-/usr/local/cuda}" /usr; do
  [ -f "$dir/include/cudnn_version.h" ] && { cudnn=$dir; break; }
done
if [ -z "$nvcc" ] || [ -z "$cudnn" ]; then
  log "skipped: the plugin needs nvcc and cuDNN 9 (found nvcc '${nvcc:-none}'," \
      "cuDNN '${cudnn:-none}'; CUDNN_ROOT names cuDNN's folder)"
  exit 0
fi
sdist=$(ls "$out"/rnnx-*.tar.gz)
cuda_wheel=$(./scripts/build-cuda-wheel.sh "$sdist" --out "$out/cuda" | tail -n 1)
./scripts/check-cuda-wheel.sh "$wheel" "$cuda_wheel"
log "done in $((SECONDS - t0)) s"
