#!/usr/bin/env bash
# Installs a built rnnx into a temporary prefix (not /usr/local: the installed files must
# find each other through their relocatable RPATHs) and checks it as a user would: runs the
# installed `rnnx info`, then builds and runs a consumer project that uses
# find_package(rnnx). No LD_LIBRARY_PATH anywhere. Usage: check-install.sh BUILD_DIR SOURCE_DIR
# A cross build (the top-level CMakeLists.txt sets them) runs the installed programs under
# RNNX_EMULATOR (a command and its arguments, separated by spaces) and configures the
# consumer with RNNX_TOOLCHAIN_FILE.
set -euo pipefail
build=$1 src=$2
read -r -a emulator <<<"${RNNX_EMULATOR:-}"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$prefix" >/dev/null
if [ -x "$prefix/bin/rnnx" ]; then
  "${emulator[@]}" "$prefix/bin/rnnx" info >/dev/null ||
    { echo "installed bin/rnnx info failed" >&2; exit 1; }
  echo "installed bin/rnnx runs: $("${emulator[@]}" "$prefix/bin/rnnx" --version 2>/dev/null || echo ok)"
else
  echo "bin/rnnx was not built, not checked"
fi
consumer_args=(-DCMAKE_PREFIX_PATH="$prefix")
if [ -n "${RNNX_TOOLCHAIN_FILE:-}" ]; then
  # The toolchain finds packages under the target's root only: name the one installed here.
  consumer_args+=(-DCMAKE_TOOLCHAIN_FILE="$RNNX_TOOLCHAIN_FILE"
                  -Drnnx_DIR="$(dirname "$(echo "$prefix"/lib*/cmake/rnnx/rnnxConfig.cmake)")")
fi
cmake -S "$src/tests/install_consumer" -B "$prefix/consumer-build" "${consumer_args[@]}" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"${emulator[@]}" "$prefix/consumer-build/consumer"
"${emulator[@]}" "$prefix/consumer-build/consumer_c" >/dev/null && echo "C consumer (examples/readme_c.c) ran"
