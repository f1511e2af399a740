"""Decoding time at large N: N = 1024 workers, K = 64 inputs, m = 10 outputs, 900 results.

    python benchmarks/decode_speed.py [--calls 20] [--against DIR | --profile]
    python benchmarks/decode_speed.py --scaling [--sizes 2048 4096 8192 16384] [--against DIR]

Each call decodes a new random received set (so no cached decoder is reused) of digits-MLP
results, including the automatic choice of lambda (the first decode of a code is reported
apart): the median wall time and the mean CPU time of this process per decode (the steadier
figure on a shared machine). For letcc and gcc it also decodes with the global (dense) smoother,
timed the same way, and prints the windowed result's difference from it (energy relative to
f(X), in dB) and which windows computed it. Encoding reuses the code's cached encoder matrix:
one (N x K) @ (K x d) product per trial. gcc runs twice: with its default lengthscale "auto"
(chosen per decode with lambda, on sample windows: windowed_lengthscale.py) and with a fixed
0.1, the best fixed value at K = 64 before "auto" existed.

``--against DIR`` decodes the same received sets with gcc_mpi from another checkout too, imported
next to this one in the same process, the two alternating call by call (so that the load of a
shared machine hits both alike), and prints both sides' figures, their ratio and whether the two
decoded the same bits with the same choices. ``--small`` measures the digits-mlp point of
benchmarks/simulator_speed.py instead (K = 10, N = 40, 30 random results; exact decoders, with
fixed-lengthscale rows). ``--profile`` prints instead where gcc's decodes
(lengthscale "auto") spend their time: cProfile's functions by own time, the reference fits left
out.

``--scaling`` times letcc and gcc (lengthscale "auto") at several N instead (``--sizes``; K = 64,
a random 88% of the results, as 900 of 1024 above), ``--calls`` decodes of new received sets
each after one that sizes the windows: mean CPU time per decode, the nmse over those decodes,
and the exponent of a least-squares line through log(CPU) against log(N). With ``--against DIR``
the other checkout decodes the same sets in turn, and both are printed.
"""

import argparse
import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

from common import JOBS, point_setup  # first: it keeps BLAS single-threaded before numpy loads

import numpy as np

from gcc_mpi.codes.lengthscale import LengthscaleSmoother
from gcc_mpi.codes.kernel_smoother import KernelSmoother
from gcc_mpi.codes.windowed import WindowedSmoother
from gcc_mpi.codes.windowed_lengthscale import WindowedLengthscaleSmoother

N, K, RECEIVED = 1024, 64, 900
SCHEMES = [("bacc", []), ("letcc", []), ("gcc", []), ("gcc", ["code.gcc.lengthscale=0.1"])]
# --small: the simulator's digits-mlp point (K = 10, N = 40, S = 10), exact decoders
SMALL = (40, 10, 30, [("letcc", []), ("gcc", []), ("gcc", ["code.gcc.lengthscale=1.0"]),
                      ("gcc-manifold", []),
                      ("gcc-manifold", ["code.gcc-manifold.lengthscale=1.0"])])


def reference(code, received, Y):
    """(decoded by the global smoother at the decoder's own choice, what computed the windowed
    decode) for the sorted ``received``."""
    smoother = code.decoder(received)
    if isinstance(smoother, WindowedLengthscaleSmoother):  # gcc: at the chosen lengthscale
        choice = code.choose(smoother, Y, "dec")  # as the decode chose
        exact = LengthscaleSmoother(code.beta[received], code.alpha, code.kernel,
                                    [choice.lengthscale])
        fit = "exact" if choice.exact else smoother.smoother(choice.index).last_fit
        return exact.apply(Y, exact.fixed(0, choice.lam)), fit  # the same (lengthscale, lambda)
    if isinstance(smoother, WindowedSmoother):
        exact = KernelSmoother(code.beta[received], code.alpha, code.kernel, code.null_dim)
        return exact.apply(Y, exact.loo(Y)), smoother.last_fit
    return None, None


