"""Memory and disk a job will need, estimated before any work, against what the machine has.

Memory does not grow with the number of trials; what grows with the job's sizes (N workers, K
inputs, d input and m output dimensions) is counted for rank 0 and for the other ranks of its node:

- decoders: a smoothing decoder (letcc, gcc, gcc-manifold) of n = N - S results holds about
  3 n^2 floats (kernel matrix, eigenvectors, evaluator) and needs 5 n^2 while it is built; above
  400 results it works in windows (about 5000 floats per result at most, measured at N = 4096)
  but may fall back to the global fit, which is counted once per code. Each code keeps
  ``LinearCode.cache_size`` of them. lcc needs n^2 floats while it builds a decoder;
- the simulator's blocks of trials (two at most: one being filled, the finished ones not yet
  appended), or over MPI the TASK, STOP and REPLY rows of every worker for each round in flight
  (rank 0; one of each per round on a worker) and the master's block of records (MASTER_BLOCK
  trials of every scheme, ``record_bytes`` each);
- the results writer: the rows it holds before writing them, HDF5's caches and the pages of the
  next commits (WRITER_BYTES, and CHUNK_CACHE for each open dataset: gcc_mpi.files.writer).

A job whose estimate exceeds the memory limit (physical memory, or the cgroup's limit when lower)
is refused with one line naming the key that drives it. The estimates are deliberately simple
upper bounds of the large arrays; the interpreter and libraries (BASE_BYTES per rank) are added.

Disk (``check_disk``): the results file grows by ``record_bytes`` per trial and scheme (the
(T, N) arrays, 18 bytes per worker, and the per-trial numbers and strings: measured). A job
whose file cannot fit the free space of its output folder is refused before any work, one line
naming job.trials — or, with job.time_limit, job.time_limit, counting the trials the limit
allows at a measured time per trial.
"""

import math
import os
import shutil

from ..job.rules import resolved_stragglers
from ..errors import JobError
from ..job.registry import SMOOTHING
from ..job.records import SCALARS
from ..files.format import chunk_rows

WINDOWED_ABOVE = 400          # as codes.smoothing_code.WINDOWED_ABOVE
WINDOW_FLOATS = 5000          # floats per result of a windowed decoder, at most (N = 4096)
BASE_BYTES = 80 * 2**20       # one Python rank with numpy, scipy and h5py imported
BLOCK_CELLS = 2**22           # simulator blocks: (trials in a block) x N x schemes at most
MAX_BLOCK = 1024              # simulator: trials in a block at most
RECORD_BYTES = 20             # per worker, trial and scheme in the file: delay, arrival, used,
                              # error, adversary, flagged
TRIAL_BYTES = 230             # per trial and scheme in the file besides (measured: 18.05 N + 215)
FILE_BYTES = 16 * 2**10       # a results file's own structures, and each (point, scheme)'s:
GROUP_BYTES = 16 * 2**10      # measured, 40-63 KB for one of 1000 trials at N = 20 and 400
CHECKSUM_BYTES = 4            # fletcher32, per chunk
VLEN_BYTES = 16               # a string's reference in its chunk,
HEAP_BYTES = 16               # and its text (mostly "") in HDF5's heap (measured: 16.7)
STRINGS = ("reason", "error_text")
MASTER_BLOCK = 256            # the MPI engine's records held (Master.held)
# as results.PENDING_BYTES, journal.DEFERRED_BYTES and results.CHUNK_CACHE (repeated: every rank
# checks, and workers import no h5py)
WRITER_BYTES = (4 + 32 + 32) * 2**20  # rows held, HDF5's metadata cache at its largest, the pages
                                      # of commits held while a reader has the file open
CHUNK_CACHE = 256 * 2**10 + 2 * 16 * 2**10  # per open dataset, and its share of a commit's pages
DATASETS = 22                 # per scheme


def memory_limit():
    """(bytes, what) this process may use: the cgroup's limit when set and lower, else the
    physical memory; (None, "") when neither can be read."""
    limit, what = None, ""
    try:
        limit, what = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "memory"
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        if text.isdigit() and (limit is None or int(text) < limit):
            limit, what = int(text), "cgroup memory limit"
        break
    return limit, what


def _gib(b):
    """Bytes as "512 MiB", "3.2 GiB", "9.8 PiB"."""
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b / 2**20:.0f} MiB"


