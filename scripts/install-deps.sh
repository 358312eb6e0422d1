#!/usr/bin/env bash
# Installs the Debian 12 packages rnnx builds, tests and benchmarks with. Idempotent.
# One line per stage on the terminal; apt's own output goes to a log file, shown on failure.
# --aarch64: only those of the cross build for aarch64 and its runs under qemu-user
# (scripts/test-aarch64.sh).
set -euo pipefail
packages=(
  build-essential cmake git
  libgtest-dev                 # the C++ test suites
  libdnnl-dev                  # oneDNN: float32 GEMMs of the cpu backend (RNNX_WITH_ONEDNN), peer in benchmarks
  libopenblas-openmp-dev       # OpenBLAS (OpenMP build): float64 GEMMs (RNNX_WITH_BLAS)
  nlohmann-json3-dev libcli11-dev          # the rnnx command (JSON case files, flags)
  python3 python3-numpy python3-torch      # the PyTorch cross-check (Debian's /usr/bin/python3)
  python3-dev pybind11-dev python3-pytest  # the Python bindings and their tests
  python3-venv                             # the environment with the current PyTorch from pip (scripts/pip-env.sh)
  python3-onnx libonnx-testdata            # ONNX's own node tests
  fortunes python3-tqdm python3-matplotlib # the main job's data, progress bar and plot
  clang-14 libclang-rt-14-dev libomp-14-dev # the fuzz targets (libFuzzer, OpenMP for clang)
  llvm-14                                  # llvm-symbolizer: readable stacks in fuzz findings
  clang-format-14                          # the format check (scripts/check-format.sh)
  qemu-user                                # the wheel on older x86-64 CPUs (scripts/test-qemu-levels.sh)
  libc++-14-dev libc++abi-14-dev           # a C++ consumer of the wheel's libc++ build (scripts/check-wheel.sh)
)
if [ "${1:-}" = "--aarch64" ]; then
  packages=(
    cmake g++-aarch64-linux-gnu qemu-user    # the cross compiler, the emulator
    libgtest-dev                             # GoogleTest's sources, built for aarch64
    libcli11-dev nlohmann-json3-dev          # header-only: the rnnx command
    pybind11-dev                             # header-only: the Python bindings
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
log=${RNNX_DEPS_LOG:-${TMPDIR:-/tmp}/rnnx-install-deps.log}
: >"$log"
stage() {  # stage DESCRIPTION COMMAND...: one line, the command's output to the log
  local what=$1 start=$SECONDS
  shift
  printf 'install-deps: %s ... ' "$what"
  if "$@" >>"$log" 2>&1; then
    echo "done ($((SECONDS - start)) s)"
  else
    echo "FAILED"
    echo "install-deps: the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}
echo "install-deps: ${#missing[@]} of ${#packages[@]} packages missing: ${missing[*]}"
stage "updating the package lists" $SUDO apt-get update -q
stage "installing (with their dependencies; apt's log: $log)" \
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
