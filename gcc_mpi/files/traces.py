"""Measured task times: the probe file that ``python -m gcc_mpi probe`` writes (the MPI part is
runtime/probe.py), read back as the "trace" straggler model that the simulator and an MPI run
replay (``load_trace``), and the reference computation that scales the simulator's encode and
decode times to rank 0's (``reference_work``). Its table and figure are probe_report.py's. No MPI
here.

Layout (format ``gcc_mpi-probe/1``; worker w is rank w + 1)::

    /            attrs: format, complete, config, version, command, created, mpi, master_host,
                 provenance (as a results file's, docs/output.md; absent in earlier files)
    /arrival     (T, W) float64  seconds from the round's send on rank 0 to the arrival of the
                                 worker's result on rank 0 (f run on real inputs, no delay)
    /compute     (T, W) float64  the worker's own time in f for that task
    /host        (W,)   str      host of each worker
    /rank        (W,)   int64    its MPI rank
    /master      (T,)   float64  rank 0's time for a fixed reference computation
                                 (``reference_work``) after each round, its workers around it
                                 (absent in files of earlier versions)

``complete`` is false when the probe was stopped (SIGTERM, SIGINT) before its last round; the
file then holds the rounds that finished.
"""

import functools
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..errors import JobError
from ..job.paths import located
from ..job.stragglers import Trace
from .format import LIBVER

FORMAT = "gcc_mpi-probe/1"
KEY = "stragglers.path"


# -- writing and reading ------------------------------------------------------------------
def reference_work():
    """Seconds that one fixed piece of rank 0's kind of work takes here: small symmetric
    eigendecompositions and products, as in encoding and decoding. Timed on rank 0 by the probe
    (among its workers) and by the simulator (alone), it tells the simulator how much slower
    rank 0's encode and decode run in the probed job than in its own process: on an
    oversubscribed node, a few times."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 40))
    A = A @ A.T + 40 * np.eye(40)
    B = rng.standard_normal((40, 10))
    t0 = time.perf_counter()
    for _ in range(5):
        w, V = np.linalg.eigh(A)
        B = V @ ((V.T @ B) / (w[:, None] + 1.0))
    return time.perf_counter() - t0


def write_probe(path, arrival, compute, hosts, ranks, *, complete, config, command, mpi,
                master_host, master=None, provenance=None):
    """Write a probe file whole: to ``<path>.tmp``, then renamed over ``path`` (atomic)."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w", track_order=True, libver=LIBVER) as f:
        a = f.attrs
        a["format"], a["complete"], a["config"] = FORMAT, bool(complete), config
        a["version"], a["command"], a["mpi"] = __version__, command, mpi
        a["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        a["master_host"] = master_host
        if provenance is not None:  # core.provenance.collect's, as a results file's
            a["provenance"] = json.dumps(provenance, sort_keys=True)
        checked = {"fletcher32": True}  # a damaged file is a read error, not other delays
        f.create_dataset("arrival", data=np.asarray(arrival, np.float64), **checked)
        f.create_dataset("compute", data=np.asarray(compute, np.float64), **checked)
        f["host"] = np.array([str(h) for h in hosts], dtype=h5py.string_dtype("utf-8"))
        f.create_dataset("rank", data=np.asarray(ranks, np.int64), **checked)
        if master is not None:
            f.create_dataset("master", data=np.asarray(master, np.float64), **checked)
    os.replace(tmp, path)


def is_probe_file(path):
    """Whether ``path`` is an HDF5 file with this module's format (False for anything else)."""
    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == FORMAT
    except (OSError, ValueError):
        return False


def read_probe(path, key=None):
    """{attrs, arrival, compute, host, rank} of a probe file; JobError naming ``key`` (default:
    the path) when it is missing, not HDF5 or not a probe file."""
    path = os.fspath(path)
    key = key or path
    if not os.path.exists(path):
        raise JobError(key, f"{path}: no such file")
    try:
        with h5py.File(path, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise JobError(key, f"{path} is not a probe file (format "
                                    f"{f.attrs.get('format')!r}, expected {FORMAT!r})")
            attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
            return {"attrs": attrs, "arrival": f["arrival"][()], "compute": f["compute"][()],
                    "host": list(f["host"].asstr()[()]), "rank": f["rank"][()],
                    "master": f["master"][()] if "master" in f else None}
    except JobError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError) as e:  # damaged: as reader.DAMAGE
        raise JobError(key, f"{path}: not a readable probe file ({e})") from None


# -- the trace straggler model ------------------------------------------------------------
def baseline(arrival):
    """Per worker, the part of its measured times that an MPI run reproduces by itself: its
    median. An MPI run injects only what a round took beyond it (``arrival - baseline``, at
    least 0) and its worker adds its own messages, f and waiting on top; so a round at or below
    the usual is left to the run's own variation, which is what the probe measured, and a slow
    round comes out slow by its excess. Subtracting the fastest time instead makes the run add
    its whole usual time again on top of every round, and subtracting the median compute time
    leaves out the messages and the waiting for a core; side by side the median came closest
    more often (docs/probe.md)."""
    return np.median(arrival, axis=0)


def _load_array(path, key):
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if suffix == ".csv":
            try:
                return np.loadtxt(path, delimiter=",", ndmin=2)
            except ValueError:  # a header line of worker names
                return np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
    except (OSError, ValueError) as e:
        raise JobError(key, f"{path}: cannot read delays ({' '.join(str(e).split())})") from None
    raise JobError(key, f"{path}: must be a probe file (.h5), a .npy or a .csv of delays "
                        "(rounds x workers)")


@functools.lru_cache(maxsize=8)
def _load(path, key, _stamp):
    probe = path.suffix.lower() in (".h5", ".hdf5")
    content = read_probe(path, key) if probe else {"arrival": _load_array(path, key)}
    times = np.asarray(content["arrival"])
    if times.dtype.kind not in "iuf":
        raise JobError(key, f"{path}: delays must be numbers, got dtype {times.dtype}")
    if times.ndim != 2 or 0 in times.shape:
        raise JobError(key, f"{path}: delays must be a 2-D array, rounds x workers, with at "
                            f"least one of each; got shape {times.shape}")
    times = times.astype(np.float64)
    if not np.all(np.isfinite(times)):
        bad = np.argwhere(~np.isfinite(times))[0]
        raise JobError(key, f"{path}: delays must be finite, got {times[tuple(bad)]} at round "
                            f"{bad[0]}, worker {bad[1]}")
    if np.any(times < 0):
        raise JobError(key, f"{path}: delays must be >= 0 seconds, got {times.min():g}")
    base = baseline(times) if probe else None
    master = content.get("master")
    master = float(np.median(master)) if master is not None and len(master) else None
    return Trace(times, base, source=str(path), master=master)


def read_trace(path, key=KEY):
    """The Trace in ``path`` (a probe file, .npy or .csv), checked: JobError naming ``key``."""
    path = Path(path)
    if not path.is_file():
        raise JobError(key, f"{path}: no such file")
    st = path.stat()
    return _load(path.resolve(), key, (st.st_mtime_ns, st.st_size))


def load_trace(config, base_dir="."):
    """The Trace of a job point with stragglers.model = "trace" (path relative to the job
    file's folder, like data.path), checked against its N: JobError naming stragglers.path."""
    s = config.stragglers
    path = located(s.path, base_dir)
    trace = read_trace(path)
    N = config.code.workers
    if trace.workers < N and not s.resample:
        raise JobError(KEY, f"{path} has {trace.workers} workers, fewer than code.workers = {N}; "
                            "probe with more ranks, or set stragglers.resample = true to reuse "
                            "its workers")
    return trace
