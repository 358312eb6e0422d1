#!/usr/bin/env bash
# Installs a built rnnx into a temporary prefix (not /usr/local: the installed files must
# find each other through their relocatable RPATHs) and checks it as a user would: runs the
# installed `rnnx info`, then builds and runs a consumer project that uses
# find_package(rnnx). No LD_LIBRARY_PATH anywhere. Usage: check-install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" >/dev/null
if [ -x "$prefix/bin/rnnx" ]; then
  "$prefix/bin/rnnx" info >/dev/null || { echo "installed bin/rnnx info failed" >&2; exit 1; }
  echo "installed bin/rnnx runs: $("$prefix/bin/rnnx" --version 2>/dev/null || echo ok)"
else
  echo "bin/rnnx was not built, not checked"
fi
cmake -S "$src/tests/install_consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"
"$prefix/consumer-build/consumer_c" >/dev/null && echo "C consumer (examples/readme_c.c) ran"
