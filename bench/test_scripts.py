#!/usr/bin/env python3
"""Unit tests of the benchmark drivers' logic that the smoke runs never reach: the issue's
targets in run_all.py (they apply from B >= 32 only, and the smoke problems are smaller, and
differ per ISA section), its sections of RESULTS.md and its PyTorch peers, and
contention.py's refusals of option combinations it cannot measure. Standard library only.

    python3 bench/test_scripts.py
"""
import argparse
import contextlib
import io
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contention  # noqa: E402
import run_all  # noqa: E402


def row(threads, pct_fma, x_onednn=None, x_best_peer=None):
    return {"threads": threads, "pct_fma": pct_fma, "x_onednn": x_onednn,
            "x_best_peer": x_best_peer}


class Targets(unittest.TestCase):
    def test_small_batches_have_none(self):
        self.assertEqual(run_all.targets(row(1, 90, x_onednn=2.0), "full", True, 31), [])

    def test_full_batch_against_onednn_per_thread_count(self):
        (label, ok, takes), = run_all.targets(row(1, 92, x_onednn=1.0), "full", True, 64)
        self.assertEqual(label, "dnn>=1.15@1t")
        self.assertFalse(ok)
        # oneDNN runs the same FLOPs at 92% of the peak: 1.15x that is 105.8%.
        self.assertAlmostEqual(takes, 92 * 1.15)
        (label, ok, _), = run_all.targets(row(2, 90, x_onednn=1.06), "full", True, 64)
        self.assertEqual((label, ok), ("dnn>=1.05@2t", True))
        # No target for thread counts the issue does not name.
        self.assertEqual(run_all.targets(row(4, 90, x_onednn=1.0), "full", True, 64), [])

    def test_ragged_against_the_fastest_peer(self):
        (label, ok, takes), = run_all.targets(row(2, 60, x_best_peer=3.0), "longtail", False, 32)
        self.assertEqual(label, "peers>=3.5")
        self.assertFalse(ok)
        self.assertAlmostEqual(takes, 70.0)
        (label, ok, _), = run_all.targets(row(1, 60, x_best_peer=2.0), "uniform", False, 32)
        self.assertEqual((label, ok), ("peers>=2", True))

    def test_unmeasured_peer_is_not_a_miss(self):
        (label, ok, takes), = run_all.targets(row(1, 90), "uniform", False, 64)
        self.assertIsNone(ok)
        self.assertIsNone(takes)
        self.assertEqual(run_all.target_cell((label, ok, takes)), "peers>=2:n/a")

    def test_cells(self):
        self.assertEqual(run_all.target_cell(("dnn>=1.15@1t", True, 80.0)), "dnn>=1.15@1t:ok")
        self.assertEqual(run_all.target_cell(("dnn>=1.15@1t", False, 104.4)),
                         "dnn>=1.15@1t:MISS (takes 104% fma)")
        self.assertEqual(run_all.target_cell(("peers>=2", False, None)), "peers>=2:MISS")

    def test_summary_counts_misses_beyond_the_roofline(self):
        rows = [{"targets": [("a", True, 90.0)]},
                {"targets": [("a", False, 99.6)]},   # rounds to 100: beyond
                {"targets": [("a", False, 99.4)]},   # within
                {"targets": [("a", False, None)]},   # no FMA peak measured: not counted
                {"targets": [("b", None, None)]},
                {"targets": []}]
        self.assertEqual(run_all.target_summary(rows), [
            "a: 1 met, 3 missed (1 of them would take 100% of the f32 FMA peak or more), "
            "0 not measured",
            "b: 0 met, 0 missed (0 of them would take 100% of the f32 FMA peak or more), "
            "1 not measured"])


