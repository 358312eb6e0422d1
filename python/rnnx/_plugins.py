"""The backend plugins of installed wheels: rnnx-cuda's package rnnx_cuda holds the cuda
backend as lib/librnnx_cuda.so (docs/packaging.md). `import rnnx` registers its path only
(rnnx._rnnx.register_backend_plugin); the first cuda plan, or build_info(), loads it and cuDNN.
"""

import importlib.util
import os

from . import _rnnx


def installed_plugin_path(backend="cuda"):
    """The plugin file of the installed rnnx-<backend> wheel, without importing its package
    (so without loading anything); None when it is not installed."""
    spec = importlib.util.find_spec(f"rnnx_{backend}")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "lib", f"librnnx_{backend}.so")
    return path if os.path.isfile(path) else None


def register_installed_plugins():
    """Registers the installed cuda plugin, unless this librnnx has the backend built in or
    RNNX_CUDA_PLUGIN names another file (the environment then decides)."""
    if os.environ.get("RNNX_CUDA_PLUGIN"):
        return
    path = installed_plugin_path("cuda")
    if path is None:
        return
    try:
        _rnnx.register_backend_plugin("cuda", path)
    except _rnnx.InvalidArgumentError:
        pass  # this librnnx has the cuda backend built in (a source build with CUDA)
