"""rnnx_cuda: rnnx's cuda backend for the rnnx wheel, as the backend plugin lib/librnnx_cuda.so.

Installing the rnnx-cuda wheel beside rnnx is all it takes: `import rnnx` registers the plugin
(rnnx._rnnx.register_backend_plugin) without loading it, and the first cuda plan (rnnx.torch
on CUDA tensors, backend="cuda" in the NumPy API) or rnnx.build_info() loads it, with cuDNN and
cuBLAS from NVIDIA's wheels (nvidia-cudnn-cu13, nvidia-cublas) through its RUNPATH.
docs/packaging.md describes the plugin and its C boundary.
"""

import os as _os

__all__ = ["library_path"]


def library_path():
    """The plugin's file: rnnx_cuda/lib/librnnx_cuda.so of this installation."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib", "librnnx_cuda.so")
