"""Robust decoders against their plain twins (codes/robust.py, ``code.<scheme>.robust``).

    python benchmarks/robust.py [--trials 100] [--kinds sign-flip noise ...] [--count 2]
    python benchmarks/robust.py --bacc sign-flip:10 noise:12 [--trials 100] [--count 2]
                                [--workers 40] [--stragglers 4]
    python benchmarks/robust.py --scale

Part 1, the issue's workload: digits-mlp (K = 10, N = 40), 4 stragglers, ``--count`` liars of
each kind (size 10: 10x the signal; bit-flip: a random bit), simulated. Per scheme: the nmse
[dB] without liars, with them decoded plainly and robustly; the share of the liars' used
results that were flagged ("caught") and of the honest ones ("false"); the mean decode time
robust over plain. A scheme's named robust decoders other than the one ``true`` means follow
its row (``modes``): "screen" (the neighbours' leave-one-out screen), "spline-screen" (results
far from the adversarial spline of arXiv 2502.08058 along beta dropped, the rest decoded
plainly) and letcc's "spline" (that spline as published).

``--bacc KIND:SIZE ...`` instead: bacc's two robust decoders (code.bacc.robust = "screen", the
leave-one-out screen, and "locator", ApproxIFER's rational Berlekamp–Welch) on the same
workload, each kind at its size (noise 12: sigma = 12 x the rms of a result, about 100 in the
digits MLP's logits, ApproxIFER's adversary); ``--workers`` and ``--stragglers`` set N and S
(ApproxIFER's runs: N = K + S + 2A + 1).

``--scale`` instead: the neighbours' screen alone (codes.robust.loo_screen) at 36, 600 and 3000
results with 2, 30 and 300 sign-flip liars of 10x placed at random (runs side by side among
them), on ten sines along Chebyshev points: its CPU time per screen and the liars missed and
honest results flagged.

Part 2, lcc's exact correction: a degree-2 polynomial, K = 4 (D = 6), A liars at N = D + 1 + 2A
and N one less with A + 1 liars: the median nmse, failed trials, and the Berlekamp–Welch
system's singular-value gap (its conditioning).
"""

import argparse
import time
from pathlib import Path

import numpy as np

from gcc_mpi.api import run_simulation
from gcc_mpi.codes import CLASSES, DecodeError, make_code
from gcc_mpi.job.adversaries import KINDS
from gcc_mpi.job.parse import load_job

ROOT = Path(__file__).resolve().parent.parent
SCHEMES = ("replication", "bacc", "letcc", "gcc", "gcc-manifold")


def modes(scheme):
    """A scheme's named robust decoders other than the one ``true`` means, each a row of its
    own (bacc's locator has its own part, ``--bacc``)."""
    cls = CLASSES[scheme]
    return [m for m in cls.robust_methods if m not in (cls.robust_true, "locator")]


def db(x):
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if not len(x):
        return float("nan")
    return 10 * np.log10(np.mean(x)) if np.mean(x) > 0 else -np.inf  # exact: printed -inf


def simulate(trials, overrides, stragglers=4):
    job = load_job(ROOT / "jobs" / "digits-mlp.toml", [
        f"job.trials={trials}", f"sweep.stragglers.count=[{stragglers}]",
        f"code.schemes={list(SCHEMES)!r}".replace("'", '"'), *overrides])
    return run_simulation(job).points[0].schemes


def robust_flags(robust):
    return [f"code.{s}.robust={'true' if robust else 'false'}" for s in SCHEMES]


def part1(trials, kinds, count):
    clean = simulate(trials, [])
    print(f"digits-mlp, K = 10, N = 40, 4 stragglers, {count} liars of 10x, {trials} trials")
    print(f"{'kind':10} {'scheme':26} {'clean dB':>9} {'plain dB':>9} {'robust dB':>9} "
          f"{'caught':>7} {'false':>7} {'failed':>6} {'t ratio':>7}")
    for kind in kinds:
        liars = [f"adversaries.count={count}", f'adversaries.kind="{kind}"']
        plain = simulate(trials, liars + robust_flags(False))
        robust = simulate(trials, liars + robust_flags(True))
        for s in SCHEMES:
            r = robust[s]
            print(row(kind, s, clean[s], plain[s], r))
            for mode in modes(s):
                r = simulate(trials, liars + [f'code.schemes=["{s}"]',
                                              f'code.{s}.robust="{mode}"'])[s]
                print(row(kind, f"{s}:{mode}", clean[s], plain[s], r))


def row(kind, name, clean, plain, r):
    """One line of part 1: a robust decode ``r`` beside its scheme's ``clean`` and ``plain``."""
    caught, false = caught_false(r)
    ratio = np.nanmean(r["t_decode"]) / np.nanmean(plain["t_decode"])
    return (f"{kind:10} {name:26} {db(clean['nmse']):9.1f} {db(plain['nmse']):9.1f} "
            f"{db(r['nmse']):9.1f} {100 * caught:6.1f}% {100 * false:6.2f}% "
            f"{int(r['failed'].sum()):6d} {ratio:7.1f}")


