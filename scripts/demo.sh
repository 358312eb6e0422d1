#!/usr/bin/env bash
# The README's first command: installs what is needed (Debian 12), builds rnnx and its
# Python package, and runs the main job, examples/charlm: a character-level language model
# trained on the quotations of Debian's fortunes package with rnnx's LSTM on ragged batches
# (about two minutes), then the same model timed padded, bucketed and with torch.nn.LSTM.
# Arguments go to the training script (./scripts/demo.sh --minutes 10; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
echo "demo: building rnnx (build/release) ..."
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$(nproc)" --target rnnx_python rnnx_cli >build/demo-build.log 2>&1 ||
  { tail -n 40 build/demo-build.log; exit 1; }
./build/release/tools/rnnx/rnnx info | head -n 4 || true
# Debian's own interpreter: the one with python3-torch (another python3 may come first).
export PYTHONPATH="$PWD/build/release/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 examples/charlm/train.py --compare --out build/charlm "$@"
