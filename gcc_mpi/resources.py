"""Memory a job will need, estimated before any work, against the memory of the machine.

What grows with the job's sizes (N workers, K inputs, d input and m output dimensions):

- decoders: a smoothing decoder (letcc, gcc, gcc-manifold) of n = N - S results holds about
  3 n^2 floats (kernel matrix, eigenvectors, evaluator) and needs 5 n^2 while it is built; above
  400 results it works in windows (about 5000 floats per result at most, measured at N = 4096)
  but may fall back to the global fit, which is counted once per code. Each code keeps
  ``LinearCode.cache_size`` of them. lcc needs n^2 floats while it builds a decoder;
- the simulator's blocks of trials: delay, arrival, used and error per worker and trial;
- the MPI buffers: TASK, STOP and REPLY rows of every worker for each round in flight (rank 0),
  one of each per round on a worker;
- the results file, which rank 0 holds in memory until the end (HDF5's core driver): it grows by
  about 18 bytes per worker per trial and scheme. It is bounded by the time the run takes, not
  by a preallocation, so a file that would outgrow memory is a warning, not a refusal: a run
  with ``job.time_limit`` may stop long before.

A job whose estimate exceeds the memory limit (physical memory, or the cgroup's limit when lower)
is refused with one line naming the key that drives it. The estimates are deliberately simple
upper bounds of the large arrays; the interpreter and libraries (BASE_BYTES per rank) are added.
"""

import os

from .config import resolved_stragglers
from .errors import JobError

SMOOTHING = ("letcc", "gcc", "gcc-manifold")
WINDOWED_ABOVE = 400          # as codes.smoothing.WINDOWED_ABOVE
WINDOW_FLOATS = 5000          # floats per result of a windowed decoder, at most (N = 4096)
BASE_BYTES = 80 * 2**20       # one Python rank with numpy, scipy and h5py imported
BLOCK_CELLS = 2**22           # simulator blocks: (trials in a block) x N x schemes at most
RECORD_BYTES = 18             # per worker, trial and scheme in the file: delay, arrival, used, error
MAX_BLOCK = 1024              # simulator: trials in a block at most


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


def point_bytes(config, dim, outputs, simulate):
    """{part: bytes} for rank 0 on one sweep point (inputs of dimension ``dim``, ``outputs``
    values per result)."""
    N, K = config.code.workers, config.data.batch
    schemes = config.code.schemes
    n = N if config.decode.wait != "fastest" else max(N - resolved_stragglers(config), 1)
    parts = {"decoders": sum(decoder_bytes(s, N, K, n) for s in schemes),
             "encoders": 8 * len(schemes) * (3 * N * K + N * dim)}
    if simulate:
        block = max(1, min(MAX_BLOCK, BLOCK_CELLS // (N * len(schemes))))
        parts["trial blocks"] = block * len(schemes) * N * (RECORD_BYTES + 8 * outputs)
    else:
        depth = config.decode.pipeline
        parts["MPI buffers"] = 8 * depth * N * (dim + outputs + 32)
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
    warnings = []
    for point in points:
        c = point.config
        d, m = shapes[point.index]
        parts = point_bytes(c, d, m, simulate)
        rank0 = BASE_BYTES + sum(parts.values())
        workers = (local - 1) * (BASE_BYTES + 8 * c.decode.pipeline * 3 * (d + m + 32))
        if rank0 + workers > limit:
            big = max(parts, key=parts.get)
            key = "code.workers" if big != "MPI buffers" else "decode.pipeline"
            on = f"rank 0 and {local - 1} other ranks on this node" if local > 1 else "rank 0"
            where = f" at sweep point {point.index}" if len(job.points) > 1 else ""
            raise JobError(key, f"N = {c.code.workers} workers{where} need about "
                                f"{_gib(rank0 + workers)} on {on} ({big}: {_gib(parts[big])}), "
                                f"more than this machine's {what} of {_gib(limit)}; "
                                f"use fewer workers or other schemes")
    trials = job.config.job.trials
    grows = sum(RECORD_BYTES * p.config.code.workers * len(p.config.code.schemes)
                for p in points) * trials
    if grows > limit and job.config.job.time_limit is None:
        warnings.append(f"job.trials: the results file, which rank 0 holds in memory, would "
                        f"reach about {_gib(grows)} after {trials} trials per point, more than "
                        f"this machine's {what} of {_gib(limit)}; set job.time_limit or fewer "
                        "trials (a stopped run keeps its trials and --resume continues)")
    return warnings
