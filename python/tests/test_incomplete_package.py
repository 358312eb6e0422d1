"""A package without its compiled extension (a build or install that did not build the
rnnx_python target) says what to build instead of failing obscurely."""

import os
import shutil
import subprocess
import sys


import rnnx

HERE = os.path.dirname(rnnx.__file__)


def test_missing_extension_names_the_target_to_build(tmp_path):
    pkg = tmp_path / "rnnx"
    pkg.mkdir()
    for name in os.listdir(HERE):
        if name.endswith(".py"):
            shutil.copy(os.path.join(HERE, name), pkg / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", "import rnnx"], env=env, cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "--target rnnx_python" in r.stderr, r.stderr
    assert "only the pure-Python files" in r.stderr, r.stderr
