#!/bin/bash
# tools/gpu-check's own checks, with a fake cmake and nvidia-smi (tests/gpu_check/fakebin): no
# build, no GPU. Its deadline (a stage cut to it, the rest not started, the summary written,
# exit 1) and its judgement of a GPU machine (nvidia-smi lists one; or a /dev/nvidiaN node
# with nvidia-smi broken or hanging: the device stage must fail where PyTorch cannot use it).
#   tests/gpu_check/deadline.sh [path of gpu-check]   (ctest: gpu_check_deadline)
set -u
if compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
  # gpu-check would (rightly) judge this a GPU machine whatever the fakes say.
  echo "skip: this machine has $(compgen -G '/dev/nvidia[0-9]*' | tr '\n' ' ')(a GPU machine):" \
       "the cases of a machine without one cannot run here"
  exit 77  # ctest's SKIP_RETURN_CODE for this test
fi
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-$here/../../tools/gpu-check}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0 ran=0
t() {  # t NAME WANT_RC PATTERN... -- ENV... -- ARGS...: the summary must match every pattern
  local name=$1 want=$2; shift 2
  local pats=() envs=()
  while [ "$1" != -- ]; do pats+=("$1"); shift; done; shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local repo
  repo=$(mktemp -d "$work/repo.XXXX")
  mkdir -p "$repo/tools"
  cp "$src" "$repo/tools/gpu-check"
  local t0=$SECONDS rc=0
  (cd "$repo" && env PATH="$here/fakebin:$PATH" OUT="$repo/out" "${envs[@]}" ${WRAP:-} \
    tools/gpu-check "$@") >"$repo/log" 2>&1 || rc=$?
  local took=$((SECONDS - t0)) ok=1
  ran=$((ran + 1))
  [ "$rc" = "$want" ] || { echo "  exit $rc, want $want"; ok=0; }
  for p in "${pats[@]}"; do
    grep -qE -- "$p" "$repo/out/summary.txt" 2>/dev/null || { echo "  summary.txt lacks /$p/"; ok=0; }
  done
  if [ -n "${MAXT:-}" ] && [ $took -gt "$MAXT" ]; then echo "  took $took s > $MAXT s"; ok=0; fi
  if [ $ok = 1 ]; then
    echo "ok   $name ($took s)"
  else
    echo "FAIL $name ($took s)"; tail -20 "$repo/log"; fails=$((fails + 1))
  fi
}
# A deadline too short for any stage: each recorded as not started, the summary written, exit 1.
MAXT=8 t "tiny deadline: nothing starts" 1 'device +- s  NOT STARTED' \
  'bench vs torch +- s  NOT STARTED' 'of a 5 s deadline' -- -- --bench --quick --deadline=5
# configure sleeps past the deadline: cut to it, timed out, the rest not run; ends by the deadline.
MAXT=16 t "configure cut to the deadline" 1 \
  'configure .*TIMED OUT after [0-9]+ s \(its 90 s cut to the 15 s deadline\)' \
  'build +- s  not run: the configure stage' 'bench vs torch +- s  not run' \
  -- FAKE_CONFIGURE_SLEEP=60 -- --bench --quick --deadline=15
# The environment variable works as the option does.
MAXT=16 t "GPU_CHECK_DEADLINE" 1 'configure .*TIMED OUT .*cut to the 15 s deadline' \
  -- FAKE_CONFIGURE_SLEEP=60 GPU_CHECK_DEADLINE=15 -- --bench --quick
# The tests take the time left: timed out at the deadline, python and bench not started.
MAXT=21 t "later stages not started" 1 'tests \(tests/cuda\) .*TIMED OUT .*cut to the 20 s deadline' \
  'python \(rnnx.torch on CUDA\) +- s  NOT STARTED' 'bench vs torch +- s  NOT STARTED' \
  -- FAKE_TEST_SLEEP=60 -- --tests --bench --quick --deadline=20
# Without --deadline: 300 s with --quick, 570 s without; a fast rehearsal passes.
t "default deadline, passing rehearsal" 0 'of a 300 s deadline' 'build +[0-9]+ s$' \
  'bench vs torch +[0-9]+ s$' 'machine: no GPU' -- -- --bench --quick
t "default deadline without --quick" 0 'of a 570 s deadline' -- -- --bench
t "a deadline that is not a number is refused" 2 -- -- --bench --deadline=abc
# A GPU machine whose GPU PyTorch cannot use (none here): the device stage fails.
t "nvidia-smi lists a GPU" 1 'device .*FAILED' 'RNNX_REQUIRE_GPU=1' \
  'machine: a GPU machine: nvidia-smi lists 1' -- FAKE_SMI=gpu -- --bench --quick
# A /dev/nvidia0 node with nvidia-smi broken or hanging: still a GPU machine. Needs a mount
# namespace of its own (root, unshare): skipped, saying so, where there is none.
if unshare -m --propagation private true 2>/dev/null; then
  WRAP="unshare -m --propagation private $here/with_dev_nvidia0" \
    t "/dev/nvidia0, nvidia-smi broken" 1 'device .*FAILED' 'RNNX_REQUIRE_GPU=1' \
    'machine: a GPU machine: /dev/nvidia0 present, but nvidia-smi lists no GPU' \
    -- FAKE_SMI=broken -- --bench --quick
  WRAP="unshare -m --propagation private $here/with_dev_nvidia0" MAXT=40 \
    t "/dev/nvidia0, nvidia-smi hangs" 1 'device .*FAILED' 'RNNX_REQUIRE_GPU=1' \
    'machine: a GPU machine: /dev/nvidia0 present' -- FAKE_SMI=hang -- --bench --quick
else
  echo "skip /dev/nvidia0 cases: no mount namespace here (unshare -m needs root)"
fi
echo "$ran cases, $fails failed"
[ $ran -ge 8 ] && [ $fails = 0 ]
