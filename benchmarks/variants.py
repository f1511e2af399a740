"""A candidate rule (a "variant" of the codes' options) against the defaults, on every workload.

    python benchmarks/variants.py VARIANT [VARIANT ...] [--trials 100] [--only NAME ...]
                                  [--held-out] [--schemes letcc gcc gcc-manifold]

For each case of cases.py (one point of every shipped job, the minimal-redundancy cases of
issue 29, the tuning workloads; with ``--held-out`` also the held-out ones, which a rule is not
tuned on and which are therefore printed only when asked) and each of letcc, gcc and
gcc-manifold the case runs, it prints mse [dB] over paired trials with the defaults and with each
variant, the difference variant - default and its 95% bootstrap interval (trials resampled;
negative is better), and relacc where f is a classifier. The last lines judge each variant by
issue 29's rule for a new default: it must win by >= 1 dB (by the mean) on ReLU networks (the
cases in cases.RELU; at least one row, and none worse), and lose no more than 0.3 dB elsewhere:
a row whose interval lies wholly above +0.3 dB is a loss. ``python benchmarks/variants.py list``
names the variants. docs/science.md gives the figures of every variant tried.
"""

import argparse
import contextlib
import importlib
import tempfile
from dataclasses import dataclass, field

import dropped
import numpy as np
from cases import (GROUPS, HELD_OUT, HELD_OUT_3, HELD_OUT_29, HELD_OUT_29B, MINIMAL, RELU,
                   SHIPPED, TUNING, each_case, setup_of)

from gcc_mpi.codes import make_code
from gcc_mpi.core.simulate import simulate_scheme
from gcc_mpi.core.point import scheme_options

SCHEMES = ["letcc", "gcc", "gcc-manifold"]
RESAMPLES = 2000
WIN, LOSS = 1.0, 0.3  # dB: issue 29's rule for a new default

KERNEL_CODES = ("gcc", "gcc-manifold")


@dataclass
class Variant:
    """A rule to measure: make_code options per scheme (a scheme not named is left out), module
    constants of gcc_mpi.codes set while it runs ({"module:NAME": value}), and optionally a
    builder per scheme instead of make_code (dropped.py's rules)."""

    what: str
    options: dict
    patches: dict = field(default_factory=dict)
    builders: dict = field(default_factory=dict)


def kernel_codes(**options):
    return {s: dict(options) for s in KERNEL_CODES}


