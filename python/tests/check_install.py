"""`cmake --install` places an importable rnnx package: installs the build into a temporary
prefix and runs a forward pass with the installed package (found through its RPATH, no
LD_LIBRARY_PATH). Usage: check_install.py BUILD_DIR PYTHON_INSTALL_DIR (relative)."""

import os
import subprocess
import sys
import tempfile

build_dir, rel = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as prefix:
    subprocess.run(["cmake", "--install", build_dir, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    site = os.path.join(prefix, rel)
    code = (
        "import rnnx, numpy as np, os, sys\n"
        f"assert rnnx.__file__.startswith({site!r}), rnnx.__file__\n"
        "y, h = rnnx.GRU(3, 4, bidirectional=True)(np.ones((2, 1, 3), np.float32))\n"
        "assert y.shape == (2, 1, 8) and np.isfinite(y).all()\n"
        "print('installed rnnx', rnnx.__version__, 'at', os.path.dirname(rnnx.__file__))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = site
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=prefix)
