"""Decoding time at large N: N = 1024 workers, K = 64 inputs, m = 10 outputs, 900 results.

    python benchmarks/decode_speed.py [--calls 20]

Each call decodes a new random received set (so no cached decoder is reused) of digits-MLP
results, including the automatic choice of lambda (the first decode of a code is reported
apart). For letcc and gcc it also decodes with the global (dense) smoother, timed the same way,
and prints the windowed result's difference from it (energy relative to f(X), in dB) and which
windows computed it. Encoding reuses the code's cached encoder matrix: one (N x K) @ (K x d)
product per trial. gcc runs twice: with its default lengthscale "auto" (chosen per decode with
lambda, on sample windows: windowed_lengthscale.py) and with a fixed 0.1, the best fixed value at
K = 64 before "auto" existed.
"""

import argparse
import time

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
        times, paths, diffs, errs, global_times, chosen = [], {}, [], [], [], {}
        for _ in range(args.calls):
            received = rng.permutation(N)[:RECEIVED]
            (Y_hat, info), t = timed(lambda: code.decode(received, Y_all[received]))
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
                chosen[round(info["lengthscale_dec"], 4)] = chosen.get(round(info["lengthscale_dec"], 4), 0) + 1
        label = name + (" " + " ".join(extra) if extra else "")
        line = (f"  {label:38s} decode {1e3 * np.median(times):7.2f} ms (p90 {1e3 * np.quantile(times, 0.9):6.2f})"
                f"   first {1e3 * t_first:6.1f} ms   encode {1e3 * t_enc:5.2f} ms   nmse {10 * np.log10(np.mean(errs)):6.1f} dB")
        if diffs:
            line += (f"\n{'':42s}global smoother {1e3 * np.median(global_times):6.1f} ms,"
                     f" windowed - global {10 * np.log10(np.mean(diffs) + 1e-300):6.1f} dB")
            line += ", computed by: " + ", ".join(f"{k} {v}x" for k, v in paths.items())
        if chosen:
            line += "\n" + " " * 42 + "lengthscale chosen: " + ", ".join(f"{k} {v}x" for k, v in chosen.items())
        print(line)


if __name__ == "__main__":
    main()
