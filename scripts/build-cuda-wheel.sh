#!/usr/bin/env bash
# Builds the rnnx-cuda wheel (the cuda backend plugin, packaging/cuda/pyproject.toml) from
# rnnx's sdist, as scripts/build-wheel.sh builds rnnx's wheel from it, repairs it with
# auditwheel leaving cuDNN and cuBLAS to NVIDIA's wheels, and checks what it holds.
# Prints the wheel's path as the last line of stdout; progress goes to stderr.
#
#   scripts/build-cuda-wheel.sh SDIST [--out DIR] [-- BUILD_ARGS...]
#
# SDIST: rnnx-*.tar.gz from scripts/build-wheel.sh (the same version as the rnnx wheel that
#   the plugin will load into). --out: where the wheel goes (default: the sdist's folder).
# Needs nvcc (CUDA 13) and cuDNN 9 (cmake/WithCUDA.cmake finds them) and the tools'
# environment of scripts/build-wheel.sh (${RNNX_BUILD_ENV:-~/.cache/rnnx/build-env}).
# The compiler is nvcc with the system's g++ (Debian 12: glibc 2.36), the C++ runtime linked
# statically: the wheel's floor is manylinux_2_34 (docs/packaging.md says why not 2_28).
# RNNX_CUDA_WHEEL_PLAT overrides the tag asked of auditwheel.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
sdist=""
out=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "build-cuda-wheel: unknown argument $1 (SDIST [--out DIR])" >&2; exit 2 ;;
    *) sdist=$(realpath "$1"); shift ;;
  esac
done
if [ -z "$sdist" ] || [ ! -f "$sdist" ]; then
  echo "build-cuda-wheel: give rnnx's sdist (scripts/build-wheel.sh makes it)" >&2
  exit 2
fi
out=${out:-$(dirname "$sdist")}
plat=${RNNX_CUDA_WHEEL_PLAT:-manylinux_2_34_$(uname -m)}
log() { echo "build-cuda-wheel: $*" >&2; }
t0=$SECONDS
env_dir=${RNNX_BUILD_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnx/build-env}
py=$env_dir/bin/python
if [ ! -x "$py" ]; then
  log "no tools' environment at $env_dir: run scripts/build-wheel.sh first"
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rnnx-cuda-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
tar -xzf "$sdist" -C "$work"
src=$(echo "$work"/rnnx-*/)
if [ ! -f "$src/packaging/cuda/pyproject.toml" ]; then
  log "$sdist has no packaging/cuda/pyproject.toml (an sdist older than the plugin)"
  exit 1
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${RNNX_BUILD_JOBS:-$(nproc)}
log "the wheel from $(basename "$sdist") (log: $out/build-cuda-wheel.log)"
t=$SECONDS
if ! "$py" -m build --wheel --outdir "$work/dist" -C build.verbose=true "${extra[@]}" \
    "$src/packaging/cuda" >"$out/build-cuda-wheel.log" 2>&1; then
  tail -n 60 "$out/build-cuda-wheel.log" >&2
  log "the build failed (log: $out/build-cuda-wheel.log)"
  exit 1
fi
build_s=$((SECONDS - t))
grep -E '^-- rnnx: ' "$out/build-cuda-wheel.log" | sed 's/^/build-cuda-wheel: /' >&2 || true
raw=$(ls "$work"/dist/rnnx_cuda-*.whl)
mkdir -p "$out/unrepaired"
cp "$raw" "$out/unrepaired/"

# cuDNN and cuBLAS stay out: NVIDIA's wheels (the dependencies) supply them, and the plugin's
# RUNPATH finds them there. The policy check then covers the plugin's own symbol versions.
log "auditwheel repair --plat $plat (cuDNN and cuBLAS excluded)"
rm -f "$out"/rnnx_cuda-*.whl
PATH=$env_dir/bin:$PATH "$env_dir/bin/auditwheel" repair --plat "$plat" --only-plat -w "$out" \
  --exclude libcudnn.so.9 --exclude libcublas.so.13 --exclude libcublasLt.so.13 \
  "$raw" >"$work/repair.log" 2>&1 || { cat "$work/repair.log" >&2; log "auditwheel repair failed"; exit 1; }
wheel=$(ls "$out"/rnnx_cuda-*-"$plat".whl)

"$env_dir/bin/auditwheel" show "$wheel" >"$work/show.txt" 2>&1 || true
sed 's/^/build-cuda-wheel: auditwheel show: /' "$work/show.txt" >&2
"$py" scripts/check_wheel_contents.py "$wheel" --plat "$plat" --cuda-plugin >&2

size() { du -k "$1" | awk '{printf "%.1f MB", $1 / 1024}'; }
log "wheel $(basename "$wheel") ($(size "$wheel")); build ${build_s} s, all $((SECONDS - t0)) s"
echo "$wheel"
