"""Lengthscale "auto" against fixed lengthscales, on every shipped job and on workloads of our own.

    python benchmarks/lengthscale.py [--trials 30] [--only NAME ...] [--criteria]

For each case and each of gcc and gcc-manifold it prints mse [dB] over paired trials with
lengthscale "auto" and with each fixed lengthscale of {0.03, 0.1, 0.3, 1, 3} (encoder and decoder
alike), then "auto - best fixed" (and in brackets the same for the median trial's nmse: a mean
over trials can be decided by one bad trial), the median chosen lengthscales (encoder /
decoder). Cases: one point of every shipped job (the one its comments discuss); our own workloads
that were looked at while the rules were chosen ("tuning"); and held-out ones, run only after the
rules were fixed, reported apart (session 2's, and session 3's on a manifold and f none of the
others has). ``--criteria`` adds, for the tuning and shipped cases, the decoder's criterion
(loo, gcv, ml: lengthscale and lambda jointly; loo only above 400 results) and the encoder's rule
(fixed multiples of the spacing pi / K, or loo / ml of the inputs along alpha), each with the
other side on "auto". The shipped cases include the embedded default job at 8 and 16 ranks.
In square brackets, a 95% bootstrap interval of "auto - best fixed" by the mean (trials
resampled, the best fixed lengthscale chosen again in each resample). The last lines count the
rows where auto is more than 1 dB from the best fixed lengthscale, by the mean and by the median
trial, and the rows whose interval lies wholly below or wholly above 1 dB.
"""

import argparse
import tempfile

import numpy as np
from cases import GROUPS, SHIPPED, TUNING, each_case, setup_of

from gcc_mpi.codes import make_code
from gcc_mpi.codes.smoothing_code import WINDOWED_ABOVE
from gcc_mpi.core.simulate import simulate_scheme
from gcc_mpi.core.point import scheme_options

FIXED = [0.03, 0.1, 0.3, 1.0, 3.0]
SCHEMES = ["gcc", "gcc-manifold"]
def setting(scheme, key, value):
    return f"code.{scheme}.{key}=" + (f'"{value}"' if isinstance(value, str) else f"{value!r}")


# (case and scheme, auto - best fixed by the mean, by the median trial, the mean's 95% interval)
GAPS = []
RESAMPLES = 2000


def gap_interval(auto, fixed, seed=0):
    """95% bootstrap interval of auto - best fixed (dB of the mean nmse over the paired trials):
    the trials resampled with replacement, and the best of the ``fixed`` rows chosen again in
    each resample, so that the interval includes the luck of the best one on these trials."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(auto), (RESAMPLES, len(auto)))

    def db(nmse):
        return 10 * np.log10(np.nanmean(nmse[idx], axis=1))

    gaps = db(auto) - np.min([db(f) for f in fixed], axis=0)
    return np.percentile(gaps, [2.5, 97.5])


def summary(gaps, margin=1.0):
    """The rows where auto is more than ``margin`` dB from the best fixed lengthscale, by the
    mean and by the median trial, and what the mean's intervals can tell apart."""
    lines = []
    for label, k in (("mean", 1), ("median trial", 2)):
        out = [f"{g[0]} {g[k]:+.1f}" for g in gaps if g[k] > margin]
        lines.append(f"auto more than {margin:g} dB from the best fixed lengthscale ({label}): "
                     f"{len(out)} of {len(gaps)} rows" + (f": {', '.join(out)}" if out else ""))
    outside = [f"{g[0]} [{g[3][0]:+.1f}, {g[3][1]:+.1f}]" for g in gaps if g[3][0] > margin]
    within = sum(g[3][1] <= margin for g in gaps)
    lines.append(f"the mean's 95% interval of auto - best: wholly below {margin:g} dB in {within} "
                 f"of {len(gaps)} rows, wholly above in {len(outside)}"
                 + (f" ({', '.join(outside)})" if outside else "")
                 + f", across {margin:g} dB (undecided at these trials) in "
                   f"{len(gaps) - within - len(outside)}")
    return "\n".join(lines)


