"""A worker SIGKILLed or SIGSTOPped while MPI starts: does every run end (or complete) within
60 s with a gcc_mpi line naming the rank?

    python benchmarks/startup_faults.py [--ranks 16] [--rank 5] [--at 0.5,1,2] [--timeout 90]

Run it with the python of the environment whose MPI it is to test (the mpiexec beside it).
Each run is the default job (20 trials) on ``--ranks`` ranks of this host; rank ``--rank`` gets
the signal ``at`` seconds after mpiexec was launched (the wall clock: it lands wherever start-up
then is), for each signal, each moment, and each launch: plain, and with the MPI's keep-going
option (Open MPI ``--with-ft ulfm``, hydra ``-disable-auto-cleanup``). Printed: one line per
run (exit code, seconds to the end, the gcc_mpi line that names a rank), then the tally.
The tests provoke the same faults at events instead (tests/test_startup_faults.py).
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from launch import is_openmpi, mpiexec, oversubscribe

RANK_VARS = (b"PMI_RANK", b"OMPI_COMM_WORLD_RANK")
MARK = "GCC_MPI_BENCH_LAUNCH"


def marked(mark):
    """{pid: rank} of the ranks whose environment holds the launch's mark."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(v.partition(b"=")[::2] for v in f.read().split(b"\0"))
        except OSError:
            continue
        if env.get(MARK.encode()) == mark.encode():
            rank = next((env[v] for v in RANK_VARS if env.get(v, b"").isdigit()), None)
            found[int(entry)] = None if rank is None else int(rank)
    return found


def one(args, signum, at, options, folder):
    keep_going = (["--with-ft", "ulfm"] if is_openmpi() else ["-disable-auto-cleanup"])
    extra = [*oversubscribe(), *(keep_going if options else [])]
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "OPENBLAS_NUM_THREADS": "1",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    cmd = [mpiexec(), *extra, "-n", str(args.ranks), sys.executable, "-m", "gcc_mpi", "-o",
           "s.h5", "--overwrite", "-q", "--set", "job.trials=20"]
    err_path = folder / "err"
    with open(err_path, "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        hit = None
        while time.monotonic() < t0 + at or hit is None:
            if proc.poll() is not None:
                break
            if time.monotonic() >= t0 + at:
                hit = next((p for p, r in marked(mark).items() if r == args.rank), None)
                if hit is not None:
                    os.kill(hit, signum)
            time.sleep(0.005)
        try:
            code = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            code = "hung"
        took = time.monotonic() - t0 - at
        for pid in marked(mark):  # whatever is left (a hung run): ended
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if code == "hung":
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = err_path.read_text(errors="replace")
    if args.keep:
        name = f"{'keep' if options else 'plain'}-{signal.Signals(signum).name}-{at:g}.err"
        (Path(args.keep) / name).write_text(text)
    lines = [line for line in text.splitlines() if line.startswith("gcc_mpi:")
             and re.search(rf"\brank {args.rank}\b|\branks? [\d, ]*\b{args.rank}\b", line)]
    return code, took, lines[0] if lines else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--rank", type=int, default=5)
    parser.add_argument("--at", default="0.5,1,2")
    parser.add_argument("--timeout", type=float, default=90)
    parser.add_argument("--keep", help="a folder to keep each run's stderr in")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for options in (False, True):
            for name in ("KILL", "STOP"):
                for at in (float(a) for a in args.at.split(",")):
                    code, took, line = one(args, getattr(signal, "SIG" + name), at, options,
                                           Path(tmp))
                    ok = code != "hung" and took < 60 and bool(line or code == 0)
                    rows.append(ok)
                    print(f"{'keep-going' if options else 'plain':10} SIG{name:4} at {at:3g} s: "
                          f"exit {code}, ended {took:5.1f} s after the signal, "
                          f"{'ok' if ok else 'WRONG'}: {line[:150]}", flush=True)
    print(f"{sum(rows)} of {len(rows)} runs ended within 60 s with a line naming rank "
          f"{args.rank} (or completed)")
    return 0 if all(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
