#!/usr/bin/env python3
"""int8 inference side by side (docs/int8.md, issue 48): one process, one problem at a time,
every variant on the same weights and inputs, rounds alternating, medians.

  rnnx fp32 / rnnx bf16 (math allow_conversion) / rnnx int8: rnnx.torch modules, eval, no_grad,
      weights kept across calls (the modules name their weights' version);
  torch.nn fp32, torch dynamic int8 (torch.ao.quantization.quantize_dynamic, qint8, the
      current engine: fbgemm/x86 on PyTorch from pip);
  ORT fp32 (ONNX LSTM/GRU) and ORT int8 (onnxruntime.quantization.quantize_dynamic, which
      turns LSTM nodes into com.microsoft DynamicQuantizeLSTM; ONNX has no GRU counterpart
      and no LSTM projection: those rows say n/a);
  oneDNN int8: rnnx_onednn_peer --dtype int8 (the build's bench/, Debian's oneDNN): its own
      process and data of the same shapes (x uniform in [-1, 1]), static quantisation
      calibrated on that known range, error against its own float32 primitive; LSTM and
      LSTMP only (no int8 linear-before-reset GRU).

Every sequence runs its full length (the peers' int8 paths take no ragged batches alike;
rnnx's own ragged figures are in bench/RESULTS.md). Threads: rnnx num_threads, torch
set_num_threads, ORT intra_op_num_threads, all the same. Errors: relative 2-norm of y
against torch.nn fp32. Run under the interpreter that has the peers (the pip environment:
$(./scripts/pip-env.sh)/bin/python bench/int8_peers.py). Prints a table; --json appends one
object per (case, threads, variant).

Where rnnx's int8 runs on AVX512-VNNI (no AMX), every variant's products run on the same
`vpdpbusd`: the run measures one core's rate on registers (rnnx_machine_peak's
int8-avx512-vnni loop) and gives each case its floor (the case's multiply-adds at threads x
that rate) and the fraction of it that rnnx int8 and the fastest int8 peer reach: the
arithmetic of what a ratio between them can be (docs/int8.md, "The bound without AMX").
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

# The variants share one process: threads that spin after their work (OpenMP's by default,
# ONNX Runtime's intra-op pool) would take the cores from the variant timed next.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import rnnx  # noqa: E402
import rnnx.onnx  # noqa: E402
import rnnx.torch as rt  # noqa: E402

CELLS = {
    "lstm": dict(cell="lstm", hidden=512, proj=0),
    "gru": dict(cell="gru", hidden=512, proj=0),
    "lstmp": dict(cell="lstm", hidden=1024, proj=256),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cells", default="lstm,gru,lstmp", help="of: " + ", ".join(CELLS))
    p.add_argument("--batches", default="8,16,32,64")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--seq", type=int, default=100)
    p.add_argument("--input", type=int, default=512)
    p.add_argument("--repeat", type=int, default=5, help="timed calls per measurement")
    p.add_argument("--rounds", type=int, default=3, help="measurements per variant, alternating")
    p.add_argument("--json", default=None, help="append JSON lines here")
    p.add_argument("--results", default=None,
                   help="write the run as the int8 section of this RESULTS.md (bench/RESULTS.md), "
                        "keeping run_all.py's sections")
    p.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    p.add_argument("--onednn-peer", default=default_tool("rnnx_onednn_peer"),
                   help="rnnx_onednn_peer (default: build/release/bench/ of this checkout); "
                        "'' shows it as n/a")
    p.add_argument("--machine-peak", default=default_tool("peak/rnnx_machine_peak"),
                   help="rnnx_machine_peak, for the int8 floor on AVX512-VNNI (default: "
                        "build/release/bench/peak/ of this checkout); '' leaves the floor out")
    args = p.parse_args(argv)
    for flag, path, built in (("--onednn-peer", args.onednn_peer, "rnnx_onednn_peer"),
                              ("--machine-peak", args.machine_peak, "peak/rnnx_machine_peak")):
        if path and not os.access(path, os.X_OK):
            p.error(f"{flag} {path!r} is not an executable file "
                    f"(build/release/bench/{built}, or '' to leave it out)")
    return args


def default_tool(name):
    """bench/<name> in this checkout's release build, or '' where it is not built."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.normpath(os.path.join(here, "..", "build", "release", "bench", name))
    return path if os.path.exists(path) else ""


