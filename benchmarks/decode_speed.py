"""Decoding time at large N: N = 1024 workers, K = 64 inputs, m = 10 outputs, 900 results.

    python benchmarks/decode_speed.py [--calls 20] [--against DIR [--rounds 3]]

Each call decodes a new random received set (so no cached decoder is reused) of digits-MLP
results, including the automatic choice of lambda (the first decode of a code is reported
apart): the median wall time and the mean CPU time of this process per decode (the steadier
figure on a shared machine). For letcc and gcc it also decodes with the global (dense) smoother,
timed the same way, and prints the windowed result's difference from it (energy relative to
f(X), in dB) and which windows computed it. Encoding reuses the code's cached encoder matrix:
one (N x K) @ (K x d) product per trial. gcc runs twice: with its default lengthscale "auto"
(chosen per decode with lambda, on sample windows: windowed_lengthscale.py) and with a fixed
0.1, the best fixed value at K = 64 before "auto" existed.

``--against DIR`` times the same decodes (same received sets) with gcc_mpi from another checkout
(PYTHONPATH=DIR), in turn with this one's, ``--rounds`` times each in a fresh process, and prints
both sides' figures, their ratio and whether the two decoded the same bits with the same choices.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import point_setup  # first: it keeps BLAS single-threaded before numpy loads

import numpy as np

from gcc_mpi.codes.lengthscale import LengthscaleSmoother
from gcc_mpi.codes.smoother import KernelSmoother
from gcc_mpi.codes.windowed import WindowedSmoother
from gcc_mpi.codes.windowed_lengthscale import WindowedLengthscaleSmoother

N, K, RECEIVED = 1024, 64, 900
SCHEMES = [("bacc", []), ("letcc", []), ("gcc", []), ("gcc", ["code.gcc.lengthscale=0.1"])]


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


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def measure(calls):
    """{row: figures} of every scheme row (see the module docstring)."""
    rows = {}
    for name, extra in SCHEMES:
        setup, i = point_setup("digits-mlp", [f"code.workers={N}", f"data.batch={K}",
                                              f'code.schemes=["{name}"]'] + extra)
        code = setup.codes[name]
        X, Y_true, _ = setup.inputs(i, 0)
        (coded, _), t_enc = timed(lambda: code.encode(X))
        Y_all = setup.target(coded)
        rng = np.random.default_rng(0)
        first = rng.permutation(N)[:RECEIVED]  # once per code: sizes the windows (not timed below)
        _, t_first = timed(lambda: code.decode(first, Y_all[first]))
        times, cpu, paths, diffs, errs, global_times, chosen = [], 0.0, {}, [], [], [], {}
        digest = hashlib.sha256()
        for _ in range(calls):
            received = rng.permutation(N)[:RECEIVED]
            c0 = time.process_time()
            (Y_hat, info), t = timed(lambda: code.decode(received, Y_all[received]))
            cpu += time.process_time() - c0
            times.append(t)
            digest.update(Y_hat.tobytes() + repr(sorted(info.items())).encode())
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
            "nmse": 10 * np.log10(np.mean(errs)), "digest": digest.hexdigest(),
            "global": 1e3 * np.median(global_times) if global_times else None,
            "diff": 10 * np.log10(np.mean(diffs) + 1e-300) if diffs else None,
            "paths": paths, "chosen": chosen}
    return rows


def show(label, r):
    line = (f"  {label:38s} decode {r['p50']:7.2f} ms (p90 {r['p90']:6.2f}, cpu {r['cpu']:6.2f})"
            f"   first {r['first']:6.1f} ms   encode {r['encode']:5.2f} ms   nmse {r['nmse']:6.1f} dB")
    if r["global"] is not None:
        line += (f"\n{'':42s}global smoother {r['global']:6.1f} ms,"
                 f" windowed - global {r['diff']:6.1f} dB")
        line += ", computed by: " + ", ".join(f"{k} {v}x" for k, v in r["paths"].items())
    if r["chosen"]:
        line += "\n" + " " * 42 + "lengthscale chosen: " + ", ".join(
            f"{k} {v}x" for k, v in r["chosen"].items())
    print(line)


def against(args):
    """Rounds of this checkout and DIR in turn, each in a fresh process; the figures side by side."""
    sides = {"this": str(Path(__file__).resolve().parent.parent), "against": args.against}
    got = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, path in sides.items():
            env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
            out = subprocess.run([sys.executable, __file__, "--calls", str(args.calls), "--json"],
                                 env=env, check=True, capture_output=True, text=True).stdout
            got[side].append(json.loads(out))
    print(f"this checkout against {args.against}: {args.rounds} rounds in turn; per row the median "
          "over rounds of the p50 wall and of the mean CPU per decode, ms")
    for label in got["this"][0]:
        fig = {side: {k: np.median([r[label][k] for r in rounds]) for k in ("p50", "cpu")}
               for side, rounds in got.items()}
        same = all(r[label]["digest"] == got["this"][0][label]["digest"]
                   for rounds in got.values() for r in rounds)
        print(f"  {label:38s} this {fig['this']['p50']:6.2f} (cpu {fig['this']['cpu']:6.2f})   "
              f"against {fig['against']['p50']:6.2f} (cpu {fig['against']['cpu']:6.2f})   "
              f"against / this: cpu {fig['against']['cpu'] / fig['this']['cpu']:.2f}   "
              f"same choices and bits: {'yes' if same else 'NO'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--against", metavar="DIR", help="another checkout to time in turn with this")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a round of --against
    args = ap.parse_args()
    if args.against:
        return against(args)
    rows = measure(args.calls)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"N = {N}, K = {K}, m = 10 (digits MLP), {RECEIVED} results; ms per decode incl. lambda; "
          f"load average {os.getloadavg()[0]:.1f}")
    for label, r in rows.items():
        show(label, r)


if __name__ == "__main__":
    main()