def case(name, job, sets, trials, criteria):
    setup, _ = setup_of(job, sets)
    schemes = [s for s in SCHEMES if s in setup.config.code.schemes] or ["gcc"]
    c = setup.config
    print(f"\n{name}: K = {c.data.batch}, N = {c.code.workers}, {trials} paired trials; mse [dB]")
    print(f"  {'scheme':12s} {'auto':>7s} " + " ".join(f"{v:>7g}" for v in FIXED)
          + "   auto - best (medians) [95% interval]   lengthscale enc / dec (median)")
    for scheme in schemes:
        row, median, nmse = {}, {}, {}
        for v in ["auto", *FIXED]:
            row[v], chosen = measure(job, sets, scheme, trials, value=v)
            median[v], nmse[v] = measure.median, measure.nmse
            if v == "auto":
                auto_chosen = chosen
        gap = row["auto"] - min(row[v] for v in FIXED)
        median_gap = median["auto"] - min(median[v] for v in FIXED)
        interval = gap_interval(nmse["auto"], [nmse[v] for v in FIXED])
        GAPS.append((f"{name} {scheme}", gap, median_gap, interval))
        print(f"  {scheme:12s} " + " ".join(f"{row[v]:7.1f}" for v in ["auto", *FIXED])
              + f"   {gap:+6.1f} ({median_gap:+5.1f}) [{interval[0]:+5.1f}, {interval[1]:+5.1f}]"
              + f"   {auto_chosen[0]:.3g} / {auto_chosen[1]:.3g}")
        if criteria:
            cells = []
            # the windowed decoder (above 400 results) implements leave-one-out only
            for crit in ("loo", "gcv", "ml") if c.code.workers <= WINDOWED_ABOVE else ("loo",):
                cells.append(f"dec {crit} "
                             f"{measure(job, sets, scheme, trials, {'dec': crit})[0]:6.1f}")
            for rule in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, "loo", "ml"):
                cells.append(f"enc {rule} "
                             f"{measure(job, sets, scheme, trials, {'enc': rule})[0]:6.1f}")
            print("  " + " " * 12 + "  ".join(cells))


def measure(job, sets, scheme, trials, auto=None, value="auto"):
    """(mse dB, (median lengthscale_enc, median lengthscale_dec)) of one scheme over the paired
    trials with lengthscale ``value`` (and, for "auto", the rules ``auto`` instead of the
    code's own)."""
    setup, i = setup_of(job, [*sets, f'code.schemes=["{scheme}"]',
                              setting(scheme, "lengthscale", value)])
    if auto:
        c = setup.config
        setup.codes[scheme] = make_code(scheme, c.code.workers, c.data.batch, auto=auto,
                                        **scheme_options(c, scheme, setup.dataset))
    nmse, enc, dec = [], [], []
    for t in range(trials):
        X, Y, delays = setup.inputs(i, t)
        rec = simulate_scheme(setup, scheme, X, Y, delays)
        nmse.append(rec["nmse"])
        enc.append(rec["lengthscale_enc"])
        dec.append(rec["lengthscale_dec"])
    measure.median, measure.nmse = 10 * np.log10(np.nanmedian(nmse)), np.array(nmse)
    return 10 * np.log10(np.nanmean(nmse)), (np.nanmedian(enc), np.nanmedian(dec))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--only", nargs="+", help="cases whose name starts with one of these")
    ap.add_argument("--criteria", action="store_true")
    args = ap.parse_args()
    criteria = {name for cases in (SHIPPED, TUNING) for name in cases} if args.criteria else ()
    with tempfile.TemporaryDirectory() as tmp:
        for name, job, sets, trials in each_case(GROUPS, tmp, args.only, args.trials):
            case(name, job, sets, trials, name in criteria)
    print("\n" + summary(GAPS))


if __name__ == "__main__":
    main()