def multiply_adds(cell, T, B, I, H, P):
    """The multiply-adds of one inference call: every step's products of every row (LSTM: four
    gates, GRU: three, over the input and the recurrent state; a projection's P x H more)."""
    gates = 4 if cell == "lstm" else 3
    recurrent = P if P else H
    return T * B * (gates * H * (I + recurrent) + P * H)


def int8_core_rate(tool):
    """(GOP/s of one core's vpdpbusd loop, None) where rnnx's int8 runs on AVX512-VNNI, else
    (None, why). Operations count 2 per multiply-add, as rnnx_machine_peak reports them."""
    import subprocess
    kernel = rnnx.build_info()["int8_gemm"]
    if kernel != "avx512-vnni":
        return None, f"int8 on {kernel}: no register loop of its instruction to bound it"
    if not tool:
        return None, "no rnnx_machine_peak (build bench/, or give --machine-peak)"
    out = subprocess.run([tool, "--threads", "1", "--repeat", "5", "--json"], capture_output=True,
                         text=True)
    for line in out.stdout.splitlines():
        rec = json.loads(line) if line.startswith("{") else {}
        if rec.get("kind") == "int8-avx512-vnni" and "gflops" in rec:
            return rec["gflops"], None
    return None, f"rnnx_machine_peak exit {out.returncode} gave no int8-avx512-vnni rate"


def onednn_int8(peer, cell, T, B, I, H, P, threads, repeat):
    """(ms median, error vs its float32) of oneDNN's int8 primitive, or a 'n/a ...' string.
    Its own process, with the OpenMP wait policy it would have alone."""
    import subprocess
    if not peer:
        return "n/a (no rnnx_onednn_peer: build the bench/ folder, or give --onednn-peer)"
    cmd = [peer, "--cell", cell, "--input", str(I), "--hidden", str(H), "--batch", str(B),
           "--seq", str(T), "--dtype", "int8", "--mode", "infer", "--threads", str(threads),
           "--repeat", str(repeat), "--warmup", "3", "--json"]
    if P:
        cmd += ["--proj", str(P)]
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    recs = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if not recs:
        return f"n/a (rnnx_onednn_peer exit {out.returncode}: {out.stderr.strip()[:120]})"
    if "error" in recs[0]:
        return f"n/a ({recs[0]['error'][:120]})"
    return recs[0]["ms_median"], recs[0]["err_vs_float32"]


def float_module(cell, I, H, P):
    torch.manual_seed(0)
    if cell == "lstm":
        return torch.nn.LSTM(I, H, proj_size=P).eval()
    return torch.nn.GRU(I, H).eval()


def rnnx_module(m, math, threads):
    twin = rt._torch_quantize.twin(m, (rt.LSTM, rt.GRU, rt.RNN), math=math)
    twin._rnnx_num_threads = threads
    twin._rnnx_new_engines()
    return twin


