#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan) in build/fuzz and runs each
# on a copy of its seed corpus for N seconds (default 30; FUZZ_JOBS at a time, default 2).
# Prints executions and coverage per target; exits non-zero when a target finds something
# (crash, sanitizer report, leak, timeout, unexpected exception), leaving the input in
# build/fuzz/findings/<target>/. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_npy fuzz_case_folder fuzz_c_api fuzz_onnx_import)
jobs=${FUZZ_JOBS:-2}
build=build/fuzz

start=$SECONDS
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DRNNX_BUILD_FUZZERS=ON \
  -DRNNX_BUILD_TESTS=OFF -DRNNX_BUILD_TOOLS=OFF -DRNNX_BUILD_EXAMPLES=OFF \
  -DRNNX_BUILD_BENCH=OFF -DRNNX_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log"; echo "fuzz.sh: build failed ($build/build.log)"; exit 1; }

echo "fuzz.sh: built ${targets[*]} in $((SECONDS - start)) s; running each for $seconds s, $jobs at a time"
start=$SECONDS

# Each run works on a copy of the seeds, so what it adds never lands in the repository.
# Leaks are findings (each target frees what it makes); OpenMP's pool is made once and
# kept, so it does not grow per input. -rss_limit_mb: a plan that balloons is a finding too.
symbolizer=/usr/lib/llvm-14/bin/llvm-symbolizer  # stacks with file:line in findings
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH=$symbolizer
run_one() {
  local t=$1 work="$build/work/$t" log="$build/logs/$t.log"
  rm -rf "$work" "$build/findings/$t" && mkdir -p "$work" "$build/findings/$t" "$build/logs"
  cp tests/fuzz/corpus/"$t"/* "$work"/
  local status=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/$t" "$work" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$build/findings/$t/" \
      >"$log" 2>&1 || status=$?
  return $status
}

failed=0
pids=() names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!) names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done

printf '%-18s %10s %8s %8s %8s  %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  log="$build/logs/$t.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if ls "$build/findings/$t"/* >/dev/null 2>&1 || grep -qE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error|fuzz finding' "$log"; then
    result="FINDING: $(ls "$build/findings/$t" | head -3 | tr '\n' ' ')(log: $log)"
    failed=1
  fi
  printf '%-18s %10s %8s %8s %8s  %s\n' "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
echo "fuzz.sh: fuzzing took $((SECONDS - start)) s$([ $failed -eq 0 ] || echo "; FINDINGS in $build/findings")"
exit $failed
