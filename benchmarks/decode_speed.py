"""Decoding time at large N: N = 1024 workers, K = 64 inputs, m = 10 outputs, 900 results.

    python benchmarks/decode_speed.py [--calls 20]

Each call decodes a new random received set (so no cached decoder is reused) of digits-MLP
results, including the automatic choice of lambda (the first decode of a code is reported
apart). For letcc and gcc it also decodes with the global (dense) smoother, timed the same way,
and prints the windowed result's difference from it (energy relative to f(X), in dB) and which
windows computed it. Encoding reuses the code's cached encoder matrix: one (N x K) @ (K x d)
product per trial. gcc runs twice: with its default lengthscale 1.0 and with 0.1, which is
both more accurate at K = 64 and local enough for narrow windows.
"""

import argparse
import time

import numpy as np
from common import point_setup

from gcc_mpi.codes.smoother import KernelSmoother
from gcc_mpi.codes.windowed import WindowedSmoother

N, K, RECEIVED = 1024, 64, 900
SCHEMES = [("bacc", []), ("letcc", []), ("gcc", []), ("gcc", ["code.gcc.lengthscale=0.1"])]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    print(f"N = {N}, K = {K}, m = 10 (digits MLP), {RECEIVED} results; ms per decode incl. lambda")
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
        times, paths, diffs, errs, global_times = [], {}, [], [], []
        for _ in range(args.calls):
            received = rng.permutation(N)[:RECEIVED]
            (Y_hat, info), t = timed(lambda: code.decode(received, Y_all[received]))
            times.append(t)
            errs.append(np.sum((Y_hat - Y_true) ** 2) / np.sum(Y_true**2))
            smoother = code.decoder(np.sort(received))
            if isinstance(smoother, WindowedSmoother):
                paths[smoother.last_fit] = paths.get(smoother.last_fit, 0) + 1
                order = np.sort(received)
                t0 = time.perf_counter()
                exact = KernelSmoother(code.beta[order], code.alpha, code.kernel, code.null_dim)
                ref = exact.apply(Y_all[order], exact.loo(Y_all[order]))
                global_times.append(time.perf_counter() - t0)
                diffs.append(np.sum((Y_hat - ref) ** 2) / np.sum(Y_true**2))
        label = name + (" " + " ".join(extra) if extra else "")
        line = (f"  {label:38s} decode {1e3 * np.median(times):7.2f} ms (p90 {1e3 * np.quantile(times, 0.9):6.2f})"
                f"   first {1e3 * t_first:6.1f} ms   encode {1e3 * t_enc:5.2f} ms   nmse {10 * np.log10(np.mean(errs)):6.1f} dB")
        if diffs:
            line += (f"\n{'':42s}global smoother {1e3 * np.median(global_times):6.1f} ms,"
                     f" windowed - global {10 * np.log10(np.mean(diffs) + 1e-300):6.1f} dB")
            line += ", computed by: " + ", ".join(f"{k} {v}x" for k, v in paths.items())
        print(line)


if __name__ == "__main__":
    main()