def torch_int8(m):
    """PyTorch's dynamic quantized twin of m (quantize_dynamic replaces children only: m goes
    in a container)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecation notice
            q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(m), {type(m)},
                                                       dtype=torch.qint8)[0]
    except Exception as e:  # no engine, or a configuration the peer lacks
        return f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
    if type(q) is type(m):
        return "n/a (quantize_dynamic left the module in float)"
    return q


def onnx_model(m, cell, I, H, path):
    """An ONNX LSTM/GRU node with m's weights (ONNX gate orders via rnnx.onnx)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    W, R, B = rnnx.onnx.state_dict_to_onnx(cell, sd, H)[:3]
    attrs = dict(hidden_size=H)
    if cell == "gru":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(cell.upper(), ["X", "W", "R", "B"],
                            ["Y", "Y_h"] + (["Y_c"] if cell == "lstm" else []), **attrs)
    graph = helper.make_graph(
        [node], "rnn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a.astype(np.float32), n)
                     for a, n in ((W, "W"), (R, "R"), (B, "B"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_variants(m, cell, I, H, P, threads, tmp):
    """{"ORT fp32": fn, "ORT int8": fn or 'n/a ...'}."""
    if P > 0:
        na = "n/a (ONNX's LSTM has no projection)"
        return {"ORT fp32": na, "ORT int8": na}
    from onnxruntime.quantization import QuantType, quantize_dynamic
    fp = onnx_model(m, cell, I, H, os.path.join(tmp, f"{cell}.onnx"))
    out = {"ORT fp32": ort_session(fp, threads)}
    if cell != "lstm":
        out["ORT int8"] = "n/a (ONNX Runtime has no DynamicQuantizeGRU)"
        return out
    q = os.path.join(tmp, f"{cell}_int8.onnx")
    quantize_dynamic(fp, q, weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"],
                     per_channel=True)
    import onnx
    ops = {n.op_type for n in onnx.load(q).graph.node}
    if "DynamicQuantizeLSTM" not in ops:
        out["ORT int8"] = f"n/a (quantize_dynamic made {sorted(ops)})"
    else:
        out["ORT int8"] = ort_session(q, threads)
    return out


def runner(v, x):
    """A call of variant v on x, returning y as a tensor."""
    if isinstance(v, torch.nn.Module):
        def call():
            with torch.no_grad():
                return v(x)[0]
        return call
    xn = x.numpy()

    def call():
        return torch.from_numpy(v.run(["Y"], {"X": xn})[0])
    return call


def to_tbh(y, T, B):
    """ONNX's Y [T, D, B, H] as [T, B, D*H]."""
    if y.dim() == 4:
        return y.permute(0, 2, 1, 3).reshape(T, B, -1)
    return y


def main(argv=None):
    args = parse_args(argv)
    T, I = args.seq, args.input
    started = time.time()
    rows = []
    print(f"rnnx {rnnx.__version__}, torch {torch.__version__} (quantized engine "
          f"{torch.backends.quantized.engine}), int8 kernel {rnnx.build_info()['int8_gemm']}, "
          f"bf16 kernel {rnnx.build_info()['bf16_gemm']}, ISA {rnnx.build_info()['cpu_isa_used']}")
    rate, no_rate = int8_core_rate(args.machine_peak)
    print(f"int8 rate of one core: {rate:.1f} GOP/s (rnnx_machine_peak, int8-avx512-vnni)"
          if rate else f"int8 floor: n/a ({no_rate})")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cells.split(","):
            spec = CELLS[name]
            cell, H, P = spec["cell"], spec["hidden"], spec["proj"]
            m = float_module(cell, I, H, P)
            for threads in [int(t) for t in args.threads.split(",")]:
                torch.set_num_threads(threads)
                variants = {"rnnx fp32": rnnx_module(m, "fp32", threads),
                            "rnnx bf16": rnnx_module(m, "allow_conversion", threads),
                            "rnnx int8": rnnx_module(m, "int8", threads),
                            "torch.nn fp32": m, "torch int8": torch_int8(m)}
                if not args.no_ort:
                    variants.update(ort_variants(m, cell, I, H, P, threads, tmp))
                for B in [int(b) for b in args.batches.split(",")]:
                    x = torch.randn(T, B, I, generator=torch.Generator().manual_seed(B))
                    calls = {}
                    for k, v in list(variants.items()):
                        if isinstance(v, str):
                            continue
                        try:
                            runner(v, x)()
                            calls[k] = runner(v, x)
                        except Exception as e:  # a peer that refuses the configuration
                            variants[k] = (f"n/a ({type(e).__name__}: "
                                           f"{str(e).splitlines()[0][:80]})")
                    ref = calls["torch.nn fp32"]()
                    err = {k: float((to_tbh(c(), T, B) - ref).norm() / ref.norm())
                           for k, c in calls.items()}
                    times = {k: [] for k in calls}
                    dnn = {"ms": [], "err": None, "na": None}
                    for _ in range(args.rounds):
                        if args.onednn_peer is not None and dnn["na"] is None:
                            r = onednn_int8(args.onednn_peer, cell, T, B, I, H, P, threads,
                                            args.repeat)
                            if isinstance(r, str):
                                dnn["na"] = r
                            else:
                                dnn["ms"].append(r[0])
                                dnn["err"] = r[1]
                        for k, c in calls.items():
                            for _ in range(3):  # warm: rnnx keeps its packed weights at call 2
                                c()
                            ts = []
                            for _ in range(args.repeat):
                                t0 = time.perf_counter()
                                c()
                                ts.append(time.perf_counter() - t0)
                            times[k].append(statistics.median(ts) * 1e3)
                    case = f"{name}_t{T}_b{B}_i{I}_h{H}" + (f"_p{P}" if P else "")
                    med = {k: statistics.median(v) for k, v in times.items()}
                    print(f"\n{case} threads={threads}")
                    shown = dict(variants)
                    if dnn["ms"]:
                        med["oneDNN int8"] = statistics.median(dnn["ms"])
                        times["oneDNN int8"] = dnn["ms"]
                        err["oneDNN int8"] = dnn["err"]
                        shown["oneDNN int8"] = None
                    elif dnn["na"]:
                        shown["oneDNN int8"] = dnn["na"]
                    int8_peers = [med[k] for k in ("torch int8", "ORT int8", "oneDNN int8")
                                  if k in med]
                    for k, v in shown.items():
                        if isinstance(v, str):
                            print(f"  {k:<14} {v}")
                            rows.append(dict(case=case, threads=threads, variant=k, note=v))
                            continue
                        line = f"  {k:<14} {med[k]:9.2f} ms  err {err[k]:.2e}"
                        if k == "oneDNN int8":
                            line += " (vs its float32)"
                        if k != "rnnx int8":
                            line += f"  rnnx int8 {med[k] / med['rnnx int8']:5.2f}x faster"
                        print(line)
                        errkey = "err_vs_own_fp32" if k == "oneDNN int8" else "err_vs_torch_fp32"
                        rows.append(dict(case=case, threads=threads, variant=k, ms_median=med[k],
                                         ms_rounds=times[k], **{errkey: err[k]}))
                    if int8_peers:
                        print(f"  int8 vs fastest int8 peer: {min(int8_peers) / med['rnnx int8']:.2f}x, "
                              f"vs rnnx fp32 {med['rnnx fp32'] / med['rnnx int8']:.2f}x, "
                              f"vs rnnx bf16 {med['rnnx bf16'] / med['rnnx int8']:.2f}x")
                    if rate:
                        floor = 2 * multiply_adds(cell, T, B, I, H, P) / (rate * threads) / 1e6
                        rows.append(dict(case=case, threads=threads, variant="int8 floor",
                                         ms_median=floor, core_gops=rate))
                        line = (f"  int8 floor {floor:.2f} ms ({threads} x {rate:.0f} GOP/s): "
                                f"rnnx int8 at {100 * floor / med['rnnx int8']:.0f}%")
                        if int8_peers:
                            best = 100 * floor / min(int8_peers)
                            line += (f", fastest peer at {best:.0f}%; 1.5x that peer needs "
                                     f"{1.5 * best:.0f}%")
                        print(line)
                    sys.stdout.flush()
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    if args.results:
        write_section(args, rows, time.time() - started, rate, no_rate)
    return 0


VARIANTS = ["rnnx fp32", "rnnx bf16", "rnnx int8", "torch.nn fp32", "torch int8", "ORT fp32",
            "ORT int8", "oneDNN int8"]


def write_section(args, rows, seconds, rate, no_rate):
    """RESULTS.md's int8 section: the machine, the command, and per (case, threads) the
    medians of every variant and rnnx int8's ratios."""
    import datetime
    import platform
    import shlex
    import subprocess
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run_all  # its section format, so that its runs keep this section

    info = rnnx.build_info()
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                             "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    # One section per int8 kernel (AMX-INT8 tiles, AVX512-VNNI, ...): a run on another kind
    # of machine adds its table beside the others rather than replacing them.
    kernel = info["int8_gemm"]
    key = "int8" if kernel == "amx-int8" else f"int8-{kernel}"
    title = ("## int8 inference (issue 48)" if key == "int8"
             else f"## int8 inference on {kernel} (issue 48)")
    lines = [title, "",
             f"* Date: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} "
             f"(took {seconds / 60:.1f} min); commit {commit or 'unknown'}",
             f"* CPU: {run_all.cpu_model()}, {os.cpu_count()} logical CPUs, features "
             f"{info['cpu_features']}; Python {platform.python_version()}",
             f"* rnnx {rnnx.__version__}: int8 on {info['int8_gemm']}, bf16 on "
             f"{info['bf16_gemm']}, ISA {info['cpu_isa_used']} (native); torch "
             f"{torch.__version__} (quantized engine {torch.backends.quantized.engine}); "
             f"onnxruntime {ort_version()}",
             f"* Command: `{shlex.join([os.path.basename(sys.executable)] + sys.argv)}`",
             f"* {args.rounds} rounds, variants in turn, each the median of {args.repeat} calls; "
             "the table: the median round, ms; full lengths, T = "
             f"{args.seq}, I = {args.input}; OMP_WAIT_POLICY "
             f"{os.environ.get('OMP_WAIT_POLICY')}, ONNX Runtime without spinning",
             "* err: relative 2-norm of y against torch.nn float32 (oneDNN: against its own "
             "float32 primitive on its own data, x uniform in [-1, 1])",
             "* oneDNN int8: `rnnx_onednn_peer --dtype int8`, Debian's oneDNN "
             f"{onednn_version()}, its own process (default OpenMP wait policy), static "
             "quantisation calibrated on the data's known range (scale and shift fixed at "
             "build: an advantage the dynamic peers do not have)",
             "* int8 floor: " + (
                 f"the case's multiply-adds at threads x {rate:.1f} GOP/s, one core's "
                 "`vpdpbusd` loop on registers (`rnnx_machine_peak`, int8-avx512-vnni, measured "
                 "at the run's start); % of floor: the floor over the variant's time; 1.5x "
                 "needs: the % of the floor that a time 1.5x below the fastest int8 peer's "
                 "would take" if rate else f"n/a ({no_rate})"), "",
             "| case | threads | " + " | ".join(VARIANTS) +
             " | int8 / fp32 | int8 / bf16 | int8 / best int8 peer | err rnnx int8 | err ORT int8 "
             "| err torch int8 | err oneDNN int8 | int8 floor | rnnx int8 % of floor "
             "| best peer % of floor | 1.5x needs |",
             "|" + "---|" * (len(VARIANTS) + 13)]
    by = {}
    for r in rows:
        by.setdefault((r["case"], r["threads"]), {})[r["variant"]] = r
    for (case, threads), v in by.items():
        def ms(k):
            return v[k]["ms_median"] if k in v and "ms_median" in v[k] else None

        def cell(k):
            return f"{ms(k):.2f}" if ms(k) is not None else "n/a"

        q = ms("rnnx int8")
        peers = [m for m in (ms("torch int8"), ms("ORT int8"), ms("oneDNN int8")) if m is not None]
        err = [f"{v[k]['err_vs_torch_fp32']:.1e}" if k in v and "err_vs_torch_fp32" in v[k]
               else "n/a" for k in ("rnnx int8", "ORT int8", "torch int8")]
        err.append(f"{v['oneDNN int8']['err_vs_own_fp32']:.1e}"
                   if "err_vs_own_fp32" in v.get("oneDNN int8", {}) else "n/a")
        floor = ms("int8 floor")
        bound = ["n/a"] * 4
        if floor is not None:
            bound = [f"{floor:.2f}", f"{100 * floor / q:.0f}%"]
            bound += ([f"{100 * floor / min(peers):.0f}%", f"{150 * floor / min(peers):.0f}%"]
                      if peers else ["n/a", "n/a"])
        lines.append(f"| {case} | {threads} | " + " | ".join(cell(k) for k in VARIANTS) +
                     f" | {ms('rnnx fp32') / q:.2f} | {ms('rnnx bf16') / q:.2f} | "
                     f"{(min(peers) / q) if peers else float('nan'):.2f} | " + " | ".join(err) +
                     " | " + " | ".join(bound) + " |")
    lines += ["", "n/a: the peer has no such operator (ONNX Runtime: no DynamicQuantizeGRU, no "
              "LSTM projection; PyTorch's dynamic LSTM refuses proj_size at its first call; "
              "oneDNN: no int8 linear-before-reset GRU)."]
    sections = run_all.read_sections(args.results)
    sections[key] = "\n".join(lines)
    run_all.write_sections(args.results, sections)


def onednn_version():
    """The oneDNN the peer links (Debian's package), or 'n/a'."""
    import subprocess
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libdnnl2"], capture_output=True,
                         text=True)
    return out.stdout.strip() or "n/a"


def ort_version():
    try:
        import onnxruntime
        return onnxruntime.__version__
    except ImportError:
        return "n/a"


if __name__ == "__main__":
    sys.exit(main())
