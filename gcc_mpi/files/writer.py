"""The results file's writer (rank 0 only; the layout: ``files.format``).

Memory is bounded whatever the number of trials: ``append`` checks the rows at once (shapes,
missing datasets) and keeps them until they reach PENDING_BYTES, then writes them into the file
on disk in place — one resize and one write per dataset, whatever the number of appends (the MPI
master appends a trial at a time, and 18 h5py calls per trial and scheme would cost it half of its
time per trial). The writer holds those rows, HDF5's caches (CHUNK_CACHE per open dataset, the
datasets of one sweep point open at a time) and the pages of the next commit
(gcc_mpi.files.journal).

Crash safety (SIGKILL, the out-of-memory killer, a full disk): HDF5 writes through a
``journal.CommittedFile``, whose file on disk changes only at a commit, and then as a whole (a
small journal beside it finishes a commit a kill interrupted). So the file on disk is the state
of the last commit, which opens with any HDF5 tool while the job runs and after it is killed, and
``--resume`` continues it. ``flush`` commits once the last commit is COMMIT_SECONDS old (or the
rows held reach PENDING_BYTES, or sooner while commits are cheap against the time since the last:
``due``); ``close`` always commits. A kill loses at most the trials since the last commit. A
commit costs a few milliseconds whatever the file's size: it writes the rows since the last one
and a few hundred KB of HDF5's own structures. Why this mechanism and not
HDF5's SWMR mode or the whole-file rewrite it replaces: docs/reliability.md, "Crash safety".

"""

import atexit
import ctypes
import errno
import json
import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone

import h5py
import numpy as np

from .. import __version__
from ..errors import JobError, ResourceError
from .format import FORMAT, LIBVER, chunk_rows, plain, point_name, resumable_config
from .journal import Busy, CommittedFile, journal_path
from .outputs import refuse
from .reader import check_readable

