"""HDF5 output: one writer with an explicit schema (rank 0 only), and a reader.

Layout of a results file (format ``gcc_mpi/1``)::

    /                       attrs: format, complete, config, version, command, created, mpi
    /point_000              attrs: index, params_json, one attr per swept dotted key
    /point_000/gcc          one group per scheme, datasets along the trial axis:
        trial (T,) int64, failed (T,) bool, reason (T,) str,
        mse nmse relacc t_encode t_scatter t_wait t_decode latency lambda_enc lambda_dec
        lengthscale_enc lengthscale_dec (T,) float64 (NaN where a scheme has none),
        delay arrival (T, N) float64, used (T, N) bool, error (T, N) int8 (erasure codes, see
        gcc_mpi.erasures), error_text (T,) str, and any extra (T, ...) arrays (e.g. alpha).

Datasets are chunked and resizable along the first axis (``maxshape=(None, ...)``), created on
the first append. The number of trials done for a scheme is the dataset length; schemes of one
point may have different lengths if a run was interrupted (``align`` cuts them back to the
common length before a resumed run appends). Plain dtypes only (no compound types), so any HDF5
tool can read the file. This module never imports MPI: the caller (rank 0, or the simulator)
owns the writer.

Appends are buffered: ``append`` checks the rows at once (shapes, missing datasets) and keeps
them in memory; they go into the file in one block per dataset — one resize and one write,
whatever the number of appends — when the file is committed (or read back: ``trials_done``
counts them, ``align`` writes them first). The MPI master appends one trial at a time, and 18
h5py resizes and writes per trial and scheme would cost it half of its time per trial.

Crash safety (SIGKILL, the out-of-memory killer, hydra ending the job): the writer keeps the
file in memory (HDF5's core driver) and *commits* it by writing the buffered rows into it and a
complete image to ``<file>.tmp`` and renaming that over the file — an atomic replace. So the
file on disk is at every moment a whole, closed HDF5 file: the state of the last commit,
readable by any tool while the job runs and after it is killed, never half-written (a full disk
fails the commit and leaves the previous one). ``flush`` commits unless the last commit is
younger than COMMIT_BUDGET times its own cost (at most ~5% of the run goes to commits: with
files up to a few MB that is every trial or every few trials of the MPI master); ``close``
always commits. A kill loses at most the trials since the last commit. The price is memory:
rank 0 holds the whole file. No fsync: this protects against the death of the process, not of the
machine.
"""

import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import h5py
import numpy as np

from . import __version__
from .errors import JobError

FORMAT = "gcc_mpi/1"
_CHUNK_BYTES = 16 * 1024  # target chunk size; rows per chunk clipped to [16, 1024]
COMMIT_BUDGET = 20        # flush commits once the last commit is older than 20x its cost
_CORE = dict(driver="core", backing_store=False, block_size=1 << 20)  # the file lives in memory
_STR = h5py.string_dtype("utf-8")
_ATTR_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating)


def point_name(index):
    return f"point_{int(index):03d}"


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


