"""Shared fixtures for the rnnx Python tests: make sure the package under test is the one
the build assembled (ctest sets RNNX_EXPECT_BUILD_TREE), and the tolerance rule."""

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


def tolerance(config, T, B, backward=False):
    """The bound for comparing rnnx with another implementation of the same equations
    (PyTorch, ONNX's equations, the reference backend): rnnx.error_bound, the library's one
    definition (include/rnnx/error_bound.hpp), for each side, so twice it. `config` is an
    rnnx.Config (a module's .config) or the keyword arguments of one."""
    if isinstance(config, dict):
        config = rnnx.Config(**config)
    return 2.0 * rnnx.error_bound(config, T, B, backward)


def assert_near(got, want, tol, what=""):
    """The rule of the C++ tests' near(): |got - want| <= tol * (max(1, max |want|) + |want|),
    the absolute part relative to the tensor's scale (an element small after cancellation
    carries the rounding of its large terms)."""
    got = np.asarray(got.detach().numpy() if hasattr(got, "detach") else got, np.float64)
    want = np.asarray(want.detach().numpy() if hasattr(want, "detach") else want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    finite = want[np.isfinite(want)]
    scale = max(1.0, float(np.abs(finite).max()) if finite.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def norm_tolerance(config, T, B, backward=False):
    """The bound for comparing, in norm, a run whose products convert to bf16 (math mode
    allow_conversion) with a float32 run or the reference: each side's own bound, summed:
    rnnx.norm_error_bound for the converting side (include/rnnx/error_bound.hpp) and
    rnnx.error_bound's float32 bound for the other."""
    if isinstance(config, dict):
        config = rnnx.Config(**config)
    return rnnx.norm_error_bound(config, T, B, backward) + rnnx.error_bound(config, T, B, backward)


def assert_near_in_norm(got, want, bound, what=""):
    """The rule of the C++ tests' near_in_norm(), benchdnn's for bf16: ||got - want||_2 /
    max(||want||_2, tiny) <= bound over the whole tensor's finite elements (a non-finite
    element of want must match exactly)."""
    got = np.asarray(got.detach().numpy() if hasattr(got, "detach") else got, np.float64)
    want = np.asarray(want.detach().numpy() if hasattr(want, "detach") else want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=what)
    err = np.linalg.norm(got[finite] - want[finite]) / max(np.linalg.norm(want[finite]),
                                                           np.finfo(np.float64).tiny)
    assert err <= bound, f"{what}: relative 2-norm error {err:.3g} > bound {bound:.3g}"
