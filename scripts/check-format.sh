#!/usr/bin/env bash
# Checks that every tracked C/C++ source follows .clang-format (clang-format 14, Debian 12's).
# Names each file that drifts; `scripts/check-format.sh --fix` rewrites them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${CLANG_FORMAT:-clang-format-14}
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.inl' '*.c' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$tool" -i "${files[@]}"
  exit 0
fi
drift=()
for f in "${files[@]}"; do
  "$tool" --dry-run -Werror "$f" >/dev/null 2>&1 || drift+=("$f")
done
if [ ${#drift[@]} -gt 0 ]; then
  echo "check-format: ${#drift[@]} of ${#files[@]} files differ from .clang-format:" >&2
  printf '  %s\n' "${drift[@]}" >&2
  echo "check-format: run scripts/check-format.sh --fix (or $tool -i FILE)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format"