def cache_size(N):
    """Decoders each code of N workers remembers: codes.base.LinearCode.cache_size (repeated
    here so that every rank's pre-flight check does not import the codes and scipy)."""
    return int(min(max(2**20 // max(N, 1)**2, 4), 256))


def decoder_bytes(name, N, K, n):
    """Bytes the code ``name`` holds and needs at its peak, decoding from ``n`` results."""
    cache = cache_size(N)
    if name in SMOOTHING:
        if n <= WINDOWED_ABOVE:
            return 8 * (cache * 3 * n * n + 2 * n * n)
        return 8 * (cache * WINDOW_FLOATS * n + 5 * n * n)  # windows + one global fallback
    if name == "lcc":
        return 8 * (cache * K * n + n * n)
    return 8 * cache * K * n


def record_bytes(config):
    """Bytes one trial of every scheme adds to the results file (gcc-manifold records its K
    alphas too)."""
    N, K = config.code.workers, config.data.batch
    return sum(RECORD_BYTES * N + TRIAL_BYTES + (8 * K if s == "gcc-manifold" else 0)
               for s in config.code.schemes)


def dataset_row_bytes(config, scheme):
    """Bytes per trial of each dataset one scheme's group holds (files.format): the scalars,
    trial, failed, the strings' references, the (N,) rows (delay, arrival, used, error,
    adversary, flagged), gcc-manifold's K alphas."""
    N, K = config.code.workers, config.data.batch
    rows = [8] * (len(SCALARS) + 1) + [1] + [VLEN_BYTES] * len(STRINGS) + [8 * N, 8 * N, N, N, N, N]
    return rows + ([8 * K] if scheme == "gcc-manifold" else [])


def stored_bytes(config, trials):
    """Bytes ``trials`` trials of every scheme of ``config`` take in the file: each dataset
    whole chunks (as the writer sizes them) and a checksum per chunk, so a short run of many
    small datasets costs more than its records."""
    total = len(config.code.schemes) * trials * len(STRINGS) * HEAP_BYTES
    for scheme in config.code.schemes:
        for row in dataset_row_bytes(config, scheme):
            rows = chunk_rows(row)
            total += -(-trials // rows) * (rows * row + CHECKSUM_BYTES)
    return total


def file_bytes(points, trials):
    """Bytes of a results file holding ``trials`` trials of each of ``points``."""
    return FILE_BYTES + sum(GROUP_BYTES * len(p.config.code.schemes)
                            + stored_bytes(p.config, trials) for p in points)


def point_bytes(config, dim, outputs, simulate):
    """{part: bytes} for rank 0 on one sweep point (inputs of dimension ``dim``, ``outputs``
    values per result)."""
    N, K = config.code.workers, config.data.batch
    schemes = config.code.schemes
    n = N if config.decode.wait != "fastest" else max(N - resolved_stragglers(config), 1)
    parts = {"decoders": sum(decoder_bytes(s, N, K, n) for s in schemes),
             "encoders": 8 * len(schemes) * (3 * N * K + N * dim),
             "results writer": WRITER_BYTES + CHUNK_CACHE * DATASETS * len(schemes)}
    if simulate:
        block = max(1, min(MAX_BLOCK, BLOCK_CELLS // (N * len(schemes))))
        parts["trial blocks"] = 2 * block * len(schemes) * N * (RECORD_BYTES + 8 * outputs)
    else:
        depth = config.decode.pipeline
        parts["MPI buffers"] = 8 * depth * N * (dim + outputs + 32)
        parts["records held"] = MASTER_BLOCK * record_bytes(config)
    return parts


def check(job, points, shapes, *, ranks=None, local_ranks=None, simulate=True, limit=None):
    """Refuse (JobError) a job whose memory will not fit; return warnings (lines).

    ``shapes``: {point index: (d, m)}; ``ranks``: MPI ranks (None: one process);
    ``local_ranks``: those on this node (default: all of them); ``limit``: bytes (default:
    ``memory_limit()``)."""
    limit, what = (limit, "memory limit") if limit is not None else memory_limit()
    if limit is None:
        return []
    local = local_ranks or ranks or 1
    for point in points:
        c = point.config
        d, m = shapes[point.index]
        parts = point_bytes(c, d, m, simulate)
        rank0 = BASE_BYTES + sum(parts.values())
        workers = (local - 1) * (BASE_BYTES + 8 * c.decode.pipeline * 3 * (d + m + 32))
        if rank0 + workers > limit:
            big = max(parts, key=parts.get)
            key = {"MPI buffers": "decode.pipeline", "results writer": "code.schemes"}.get(
                big, "code.workers")
            on = f"rank 0 and {local - 1} other ranks on this node" if local > 1 else "rank 0"
            where = f" at sweep point {point.index}" if len(job.points) > 1 else ""
            raise JobError(key, f"N = {c.code.workers} workers{where} need about "
                                f"{_gib(rank0 + workers)} on {on} ({big}: {_gib(parts[big])}), "
                                f"more than this machine's {what} of {_gib(limit)}; "
                                f"use fewer workers or other schemes")
    return []


def free_space(path):
    """(bytes free, folder) for a file at ``path``: of its folder, or the nearest folder above
    that exists (the writer creates the rest)."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return shutil.disk_usage(folder).free, folder


def check_disk(job, points, output, *, resume=False, seconds_per_trial=None, free=None):
    """Refuse (JobError) a job whose results file will not fit the free space of the folder of
    ``output``; returns the bytes it will grow by.

    ``points``: those run; ``resume``: an existing file is continued (its size counts as
    written); ``seconds_per_trial``: with job.time_limit, a function of a point giving its
    seconds per trial, called only when the file at job.trials would not fit; ``free``: bytes
    (default: ``free_space``)."""
    free, folder = (free, os.path.dirname(os.fspath(output)) or ".") if free is not None \
        else free_space(output)
    trials = job.config.job.trials
    grows = file_bytes(points, trials)
    if resume and os.path.exists(output):
        grows = max(0, grows - os.path.getsize(output))
    if grows <= free:
        return grows
    limit = job.config.job.time_limit
    if limit is None or seconds_per_trial is None:
        raise JobError("job.trials", f"the results file would reach about {_gib(grows)} after "
                                     f"{trials} trials per point, more than the {_gib(free)} "
                                     f"free in {folder}; set fewer trials or job.time_limit, or "
                                     f"write elsewhere (-o)")
    left, done, within = float(limit), 0, file_bytes(points, 0)
    for p in points:  # in the order they run, until the time limit
        s = max(seconds_per_trial(p), 1e-9)
        n = min(trials, math.ceil(left / s))
        done += n
        within += stored_bytes(p.config, n)
        left -= n * s
        if left <= 0:
            break
    if resume and os.path.exists(output):
        within = max(0, min(within, grows))
    if within <= free:
        return within
    raise JobError("job.time_limit", f"in {limit:g} s this job may run about {done} trials at "
                                     f"the measured {1e3 * s:.3g} ms per trial and its results "
                                     f"file would reach about {_gib(within)}, more than the "
                                     f"{_gib(free)} free in {folder}; shorten job.time_limit, "
                                     "set fewer trials, or write elsewhere (-o)")
