#!/usr/bin/env bash
# The README's demo command: installs dependencies, builds rnnx optimised and runs the demo
# (a bidirectional LSTMP over a ragged batch, timed against the same batch padded).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target demo rnnx_cli
./build/release/tools/rnnx/rnnx info || true
./build/release/examples/demo