VARIANTS = {
    # issue 29's starting point and its result (the defaults), and lambda at minimal redundancy
    "issue-29": Variant("the defaults: the decoder in the input space (gcc.DENSE) and lambda "
                        "keeping 1.5 K degrees of freedom", {s: {} for s in SCHEMES}),
    "before-29": Variant("the rules before issue 29: gcc's decoder along z only, lambda by "
                         "leave-one-out at every redundancy",
                         {"letcc": {}, **kernel_codes(auto={"space": "z"})},
                         {"smoothing:DOF_PER_INPUT": 0.0}),
    "interpolate": Variant("the decoder interpolates: lambda_dec at the floor (1e-13 of the "
                           "largest eigenvalue), the lengthscale still by leave-one-out",
                           {s: {"lambda_dec": 0.0} for s in SCHEMES}),
    "lambda-1e-10": Variant("lambda_dec = 1e-10 (the issue's reference at minimal redundancy)",
                            {s: {"lambda_dec": 1e-10} for s in SCHEMES}),
    "loo-always": Variant("the decoder's lambda by leave-one-out at every redundancy",
                          {s: {} for s in SCHEMES}, {"smoothing:DOF_PER_INPUT": 0.0}),
    **{f"dof-{c:g}": Variant(f"the decoder's lambda keeps >= {c:g} K effective degrees of "
                             "freedom", {s: {} for s in SCHEMES}, {"smoothing:DOF_PER_INPUT": c})
       for c in (0.5, 1.0, 1.5, 2.0)},
    # where gcc's decoder fits
    "space-z": Variant("gcc's decoder along z only (the decoder before issue 29)",
                       kernel_codes(auto={"space": "z"})),
    "space-x": Variant("gcc's decoder in the input space only, at every redundancy",
                       kernel_codes(auto={"space": "x"})),
    "space-both": Variant("both spaces begin their walks and the better walks on, at every "
                          "redundancy", kernel_codes(auto={"space": "both"})),
    "mixed": Variant("both spaces walk to their best, the fits averaged by their inverse "
                     "leave-one-out scores", kernel_codes(),
                     builders=dropped.factory(dropped.Mixed)),
    "input-m32": Variant("the input-space decoder alone with Matern-3/2",
                         kernel_codes(), builders=dropped.factory(dropped.InputKernel)),
    **{f"input-{name}": Variant(f"the input-space decoder with {name} (gcc.DENSE and the walks "
                                "as the defaults')", kernel_codes(auto={"input_kernel": name}))
       for name in ("matern32", "gaussian")},
    "input-kernel-choice": Variant("the input-space decoder alone, Matern-5/2 or 3/2 per decode "
                                   "by leave-one-out", kernel_codes(),
                                   builders=dropped.factory(dropped.InputKernelChoice)),
    "input-kernel-start": Variant("the input-space decoder with Matern-5/2 or 3/2, the better by "
                                  "leave-one-out at the walk's start (the defaults where both "
                                  "spaces are compared)", kernel_codes(),
                                  builders=dropped.factory(dropped.InputKernelAtStart)),
    "input-fine": Variant("the input-space lengthscales sqrt(2) apart (1/4 ... 64 times the "
                          "batch's median distance)", kernel_codes(),
                          {"chords:MULTIPLES": 2.0 ** (np.arange(-4, 13) / 2),
                           "chords:START": 6}),
    **{f"input-{'-'.join(f'{m:g}' for m in ms)}": Variant(
        f"the input-space lengthscales {', '.join(f'{m:g}' for m in ms)} times the batch's median "
        "distance", kernel_codes(), {"chords:MULTIPLES": np.array(ms, float),
                                     "chords:START": start})
       for ms, start in (((2.0,), 0), ((2.0, 16.0), 0), ((1.0, 4.0, 16.0), 1))},
    "input-from-2": Variant("the input-space lengthscales 2 ... 64 times the batch's median "
                            "distance, the walk from 2 (so upwards only)", kernel_codes(),
                            {"chords:MULTIPLES": 2.0 ** np.arange(1, 7), "chords:START": 0}),
    # for speed: the input-space walk scores a neighbour only where leave-one-out's slope says
    **{f"slope-{k:g}": Variant(f"the input-space walk from the start alone, a neighbour only where "
                               f"leave-one-out's slope in log(l) times log 2 exceeds {k:g}",
                               kernel_codes(), builders=dropped.factory(dropped.slope_walk(k)))
       for k in (0.0, 0.1, 0.15, 0.2, 0.25, 0.3)},
    **{f"screen-{t:g}": Variant(f"the input-space walk from the start alone, a neighbour scored in "
                                f"full only where leave-one-out at the best lambda so far "
                                f"(one Cholesky) is below {t:g} x the best score",
                                kernel_codes(), builders=dropped.factory(dropped.screened_walk(t)))
       for t in (1.0, 1.5, 2.0)},
    "screen-2l": Variant("screen-1, the screen at the best lambda so far and at a hundredth of it "
                         "(the longer lengthscales of smooth f want less smoothing)",
                         kernel_codes(),
                         builders=dropped.factory(dropped.screened_walk(1.0, (1.0, 1e-2)))),
    "centre-dec": Variant("the decoder fits the results minus their mean (a constant the "
                          "penalty does not shrink; letcc's null space has it already)",
                          kernel_codes(), builders=dropped.factory(dropped.Centred)),
    "centre-both": Variant("centre-dec, and the encoder fits the inputs minus their mean",
                           kernel_codes(), builders=dropped.factory(dropped.CentredBoth)),
    # the encoders and gcc-manifold's graph, with the decoder of issue 29
    **{f"enc-{e:g}": Variant(f"the encoders at {e:g} spacings (capped as the rule's)",
                             kernel_codes(auto={"enc": e})) for e in (1.0, 2.0, 4.0)},
    "chebyshev": Variant("gcc-manifold's alpha at Chebyshev points along its order",
                         {"gcc-manifold": {"placement": "chebyshev"}}),
    **{f"neighbors-{k}": Variant(f"gcc-manifold's graph with {k} neighbours",
                                 {"gcc-manifold": {"neighbors": k}}) for k in (4, 12)},
}


@contextlib.contextmanager
def patched(variant):
    """The module constants of a variant set (gcc_mpi.codes.<module>.NAME), and restored."""
    saved = []
    for where, value in VARIANTS[variant].patches.items():
        module, name = where.split(":")
        mod = importlib.import_module(f"gcc_mpi.codes.{module}")
        saved.append((mod, name, getattr(mod, name)))
        setattr(mod, name, value)
    try:
        yield
    finally:
        for mod, name, value in saved:
            setattr(mod, name, value)


def trials_of(setup, index, scheme, trials, variant=None):
    """(nmse, relacc) arrays of one scheme over the paired trials, with the code of ``variant``
    (None: the job's own code)."""
    if variant is not None:
        c, v = setup.config, VARIANTS[variant]
        opts = {**scheme_options(c, scheme, setup.dataset), **v.options[scheme]}
        build = v.builders.get(scheme, lambda N, K, **o: make_code(scheme, N, K, **o))
        setup.codes[scheme] = build(c.code.workers, c.data.batch, **opts)
    nmse, relacc = [], []
    for t in range(trials):
        X, Y, delays = setup.inputs(index, t)
        rec = simulate_scheme(setup, scheme, X, Y, delays)
        nmse.append(rec["nmse"])
        relacc.append(rec["relacc"])
    return np.array(nmse), np.array(relacc)


