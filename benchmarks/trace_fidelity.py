"""Does the simulator, replaying a probe of this machine, predict the MPI run's latency?

    python benchmarks/trace_fidelity.py [--ranks 32] [--rounds 300] [--repeats 3]
                                        [--probe P.h5 | --once]

``--repeats`` times, as a user would: probe the machine (``mpiexec -n R python -m gcc_mpi
probe``), then ``simulate`` and the MPI ``run`` of the default job with ``stragglers.model =
"trace"`` on that probe (decode.stragglers = 8, as the default job's S; N = R - 1 for both).
``--once`` probes only before the first repeat, ``--probe`` uses a given file for all. Prints,
per scheme, the latency p50 of each, their ratio in every repeat and its spread. On a shared
machine the load drifts between a probe and a run (the reason for a fresh probe per repeat):
compare the ratios of one invocation, not figures across days.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from launch import mpiexec

MPIEXEC = mpiexec()


def cli(*args, ranks=None, out=None):
    cmd = [sys.executable, "-m", "gcc_mpi", *args]
    if ranks:
        cmd = [MPIEXEC, "-n", str(ranks), *cmd]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def p50s(path):
    rows = json.loads(cli("analyze", str(path), "--json"))
    return {r["scheme"]: r["latency_p50"] for r in rows}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=32)
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--probe", help="an existing probe file for every repeat (default: probe "
                                   "before each)")
    p.add_argument("--once", action="store_true", help="probe before the first repeat only")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gcc_mpi_trace_"))
    sim, run = [], []
    for i in range(args.repeats):
        probe = Path(args.probe) if args.probe else tmp / f"probe{0 if args.once else i}.h5"
        if not probe.exists():
            cli("probe", "-o", str(probe), "--rounds", str(args.rounds), "-q", ranks=args.ranks)
        sets = ["--set", "stragglers.model=trace", "--set", f"stragglers.path={probe.resolve()}",
                "--set", "decode.stragglers=8", "--set", f"job.trials={args.trials}",
                # the simulator's default job has N = 7 (what it suggests for 8 ranks); the MPI
                # run's is R - 1, so both are given N
                "--set", f"code.workers={args.ranks - 1}"]
        cli("simulate", *sets, "-q", "-o", str(tmp / f"sim{i}.h5"))
        cli("run", *sets, "-q", "-o", str(tmp / f"run{i}.h5"), ranks=args.ranks)
        sim.append(p50s(tmp / f"sim{i}.h5"))
        run.append(p50s(tmp / f"run{i}.h5"))
    probes = "one given probe" if args.probe else "one probe" if args.once else "a probe each"
    print(f"default job, {args.ranks} ranks, traces of {args.rounds} rounds, "
          f"{args.repeats} repeats of {args.trials} trials, {probes} (latency p50, ms)")
    print(f"{'scheme':14s} {'simulate':>9s} {'MPI run':>9s}  MPI/simulate per repeat   "
          "mean  spread")
    for scheme in sim[0]:
        s = np.array([r[scheme] for r in sim]) * 1e3
        m = np.array([r[scheme] for r in run]) * 1e3
        ratio = m / s
        print(f"{scheme:14s} {np.median(s):9.3f} {np.median(m):9.3f}  "
              f"{' '.join(f'{x:5.2f}' for x in ratio):24s} {ratio.mean():5.2f}  "
              f"{ratio.min():.2f}-{ratio.max():.2f}")
    print(f"(files in {tmp})", file=sys.stderr)


if __name__ == "__main__":
    main()
