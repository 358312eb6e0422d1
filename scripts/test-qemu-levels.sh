#!/usr/bin/env bash
# The installed wheel on older x86-64 CPUs, emulated by Debian's qemu-user: a clean virtual
# environment (no PyTorch, no system packages) gets the wheel and NumPy, then at each level
# -- scalar on `-cpu Westmere` (SSE4.2, no AVX), avx2 on `-cpu Haswell` (AVX2 + FMA) --
# python/tests/isa_sample.py checks that rnnx detects that level (CPUID and XCR0, not a
# compiler builtin) and computes the bits of a native run capped to it (RNNX_CPU_ISA), and the
# NumPy-only pytest files run under the emulated CPU with RNNX_TEST_EXPECT_ISA set. qemu 7.2
# emulates neither AVX-512 nor VNNI; it says nothing about speed.
#   scripts/test-qemu-levels.sh WHEEL
set -euo pipefail
wheel=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
command -v qemu-x86_64 >/dev/null || { echo "test-qemu-levels: qemu-x86_64 missing (Debian: qemu-user)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
/usr/bin/python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check numpy pytest "$wheel"
echo "test-qemu-levels: clean environment with $(basename "$wheel") in $((SECONDS - start)) s"
cd "$work"  # outside the source tree: the installed package is the one imported
export PYTHONDONTWRITEBYTECODE=1
# qemu warns on stderr about host CPU features its TCG cannot emulate; nothing else is lost.
quiet_qemu() { grep -v "TCG doesn't support requested feature" >&2 || true; }
status=0
for pair in scalar:Westmere avx2:Haswell; do
  level=${pair%%:*} cpu=${pair##*:}
  t0=$SECONDS
  RNNX_CPU_ISA=$level "$py" "$root/python/tests/isa_sample.py" write "$work/$level.npz" >/dev/null
  if ! qemu-x86_64 -cpu "$cpu" "$py" "$root/python/tests/isa_sample.py" check \
      "$work/$level.npz" --isa "$level" 2> >(quiet_qemu); then
    status=1
  fi
  if ! RNNX_TEST_EXPECT_ISA=$level qemu-x86_64 -cpu "$cpu" "$py" -m pytest -q -p no:cacheprovider \
      "$root/python/tests/test_numpy_api.py" "$root/python/tests/test_qemu_level.py" \
      2> >(quiet_qemu); then
    status=1
  fi
  echo "test-qemu-levels: -cpu $cpu ($level) in $((SECONDS - t0)) s"
done
exit $status