def db(nmse):
    return 10 * np.log10(np.nanmean(nmse, axis=-1))


def difference(variant, default, seed=0):
    """(dB of variant - dB of default by the mean nmse, its 95% bootstrap interval)."""
    idx = np.random.default_rng(seed).integers(0, len(default), (RESAMPLES, len(default)))
    boot = db(variant[idx]) - db(default[idx])
    return db(variant) - db(default), np.percentile(boot, [2.5, 97.5])


def run_case(name, job, sets, variants, trials, schemes, rows, baseline=None):
    setup, index = setup_of(job, sets)
    c = setup.config
    present = [s for s in schemes if s in c.code.schemes]
    n = c.code.workers - (c.stragglers.count if c.decode.wait == "fastest" else 0)
    print(f"\n{name}: K = {c.data.batch}, N = {c.code.workers}, about {n} results; {trials} "
          f"paired trials; mse [dB] (relacc); variant - default [95% interval]")
    for scheme in present:
        if baseline is None:
            base, base_acc = trials_of(setup, index, scheme, trials)
        elif scheme not in VARIANTS[baseline].options:
            continue
        else:
            with patched(baseline):
                base, base_acc = trials_of(setup, index, scheme, trials, baseline)
        line = f"  {scheme:12s} {baseline or 'default'} {db(base):7.2f}" + _acc(base_acc)
        for v in variants:
            if scheme not in VARIANTS[v].options:
                continue
            with patched(v):
                nmse, acc = trials_of(setup, index, scheme, trials, v)
            d, (lo, hi) = difference(nmse, base)
            rows.append((v, f"{name} {scheme}", name in RELU, d, lo, hi))
            line += f"   {v} {db(nmse):7.2f}{_acc(acc)} {d:+6.2f} [{lo:+.2f}, {hi:+.2f}]"
        setup.codes[scheme] = make_code(scheme, c.code.workers, c.data.batch,
                                        **scheme_options(c, scheme, setup.dataset))
        print(line, flush=True)


def _acc(relacc):
    return "" if np.all(np.isnan(relacc)) else f" ({np.nanmean(relacc):.3f})"


def verdict(variant, rows):
    """Issue 29's rule for a new default, on the rows of one variant."""
    mine = [r for r in rows if r[0] == variant]
    relu = [r for r in mine if r[2]]
    wins = [r for r in relu if r[3] <= -WIN]
    losses = [r for r in mine if r[4] > LOSS]
    worst = max(mine, key=lambda r: r[3]) if mine else None
    ok = bool(wins) and not losses
    text = (f"{variant}: {len(mine)} rows; ReLU rows gaining >= {WIN:g} dB: {len(wins)} of "
            f"{len(relu)}"
            + (f" ({', '.join(f'{r[1]} {r[3]:+.2f}' for r in wins)})" if wins else "")
            + f"; rows whose interval lies wholly above +{LOSS:g} dB: {len(losses)}"
            + (f" ({', '.join(f'{r[1]} {r[3]:+.2f} [{r[4]:+.2f}, {r[5]:+.2f}]' for r in losses)})"
               if losses else ""))
    if worst is not None:
        text += f"; largest loss by the mean {worst[1]} {worst[3]:+.2f}"
    return text + f" -> {'meets' if ok else 'does not meet'} the rule"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+", help=f"of: {', '.join(VARIANTS)} (or list)")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--only", nargs="+", help="cases whose name starts with one of these")
    ap.add_argument("--held-out", action="store_true", help="also the held-out workloads")
    ap.add_argument("--schemes", nargs="+", default=SCHEMES)
    ap.add_argument("--baseline", help="a variant to compare against instead of the defaults")
    args = ap.parse_args()
    if args.variants == ["list"]:
        for name, v in VARIANTS.items():
            print(f"{name:20s} {v.what}")
        return
    unknown = [v for v in [*args.variants, args.baseline or "space-z"] if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    groups = {"shipped jobs": SHIPPED, "minimal redundancy (issue 29)": MINIMAL,
              "own workloads, tuning": TUNING}
    if args.held_out:
        groups |= {k: v for k, v in GROUPS.items() if v in (HELD_OUT, HELD_OUT_3)}
        groups["own workloads, held out (issue 29)"] = HELD_OUT_29
        groups["own workloads, held out (issue 29, second set)"] = HELD_OUT_29B
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, job, sets, trials in each_case(groups, tmp, args.only, args.trials):
            run_case(name, job, sets, args.variants, trials, args.schemes, rows, args.baseline)
    print()
    for v in args.variants:
        print(verdict(v, rows))


if __name__ == "__main__":
    main()
