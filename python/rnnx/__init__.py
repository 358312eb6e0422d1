"""rnnx: fused recurrent operators (RNN-tanh/ReLU, LSTM, GRU), multi-layer, bidirectional,
forward and backward, over batches of variable-length sequences.

    rnnx.LSTM / rnnx.GRU / rnnx.RNN   NumPy front end (weights by PyTorch name)
    rnnx.torch.LSTM / GRU / RNN       drop-in torch.nn modules (import rnnx.torch)
    rnnx.LSTM.from_onnx(W, R, B, P, **attrs), .to_onnx(), .onnx_forward(...)
                                      ONNX's LSTM/GRU/RNN operators, with their cell options
    rnnx.Config, rnnx.Plan            the low-level API (plans on caller buffers)
    rnnx.Error                        base of every error rnnx raises; .code names the kind
    rnnx.cmake_prefix_path            the installed package's folder, a CMake prefix for
                                      find_package(rnnx) (the wheel's rnnx/lib/cmake/rnnx)
"""

import os as _os

# The wheel holds the C/C++ headers, librnnx and the CMake package under the package folder:
# cmake -DCMAKE_PREFIX_PATH=$(python -c "import rnnx; print(rnnx.cmake_prefix_path)").
cmake_prefix_path = _os.path.dirname(_os.path.abspath(__file__))

try:
    from . import _rnnx
except ImportError as e:  # pragma: no cover - depends on how the package was found
    raise ImportError(
        "rnnx: the compiled extension rnnx._rnnx was not found next to this package "
        f"({__path__[0]}): this build or install holds only the pure-Python files. Build the "
        "extension (cmake --build <build> --target rnnx_python, or the whole project), then "
        "use PYTHONPATH=<build>/python or cmake --install <build> again (docs/python.md). "
        f"The import failed with: {e}") from e

from ._rnnx import (Config, Error, InternalError, InvalidArgumentError, OutOfMemoryError, Plan,
                    UnsupportedError, WeightParam, __version__, build_info, error_bound,
                    norm_error_bound)
from .modules import GRU, LSTM, RNN
from ._plugins import register_installed_plugins as _register_installed_plugins
from .onnx import onnx_to_state_dict, state_dict_to_onnx

_register_installed_plugins()

__all__ = [
    "Config", "Plan", "WeightParam", "Error", "InvalidArgumentError", "UnsupportedError",
    "InternalError", "OutOfMemoryError", "RNN", "LSTM", "GRU", "build_info", "error_bound",
    "norm_error_bound", "onnx_to_state_dict", "state_dict_to_onnx", "__version__",
    "cmake_prefix_path",
]


def __getattr__(name):
    # rnnx.torch needs PyTorch; load it on first use instead of at `import rnnx`.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'rnnx' has no attribute '{name}'")
