"""The CPU level rnnx detects, as the process sees it: the features it reports imply the
level, and where RNNX_TEST_EXPECT_ISA names one (scripts/test-qemu-levels.sh runs this file
under qemu's -cpu Westmere and -cpu Haswell) it is that level."""

import os

import rnnx

LEVELS = ["scalar", "avx2", "avx512", "avx512-bf16"]


def test_detected_level_follows_the_reported_features():
    info = rnnx.build_info()
    flags = set(info["cpu_features"].split())
    avx2 = {"avx2", "fma"} <= flags
    avx512 = avx2 and {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
    want = ("avx512-bf16" if avx512 and "avx512-bf16" in flags else
            "avx512" if avx512 else "avx2" if avx2 else "scalar")
    assert info["cpu_isa_detected"] == want, info


def test_expected_level():
    want = os.environ.get("RNNX_TEST_EXPECT_ISA")
    info = rnnx.build_info()
    if want is None:
        assert info["cpu_isa_detected"] in LEVELS
        return
    assert info["cpu_isa_detected"] == want, info
    assert info["cpu_isa_used"] == want, info