def overrides(name, extra):
    """The --set overrides of a row: digits-mlp at this N and K, one scheme, ``extra``."""
    return [f"code.workers={N}", f"data.batch={K}", f'code.schemes=["{name}"]', *extra]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def measure(calls):
    """{row: figures} of every scheme row (see the module docstring)."""
    rows = {}
    for name, extra in SCHEMES:
        setup, i = point_setup("digits-mlp", overrides(name, extra))
        code = setup.codes[name]
        X, Y_true, _ = setup.inputs(i, 0)
        (coded, facts), t_enc = timed(lambda: code.encode(X))
        alpha = facts.get("alpha")  # gcc-manifold's trial alpha: where the decoder evaluates
        Y_all = setup.target(coded)
        rng = np.random.default_rng(0)
        first = rng.permutation(N)[:RECEIVED]  # once per code: sizes the windows (not timed below)
        _, t_first = timed(lambda: code.decode(first, Y_all[first]))
        times, cpu, paths, diffs, errs, global_times, chosen = [], 0.0, {}, [], [], [], {}
        for _ in range(calls):
            received = rng.permutation(N)[:RECEIVED]
            c0 = time.process_time()
            (Y_hat, info), t = timed(lambda: code.decode(received, Y_all[received], alpha))
            cpu += time.process_time() - c0
            times.append(t)
            errs.append(np.sum((Y_hat - Y_true) ** 2) / np.sum(Y_true**2))
            order = np.sort(received)
            t0 = time.perf_counter()
            ref, fit = reference(code, order, Y_all[order])
            if ref is not None:
                global_times.append(time.perf_counter() - t0)
                paths[fit] = paths.get(fit, 0) + 1
                diffs.append(np.sum((Y_hat - ref) ** 2) / np.sum(Y_true**2))
            if "lengthscale_dec" in info:
                key = str(round(info["lengthscale_dec"], 4))
                chosen[key] = chosen.get(key, 0) + 1
        label = name + (" " + " ".join(extra) if extra else "")
        rows[label] = {
            "p50": 1e3 * np.median(times), "p90": 1e3 * np.quantile(times, 0.9),
            "cpu": 1e3 * cpu / calls, "first": 1e3 * t_first, "encode": 1e3 * t_enc,
            "nmse": 10 * np.log10(np.mean(errs)),
            "global": 1e3 * np.median(global_times) if global_times else None,
            "diff": 10 * np.log10(np.mean(diffs) + 1e-300) if diffs else None,
            "paths": paths, "chosen": chosen}
    return rows


def show(label, r):
    line = (f"  {label:38s} decode {r['p50']:7.2f} ms (p90 {r['p90']:6.2f}, cpu {r['cpu']:6.2f})"
            f"   first {r['first']:6.1f} ms   encode {r['encode']:5.2f} ms"
            f"   nmse {r['nmse']:6.1f} dB")
    if r["global"] is not None:
        line += (f"\n{'':42s}global smoother {r['global']:6.1f} ms,"
                 f" windowed - global {r['diff']:6.1f} dB")
        line += ", computed by: " + ", ".join(f"{k} {v}x" for k, v in r["paths"].items())
    if r["chosen"]:
        line += "\n" + " " * 42 + "lengthscale chosen: " + ", ".join(
            f"{k} {v}x" for k, v in r["chosen"].items())
    print(line)


