"""The tail at equal cost (issue 37): p50 and p99 of every scheme of a results file, with their
95 % intervals, and the best coded scheme's p99 against replication's and uncoded's.

    mpiexec -n 9 python -m gcc_mpi run jobs/digits-heavy.toml --set job.trials=400 -o heavy.h5
    python benchmarks/headline.py heavy.h5 [more.h5 ...]

Every scheme of one sweep point ran on the same N workers (the same machine cost; uncoded uses
K of them) on paired trials. The intervals are distribution-free, from order statistics
(gcc_mpi.reports.statistics.quantile_ci95, as ``analyze --json``'s latency_p99_lo/hi): the p99's
upper end needs about 370 trials ("-" below that). "best coded" is the approximate scheme of
the lowest p99; the verdict says whether its interval and the other's are apart ("shorter",
"longer") or overlap ("not resolved").

The same headline under a trace replay, the cluster's own stragglers instead of a model
(docs/probe.md): probe the ranks with the heavy f, then run the heavy job replaying that probe.
``--replay`` runs the two commands it prints, then the table of the replay's file:

    python benchmarks/headline.py --replay [--trials 400] [--rounds 300] [--keep DIR]

    mpiexec -n 9 python -m gcc_mpi probe jobs/digits-heavy.toml -o DIR/heavy-probe.h5 --rounds 300
    mpiexec -n 9 python -m gcc_mpi run jobs/digits-heavy.toml -o DIR/heavy-trace.h5 \
        --set job.trials=400 --set stragglers.model=trace --set stragglers.path=DIR/heavy-probe.h5

(``stragglers.path`` is relative to the job file, so DIR is absolute.) Each file's header names
its straggler model, so ``headline.py heavy.h5 DIR/heavy-trace.h5`` prints both side by side.
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from launch import mpiexec, oversubscribe

from gcc_mpi.files.reader import read_results
from gcc_mpi.reports.statistics import quantile_ci95

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

JOB = Path(__file__).resolve().parents[1] / "jobs" / "digits-heavy.toml"
RANKS = 9  # the heavy job's N = 8 workers and rank 0: the probe measures the ranks it replays

EXACT = ("uncoded", "replication", "lcc")


def ms(v):
    return "-" if v is None else f"{1e3 * v:.1f}"


def quantile(latency, q):
    lo, hi = quantile_ci95(latency, q)
    return float(np.quantile(latency, q)), lo, hi


def verdict(a, b):
    """Whether interval a = (value, lo, hi) lies below b's, above it, or they overlap."""
    if a[2] is not None and b[1] is not None and a[2] < b[1]:
        return "shorter"
    if a[1] is not None and b[2] is not None and a[1] > b[2]:
        return "longer"
    return "not resolved"


def point_table(point):
    rows = {}
    print(f"{'scheme':14} {'trials':>6} {'nmse dB':>8} {'relacc':>6}  {'p50 ms [95% CI]':>22}  "
          f"{'p99 ms [95% CI]':>24}")
    for name, d in point.schemes.items():
        ok = ~d["failed"]
        latency = d["latency"][ok]
        nmse = d["nmse"][ok]
        db = "exact" if np.all(nmse < 1e-20) else f"{10 * np.log10(np.mean(nmse)):.1f}"
        rows[name] = quantile(latency, 0.5), quantile(latency, 0.99)
        (p50, l50, h50), (p99, l99, h99) = rows[name]
        print(f"{name:14} {ok.sum():6d} {db:>8} {np.mean(d['relacc'][ok]):6.3f}  "
              f"{ms(p50):>6} [{ms(l50):>5}, {ms(h50):>5}]  {ms(p99):>7} [{ms(l99):>6}, "
              f"{ms(h99):>6}]")
    return rows


def compare(rows):
    coded = [n for n in rows if n not in EXACT]
    if not coded:
        return
    best = min(coded, key=lambda n: rows[n][1][0])
    for other in ("replication", "uncoded"):
        if other in rows:
            ratio = rows[best][1][0] / rows[other][1][0]
            print(f"best coded {best}: p99 {ratio:.2f}x {other}'s "
                  f"({verdict(rows[best][1], rows[other][1])}; p50 "
                  f"{rows[best][0][0] / rows[other][0][0]:.2f}x, "
                  f"{verdict(rows[best][0], rows[other][0])})")


def stragglers(config_toml):
    """The straggler model a file ran with, as its header names it."""
    try:
        s = tomllib.loads(config_toml or "").get("stragglers", {})
    except tomllib.TOMLDecodeError:
        return "?"
    if s.get("model") == "trace":
        return f"trace replay of {s.get('path')}"
    return f"model {s.get('model', '?')}"


def replay_commands(folder, trials, rounds, job=JOB):
    """(probe, run, results file): the gcc_mpi arguments that probe the ranks with the job's f
    into ``folder`` and run the job replaying that probe."""
    folder = Path(folder).resolve()  # stragglers.path is read relative to the job file
    probe, out = folder / "heavy-probe.h5", folder / "heavy-trace.h5"
    return (["probe", str(job), "-o", str(probe), "--rounds", str(rounds)],
            ["run", str(job), "-o", str(out), "--set", f"job.trials={trials}",
             "--set", "stragglers.model=trace", "--set", f"stragglers.path={probe}"], out)


def replay(trials, rounds, keep=None):
    """Probe, then the replay's run, each printed before it runs; the results file."""
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="gcc_mpi_headline_"))
    *steps, out = replay_commands(folder, trials, rounds)
    for argv in steps:
        cmd = [mpiexec(), *oversubscribe(), "-n", str(RANKS), sys.executable, "-m", "gcc_mpi",
               *argv]
        print("$ " + " ".join(cmd), flush=True)
        if subprocess.run(cmd).returncode:
            raise SystemExit(f"failed: {' '.join(cmd)}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--replay", action="store_true",
                    help="probe the ranks with the heavy f, run the heavy job on that trace")
    ap.add_argument("--trials", type=int, default=400, help="of the replay (default 400)")
    ap.add_argument("--rounds", type=int, default=300, help="of the probe (default 300)")
    ap.add_argument("--keep", help="folder for the probe and the replay's file (default: a "
                                   "new temporary one)")
    args = ap.parse_args()
    files = args.files + ([str(replay(args.trials, args.rounds, args.keep))]
                          if args.replay else [])
    if not files:
        ap.error("name a results file, or --replay")
    for path in files:
        r = read_results(path)
        print(f"# {path}: {r.attrs.get('mpi', '?').splitlines()[0][:60]}; "
              f"{r.attrs.get('command', '?')}; stragglers: {stragglers(r.config_toml)}")
        for point in r.points:
            print(f"point {point.index} {point.params if hasattr(point, 'params') else ''}")
            compare(point_table(point))
        print()


if __name__ == "__main__":
    main()
