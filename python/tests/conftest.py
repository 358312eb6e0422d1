"""Shared fixtures for the rnnx Python tests: make sure the package under test is the one
the build assembled (ctest sets RNNX_EXPECT_BUILD_TREE), and tolerance formulas."""

import os

import numpy as np
import pytest

import rnnx


def pytest_report_header(config):
    info = rnnx.build_info()
    return (f"rnnx {rnnx.__version__} from {os.path.dirname(rnnx.__file__)} "
            f"({info['build_type']}, {info['cpu_isa_used']}, {info['gemm_engine']})")


@pytest.fixture(autouse=True, scope="session")
def _package_location():
    expected = os.environ.get("RNNX_EXPECT_BUILD_TREE")
    if expected:
        here = os.path.realpath(os.path.dirname(rnnx.__file__))
        assert here == os.path.realpath(expected), f"testing rnnx from {here}, not {expected}"


EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps}


def tolerance(dtype, depth):
    """Absolute tolerance for values of magnitude ~1 computed by two implementations that
    each accumulate `depth` rounded terms: each side's error is at most ~depth * eps in the
    worst case; 4x covers both sides and the activations' own rounding."""
    return 4.0 * depth * EPS[np.dtype(dtype).type]
