"""Backend plugins from Python (rnnx/plugin.hpp, docs/packaging.md): the loader's refusals,
named, in every build; and, where the rnnx-cuda wheel is installed (rnnx_cuda), its plugin:
registered by `import rnnx` without loading cuDNN, loaded on first use with cuDNN from NVIDIA's
wheel (site-packages/nvidia/cudnn/lib, not a system copy), described by build_info(), and a
cuda plan's error from inside the plugin arriving intact (no GPU here; with one, the plan is
built). scripts/check-cuda-wheel.sh runs this file against the installed wheels."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import rnnx
from rnnx import _rnnx


def test_missing_file_names_path_and_reason():
    with pytest.raises(rnnx.InvalidArgumentError, match="/nonexistent/librnnx_cuda.so: cannot load it"):
        _rnnx.load_backend_plugin("/nonexistent/librnnx_cuda.so")


def test_library_without_entry_is_not_a_plugin():
    with pytest.raises(rnnx.InvalidArgumentError, match="not an rnnx backend plugin"):
        _rnnx.load_backend_plugin(_rnnx.__file__)


def test_register_refuses_unknown_and_built_in_backends():
    with pytest.raises(rnnx.InvalidArgumentError, match="built into this librnnx"):
        _rnnx.register_backend_plugin("cpu", "/x/librnnx_cpu.so")
    with pytest.raises(rnnx.InvalidArgumentError):
        _rnnx.register_backend_plugin("tpu", "/x/librnnx_tpu.so")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler for the fake plugin")
def test_other_abi_version_names_both_sides(tmp_path):
    # The loader reads the table's first member, the ABI version, before anything else.
    src = tmp_path / "fake.c"
    src.write_text(textwrap.dedent("""
        static const struct { unsigned abi; const char* version; } table = {999u, "0.1.0"};
        __attribute__((visibility("default"))) const void* rnnx_backend_plugin_entry(void) {
          return &table;
        }
    """))
    lib = tmp_path / "libfake.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    try:
        ctypes.CDLL(str(lib))
    except OSError as e:  # cc builds for another machine (the aarch64 suite under qemu)
        pytest.skip(f"the C compiler's library does not load here: {e}")
    with pytest.raises(rnnx.InvalidArgumentError,
                       match=r"plugin ABI version 999, this librnnx \(rnnx .*\) speaks version 1"):
        _rnnx.load_backend_plugin(str(lib))


@pytest.fixture
def rnnx_cuda():
    """The rnnx-cuda wheel's package; the tests that need it skip without it."""
    return pytest.importorskip("rnnx_cuda", reason="the rnnx-cuda wheel is not installed")


def cudnn_mappings():
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "libcudnn.so" in line})


def test_import_registers_without_loading_cudnn(rnnx_cuda):
    # A fresh interpreter: `import rnnx` maps no cuDNN; build_info() then loads the plugin.
    # Nor does CPU work (the cpu search's keys once asked build_info() for the version).
    code = textwrap.dedent("""
        import numpy as np
        import rnnx
        maps = lambda: [l for l in open("/proc/self/maps") if "libcudnn" in l]
        assert not maps(), maps()
        rnnx.LSTM(3, 4)(np.ones((5, 2, 3), np.float32))
        assert not maps(), maps()
        info = rnnx.build_info()
        assert maps(), info["plugins"]
        print(info["plugins"])
    """)
    env = {k: v for k, v in os.environ.items() if k != "RNNX_CUDA_PLUGIN"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("cuda from " + rnnx_cuda.library_path()), out.stdout


def test_plugin_loads_with_cudnn_from_nvidias_wheel(rnnx_cuda):
    assert os.path.isfile(rnnx_cuda.library_path())
    assert _rnnx.load_backend_plugin(rnnx_cuda.library_path()) == "cuda"
    plugins = rnnx.build_info()["plugins"]
    assert plugins.startswith("cuda from " + rnnx_cuda.library_path()), plugins
    assert "cuDNN 9." in plugins and "nvidia/cudnn/lib/libcudnn.so.9" in plugins, plugins
    mapped = cudnn_mappings()
    assert mapped and all("/nvidia/cudnn/lib/" in m for m in mapped), mapped


def test_cuda_plan_error_crosses_intact(rnnx_cuda):
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if not has_gpu and os.environ.get("RNNX_REQUIRE_GPU", "0") not in ("", "0"):
        pytest.fail("RNNX_REQUIRE_GPU is set (nvidia-smi lists a GPU) but torch cannot use it",
                    pytrace=False)
    if has_gpu:
        m = rnnx.LSTM(input_size=3, hidden_size=5, backend="cuda")
        assert m.backend == "cuda"
        return
    with pytest.raises(rnnx.UnsupportedError, match="backend cuda: .*(no CUDA device|CUDA driver)"):
        rnnx.LSTM(input_size=3, hidden_size=5, backend="cuda")


def test_same_file_again_is_accepted_another_for_cuda_is_refused(rnnx_cuda, tmp_path):
    assert _rnnx.load_backend_plugin(rnnx_cuda.library_path()) == "cuda"
    copy = tmp_path / "librnnx_cuda.so"
    shutil.copy(rnnx_cuda.library_path(), copy)
    # The copy's RUNPATH no longer reaches NVIDIA's wheels: cuDNN may or may not be found
    # elsewhere, and either way the backend's plugin is already loaded from another file.
    with pytest.raises(rnnx.InvalidArgumentError, match=str(copy)):
        _rnnx.load_backend_plugin(str(copy))
