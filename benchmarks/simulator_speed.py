"""Simulator throughput: trials per second per scheme on digits-mlp (K = 10, N = 40, S = 10).

    python benchmarks/simulator_speed.py [--trials 2000] [--repeat 3] [--schemes bacc letcc]
                                         [--fixed-lengthscale 1.0]

Two figures per scheme, each the range over ``--repeat`` runs, in wall-clock and CPU time:
- in-process: the job driver's ``run_points`` with the simulator, of a one-scheme job (inputs,
  f, encode, received sets, decode with automatic lambda, scoring, records), without the
  HDF5 file;
- CLI: ``python -m gcc_mpi simulate`` of the same one-scheme job as a user runs it, HDF5 writes
  included.
Each is measured for ``--trials`` trials and for one, back to back, and the difference taken:
that leaves out start-up (interpreter, imports, building the point) and the first trial's
warm-up. A round whose difference is not positive (load slowed the one-trial run more) is left
out and counted. ``--fixed-lengthscale L`` adds rows "gcc l=L" (and "gcc-manifold l=L" when
that scheme is measured): the same scheme with that fixed lengthscale instead of "auto", measured
in the same rounds, so the cost of choosing the lengthscale is a ratio of two figures taken side
by side; a last line per such pair gives the CPU per trial of "auto" over the fixed one (issue
29's target: at most 1.5). The last column is the median rate over the 2000 trials/s target. The
machine may be shared: CPU time is the steadier figure there, wall time what a user sees.

``--against DIR`` adds a row "... @against" per row: the same measurements with gcc_mpi from
another checkout (PYTHONPATH=DIR; in-process in a child process), in the same rounds, and checks
that the two CLI runs recorded the same results (every field of the HDF5 file but the times).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import JOBS  # first: it keeps BLAS single-threaded, as the CLI does, before numpy loads

import numpy as np

from gcc_mpi.job.parse import load_job
from gcc_mpi.core.point import prepare
from gcc_mpi.job.records import MEASURED
from gcc_mpi.files.reader import mismatches
from gcc_mpi.core.driver import run_points
from gcc_mpi.core.simulate import Simulator

TARGET = 2000.0  # trials/s per scheme (issue 7)
RATIO_TARGET = 1.5  # CPU per trial of lengthscale "auto" over a fixed one (issue 29)
SCHEMES = ["uncoded", "replication", "bacc", "letcc", "gcc", "gcc-manifold"]


def overrides(row, trials):
    """The --set overrides of a row: a scheme, or "scheme l=L" (a fixed lengthscale L)."""
    scheme, _, fixed = row.partition(" l=")
    extra = [f"code.{scheme}.lengthscale={fixed}"] if fixed else []
    return ["stragglers.count=10", "code.workers=40", f"job.trials={trials}",
            f'code.schemes=["{scheme}"]', *extra]


class NullWriter:
    """Takes what the job driver writes and drops it: the in-process figure leaves HDF5 out (a
    commit is never due, so the driver appends only full blocks, as it would to a file)."""

    def add_point(self, index, params):
        pass

    def align(self, index, schemes):
        return 0

    def append(self, index, scheme, rows):
        pass

    def due(self):
        return False

    def flush(self, force=False):
        pass


def in_process(scheme, trials):
    """(wall, cpu) seconds of one scheme's trials by the job driver and the simulator (the
    point built before)."""
    job = load_job(JOBS / "digits-mlp.toml", overrides(scheme, trials))
    prepared = prepare(job)
    w0, c0 = time.perf_counter(), time.process_time()
    run_points(Simulator(), prepared, NullWriter())
    return time.perf_counter() - w0, time.process_time() - c0


def in_child(scheme, trials, path):
    """in_process in a fresh process with gcc_mpi from ``path``."""
    out = subprocess.run([sys.executable, __file__, "--child", scheme, str(trials)], check=True,
                         env=dict(os.environ, PYTHONPATH=str(path)), capture_output=True, text=True)
    return tuple(json.loads(out.stdout))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli(scheme, trials, tmp, path=None, out="out.h5"):
    """(wall, cpu) seconds of the whole `simulate` command for one scheme, start-up included;
    gcc_mpi from ``path`` if given."""
    cmd = [sys.executable, "-m", "gcc_mpi", "simulate", str(JOBS / "digits-mlp.toml"),
           "-o", f"{tmp}/{out}", "--overwrite", "-q"]
    for s in overrides(scheme, trials):
        cmd += ["--set", s]
    env = dict(os.environ, PYTHONPATH=str(path)) if path else None
    w0, c0 = time.perf_counter(), children_cpu()
    # run from tmp: `python -m` would import a gcc_mpi in the working directory first
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL, env=env, cwd=tmp)
    return time.perf_counter() - w0, children_cpu() - c0


def span(rates):
    return f"{min(rates):6.0f}-{max(rates):<6.0f}" if rates else f"{'n/a':^13s}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--schemes", nargs="+", default=SCHEMES)
    ap.add_argument("--fixed-lengthscale", type=float, help="add gcc rows with this lengthscale")
    ap.add_argument("--against", metavar="DIR", help="add rows with gcc_mpi from this checkout")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # in_process for --against
    args = ap.parse_args()
    if args.child:
        print(json.dumps(in_process(args.child[0], int(args.child[1]))))
        return
    T = args.trials
    rows = list(args.schemes)
    if args.fixed_lengthscale:
        rows += [f"{s} l={args.fixed_lengthscale:g}" for s in ("gcc", "gcc-manifold") if s in rows]
    other = Path(args.against).resolve() if args.against else None
    sides = [(s, None) for s in rows] + ([(s, other) for s in rows] if other else [])
    name = {(s, path): s + (" @against" if path else "") for s, path in sides}
    rates = {name[k]: {c: [] for c in ("in_wall", "in_cpu", "cli_wall", "cli_cpu")} for k in sides}
    startup, dropped, differ = [], 0, set()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):  # rounds, so that load changes hit every scheme alike
            for s in rows:
                for path in (None, other) if other else (None,):
                    run_in = (lambda *a: in_child(*a, path)) if path else in_process
                    out = "against.h5" if path else "out.h5"
                    for where, measure in (("in", run_in),
                                           ("cli", lambda *a: cli(*a, tmp, path, out))):
                        first = measure(s, 1)
                        whole = measure(s, T)
                        if where == "cli":
                            startup.append(first[0])
                        for clock, total, one in zip(("wall", "cpu"), whole, first):
                            if total > one:
                                rates[name[s, path]][f"{where}_{clock}"].append(
                                    (T - 1) / (total - one))
                            else:
                                dropped += 1
                if other and mismatches(f"{tmp}/out.h5", f"{tmp}/against.h5", MEASURED):
                    differ.add(s)
    print(f"digits-mlp, K = 10, N = 40, S = 10: {T} trials per run, {args.repeat} runs; "
          f"trials/s per scheme (min-max); CLI start-up and one trial {min(startup):.2f}-"
          f"{max(startup):.2f} s wall, subtracted ({dropped} differences not positive, left out); "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    if other:
        print(f"@against: gcc_mpi from {args.against}; the two CLI runs recorded the same results "
              f"for {len(rows) - len(differ)} of {len(rows)} rows"
              + (f" (NOT: {', '.join(sorted(differ))})" if differ else ""))
    print(f"{'scheme':16s}  {'in-process wall':>15s}  {'cpu':>13s}  {'CLI wall':>13s}  "
          f"{'cpu':>13s}  /{TARGET:.0f} (in-process, CLI; wall)")
    for s, r in rates.items():
        ratio_in, ratio_cli = (np.median(r[k]) / TARGET if r[k] else np.nan
                               for k in ("in_wall", "cli_wall"))
        print(f"{s:16s}  {span(r['in_wall']):>15s}  {span(r['in_cpu'])}  {span(r['cli_wall'])}  "
              f"{span(r['cli_cpu'])}  {ratio_in:.2f}, {ratio_cli:.2f}")
    for s in rows:
        auto, _, fixed = s.partition(" l=")
        if fixed and auto in rates:
            print(cost_ratio(auto, s, rates))
            if other:
                print(cost_ratio(f"{auto} @against", f"{s} @against", rates))


def cost_ratio(auto, fixed, rates):
    """The line comparing ``auto``'s CPU per trial with the fixed lengthscale's (issue 29's
    target: at most RATIO_TARGET times), in-process and through the CLI, each from the rounds'
    median rates (the same rounds: load hits both alike)."""
    parts = []
    for where in ("in", "cli"):
        a, f = rates[auto][f"{where}_cpu"], rates[fixed][f"{where}_cpu"]
        ratio = np.median(f) / np.median(a) if a and f else np.nan
        parts.append(f"{'in-process' if where == 'in' else 'CLI'} {ratio:.2f}x")
    return (f"CPU per trial of {auto} (lengthscale auto) over {fixed}: " + ", ".join(parts)
            + f" (target: at most {RATIO_TARGET:g}x)")


if __name__ == "__main__":
    main()