class IsaSections(unittest.TestCase):
    def test_avx2_targets_are_issue_25s(self):
        (label, ok, _), = run_all.targets(row(1, 90, x_onednn=1.06), "full", True, 64, "avx2")
        self.assertEqual((label, ok), ("dnn>=1.05@1t", True))
        (label, ok, _), = run_all.targets(row(1, 60, x_best_peer=1.9), "uniform", False, 32, "avx2")
        self.assertEqual((label, ok), ("peers>=2", False))
        # Issue #25 sets no long-tail target on AVX2; a level without targets has none.
        self.assertEqual(run_all.targets(row(1, 60, x_best_peer=1.0), "longtail", False, 32,
                                         "avx2"), [])
        self.assertEqual(run_all.targets(row(1, 60, x_onednn=1.0), "full", True, 64,
                                         "scalar"), [])

    def test_a_run_keeps_the_other_sections(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "RESULTS.md")
            # A file from before sections, measured on AVX-512, becomes that section.
            with open(path, "w") as f:
                f.write("# rnnx benchmark results\n\n* CPU: X, 2 logical CPUs, flags avx2 fma "
                        "avx512f\n\n## Results\n\n| a |\n")
            sections = run_all.read_sections(path)
            self.assertEqual(list(sections), ["avx512"])
            self.assertIn("### Results", sections["avx512"])
            sections["avx2"] = "## AVX2 + FMA (native)\n\nthe avx2 table"
            run_all.write_sections(path, sections)
            again = run_all.read_sections(path)
            self.assertEqual(again["avx2"], sections["avx2"])
            self.assertEqual(again["avx512"], sections["avx512"])
            # A level that cannot run here: its earlier table stays; without one, it says so.
            run_all.write_unavailable(path, "avx512", "no AVX-512 here")
            self.assertEqual(run_all.read_sections(path)["avx512"], sections["avx512"])
            os.remove(path)
            run_all.write_unavailable(path, "avx512", "no AVX-512 here")
            with open(path) as f:
                text = f.read()
            self.assertIn("Not available here: no AVX-512 here.", text)
            self.assertIn("Not available here: no run on a machine with AVX2 + FMA yet.", text)

    def test_a_capped_run_has_a_section_of_its_own(self):
        args = argparse.Namespace(isa="avx2")
        with mock.patch.object(run_all, "machine_isa", return_value="avx512"):
            level, how, key = run_all.section_of(args)
            self.assertEqual((level, key), ("avx2", "avx2-capped"))
            self.assertIn("RNNX_CPU_ISA=avx2", how)
            args.isa = "native"
            self.assertEqual(run_all.section_of(args), ("avx512", "native", "avx512"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "RESULTS.md")
            sections = {"avx2": "## AVX2 + FMA (native)\n\nthe native table",
                        "avx2-capped": "## AVX2 + FMA (capped)\n\nthe capped table"}
            run_all.write_sections(path, sections)
            again = run_all.read_sections(path)
            self.assertEqual(again["avx2"], sections["avx2"])
            self.assertEqual(again["avx2-capped"], sections["avx2-capped"])
            with open(path) as f:
                text = f.read()
            self.assertLess(text.index("the native table"), text.index("the capped table"))
            # A section of a name the list does not know is kept, never dropped.
            sections["some-other"] = "## Other\n\nanother table"
            run_all.write_sections(path, sections)
            self.assertEqual(run_all.read_sections(path)["some-other"], sections["some-other"])

    def test_every_python_gives_a_pair_of_peers_and_columns(self):
        self.assertEqual(run_all.torch_peers(["a", "b"]),
                         ["torch-padded", "torch-packed", "torch2-padded", "torch2-packed"])
        saved = list(run_all.PEERS)
        try:
            run_all.PEERS[:] = ["onednn"] + run_all.torch_peers(["a", "b"])
            names = [c[0] for c in run_all.columns()]
            self.assertIn("x2pt-pad", names)
            self.assertIn("x2pt-pack", names)
            self.assertLess(names.index("x2pt-pack"), names.index("ragged"))
        finally:
            run_all.PEERS[:] = saved

    def test_rounds_keep_each_runners_median_round(self):
        rounds = [{"infer": {"mode": "infer", "ms_median": ms, "ms_min": ms - 1, "ms_max": ms + 1}}
                  for ms in (30.0, 10.0, 20.0)]
        rounds[1]["fwdbwd"] = {"mode": "fwdbwd", "error": "out of memory"}
        got = run_all.combine_rounds(rounds)
        self.assertEqual(got["infer"]["ms_median"], 20.0)
        self.assertEqual(got["infer"]["ms_rounds"], [30.0, 10.0, 20.0])
        self.assertEqual((got["infer"]["ms_min"], got["infer"]["ms_max"]), (9.0, 31.0))
        self.assertEqual(got["fwdbwd"], {"mode": "fwdbwd", "error": "out of memory"})
        # A failed round is left out, not counted as a time.
        rounds[2]["infer"] = {"mode": "infer", "error": "killed"}
        self.assertEqual(run_all.combine_rounds(rounds)["infer"]["ms_median"], 20.0)
        self.assertEqual(run_all.combine_rounds([]), {})

    def test_rounds_take_the_runners_in_turn(self):
        jobs = ["rnnx", "onednn", "torch-padded"]
        firsts = [run_all.rotated(jobs, k)[0] for k in range(3)]
        self.assertEqual(sorted(firsts), sorted(jobs))
        for k in range(4):
            self.assertEqual(sorted(run_all.rotated(jobs, k)), sorted(jobs))
        self.assertEqual(run_all.rotated([], 2), [])

    def test_rounds_must_be_positive(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
            run_all.parse_args(["--build", "b", "--rounds", "0"])
        self.assertIn("--rounds: 0", err.getvalue())
        self.assertEqual(run_all.parse_args(["--build", "b"]).rounds, 1)


class ContentionOptions(unittest.TestCase):
    def refused(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            contention.parse_args(argv)
        self.assertEqual(cm.exception.code, 2)
        return err.getvalue()

    def test_projection_only_with_lstm(self):
        self.assertIn("--proj (= 64) must be >= 0, and > 0 only with --cell lstm",
                      self.refused(["--cell", "gru", "--proj", "64"]))
        self.assertIn("--proj (= -1)", self.refused(["--proj", "-1"]))
        self.assertEqual(contention.parse_args(["--proj", "64"]).proj, 64)

    def test_original_gru_has_no_torch_peer(self):
        msg = self.refused(["--cell", "gru-orig"])
        self.assertIn("PyTorch has no original GRU", msg)
        self.assertIn("--engines rnnx,onednn", msg)
        a = contention.parse_args(["--cell", "gru-orig", "--engines", "rnnx,onednn"])
        self.assertEqual((a.cell, a.engines), ("gru-orig", ["rnnx", "onednn"]))

    def test_other_refusals_name_the_value(self):
        self.assertIn("'sideways' is not one of", self.refused(["--modes", "sideways"]))
        self.assertIn("'mkl' is not one of", self.refused(["--engines", "mkl"]))
        self.assertIn("'X' is not VAR=VALUE", self.refused(["--rnnx-env", "X"]))
        self.assertIn("--reps and --repeat must be >= 1", self.refused(["--repeat", "-2"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
