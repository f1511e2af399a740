"""Probe files: each worker's measured task times, written by ``python -m gcc_mpi probe`` (the
MPI part is runtime/probe.py), summarised by ``analyze`` and replayed by the "trace" straggler
model (``load_trace``). No MPI here.

Layout (format ``gcc_mpi-probe/1``; worker w is rank w + 1)::

    /            attrs: format, complete, config, version, command, created, mpi, master_host
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
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import h5py
import numpy as np

from . import __version__
from .errors import JobError
from .stragglers import Trace

FORMAT = "gcc_mpi-probe/1"
QUANTILES = (50, 90, 99)
KEY = "stragglers.path"


# -- writing and reading ------------------------------------------------------------------
def check_output(path, overwrite):
    """Refuse an existing output unless ``overwrite`` (before any MPI work)."""
    if os.path.exists(path) and not overwrite:
        raise JobError("-o", f"{path} exists; use --overwrite")


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
                master_host, master=None):
    """Write a probe file whole: to ``<path>.tmp``, then renamed over ``path`` (atomic)."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w", track_order=True) as f:
        a = f.attrs
        a["format"], a["complete"], a["config"] = FORMAT, bool(complete), config
        a["version"], a["command"], a["mpi"] = __version__, command, mpi
        a["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        a["master_host"] = master_host
        f["arrival"] = np.asarray(arrival, np.float64)
        f["compute"] = np.asarray(compute, np.float64)
        f["host"] = np.array([str(h) for h in hosts], dtype=h5py.string_dtype("utf-8"))
        f["rank"] = np.asarray(ranks, np.int64)
        if master is not None:
            f["master"] = np.asarray(master, np.float64)
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
    except (OSError, KeyError) as e:
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
    path = Path(s.path).expanduser()
    path = path if path.is_absolute() else Path(base_dir) / path
    trace = read_trace(path)
    N = config.code.workers
    if trace.workers < N and not s.resample:
        raise JobError(KEY, f"{path} has {trace.workers} workers, fewer than code.workers = {N}; "
                            "probe with more ranks, or set stragglers.resample = true to reuse "
                            "its workers")
    return trace


# -- analysis -----------------------------------------------------------------------------
def _q(a):
    return {f"p{q}": float(np.percentile(a, q)) for q in QUANTILES}


def summarize_probe(p, slowest=3):
    """The ``analyze --json`` object of a probe file (seconds)."""
    arrival, compute = p["arrival"], p["compute"]
    T, W = arrival.shape
    workers = [{"worker": w, "rank": int(p["rank"][w]), "host": p["host"][w],
                **{f"arrival_{k}": v for k, v in _q(arrival[:, w]).items()},
                **{f"compute_{k}": v for k, v in _q(compute[:, w]).items()}}
               for w in range(W)] if T else []
    pooled = _q(arrival.ravel()) if T else dict.fromkeys(f"p{q}" for q in QUANTILES)
    tail = {}
    if T:
        by_p50 = sorted(workers, key=lambda r: -r["arrival_p50"])[:slowest]
        by_p99 = sorted(workers, key=lambda r: -r["arrival_p99"])[:slowest]
        everyone = np.max(arrival, axis=1)  # a round that waits for every worker
        tail = {"p99_over_p50": pooled["p99"] / pooled["p50"] if pooled["p50"] > 0 else None,
                "slowest_by_p50": [r["worker"] for r in by_p50],
                "slowest_by_p99": [r["worker"] for r in by_p99],
                "wait_all_p50": float(np.percentile(everyone, 50)),
                "wait_all_p99": float(np.percentile(everyone, 99)),
                "compute_share_p50": float(np.median(compute) / np.median(arrival))
                if np.median(arrival) > 0 else None}
        master = p.get("master")
        if master is not None and len(master):
            tail["master_reference_p50"] = float(np.median(master))
    a = p["attrs"]
    return {"format": FORMAT, "rounds": T, "workers": W, "complete": bool(a.get("complete")),
            "hosts": sorted(set(p["host"])), "pooled": pooled, "tail": tail,
            "per_worker": workers}


def _ms(x):
    return "-" if x is None else f"{1e3 * x:.3f}"


def format_probe(s):
    head = ["worker", "rank", "host", "p50 [ms]", "p90 [ms]", "p99 [ms]", "compute p50 [ms]"]
    body = [[str(r["worker"]), str(r["rank"]), r["host"], _ms(r["arrival_p50"]),
             _ms(r["arrival_p90"]), _ms(r["arrival_p99"]), _ms(r["compute_p50"])]
            for r in s["per_worker"]]
    pooled = s["pooled"]
    body.append(["all", "-", ",".join(s["hosts"]) or "-", _ms(pooled["p50"]),
                 _ms(pooled["p90"]), _ms(pooled["p99"]), "-"])
    width = [max(len(c) for c in col) for col in zip(head, *body)]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, width))).rstrip()

    lines = [line(head), line(["-" * w for w in width])] + [line(b) for b in body]
    t = s["tail"]
    if t:
        ratio = "-" if t["p99_over_p50"] is None else f"{t['p99_over_p50']:.2f}"
        per = {r["worker"]: r for r in s["per_worker"]}
        slow = ", ".join(f"{w} ({_ms(per[w]['arrival_p50'])} ms)" for w in t["slowest_by_p50"])
        share = "-" if t["compute_share_p50"] is None else f"{100 * t['compute_share_p50']:.0f}%"
        lines += ["", f"tail: pooled p99/p50 = {ratio}; slowest workers by p50: {slow}; "
                      f"by p99: {', '.join(map(str, t['slowest_by_p99']))}",
                  f"a round that waits for every worker: p50 {_ms(t['wait_all_p50'])} ms, "
                  f"p99 {_ms(t['wait_all_p99'])} ms; f is {share} of the median task time"]
        if "master_reference_p50" in t:
            lines.append(f"rank 0 between rounds: {_ms(t['master_reference_p50'])} ms (p50) for "
                         "the reference computation that scales the simulator's encode and "
                         "decode times")
    return "\n".join(lines)


