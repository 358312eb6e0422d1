# Sourced by the scripts that run in stages (test.sh, test-aarch64.sh): `stage NAME COMMAND...`
# runs a command and records how long it took and whether it failed; at exit the script
# prints the time per stage and its total (CI's log says where the time goes). Set
# stages_script (the name the lines start with) and stages_width (of the name column) first.
# A stage's command runs where `set -e` does not apply (as the left of ||): a function that
# runs several steps says `|| return 1` after each that can fail.
stages=()
stages_summary() {
  local code=$?
  echo
  echo "$stages_script: time per stage"
  for s in "${stages[@]}"; do echo "  $s"; done
  echo "  total: $SECONDS s (exit $code)"
}
trap stages_summary EXIT
stage() {  # stage NAME COMMAND...
  local name=$1 start=$SECONDS
  shift
  echo "$stages_script: == $name"
  local status=0
  "$@" || status=$?
  stages+=("$(printf "%-${stages_width}s %5d s%s" "$name" $((SECONDS - start)) \
    "$([ $status -eq 0 ] || echo "  FAILED (exit $status)")")")
  return $status
}