class ResultWriter:
    """Write one results file. Use as a context manager or call :meth:`close`.

    ``overwrite`` replaces an existing file; ``resume`` opens it for appending (it must be a
    gcc_mpi/1 file written for the identical resolved job; a missing file is simply created,
    so the same command works for the first run and a requeued one). Otherwise an existing
    file is refused. ``complete`` is False until ``close(complete=True)``.
    """

    def __init__(self, path, *, config_toml: str, command: str, mpi: str,
                 overwrite: bool = False, resume: bool = False):
        self.path = os.fspath(path)
        if overwrite and resume:
            raise JobError("--resume", "cannot be combined with --overwrite")
        exists = os.path.exists(self.path)
        if exists and not (overwrite or resume):
            raise JobError("-o", f"{self.path} exists; use --overwrite or --resume")
        parent = os.path.dirname(self.path)
        try:
            if parent:
                os.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise JobError("-o", f"cannot create the folder of {self.path}: "
                                 f"{e.strerror or e}") from None
        self._datasets = {}  # (index, scheme) -> {name: h5py.Dataset}
        self._shapes = {}    # (index, scheme) -> {name: per-trial shape}, file and buffer
        self._pending = {}   # (index, scheme) -> [(n, {name: array}), ...] not in the file yet
        self._tmp = self.path + ".tmp"  # left behind only by a kill during a commit
        if os.path.exists(self._tmp):
            os.remove(self._tmp)
        self._last_commit, self._commit_cost = time.monotonic(), 0.0
        self._costs = []  # of the last commits (seconds), but the one creating the file
        if resume and exists:
            try:
                self._f = h5py.File(self.path, "a", **_CORE)
            except OSError as e:
                raise JobError("--resume", f"cannot open {self.path} as HDF5 ({e})") from None
            try:
                self._check_resumable(config_toml)
            except BaseException:
                self._f.close()
                raise
            self._f.attrs["complete"] = False
        else:
            self._f = h5py.File(self.path, "w", track_order=True, **_CORE)
            a = self._f.attrs
            a["format"] = FORMAT
            a["complete"] = False
            a["config"] = config_toml
            a["version"] = __version__
            a["command"] = command
            a["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            a["mpi"] = mpi
        try:
            self.commit()
        except OSError as e:
            self._f.close()
            raise JobError("-o", f"cannot write {self.path}: {e.strerror or e}") from None
        self._costs.clear()  # creating the file is done once: the first trials commit at once
        self._commit_cost = 0.0

    def _check_resumable(self, config_toml):
        fmt = self._f.attrs.get("format")
        if fmt != FORMAT:
            raise JobError("--resume", f"{self.path} is not a {FORMAT} results file "
                                       f"(format {fmt!r})")
        old = _resumable_config(self._f.attrs.get("config", ""))
        config_toml = _resumable_config(config_toml)
        if old != config_toml:
            diff = next(((i, a, b) for i, (a, b) in
                         enumerate(zip(old.splitlines() + [""], config_toml.splitlines() + [""]))
                         if a != b), None)
            where = f" (line {diff[0] + 1}: {diff[1]!r} in the file, {diff[2]!r} now)" if diff else ""
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
        """Create group ``point_XXX`` with its parameters; a no-op if it exists with the same."""
        name = point_name(index)
        params_json = json.dumps(params, default=_py)  # numpy scalars -> Python
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
        into the file at the next commit (see the module notes).

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

    def _write_pending(self):
        """Write the buffered rows into the (in-memory) file: one block per dataset. Returns
        the seconds spent creating datasets (a scheme's first rows)."""
        created = 0.0
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
                    t0 = time.monotonic()
                    d = cache[k] = self._create(index, scheme, k, like, start)
                    created += time.monotonic() - t0
                _write_rows(d, start, a)
        self._pending.clear()
        return created

    def _create(self, index, scheme, key, a, length):
        g = self._group(index, scheme)
        dtype = _STR if a.dtype == object else a.dtype
        row_bytes = max(1, int(np.prod(a.shape[1:], dtype=np.int64)) * (16 if a.dtype == object
                                                                         else a.dtype.itemsize))
        rows = int(np.clip(_CHUNK_BYTES // row_bytes, 16, 1024))
        fill = {"f": np.nan, "b": False, "i": 0}.get(a.dtype.kind)
        kw = {} if fill is None else {"fillvalue": fill}
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
            if "trial" in g and not np.array_equal(g["trial"][:n], np.arange(n)):
                raise JobError("--resume", f"{self.path}: {pname}/{scheme} does not hold trials "
                                           f"0..{n - 1} in order; it was not written by one job")
        return n

    def trials_done(self, index: int, scheme: str) -> int:
        """Trials recorded for this point and scheme (0 if none): the shortest dataset length
        in the file, plus the rows appended since the last commit."""
        buffered = sum(n for n, _ in self._pending.get((index, scheme), ()))
        pname = point_name(index)
        if pname not in self._f or scheme not in self._f[pname]:
            return buffered
        g = self._f[pname][scheme]
        return min((g[k].shape[0] for k in g), default=0) + buffered

    # -- lifetime -------------------------------------------------------------------------
    def due(self) -> bool:
        """Whether ``flush`` would commit now: the last commit is at least COMMIT_BUDGET times
        its cost old. A caller that buffers rows itself appends them when a commit is due."""
        return time.monotonic() - self._last_commit >= COMMIT_BUDGET * self._commit_cost

    def flush(self, force: bool = False) -> None:
        """Commit the file to disk (see the module notes) unless the last commit is younger
        than COMMIT_BUDGET times its cost; ``force``: commit now."""
        if force or self.due():
            self.commit()

    def commit(self) -> None:
        """Replace the file on disk, atomically, by the writer's current state (buffered rows
        included)."""
        t0 = time.monotonic()
        created = self._write_pending()
        self._f.flush()
        image = self._f.id.get_file_image()
        with open(self._tmp, "wb") as out:
            out.write(image)
        os.replace(self._tmp, self.path)
        self._last_commit = time.monotonic()
        # creating datasets is done once, not per commit: it must not space the next ones out;
        # and one commit slowed down by other load (the smaller of the last two) neither
        self._costs = [*self._costs[-1:], self._last_commit - t0 - created]
        self._commit_cost = min(self._costs)

    def close(self, complete: bool) -> None:
        """Set attr ``complete``, commit and close the file. Closing twice is a no-op."""
        if not self._f:
            return
        try:
            self._f.attrs["complete"] = bool(complete)
            self.commit()
        finally:
            self._f.close()
            self._datasets.clear()
            self._pending.clear()

    @property
    def closed(self) -> bool:
        return not self._f

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Leaving the block normally marks the file complete (unless already closed);
        leaving by an exception (including Ctrl-C) marks it incomplete."""
        self.close(complete=exc_type is None)
        return False


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


def _resumable_config(toml_text):
    """The job's TOML without the keys a resumed run may change: job.time_limit (how long this
    run may take) and decode.pipeline (how many trials are in flight over MPI; files from before
    the key existed lack it)."""
    return re.sub(r"(?m)^(time_limit|pipeline) = .*\n", "", toml_text)


# -- reading ---------------------------------------------------------------------------------
@dataclass
class PointResult:
    index: int
    params: dict
    schemes: dict = field(default_factory=dict)  # scheme -> {dataset name: np.ndarray}


@dataclass
class Results:
    path: str
    attrs: dict
    points: list

    @property
    def config_toml(self) -> str:
        return self.attrs.get("config", "")

    @property
    def complete(self) -> bool:
        return bool(self.attrs.get("complete", False))


def _py(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def _read_scheme(g):
    data = {}
    for k, d in g.items():
        data[k] = d.asstr()[()] if h5py.check_string_dtype(d.dtype) else d[()]
    n = min((a.shape[0] for a in data.values()), default=0)
    return {k: a[:n] for k, a in data.items()}  # cut a half-written last block


def open_results(path):
    """A results file opened read-only, after checking that it exists, is HDF5 and is ours
    (JobError naming the path otherwise). The caller closes it (``with open_results(p) as f``)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise JobError(path, "no such file")
    if os.path.isdir(path):
        raise JobError(path, "is a folder, not a results file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise JobError(path, f"not a readable HDF5 file ({e})") from None
    fmt = _py(f.attrs.get("format"))
    if fmt != FORMAT:
        f.close()
        raise JobError(path, f"not a gcc_mpi results file (format {fmt!r}, expected {FORMAT!r})")
    return f


def read_results(path) -> Results:
    """Read a whole results file into memory. Raises JobError if it is missing or not ours."""
    path = os.fspath(path)
    with open_results(path) as f:
        attrs = {k: _py(v) for k, v in f.attrs.items()}
        points = []
        for name, g in f.items():
            if not (isinstance(g, h5py.Group) and name.startswith("point_")):
                continue
            p = PointResult(int(g.attrs["index"]), json.loads(g.attrs.get("params_json", "{}")))
            for scheme, sg in g.items():
                p.schemes[scheme] = _read_scheme(sg)
            points.append(p)
    points.sort(key=lambda p: p.index)
    return Results(path, attrs, points)