COMMIT_SECONDS = 1.0      # flush commits once the last commit is this old,
COMMIT_BUDGET = 20        # or 20 times as old as it took (cheap commits come sooner)
PENDING_BYTES = 4 << 20   # rows held before they are written into the file
CHUNK_CACHE = 256 << 10   # HDF5's chunk cache per open dataset: the partly filled last chunk
CLOSE_WAIT = 10.0         # seconds the last commit waits for readers to let go of the file
_STR = h5py.string_dtype("utf-8")
_ATTR_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating)
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _malloc_trim():
    """glibc's malloc_trim, or None elsewhere. HDF5's long-lived allocations among the many
    short-lived ones of a run keep freed memory inside the process (it grew by 150 MB over 10^6
    trials of benchmarks/long_job.py's simulation at N = 40, while the memory in use did not);
    each commit hands it back to the system."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def _as_storable(key, value):
    """Array with a dtype the file stores: float64, int64, bool or variable-length UTF-8 str."""
    a = np.asarray(value)
    if a.ndim == 0:
        raise ValueError(f"rows[{key!r}] must have a leading trial axis; got a scalar")
    kind = a.dtype.kind
    if kind == "b" or a.dtype == np.int8:  # bool flags, int8 codes (``error``)
        return a
    if kind in "iu":
        return a.astype(np.int64, copy=False)
    if kind == "f":
        return a.astype(np.float64, copy=False)
    if kind in "USO":
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in a.ravel()],
                        dtype=object).reshape(a.shape)
    raise ValueError(f"rows[{key!r}] has dtype {a.dtype}; expected float, int, bool or str")


def _nbytes(a):
    return a.size * 16 if a.dtype == object else a.nbytes


class ResultWriter:
    """Write one results file. Use as a context manager or call :meth:`close`.

    ``overwrite`` replaces an existing file; ``resume`` opens it for appending (it must be a
    gcc_mpi/1 file written for the identical resolved job; a missing file is simply created,
    so the same command works for the first run and a requeued one). Otherwise an existing
    file is refused. ``complete`` is False until ``close(complete=True)``. A full disk while
    writing raises ResourceError, the file kept at its last commit.
    """

    def __init__(self, path, *, config_toml: str, command: str, mpi: str,
                 overwrite: bool = False, resume: bool = False, provenance=None):
        self.path = os.fspath(path)
        if overwrite and resume:
            raise JobError("--resume", "cannot be combined with --overwrite")
        refuse(self.path, overwrite=overwrite, resume=resume)
        exists = os.path.exists(self.path)
        if resume and exists:
            check_readable(self.path, "--resume")  # nothing is written to a damaged file
        parent = os.path.dirname(self.path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise JobError("-o", f"cannot create the folder of {self.path}: "
                                 f"{e.strerror or e}") from None
        self._datasets = {}  # (index, scheme) -> {name: h5py.Dataset}, of one point at a time
        self._shapes = {}    # (index, scheme) -> {name: per-trial shape}, file and buffer
        self._pending = {}   # (index, scheme) -> [(n, {name: array}), ...] not in the file yet
        self._pending_bytes = 0
        self._last_commit, self._commit_cost = time.monotonic(), 0.0
        tmp = self.path + ".tmp"  # a new file is made here and renamed once whole
        for leftover in (tmp, journal_path(tmp)):
            if os.path.exists(leftover):
                os.remove(leftover)
        try:
            if resume and exists:
                self._open_existing(config_toml)
            else:
                if exists:  # --overwrite: not under a writer that is still alive
                    CommittedFile(self.path).close()
                self._file = CommittedFile(tmp, create=True)
                self._f = h5py.File(self._file, "w", track_order=True, rdcc_nbytes=CHUNK_CACHE,
                                    libver=LIBVER)
                a = self._f.attrs
                a["format"] = FORMAT
                a["complete"] = False
                a["config"] = config_toml
                a["version"] = __version__
                a["command"] = command
                a["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
                a["mpi"] = mpi
            if provenance is not None:  # as the last run that wrote the file saw it, as hosts
                self._f.attrs["provenance"] = json.dumps(provenance, sort_keys=True)
            # a writer left open at exit is closed before h5py's own clean-up, which would call
            # into the CommittedFile while the interpreter is finalising
            atexit.register(self._abandon)
            self.commit()
            if self._file.path != self.path:
                os.replace(tmp, self.path)
                self._file.moved(self.path)
        except Busy as e:
            raise JobError("-o", f"{e}; wait for it to end, or choose another -o") from None
        except (OSError, ResourceError) as e:
            self._abandon()
            raise JobError("-o", f"cannot write {self.path}: {getattr(e, 'strerror', 0) or e}") \
                from None

    def _open_existing(self, config_toml):
        try:
            self._file = CommittedFile(self.path)
        except Busy:
            raise
        except OSError as e:
            raise JobError("--resume", f"cannot open {self.path} ({e.strerror or e})") from None
        try:
            self._f = h5py.File(self._file, "a", rdcc_nbytes=CHUNK_CACHE)
        except OSError as e:
            self._file.close()
            raise JobError("--resume", f"cannot open {self.path} as HDF5 ({e})") from None
        try:
            self._check_resumable(config_toml)
        except BaseException:
            self._abandon()
            raise
        self._f.attrs["complete"] = False

    def _check_resumable(self, config_toml):
        fmt = self._f.attrs.get("format")
        if fmt != FORMAT:
            raise JobError("--resume", f"{self.path} is not a {FORMAT} results file "
                                       f"(format {fmt!r})")
        old = resumable_config(self._f.attrs.get("config", ""))
        config_toml = resumable_config(config_toml)
        if old != config_toml:
            diff = next(((i, a, b) for i, (a, b) in
                         enumerate(zip(old.splitlines() + [""], config_toml.splitlines() + [""]))
                         if a != b), None)
            where = (f" (line {diff[0] + 1}: {diff[1]!r} in the file, {diff[2]!r} now)"
                     if diff else "")
            raise JobError("--resume", f"{self.path} was written for a different job{where}; "
                                       "use a new -o or --overwrite")

    def add_lost(self, rank: int, point: int, trial: int) -> None:
        """Record that MPI rank ``rank`` died during ``trial`` of ``point`` (ULFM or hydra's
        -disable-auto-cleanup): root attribute ``lost``, JSON text of a list of
        {"rank", "worker", "point", "trial"}, kept and extended by --resume."""
        lost = json.loads(self._f.attrs.get("lost", "[]"))
        lost.append({"rank": int(rank), "worker": int(rank) - 1, "point": int(point),
                     "trial": int(trial)})
        self._f.attrs["lost"] = json.dumps(lost)

    def set_hosts(self, hosts) -> None:
        """Record where the ranks run: root attribute ``hosts``, JSON text of a list whose item r
        is the host of MPI rank r (0: the master), as the last run that wrote the file saw it
        (a resumed run may run elsewhere)."""
        self._f.attrs["hosts"] = json.dumps([str(h) for h in hosts])

    def add_hung(self, rank: int, point: int, trial: int, host: str) -> None:
        """Record that MPI rank ``rank`` (on ``host``) stopped answering during ``trial`` of
        ``point`` (a stopped or stuck process: a straggler the rounds no longer wait for, see
        gcc_mpi/runtime/hung.py): root attribute ``hung``, JSON text of a list of {"rank",
        "worker", "point", "trial", "host"}, kept and extended by --resume."""
        hung = json.loads(self._f.attrs.get("hung", "[]"))
        hung.append({"rank": int(rank), "worker": int(rank) - 1, "point": int(point),
                     "trial": int(trial), "host": str(host)})
        self._f.attrs["hung"] = json.dumps(hung)

    # -- points and rows -----------------------------------------------------------------
    def add_point(self, index: int, params: dict) -> None:
        """Create group ``point_XXX`` with its parameters; a no-op if it exists with the same.
        The datasets of other points are closed (one point's are open at a time)."""
        if any(i != index for i, _ in self._datasets):
            self._write_pending()
            self._datasets = {k: v for k, v in self._datasets.items() if k[0] == index}
        name = point_name(index)
        params_json = json.dumps(params, default=plain)  # numpy scalars -> Python
        if name in self._f:
            old = self._f[name].attrs.get("params_json")
            if old != params_json:
                raise ValueError(f"{name} exists with params {old}, not {params_json}")
            return
        g = self._f.create_group(name, track_order=True)
        g.attrs["index"] = int(index)
        g.attrs["params_json"] = params_json
        for key, value in params.items():
            if key in ("index", "params_json"):
                continue
            if isinstance(value, _ATTR_TYPES) or (
                    isinstance(value, list) and value
                    and all(isinstance(v, _ATTR_TYPES) for v in value)
                    and len({type(v) for v in value}) == 1):
                g.attrs[key] = value
            # anything else (tables, mixed lists) is recoverable from params_json only

    def _group(self, index, scheme):
        pname = point_name(index)
        if pname not in self._f:
            raise KeyError(f"point {index} not added; call add_point({index}, params) first")
        if not scheme or "/" in scheme:
            raise ValueError(f"scheme name {scheme!r} must be non-empty and contain no '/'")
        g = self._f[pname]
        return g[scheme] if scheme in g else g.create_group(scheme)

    def append(self, index: int, scheme: str, rows: dict) -> None:
        """Append n trials: every value in ``rows`` has leading axis n. Checked now, written
        into the file once the rows held reach PENDING_BYTES or at the next commit.

        Every dataset already in the group (or in an earlier append) must be given. If an
        interrupted run left datasets of unequal length, all are cut back to the shortest
        before the rows are written, so rows stay aligned.
        """
        arrays = {k: _as_storable(k, v) for k, v in rows.items()}
        if not arrays:
            raise ValueError("rows is empty")
        lengths = {k: a.shape[0] for k, a in arrays.items()}
        n = next(iter(lengths.values()))
        if any(m != n for m in lengths.values()):
            raise ValueError(f"rows have different numbers of trials: {lengths}")
        if n == 0:
            return
        key = (index, scheme)
        shapes = self._shapes.get(key)
        if shapes is None:
            g = self._group(index, scheme)
            shapes = self._shapes[key] = {k: d.shape[1:] for k, d in g.items()}
        missing = shapes.keys() - arrays.keys()
        if missing:
            raise ValueError(f"rows for point {index}, scheme {scheme!r} lack {sorted(missing)}")
        for k, a in arrays.items():
            known = shapes.get(k)
            if known is not None and known != a.shape[1:]:
                raise ValueError(f"rows[{k!r}] has per-trial shape {a.shape[1:]}; "
                                 f"the file has {known}")
        for k, a in arrays.items():
            shapes.setdefault(k, a.shape[1:])
        self._pending.setdefault(key, []).append((n, arrays))
        self._pending_bytes += sum(_nbytes(a) for a in arrays.values())
        if self._pending_bytes >= PENDING_BYTES:
            self._write_pending()

    def _write_pending(self):
        """Write the held rows into the file: one block per dataset."""
        with self._writing():
            self._write_blocks()
        self._pending.clear()
        self._pending_bytes = 0

    def _write_blocks(self):
        for (index, scheme), blocks in self._pending.items():
            cache = self._datasets.get((index, scheme))
            if cache is None:
                g = self._group(index, scheme)
                cache = self._datasets[(index, scheme)] = {k: g[k] for k in g}
            start = min((d.shape[0] for d in cache.values()), default=0)
            first = {}  # name -> its array in the first block that has it
            for _, arrays in blocks:
                for k, a in arrays.items():
                    first.setdefault(k, a)
            for k, like in first.items():
                # a name first seen in a later block (an encoder's alpha) is filled before it
                parts = [arrays[k] if k in arrays else _filled(like, m) for m, arrays in blocks]
                a = parts[0] if len(parts) == 1 else np.concatenate(parts)
                d = cache.get(k)
                if d is None:
                    d = cache[k] = self._create(index, scheme, k, like, start)
                _write_rows(d, start, a)

    def _create(self, index, scheme, key, a, length):
        g = self._group(index, scheme)
        dtype = _STR if a.dtype == object else a.dtype
        rows = chunk_rows(_nbytes(a[:1]))
        fill = {"f": np.nan, "b": False, "i": 0}.get(a.dtype.kind)
        kw = {} if fill is None else {"fillvalue": fill}
        if h5py.check_string_dtype(np.dtype(dtype)) is None:  # HDF5 filters no vlen strings
            kw["fletcher32"] = True  # a damaged chunk is a read error, not wrong numbers
        # a dataset first seen after some trials were written is back-filled (NaN/False/0/"")
        return g.create_dataset(key, shape=(length,) + a.shape[1:], dtype=dtype,
                                maxshape=(None,) + a.shape[1:], chunks=(rows,) + a.shape[1:], **kw)

    def align(self, index: int, schemes) -> int:
        """Trials every one of ``schemes`` has for point ``index`` (0 if none), after cutting
        longer schemes back to that length: a run stopped between two schemes' appends leaves
        them uneven, and a resumed run must append trial t to every scheme at row t."""
        self._write_pending()
        n = min((self.trials_done(index, s) for s in schemes), default=0)
        pname = point_name(index)
        for scheme in schemes:
            if pname not in self._f or scheme not in self._f[pname]:
                continue
            g = self._f[pname][scheme]
            for d in g.values():
                if d.shape[0] > n:
                    d.resize(n, axis=0)
            if "trial" in g and not _counts_up(g["trial"], n):
                raise JobError("--resume", f"{self.path}: {pname}/{scheme} does not hold trials "
                                           f"0..{n - 1} in order; it was not written by one job")
        return n

    def trials_done(self, index: int, scheme: str) -> int:
        """Trials recorded for this point and scheme (0 if none): the shortest dataset length
        in the file, plus the rows held since."""
        buffered = sum(n for n, _ in self._pending.get((index, scheme), ()))
        pname = point_name(index)
        if pname not in self._f or scheme not in self._f[pname]:
            return buffered
        g = self._f[pname][scheme]
        return min((g[k].shape[0] for k in g), default=0) + buffered

    # -- lifetime -------------------------------------------------------------------------
    def due(self) -> bool:
        """Whether ``flush`` would commit now: the last commit is COMMIT_SECONDS old, or
        COMMIT_BUDGET times as old as it took (so a slow trial is committed as it ends, and
        commits take at most ~5% of the time), or the rows held reach PENDING_BYTES. A caller
        that buffers rows itself appends them when a commit is due."""
        age = time.monotonic() - self._last_commit
        return (age >= min(COMMIT_SECONDS, COMMIT_BUDGET * self._commit_cost)
                or self._pending_bytes >= PENDING_BYTES)

    def flush(self, force: bool = False) -> None:
        """Commit the file to disk (see the module notes) if one is due; ``force``: now."""
        if force or self.due():
            self.commit()

    def commit(self, wait=0.0) -> None:
        """Make the file on disk hold every row appended so far, as one step (see the module
        notes; ``wait``: seconds to wait for readers to let go, or the commit stays in the
        journal beside the file). ResourceError on a full disk, the file kept at its last
        commit."""
        t0 = time.monotonic()
        self._write_pending()
        with self._writing():
            self._f.flush()
        try:
            self._file.commit(wait)
        except OSError as e:
            self._file.failed(e)
            self._check_file()
        if _TRIM is not None:
            _TRIM(0)
        self._last_commit = time.monotonic()
        self._commit_cost = self._last_commit - t0

    @contextmanager
    def _writing(self):
        """Around HDF5 calls that write: what broke the file's writing (a full disk, memory)
        is raised once the call is over, in place of the error HDF5 made of it."""
        try:
            yield
        except Exception:
            self._check_file()
            raise
        self._check_file()

    def _check_file(self):
        """Raise what broke the file's writing (a full disk, memory) once HDF5's call is over."""
        e = self._file.broken
        if e is None:
            return
        if isinstance(e, OSError):
            again = ", and --resume continues it once there is space" if e.errno in _FULL else ""
            raise ResourceError(f"cannot write {self.path}: {e.strerror or e}; it holds its "
                                f"last commit{again}") from None
        raise e

    def close(self, complete: bool) -> None:
        """Set attr ``complete``, commit and close the file. Closing twice is a no-op."""
        if self._f is None:
            return
        try:
            self._f.attrs["complete"] = bool(complete)
            self.commit(wait=CLOSE_WAIT)
        finally:
            self._abandon()

    def _abandon(self):
        """Close without committing: the file on disk keeps its last commit."""
        f, self._f = getattr(self, "_f", None), None
        atexit.unregister(self._abandon)
        self._datasets.clear()
        self._pending.clear()
        try:
            if f is not None:
                f.close()  # after an error, CommittedFile drops what HDF5 still writes
        except (OSError, RuntimeError, ValueError):
            pass
        finally:
            if getattr(self, "_file", None) is not None:
                self._file.close()

    @property
    def closed(self) -> bool:
        return self._f is None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Leaving the block normally marks the file complete (unless already closed);
        leaving by an exception (including Ctrl-C) marks it incomplete — and if that last
        commit fails too (no memory, no disk), the file keeps the one before and the first
        error is the one raised."""
        if exc_type is None:
            self.close(complete=True)
            return False
        try:
            self.close(complete=False)
        except (OSError, MemoryError, ResourceError):
            pass
        return False


def _counts_up(d, n, block=1 << 20):
    """Whether dataset ``d`` holds 0, 1, ..., n - 1 (read a block at a time)."""
    for start in range(0, n, block):
        stop = min(n, start + block)
        if not np.array_equal(d[start:stop], np.arange(start, stop)):
            return False
    return True


def _write_rows(d, start, a):
    """Resize dataset ``d`` to ``start + len(a)`` rows and write ``a`` at ``start``: numbers
    through h5py's low-level calls (a fifth of the cost of ``d.resize``; ``d[...] = a``),
    strings through its high-level conversion."""
    n = a.shape[0]
    if a.dtype == object:
        d.resize(start + n, axis=0)
        d[start:start + n] = a
        return
    dsid = d.id
    dsid.set_extent((start + n,) + a.shape[1:])
    file_space = dsid.get_space()
    file_space.select_hyperslab((start,) + (0,) * (a.ndim - 1), a.shape)
    a = np.ascontiguousarray(a)
    dsid.write(h5py.h5s.create_simple(a.shape), file_space, a)


def _filled(like, n):
    """``n`` rows of the fill value of ``like``'s dtype (as a new dataset is back-filled)."""
    if like.dtype == object:
        return np.full((n,) + like.shape[1:], "", dtype=object)
    fill = {"f": np.nan, "b": False}.get(like.dtype.kind, 0)
    return np.full((n,) + like.shape[1:], fill, dtype=like.dtype)
