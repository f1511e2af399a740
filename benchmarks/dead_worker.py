"""What a dead worker costs, and whether to wait for N - S of the *living* workers instead.

Under ULFM a worker that dies is a permanent straggler: rank 0 never sends it a task again, but
the decode policy still waits for the fastest N - S results of all N workers, so each lost
worker takes the place of one of the S stragglers the code was sized for. With L dead workers
and S stragglers late in every trial, only N - S - L results come early, and every round waits
for L of the stragglers (100 ms in the default job) — the coded schemes' median latency goes
from a few ms to about the straggler delay. The other rule, "N - S of the living", waits for
N - S - L results: no wait, from fewer results.

Both rules are the default job with S + L workers late in every trial (a dead worker's result
never comes, a straggler's comes after the delay; since either rule stops waiting before or
when the stragglers answer, modelling the L dead as L more stragglers gives both rules the
received sets they get over MPI):

- counted against S (today):  decode.stragglers = S      -> waits for L stragglers
- N - S of the living:        decode.stragglers = S + L  -> waits for nobody late

This prints, per allocation and number dead, each approximate scheme's NMSE (dB) and median
latency under both rules, from the same paired trials (simulated: the latencies are the
injected delays plus this machine's encode and decode).

    python benchmarks/dead_worker.py [--ranks 12 16 32] [--dead 1 2] [--trials 300]
"""

import argparse
import contextlib
import io
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gcc_mpi  # noqa: E402
from gcc_mpi.job.config import fit_default_job  # noqa: E402

APPROXIMATE = ("bacc", "letcc", "gcc", "gcc-manifold")


def rule_rows(ranks, dead, trials, living):
    """{scheme: summary row} of the default job on ``ranks`` ranks with ``dead`` workers lost,
    under the rule that counts them against S (``living`` False) or not."""
    workers = ranks - 1
    _, S = fit_default_job(workers)
    job = gcc_mpi.load_job(None, {"stragglers.count": S + dead, "job.trials": trials,
                                  "decode.stragglers": S + dead if living else S,
                                  "code.schemes": list(APPROXIMATE)},
                           defaults={"code.workers": workers})
    with contextlib.redirect_stderr(io.StringIO()):  # the default job's line saying its K and S
        results = gcc_mpi.run_simulation(job)
    return S, {r["scheme"]: r for r in gcc_mpi.summarize(results)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=(12, 16, 32))
    p.add_argument("--dead", type=int, nargs="+", default=(1, 2))
    p.add_argument("--trials", type=int, default=300)
    args = p.parse_args()
    print("default job, L workers dead: nmse [dB] and latency p50 [ms] per scheme when the dead "
          "count against S (today) and when the decoder waits for N - S of the living")
    print(f"{'R':>3} {'N':>3} {'S':>3} {'L':>3}  {'scheme':<13}"
          f"{'against S: dB':>14} {'p50 ms':>8}   {'living: dB':>11} {'p50 ms':>8}  "
          f"{'dB lost':>8}")
    for ranks in args.ranks:
        for dead in args.dead:
            S, today = rule_rows(ranks, dead, args.trials, living=False)
            _, living = rule_rows(ranks, dead, args.trials, living=True)
            for name in APPROXIMATE:
                a, b = today[name], living[name]
                print(f"{ranks:>3} {ranks - 1:>3} {S:>3} {dead:>3}  {name:<13}"
                      f"{a['mse_db']:>14.2f} {1e3 * a['latency_p50']:>8.2f}   "
                      f"{b['mse_db']:>11.2f} {1e3 * b['latency_p50']:>8.2f}  "
                      f"{b['mse_db'] - a['mse_db']:>8.2f}")


if __name__ == "__main__":
    main()