def caught_false(r):
    """(share of the liars' used results flagged, share of the honest used results flagged)."""
    lied = r["adversary"] & r["used"]
    honest = r["used"] & ~r["adversary"]
    return ((r["flagged"] & lied).sum() / max(lied.sum(), 1),
            (r["flagged"] & honest).sum() / max(honest.sum(), 1))


def bacc_decoders(trials, kinds, count, N=40, S=4):
    """bacc's plain decode, its screen and ApproxIFER's locator, per KIND:SIZE of ``kinds``."""
    def run(extra):
        return simulate(trials, ['code.schemes=["bacc"]', f"code.workers={N}", *extra],
                        S)["bacc"]

    clean = run([])
    print(f"digits-mlp, K = 10, N = {N}, {S} stragglers, {count} liars, {trials} trials; "
          f"bacc clean {db(clean['nmse']):.1f} dB")
    print(f"{'kind':14} {'decoder':8} {'dB':>6} {'caught':>7} {'false':>7} {'ms/decode':>9}")
    for spec in kinds:
        kind, size = spec.split(":")
        liars = [f"adversaries.count={count}", f'adversaries.kind="{kind}"',
                 f"adversaries.size={size}"]
        for decoder in ("false", '"screen"', '"locator"'):
            r = run([*liars, f"code.bacc.robust={decoder}"])
            caught, false = caught_false(r)
            print(f"{spec:14} {decoder.strip(chr(34)):8} {db(r['nmse']):6.1f} "
                  f"{100 * caught:6.1f}% {100 * false:6.2f}% "
                  f"{1e3 * np.nanmean(r['t_decode']):9.2f}")


def screen_scale(repeat=3):
    """The neighbours' screen's cost and catch as the results and liars grow."""
    from gcc_mpi.codes.robust import loo_screen

    rng = np.random.default_rng(0)
    print(f"{'results':>7} {'liars':>5} {'CPU ms':>8} {'missed':>6} {'false':>5}")
    for n, liars in ((36, 2), (600, 30), (3000, 300)):
        points = np.sort(np.cos(np.linspace(0, np.pi, n)))
        Y = np.stack([np.sin(3 * points + k) for k in range(10)], axis=1)
        lying = rng.choice(n, liars, replace=False)
        Y[lying] *= -10
        t0 = time.process_time()
        for _ in range(repeat):
            keep = loo_screen(points, Y, liars)
        cpu = (time.process_time() - t0) / repeat
        missed = int(keep[lying].sum())
        false = int((~keep).sum()) - (liars - missed)
        print(f"{n:7d} {liars:5d} {1e3 * cpu:8.1f} {missed:6d} {false:5d}")


def lcc_case(N, K, A, liars, trials):
    code = make_code("lcc", N, K, degree=2)
    code.set_robust(True, A)
    rng = np.random.default_rng(0)
    nmse, gaps, failed = [], [], 0
    for _ in range(trials):
        X = rng.standard_normal((K, 5))

        def f(Z):
            return np.stack([(Z**2).sum(1), Z[:, 0] * Z[:, 1]], axis=1)

        Y = f(code.encode(X)[0])
        lying = rng.choice(N, liars, replace=False)
        Y[lying] = -10 * Y[lying]
        try:
            Y_hat, info = code.decode(np.arange(N), Y)
        except DecodeError:
            failed += 1
            continue
        nmse.append(np.sum((Y_hat - f(X)) ** 2) / np.sum(f(X) ** 2))
        gaps.append(info["bw_gap"])
    med = np.median(nmse) if nmse else float("nan")
    gap = np.median(gaps) if gaps else float("nan")
    return med, failed, gap


def part2(trials):
    K, D = 4, 6
    print(f"\nlcc, degree 2, K = {K} (D = {D}), sign-flip liars of 10x, {trials} trials")
    print(f"{'A':>2} {'N':>3} {'liars':>5} {'median nmse':>12} {'failed':>6} {'BW gap':>9}")
    for A in (1, 2, 3, 4):
        N = D + 1 + 2 * A
        for n, liars in ((N, A), (N + 6, A), (N, A + 1)):
            med, failed, gap = lcc_case(n, K, A, liars, trials)
            print(f"{A:2d} {n:3d} {liars:5d} {med:12.1e} {failed:6d} {gap:9.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--workers", type=int, default=40, help="N (--bacc only)")
    ap.add_argument("--stragglers", type=int, default=4, help="S (--bacc only)")
    ap.add_argument("--scale", action="store_true",
                    help="only the neighbours' screen's cost and catch at 36 to 3000 results")
    ap.add_argument("--bacc", nargs="+", metavar="KIND:SIZE",
                    help="only bacc's robust decoders (screen, locator), each kind at its size")
    args = ap.parse_args()
    for spec in args.bacc or ():
        kind, _, size = spec.partition(":")
        if kind not in KINDS or not size.replace(".", "", 1).isdigit():
            ap.error(f"--bacc wants KIND:SIZE with KIND one of {', '.join(KINDS)}, got {spec!r}")
    t0 = time.monotonic()
    if args.scale:
        screen_scale()
    elif args.bacc:
        bacc_decoders(args.trials, args.bacc, args.count, args.workers, args.stragglers)
    else:
        part1(args.trials, args.kinds, args.count)
        part2(args.trials)
    print(f"\n({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