def plot_probe(p, outdir, name):
    """Per-worker CDFs of the measured times (and the pooled one) as one PNG; returns its path."""
    from .plots import _figure, _save, require_matplotlib

    require_matplotlib()
    os.makedirs(outdir, exist_ok=True)
    fig, ax = _figure()
    arrival = 1e3 * p["arrival"]
    T, W = arrival.shape
    frac = np.arange(1, T + 1) / T
    for w in range(W):
        ax.step(np.sort(arrival[:, w]), frac, where="post", lw=0.8, alpha=0.6)
    pooled = np.sort(arrival.ravel())
    ax.step(pooled, np.arange(1, pooled.size + 1) / pooled.size, where="post", color="black",
            lw=2, label=f"all {W} workers (median {np.median(pooled):.3g} ms)")
    if pooled.size and pooled[0] > 0 and pooled[-1] / pooled[0] > 20:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("time from send to the result's arrival on rank 0 [ms]")
    ax.set_ylabel("fraction of rounds with time ≤ x")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"probe: {T} rounds on {W} workers, one line per worker", fontsize=10)
    return _save(fig, os.path.join(outdir, f"{name}-probe-cdf.png"))


def main_analyze_probe(path, json_out=False, plot=None):
    """``analyze PROBE.h5``: the per-worker table and tail summary (or JSON); ``plot``: CDFs."""
    p = read_probe(path)
    if plot:
        from .plots import require_matplotlib

        require_matplotlib()  # a missing extra fails before any output
    s = summarize_probe(p)
    if plot:
        print(f"wrote {plot_probe(p, plot, Path(path).stem)}", file=sys.stderr)
    if json_out:
        print(json.dumps(s, indent=2))
    else:
        a = p["attrs"]
        print(f"# {path}: probe of {s['rounds']} rounds on {s['workers']} workers, gcc_mpi "
              f"{a.get('version')}, mpi {a.get('mpi')}, created {a.get('created')}")
        print("# time from send to the result's arrival on rank 0 (f on real inputs, no "
              "injected delay)")
        print(format_probe(s))
    if not s["complete"]:
        print(f"note: {path} is incomplete (the probe was stopped)", file=sys.stderr)
    return 0
