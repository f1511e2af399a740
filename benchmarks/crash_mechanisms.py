"""What a SIGKILL leaves of an HDF5 file written by the mechanisms gcc_mpi did not choose
(docs/reliability.md, "Crash safety"; issue 26).

    python benchmarks/crash_mechanisms.py [--kills 100] [--seed 1]

- ``swmr``: HDF5's single-writer/multiple-reader mode (h5py, ``libver="latest"``, ``swmr_mode``
  on, a flush after every block): the writer is killed once, then the file is opened as plain
  h5py opens it (read, and append as ``--resume`` would) and with ``swmr=True``; prints what
  each says. Also whether a group can be created while SWMR writes (a run adds points, schemes
  and attributes as it goes).
- ``inplace``: plain HDF5 written in place, no protection (chunked resizable datasets of numbers
  and strings, as gcc_mpi's, ``flush()`` after every block of rows): ``--kills`` writers, each
  killed at a random moment (0.2 to 1.5 s after its first block), each on a fresh file; counts
  the files plain h5py cannot open and those whose datasets hold unequal numbers of rows or a
  row that is not what was written.

Each writer is this script run as a child (``--child MODE FILE``); it prints "block" after its
first flushed block, and the parent waits for that line, never for a fixed time.
"""

import argparse
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROWS, N = 200, 40  # rows per block, columns of the 2-d datasets


def block(t0):
    t = np.arange(t0, t0 + ROWS)
    return {"trial": t, "nmse": t * 0.5, "used": (t[:, None] + np.arange(N)) % 3 == 0,
            "reason": np.array([f"r{x}" if x % 7 == 0 else "" for x in t], dtype=object)}


def child(mode, path):
    swmr = mode == "swmr"
    f = h5py.File(path, "w", libver="latest" if swmr else "earliest")
    g = f.create_group("point_000").create_group("bacc")
    first = block(0)
    for k, a in first.items():
        dtype = h5py.string_dtype() if a.dtype == object else a.dtype
        g.create_dataset(k, shape=(0,) + a.shape[1:], maxshape=(None,) + a.shape[1:],
                         chunks=(ROWS,) + a.shape[1:], dtype=dtype)
    if swmr:
        f.swmr_mode = True
        try:
            f.create_group("point_001")
            print("swmr: a group can be created while SWMR writes", flush=True)
        except Exception as e:  # noqa: BLE001 (what HDF5 says is the figure)
            print(f"swmr: creating a group while SWMR writes: {type(e).__name__}: {e}",
                  flush=True)
    t = 0
    while True:
        for k, a in block(t).items():
            d = g[k]
            d.resize(t + ROWS, axis=0)
            d[t:t + ROWS] = a
        t += ROWS
        f.flush()
        if t == ROWS:
            print("block", flush=True)


def start(mode, path):
    proc = subprocess.Popen([sys.executable, __file__, "--child", mode, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    until = time.monotonic() + 60
    while time.monotonic() < until:
        if select.select([proc.stdout], [], [], 1.0)[0]:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
            if line.startswith("block"):
                return proc, lines
    proc.kill()
    raise SystemExit(f"{mode}: the writer showed no block within 60 s: {lines}")


def attempt(what, fn):
    try:
        fn()
        return f"{what}: opens"
    except Exception as e:  # noqa: BLE001
        return f"{what}: {type(e).__name__}: {str(e).splitlines()[0]}"


def swmr(folder, rng):
    path = folder / "swmr.h5"
    proc, lines = start("swmr", path)
    print(*[line for line in lines if line.startswith("swmr")], sep="\n")
    time.sleep(rng.uniform(0.2, 1.0))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    print("swmr, after a SIGKILL:")
    print("  " + attempt("h5py.File(path, 'r')", lambda: h5py.File(path, "r").close()))
    print("  " + attempt("h5py.File(path, 'a')", lambda: h5py.File(path, "a").close()))
    print("  " + attempt("h5py.File(path, 'r', swmr=True)",
                         lambda: h5py.File(path, "r", swmr=True).close()))


def check(path):
    """None if the file opens and holds equal, correct rows in every dataset; else why not."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            g = f["point_000"]["bacc"]
            lengths = {k: g[k].shape[0] for k in g}
            if len(set(lengths.values())) != 1:
                return f"unequal lengths {lengths}"
            n = lengths["trial"]
            want = {k: np.concatenate([v[k] for v in map(block, range(0, n, ROWS))])
                    if n else None for k in g} if n else {}
            for k in want:
                got = g[k].asstr()[:] if k == "reason" else g[k][:]
                if not np.array_equal(got, want[k].astype(str) if k == "reason" else want[k]):
                    return f"{k} differs from what was written"
    except Exception as e:  # noqa: BLE001
        return f"unreadable: {type(e).__name__}: {str(e).splitlines()[0]}"
    return None


def inplace(folder, kills, rng):
    unreadable = unequal = wrong = 0
    for k in range(kills):
        path = folder / f"inplace-{k}.h5"
        proc, _ = start("inplace", path)
        time.sleep(rng.uniform(0.2, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        why = check(path)
        if why:
            print(f"  kill {k + 1}: {why}")
        unreadable += bool(why and why.startswith("unreadable"))
        unequal += bool(why and why.startswith("unequal"))
        wrong += bool(why and "differs" in why)
        path.unlink()
    print(f"inplace: {kills} SIGKILLs: {unreadable} files unreadable, {unequal} with datasets "
          f"of unequal lengths, {wrong} with rows other than written")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"# h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}")
    with tempfile.TemporaryDirectory(prefix="crash_mechanisms-") as folder:
        swmr(Path(folder), rng)
        inplace(Path(folder), args.kills, rng)
    print("# commands: " + " ".join(sys.argv))


if __name__ == "__main__":
    main()