def load_checkout(path):
    """The gcc_mpi package of another checkout, imported as gcc_mpi_against next to this one."""
    root = Path(path).resolve() / "gcc_mpi"
    spec = importlib.util.spec_from_file_location("gcc_mpi_against", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gcc_mpi_against"] = module
    spec.loader.exec_module(module)
    return module


def setup_module():
    """The other checkout's module of PointSetup (setup.py; trial.py before the house issue)."""
    try:
        return importlib.import_module("gcc_mpi_against.setup")
    except ModuleNotFoundError:
        return importlib.import_module("gcc_mpi_against.trial")


def against(args):
    """Every row decoded by this checkout and by DIR's, call by call in turn."""
    load_checkout(args.against)
    other_config = importlib.import_module("gcc_mpi_against.config")
    other_trial = setup_module()
    print(f"N = {N}, K = {K}, m = 10 (digits MLP), {RECEIVED} results; this checkout against "
          f"{args.against}, {args.calls} decodes each, in turn; p50 wall and mean CPU per decode, "
          f"ms; load average {os.getloadavg()[0]:.1f}")
    for name, extra in SCHEMES:
        sets = overrides(name, extra)
        setup, i = point_setup("digits-mlp", sets)
        job = other_config.load_job(JOBS / "digits-mlp.toml", sets)
        other = other_trial.PointSetup.build(job.points[0].config, job.base_dir)
        codes = {"this": setup.codes[name], "against": other.codes[name]}
        X, _, _ = setup.inputs(i, 0)
        Y_all = setup.target(codes["this"].encode(X)[0])
        rng = np.random.default_rng(0)
        first = rng.permutation(N)[:RECEIVED]
        for code in codes.values():  # sizes the windows, not timed
            code.decode(first, Y_all[first])
        wall, cpu, same = {s: [] for s in codes}, {s: 0.0 for s in codes}, 0
        for k in range(args.calls):
            received = rng.permutation(N)[:RECEIVED]
            out = {}
            for side in sorted(codes, reverse=k % 2 == 1):
                c0 = time.process_time()
                out[side], t = timed(lambda: codes[side].decode(received, Y_all[received]))
                cpu[side] += time.process_time() - c0
                wall[side].append(t)
            same += (np.array_equal(out["this"][0], out["against"][0])
                     and out["this"][1] == out["against"][1])
        fig = {s: (1e3 * np.median(wall[s]), 1e3 * cpu[s] / args.calls) for s in codes}
        label = name + (" " + " ".join(extra) if extra else "")
        print(f"  {label:38s} this {fig['this'][0]:6.2f} (cpu {fig['this'][1]:6.2f})   against "
              f"{fig['against'][0]:6.2f} (cpu {fig['against'][1]:6.2f})   against / this: cpu "
              f"{fig['against'][1] / fig['this'][1]:.2f}   same choices and bits: "
              f"{same} of {args.calls}")


SCALING = ("letcc", "gcc")


def scaling(args):
    """CPU per decode and nmse of letcc and gcc at each of ``args.sizes`` (see the notes)."""
    codes = {"this": None}
    if args.against:
        load_checkout(args.against)
        codes["against"] = None
        other_config = importlib.import_module("gcc_mpi_against.config")
        other_trial = setup_module()
    print(f"K = {K}, m = 10 (digits MLP), 88% of N results; mean CPU ms per decode over "
          f"{args.calls} decodes and nmse; load average {os.getloadavg()[0]:.1f}")
    for name in SCALING:
        cpu = {side: [] for side in codes}
        for n in args.sizes:
            sets = [f"code.workers={n}", f"data.batch={K}", f'code.schemes=["{name}"]']
            setup, i = point_setup("digits-mlp", sets)
            sides = {"this": setup.codes[name]}
            if args.against:
                job = other_config.load_job(JOBS / "digits-mlp.toml", sets)
                sides["against"] = other_trial.PointSetup.build(job.points[0].config,
                                                                job.base_dir).codes[name]
            X, Y_true, _ = setup.inputs(i, 0)
            Y_all = setup.target(sides["this"].encode(X)[0])
            rng = np.random.default_rng(0)
            got = int(round(0.88 * n))
            first = rng.permutation(n)[:got]
            for code in sides.values():  # sizes the windows, not timed
                code.decode(first, Y_all[first])
            spent, errs = dict.fromkeys(sides, 0.0), {side: [] for side in sides}
            for k in range(args.calls):
                received = rng.permutation(n)[:got]
                for side in sorted(sides, reverse=k % 2 == 1):
                    c0 = time.process_time()
                    Y_hat, _ = sides[side].decode(received, Y_all[received])
                    spent[side] += time.process_time() - c0
                    errs[side].append(np.sum((Y_hat - Y_true) ** 2) / np.sum(Y_true**2))
            line = f"  {name:6s} N = {n:5d}"
            for side in sides:
                cpu[side].append(1e3 * spent[side] / args.calls)
                line += (f"   {side} {cpu[side][-1]:8.1f} ms, nmse "
                         f"{10 * np.log10(np.mean(errs[side])):6.1f} dB")
            print(line, flush=True)
        for side in codes:
            slope = np.polyfit(np.log(args.sizes), np.log(cpu[side]), 1)[0]
            print(f"  {name:6s} {side}: CPU time grows as N^{slope:.2f} from N = "
                  f"{args.sizes[0]} to {args.sizes[-1]}")


def profile(calls):
    """cProfile of ``calls`` decodes of gcc with lengthscale "auto" (nothing else profiled)."""
    import cProfile
    import pstats

    setup, i = point_setup("digits-mlp", overrides("gcc", []))
    code = setup.codes["gcc"]
    X, _, _ = setup.inputs(i, 0)
    Y_all = setup.target(code.encode(X)[0])
    rng = np.random.default_rng(0)
    sets = [rng.permutation(N)[:RECEIVED] for _ in range(calls + 1)]
    code.decode(sets[0], Y_all[sets[0]])  # sizes the windows, as in the timed rows
    prof = cProfile.Profile()
    prof.runcall(lambda: [code.decode(r, Y_all[r]) for r in sets[1:]])
    print(f"gcc, lengthscale auto: {calls} decodes under cProfile, by own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--against", metavar="DIR", help="another checkout to time in turn with this")
    ap.add_argument("--profile", action="store_true", help="profile gcc's decodes instead")
    ap.add_argument("--small", action="store_true",
                    help="N = 40, K = 10, 30 results (the simulator's digits-mlp point) instead")
    ap.add_argument("--scaling", action="store_true",
                    help="letcc and gcc at several N (--sizes): CPU per decode and its exponent")
    ap.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    args = ap.parse_args()
    if args.scaling:
        return scaling(args)
    if args.small:
        global N, K, RECEIVED, SCHEMES
        N, K, RECEIVED, SCHEMES = SMALL
    if args.profile:
        return profile(args.calls)
    if args.against:
        return against(args)
    rows = measure(args.calls)
    print(f"N = {N}, K = {K}, m = 10 (digits MLP), {RECEIVED} results; ms per decode incl. lambda; "
          f"load average {os.getloadavg()[0]:.1f}")
    for label, r in rows.items():
        show(label, r)


if __name__ == "__main__":
    main()
