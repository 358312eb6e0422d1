#!/usr/bin/env bash
# Installs the Debian 12 packages rnnx builds, tests and benchmarks with. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake git
  libgtest-dev libbenchmark-dev
  libdnnl-dev                  # oneDNN: float32 GEMMs of the cpu backend, peer in benchmarks
  libopenblas-openmp-dev       # OpenBLAS (OpenMP build): float64 GEMMs
  nlohmann-json3-dev libcli11-dev libfmt-dev
  python3 python3-numpy python3-torch   # the PyTorch cross-check (Debian's /usr/bin/python3)
  python3-dev pybind11-dev python3-pytest  # the Python bindings and their tests
  python3-onnx libonnx-testdata            # ONNX's own node tests
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
