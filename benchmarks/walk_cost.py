"""The cost of choosing the lengthscale: gcc's in-process CPU per trial with the defaults, with
variants of variants.py (the slope walk of dropped.py, say) and with a fixed lengthscale, side by
side on digits-mlp (K = 10, N = 40, S = 10), as simulator_speed.py's in-process figure.

    python benchmarks/walk_cost.py [--variants slope-0.1 slope-0.2] [--trials 2000] [--repeat 3]
                                   [--scheme gcc] [--fixed-lengthscale 1.0]
    python benchmarks/walk_cost.py --parts [--trials 300]

Each row is measured for ``--trials`` trials and for one, back to back, in rounds (load changes
hit every row alike), and the difference taken. Printed per row: trials/s (CPU, min-max over
the rounds), the CPU per trial over the fixed lengthscale's (from the rounds' medians; issue 29's
target is at most 1.5) and, for the slope walks, the candidates scored per decode (the defaults
score three, the start and both neighbours in one batched call, and walk on from there).

``--parts`` times the parts of gcc's input-space decode instead, on the decodes of ``--trials``
trials (CPU per decode, the best of 5 passes): the smoother (distances, candidates), one
candidate's eigendecomposition and lambda search, the start and both neighbours in one batched
call, the slope of dropped.SlopeWalk, and the whole decode with the defaults and with the fixed
lengthscale (along beta).
"""

import argparse
import os
import time

from common import JOBS  # first: BLAS single-threaded, as the CLI runs

import numpy as np
from simulator_speed import NullWriter, overrides
from variants import VARIANTS

from gcc_mpi.job.parse import load_job
from gcc_mpi.core.point import prepare, scheme_options
from gcc_mpi.core.driver import run_points
from gcc_mpi.core.simulate import Simulator


def cpu(row, scheme, fixed, trials):
    """(CPU seconds of ``trials`` trials, the code) of one row: "default", "fixed" or a variant."""
    job = load_job(JOBS / "digits-mlp.toml",
                   overrides(f"{scheme} l={fixed:g}" if row == "fixed" else scheme, trials))
    prepared = prepare(job)
    setup = prepared[0][1]
    if row not in ("default", "fixed"):
        c, v = setup.config, VARIANTS[row]
        opts = {**scheme_options(c, scheme, setup.dataset), **v.options[scheme]}
        setup.codes[scheme] = v.builders[scheme](c.code.workers, c.data.batch, **opts)
    c0 = time.process_time()
    run_points(Simulator(), prepared, NullWriter())
    return time.process_time() - c0, setup.codes[scheme]


def parts(trials, fixed):
    """CPU per decode (microseconds) of the parts of gcc's input-space decode."""
    from dropped import loo_slope

    job = load_job(JOBS / "digits-mlp.toml", overrides("gcc", trials))
    point, setup = prepare(job)[0]
    code = setup.codes["gcc"]
    fixed_code = load_code(fixed, trials)
    calls = []
    for t in range(trials):
        X, _, delays = setup.inputs(point.index, t)
        U, _ = code.encode(X)
        received = np.sort(np.argsort(delays)[:code.N - setup.config.stragglers.count])
        calls.append((received, setup.target(U[received]), (X, U)))
    floor = code.dof_floor("dec", len(calls[0][0]))

    def slope(r, Y, inputs):
        xs = code.input_smoother(r, inputs)
        _, lam = xs.best_lambdas(Y, "loo", [3], **floor)
        loo_slope(xs, Y, 3, lam[0])

    steps = {
        "smoother": lambda r, Y, inputs: code.input_smoother(r, inputs),
        "+ one candidate": lambda r, Y, inputs: code.input_smoother(r, inputs).best_lambdas(
            Y, "loo", [3], **floor),
        "+ three, batched": lambda r, Y, inputs: code.input_smoother(r, inputs).best_lambdas(
            Y, "loo", [2, 3, 4], **floor),
        "+ one and its slope": slope,
        "decode, defaults": lambda r, Y, inputs: code.decode(r, Y, inputs=inputs),
        f"decode, l = {fixed:g}": lambda r, Y, inputs: fixed_code.decode(r, Y),
    }
    out = {}
    for name, step in steps.items():
        best = np.inf
        for _ in range(5):
            c0 = time.process_time()
            for r, Y, inputs in calls:
                step(r, Y, inputs)
            best = min(best, time.process_time() - c0)
        out[name] = best / len(calls) * 1e6
    return out


def load_code(fixed, trials):
    job = load_job(JOBS / "digits-mlp.toml", overrides(f"gcc l={fixed:g}", trials))
    return prepare(job)[0][1].codes["gcc"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", nargs="*", default=["slope-0.1", "slope-0.15", "slope-0.2"])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scheme", default="gcc")
    ap.add_argument("--fixed-lengthscale", type=float, default=1.0)
    ap.add_argument("--parts", action="store_true", help="time the parts of gcc's decode")
    args = ap.parse_args()
    if args.parts:
        trials = min(args.trials, 300)
        out = parts(trials, args.fixed_lengthscale)
        print(f"digits-mlp, K = 10, N = 40, S = 10, gcc's decode in the input space: CPU per "
              f"decode over {trials} trials' decodes (best of 5 passes); load average "
              f"{os.getloadavg()[0]:.1f}")
        for name, us in out.items():
            print(f"  {name:22s} {us:6.0f} us")
        return
    rows = ["default", *args.variants, "fixed"]
    rates = {r: [] for r in rows}
    scored = {r: [] for r in rows}
    for _ in range(args.repeat):
        for r in rows:
            one, _ = cpu(r, args.scheme, args.fixed_lengthscale, 1)
            whole, code = cpu(r, args.scheme, args.fixed_lengthscale, args.trials)
            if whole > one:
                rates[r].append((args.trials - 1) / (whole - one))
            scored[r] += getattr(code, "scored", [])
    print(f"digits-mlp, K = 10, N = 40, S = 10, {args.scheme}: {args.trials} trials per run, "
          f"{args.repeat} runs, in-process CPU; load average {os.getloadavg()[0]:.1f} at the end")
    fixed = np.median(rates["fixed"])
    for r in rows:
        name = f"l = {args.fixed_lengthscale:g}" if r == "fixed" else r
        extra = f"  {np.mean(scored[r]):.2f} candidates per decode" if scored[r] else ""
        print(f"{name:14s} {min(rates[r]):6.0f}-{max(rates[r]):<6.0f} trials/s  "
              f"{fixed / np.median(rates[r]):.2f}x the fixed lengthscale's CPU per trial{extra}")


if __name__ == "__main__":
    main()
