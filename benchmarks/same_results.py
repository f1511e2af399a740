"""Do two checkouts of gcc_mpi give the same results? Every shipped job is simulated by both and
the two files are compared field by field, the clock's readings aside.

    python benchmarks/same_results.py --against DIR [--trials 8] [--jobs NAME ...] [--keep DIR]

DIR is another checkout of the project (e.g. ``git worktree add ../before HEAD~5``). Each job —
the default job, jobs/*.toml, jobs/claims/*.toml and examples/*.toml — runs as a user runs it,
``python -m gcc_mpi simulate JOB -o OUT.h5 -q --set job.trials=T``, once with this checkout's
gcc_mpi and once with DIR's (PYTHONPATH), from a scratch folder. The files are compared by
``gcc_mpi.files.reader.mismatches`` with only the measured times ignored (``records.MEASURED``: the
simulator's arrivals, waits and stop times are derived from the seeds and must agree too).
``--trials 0`` runs each job's own number of trials. Prints one line per job and exits 1 if any
differ: a change meant to leave behaviour alone (a refactoring) must print "same" everywhere.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's gcc_mpi, whatever is installed

from gcc_mpi.job.records import MEASURED  # noqa: E402
from gcc_mpi.files.reader import mismatches  # noqa: E402


def shipped_jobs():
    """{name: job file or None (the default job)} of every job the project ships."""
    jobs = {"default": None}
    for folder in ("jobs", "jobs/claims", "examples"):
        for path in sorted((ROOT / folder).glob("*.toml")):
            jobs[f"{folder}/{path.stem}".removeprefix("jobs/")] = path
    return jobs


def simulate(checkout, job, out, trials, folder):
    """Run ``simulate`` of ``job`` with the gcc_mpi of ``checkout``; its seconds."""
    cmd = [sys.executable, "-m", "gcc_mpi", "simulate", *([str(job)] if job else []),
           "-o", str(out), "-q", *(["--set", f"job.trials={trials}"] if trials else [])]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} with {checkout} ended with {done.returncode}:\n"
                           f"{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--against", required=True, type=Path, help="the other checkout")
    p.add_argument("--trials", type=int, default=8, help="trials per point (0: the job's own)")
    p.add_argument("--jobs", nargs="+", metavar="NAME", help="only these (default: all)")
    p.add_argument("--keep", type=Path, help="keep the files under DIR")
    args = p.parse_args()
    jobs = shipped_jobs()
    if args.jobs:
        unknown = set(args.jobs) - set(jobs)
        if unknown:
            p.error(f"unknown jobs {sorted(unknown)}; the shipped ones: {', '.join(jobs)}")
        jobs = {k: v for k, v in jobs.items() if k in args.jobs}
    other = args.against.resolve()
    if not (other / "gcc_mpi" / "__init__.py").exists():
        p.error(f"{other} holds no gcc_mpi checkout")
    scratch = Path(tempfile.mkdtemp(prefix="same-results-"))
    print(f"# this checkout ({ROOT.name}) against {other}, {args.trials or 'each job'}'s "
          f"trials, times ignored: {', '.join(sorted(MEASURED))}", flush=True)
    differ = 0
    for name, job in jobs.items():
        folder = scratch / name.replace("/", "-")
        folder.mkdir()
        here, there = folder / "here.h5", folder / "against.h5"
        seconds = simulate(ROOT, job, here, args.trials, folder)
        seconds_against = simulate(other, job, there, args.trials, folder)
        found = mismatches(here, there, ignore=MEASURED)
        differ += bool(found)
        verdict = "same" if not found else "DIFFERENT: " + "; ".join(found[:6]) + (
            f" and {len(found) - 6} more" if len(found) > 6 else "")
        print(f"{name:32s} {seconds:6.1f} s / {seconds_against:6.1f} s  {verdict}", flush=True)
    if args.keep:
        shutil.copytree(scratch, args.keep, dirs_exist_ok=True)
    shutil.rmtree(scratch)
    print(f"{len(jobs) - differ} of {len(jobs)} jobs give the same results")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
