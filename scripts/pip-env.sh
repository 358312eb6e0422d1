#!/usr/bin/env bash
# Creates (or reuses) the virtual environment with the current PyTorch, NumPy, pybind11,
# pytest, ONNX, ONNX Runtime, ONNX Script, tqdm and matplotlib from the package index
# (python/requirements-pip.txt) and prints its folder on stdout; progress goes to stderr.
# Built on Debian's /usr/bin/python3 (its python3-venv), kept between runs on one machine
# in ${RNNX_PIP_ENV:-~/.cache/rnnx/pip-env}, updated when the requirements change (made again
# when the Python does).
# PyTorch's wheels with their CUDA libraries are about 5 GB; the first run downloads them.
# RNNX_PIP_ENV_REFRESH=1 makes it again (newer releases).
set -euo pipefail
cd "$(dirname "$0")/.."
req=python/requirements-pip.txt
env_dir=${RNNX_PIP_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnx/pip-env}
base=${RNNX_PIP_ENV_PYTHON:-/usr/bin/python3}
stamp="$env_dir/.rnnx-requirements"
want="$(sha256sum "$req" | cut -c1-16) $("$base" -c 'import sys; print(sys.version.split()[0])')"
if [ "${RNNX_PIP_ENV_REFRESH:-0}" != "1" ] && [ -x "$env_dir/bin/python" ] &&
   [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "pip-env: reusing $env_dir" >&2
elif [ "${RNNX_PIP_ENV_REFRESH:-0}" != "1" ] && [ -x "$env_dir/bin/python" ] &&
     [ "$(cut -d' ' -f2 "$stamp" 2>/dev/null)" = "${want#* }" ]; then
  # The same Python, other requirements (one added): installed into the environment as it
  # is, without downloading PyTorch again.
  echo "pip-env: updating $env_dir from $req" >&2
  "$env_dir/bin/python" -m pip install -q -r "$req" >&2
  echo "$want" >"$stamp"
else
  start=$SECONDS
  echo "pip-env: creating $env_dir from $req (first time: about 5 GB of wheels)" >&2
  rm -rf "$env_dir"
  mkdir -p "$(dirname "$env_dir")"
  "$base" -m venv "$env_dir" >&2
  "$env_dir/bin/python" -m pip install -q --upgrade pip >&2
  "$env_dir/bin/python" -m pip install -q -r "$req" >&2
  echo "$want" >"$stamp"
  echo "pip-env: done in $((SECONDS - start)) s" >&2
fi
"$env_dir/bin/python" - >&2 <<'PY'
import importlib.metadata as md
names = ["torch", "numpy", "pybind11", "pytest", "expecttest", "onnx", "onnxruntime",
         "onnxscript", "tqdm", "matplotlib"]
print("pip-env: " + ", ".join(f"{n} {md.version(n)}" for n in names))
PY
echo "$env_dir"
