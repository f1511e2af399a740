"""The whole job as a user runs it, against the floor: per-trial cost and start-up at 32 ranks.

    python benchmarks/whole_job.py [--ranks 32] [--short 20] [--long 1220] [--repeat 3]
                                   [--scheme gcc] [--against DIR] [--profile S]

Launches, in one go and ``--repeat`` times in turn (so all see the same machine):

- the floor: ``mpiexec -n R python benchmarks/whole_job.py --floor``, the polite scatter/gather
  loop of benchmarks/mpi_floor.py whose workers compute the same f (the digits MLP), as
  benchmarks/runtime_overhead.py runs it: the least any runtime doing this work pays per trial;
- the whole run twice: ``mpiexec -n R python -m gcc_mpi run --set ...`` — the default job
  (digits, K = 10, the shipped MLP) with one scheme, no stragglers (zero delay), N = R - 1 —
  for ``--short`` and ``--long`` trials, with its progress, table and HDF5 file.

Printed per repeat and as median [min, max] over repeats:

- run:      (wall of the long run - wall of the short run) / (long - short), ms per trial,
            each wall counted from the first trial (the start-up below, which varies by
            seconds on a loaded machine, would otherwise swamp the difference); "raw" counts
            from the launch;
- floor+f:  the floor loop's mean ms per trial, run just before and just after the two runs
            (the mean of both: the load of a shared machine drifts);
- enc+dec:  the scheme's mean t_encode + t_decode in the long run's file (rank 0 does those on
            top of the floor's work);
- latency:  the scheme's mean latency in the file (encode, scatter, gather, decode): run minus
            latency is what rank 0 spends between rounds (inputs, f(X), records, commits);
- ratio:    run / (floor+f + enc+dec) — issue 17 asks for <= 1.3;
- start-up: seconds from launching mpiexec to rank 0's "ranks by host and pid" line, printed
            once every worker is READY, just before the first trial (long and short runs);
            beside it the start-up floor: ``mpiexec -n R python -c "import numpy; from mpi4py
            import MPI"`` and a barrier, what any numpy + mpi4py program pays to start.

``--against DIR`` runs the two runs a second time in each repeat with gcc_mpi imported from
another checkout (``PYTHONPATH=DIR``, e.g. a worktree of main), so a change is compared with what
it changes on the same machine at the same time.

``--profile S`` instead samples rank 0 of one long run for S seconds with py-spy
(``pip install py-spy``; wall-clock samples, waiting included) and prints the share of its time
in each part of a trial.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from launch import mpiexec

HERE = Path(__file__).resolve().parent
FIRST_TRIAL = "gcc_mpi: ranks by host and pid"
BARE = "import numpy; from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"


def floor_main(trials):
    """Under mpiexec: the floor loop with the MLP (after a warm-up), one line from rank 0."""
    from mpi4py import MPI

    import runtime_overhead as ro

    comm = MPI.COMM_WORLD
    job = ro.job_for(comm.size, "mlp")
    targets = ro.floor_targets(comm, job)
    ro.floor_loop(comm, 20, targets[0])
    ms = ro.floor_loop(comm, trials, targets[0])
    if comm.rank == 0:
        print(f"floor+f mean {np.mean(ms):.4f} median {np.median(ms):.4f}", flush=True)


class Timed:
    """A launch: wall time, stdout, and when a line starting with FIRST_TRIAL came on stderr."""

    def __init__(self, cmd, cwd, env=None):
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", **(env or {}))
        env.pop("GCC_MPI_WAIT", None)
        self.first = None
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        err = []
        reader = threading.Thread(target=self._read, args=(proc.stderr, err, t0))
        reader.start()
        self.out = proc.stdout.read()
        code = proc.wait()
        reader.join()
        self.wall = time.monotonic() - t0
        self.err = "".join(err)
        if code != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{self.err[-2000:]}")

    def _read(self, stream, lines, t0):
        for line in stream:
            if self.first is None and line.startswith(FIRST_TRIAL):
                self.first = time.monotonic() - t0
            lines.append(line)


def floor_loop(args):
    """ms per trial of the floor loop with f, in an mpiexec of its own."""
    floor = Timed([mpiexec(), "-n", str(args.ranks), sys.executable, __file__, "--floor",
                   "--floor-trials", str(args.floor_trials)], HERE)
    return float(re.search(r"floor\+f mean (\S+)", floor.out).group(1))


# parts of rank 0's trial loop, by the function (file) a sample passes through
PARTS = [("waiting for results (Waiter.some)", "Waiter.some (mpi.py)"),
         ("  of which sleeping", "Backoff.sleep (mpi.py)"),
         ("decode and score", "decode_and_score (trial.py)"),
         ("draw inputs and delays", "PointSetup.draw (point.py)"),
         ("  of which seeding", "TrialRngs.__call__ (seeds.py)"),
         ("reference f(X)", "PointSetup.reference (point.py)"),
         ("encode and scatter (Master.start)", "Master.start (master.py)"),
         ("  of which encode", "encode_record (trial.py)"),
         ("records and commits (InOrder)", "InOrder.retired (in_order.py)"),
         ("  of which commits", "ResultWriter.commit (writer.py)"),
         ("each reply (Master.take)", "Master.take (master.py)"),
         ("STOPs and retiring a round", "Master.retire (master.py)")]


def profile(args, seconds):
    """py-spy samples of rank 0 during a long run: % of its wall time per part of a trial."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not os.path.exists(spy):
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = run_cmd(args.ranks, args.scheme, 100000, Path(tmp, "p.h5"))
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        try:
            for line in proc.stderr:
                if line.startswith(FIRST_TRIAL):
                    pid = re.search(r"(?:pids |0=)(\d+)", line).group(1)
                    break
            raw = Path(tmp, "samples.txt")
            subprocess.run([spy, "record", "-p", pid, "--idle", "--format", "raw", "-r", "250",
                            "-d", str(seconds), "-o", str(raw)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            proc.terminate()  # SIGTERM: the run stops cleanly
            proc.communicate()
        counts, total = collections.Counter(), 0
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            frames = {re.sub(r" \((?:.*/)?([^/:]+):\d+\)$", r" (\1)", f)
                      for f in stack.split(";")}
            total += int(n)
            for _, key in PARTS:
                counts[key] += int(n) if key in frames else 0
    print(f"# rank 0 of `mpiexec -n {args.ranks} python -m gcc_mpi run` ({args.scheme}, zero "
          f"delay), {total} samples over {seconds} s, % of its wall time:")
    for label, key in PARTS:
        print(f"{100 * counts[key] / max(total, 1):5.1f}%  {label}")


def run_cmd(ranks, scheme, trials, out):
    sets = [f'code.schemes=["{scheme}"]', "stragglers.model=none", f"job.trials={trials}"]
    return [mpiexec(), "-n", str(ranks), sys.executable, "-m", "gcc_mpi", "run", "-o", str(out),
            "--overwrite", *[a for s in sets for a in ("--set", s)]]


def enc_dec_ms(path, scheme):
    """Mean encode + decode and mean latency (encode to decoded) of the scheme's trials, ms."""
    from gcc_mpi.files.reader import read_results

    (point,) = read_results(path).points
    rows = point.schemes[scheme]
    return (1e3 * float(np.mean(rows["t_encode"] + rows["t_decode"])),
            1e3 * float(np.mean(rows["latency"])))


def spread(values, fmt):
    v = np.asarray(values)
    return f"{fmt.format(np.median(v))} [{fmt.format(v.min())}, {fmt.format(v.max())}]"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=32)
    p.add_argument("--short", type=int, default=20)
    p.add_argument("--long", type=int, default=1220)
    p.add_argument("--floor-trials", type=int, default=600)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--scheme", default="gcc")
    p.add_argument("--against", metavar="DIR",
                   help="also time the runs with gcc_mpi from another checkout (PYTHONPATH=DIR), "
                        "in turn with this one's")
    p.add_argument("--profile", type=int, metavar="S",
                   help="sample rank 0 of a long run for S seconds with py-spy instead")
    p.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)  # under mpiexec
    args = p.parse_args()
    if args.floor:
        return floor_main(args.floor_trials)
    if args.profile:
        return profile(args, args.profile)
    print(f"# whole_job: {args.ranks} ranks, scheme {args.scheme}, zero delay, digits MLP; "
          f"run = (wall of {args.long} trials - wall of {args.short}) / {args.long - args.short}")
    print(f"{'repeat':>9} {'run ms':>7} {'raw ms':>7} {'floor+f':>7} {'enc+dec':>7} "
          f"{'latency':>7} {'ratio':>5} {'start-up s (long, short)':>24} {'floor s':>7}")
    sides = {"this": None} | ({"against": args.against} if args.against else {})
    rows = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            floor_ms = floor_loop(args)
            bare = Timed([mpiexec(), "-n", str(args.ranks), sys.executable, "-c", BARE], tmp).wall
            runs = {side: whole_run(args, tmp, path) for side, path in sides.items()}
            floor_ms = (floor_ms + floor_loop(args)) / 2
            for side, (run_ms, raw_ms, ed, latency, first) in runs.items():
                row = (run_ms, raw_ms, floor_ms, ed, latency, run_ms / (floor_ms + ed), *first,
                       bare)
                rows[side].append(row)
                print(f"{k + 1:>2} {side:>6} " + " ".join(f"{v:7.2f}" for v in row[:5])
                      + f" {row[5]:5.2f} {row[6]:12.2f} {row[7]:11.2f} {bare:7.2f}", flush=True)
    for side, got in rows.items():
        run_ms, raw_ms, floor_ms, ed, latency, ratio, first_long, first_short, bare = map(
            list, zip(*got))
        where = "" if side == "this" else f" ({args.against})"
        print(f"# {side}{where}: median [min, max] over {args.repeat} repeats")
        print(f"run       : {spread(run_ms, '{:.2f}')} ms/trial (raw {spread(raw_ms, '{:.2f}')})")
        print(f"floor+f   : {spread(floor_ms, '{:.2f}')} ms/trial")
        print(f"enc+dec   : {spread(ed, '{:.2f}')} ms/trial")
        print(f"latency   : {spread(latency, '{:.2f}')} ms/trial (encode to decoded; the rest of "
              "run is rank 0 between rounds)")
        print(f"ratio     : {spread(ratio, '{:.2f}')}  (run / (floor+f + enc+dec); "
              "target <= 1.3)")
        print(f"start-up  : {spread(first_long + first_short, '{:.2f}')} s to the first trial; "
              f"numpy + mpi4py alone {spread(bare, '{:.2f}')} s")


def whole_run(args, tmp, path=None):
    """(run ms/trial, raw ms/trial, enc+dec ms, latency ms, (start-up long, short) s) of the
    short and the long run, with gcc_mpi from ``path`` (another checkout) if given."""
    env = {"PYTHONPATH": str(Path(path).resolve())} if path else {}
    short = Timed(run_cmd(args.ranks, args.scheme, args.short, Path(tmp, "s.h5")), tmp, env)
    long = Timed(run_cmd(args.ranks, args.scheme, args.long, Path(tmp, "l.h5")), tmp, env)
    trials = args.long - args.short
    run_ms = 1e3 * ((long.wall - long.first) - (short.wall - short.first)) / trials
    raw_ms = 1e3 * (long.wall - short.wall) / trials
    ed, latency = enc_dec_ms(Path(tmp, "l.h5"), args.scheme)
    return run_ms, raw_ms, ed, latency, (long.first, short.first)


if __name__ == "__main__":
    sys.exit(main())
