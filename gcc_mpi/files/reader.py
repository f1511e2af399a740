"""The results file's reader: a file read as its last commit, in blocks of trials so that
memory does not grow with the file, and two files compared record by record (the layout:
``files.format``)."""

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import h5py
import numpy as np

from ..errors import JobError
from .format import FORMAT, plain, point_name, resumable_config
from .journal import CommittedFile, open_snapshot

READ_BYTES = 8 << 20      # a reader's block of rows, about


class _Snapshot(h5py.File):
    """A results file read as its last commit, which does not change while it is open
    (journal.open_snapshot: the file itself, or the file through a commit's journal)."""

    def __init__(self, path):
        self._lock, journal = open_snapshot(path)
        self._source = None
        try:
            if journal is None:
                super().__init__(path, "r", locking=False)
            else:
                self._source = CommittedFile(path, reader=journal)
                super().__init__(self._source, "r")
        except BaseException:
            self._release()
            raise

    def close(self):
        try:
            super().close()
        finally:
            self._release()

    def _release(self):
        if self._source is not None:
            self._source.close()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


# what h5py raises on a damaged file: a checksum or a filter that fails (OSError), a damaged
# group or heap (RuntimeError, KeyError), a damaged attribute (ValueError, JSON, UTF-8)
DAMAGE = (OSError, RuntimeError, KeyError, ValueError)


@contextlib.contextmanager
def damage_named(path):
    """A read of ``path`` that fails as a damaged file does: one JobError naming the path."""
    try:
        yield
    except JobError:
        raise
    except DAMAGE as e:
        raise JobError(path, damaged(e)) from None


def damaged(e):
    """What to say of a results file that fails ``e`` while it is read."""
    why = str(e).strip() or type(e).__name__
    return (f"damaged: cannot be read ({why}); nothing was written to it. Rerun the job, or "
            "copy the file again if it came from elsewhere")


def open_results(path):
    """A results file opened read-only, after checking that it exists, is HDF5 and is ours
    (JobError naming the path otherwise): its last commit, which does not change until it is
    closed (``with open_results(p) as f``)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise JobError(path, "no such file")
    if os.path.isdir(path):
        raise JobError(path, "is a folder, not a results file")
    if os.path.getsize(path) == 0:
        raise JobError(path, "is empty (0 bytes): not a results file; a run that could not "
                             "create its file leaves it so")
    try:
        f = _Snapshot(path)
    except OSError as e:
        raise JobError(path, f"not a readable HDF5 file ({e})") from None
    with damage_named(path):
        fmt = plain(f.attrs.get("format"))
    if fmt != FORMAT:
        f.close()
        raise JobError(path, f"not a gcc_mpi results file (format {fmt!r}, expected {FORMAT!r})")
    return f


class _RootAttributes:
    """``config_toml`` and ``complete`` from the root attributes ``attrs``."""

    @property
    def config_toml(self) -> str:
        return self.attrs.get("config", "")

    @property
    def complete(self) -> bool:
        return bool(self.attrs.get("complete", False))


@dataclass
class PointInfo:
    index: int
    params: dict
    schemes: list  # names, in the file's order


class ResultsFile(_RootAttributes):
    """A results file open for reading, a (point, scheme) at a time and that in blocks of
    trials, so memory does not grow with the file. A context manager.

    ``attrs`` (root attributes), ``points`` (PointInfo, by index), ``config_toml``,
    ``complete``; ``trials``, ``names``, ``blocks`` and ``read`` of one (point, scheme)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._f = open_results(self.path)
        try:
            with damage_named(self.path):
                self._survey()
        except BaseException:
            self._f.close()
            raise

    def _survey(self):
        self.attrs = {k: plain(v) for k, v in self._f.attrs.items()}
        self.points = []
        for name, g in self._f.items():
            if isinstance(g, h5py.Group) and name.startswith("point_"):
                self.points.append(PointInfo(int(g.attrs["index"]),
                                             json.loads(g.attrs.get("params_json", "{}")),
                                             [s for s, sg in g.items()
                                              if isinstance(sg, h5py.Group)]))
        self.points.sort(key=lambda p: p.index)

    def _datasets(self, index, scheme):
        with damage_named(self.path):
            g = self._f[point_name(index)][scheme]
            return {k: d for k, d in g.items() if isinstance(d, h5py.Dataset)}

    def names(self, index, scheme):
        return list(self._datasets(index, scheme))

    def trials(self, index, scheme) -> int:
        """The trials every dataset holds (a half-written last block is not counted)."""
        return min((d.shape[0] for d in self._datasets(index, scheme).values()), default=0)

    def blocks(self, index, scheme, names=None, rows=None):
        """Consecutive blocks of trials of one (point, scheme): dicts {name: array} (strings as
        str) of about READ_BYTES together (``rows`` trials, if given), in trial order."""
        datasets = self._datasets(index, scheme)
        if names is not None:
            datasets = {k: datasets[k] for k in names if k in datasets}
        n = self.trials(index, scheme)
        if rows is None:
            row_bytes = sum(int(np.prod(d.shape[1:], dtype=np.int64)) * d.dtype.itemsize
                            for d in datasets.values())
            rows = max(1, READ_BYTES // max(row_bytes, 1))
        for start in range(0, n, rows):
            stop = min(n, start + rows)
            with damage_named(self.path):
                block = {k: _read(d, start, stop) for k, d in datasets.items()}
            yield block

    def read(self, index, scheme, names=None) -> dict:
        """A whole (point, scheme) as arrays: for small files (and tests)."""
        n = self.trials(index, scheme)
        datasets = self._datasets(index, scheme)
        with damage_named(self.path):
            return {k: _read(d, 0, n) for k, d in datasets.items()
                    if names is None or k in names}

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _read(d, start, stop):
    return d.asstr()[start:stop] if h5py.check_string_dtype(d.dtype) else d[start:stop]


class _Schemes(Mapping):
    """A point's schemes of a Results: each read from the file whole when asked for."""

    def __init__(self, path, index, names):
        self._path, self._index, self._names = path, index, names

    def __getitem__(self, scheme):
        if scheme not in self._names:
            raise KeyError(scheme)
        with ResultsFile(self._path) as f:
            return f.read(self._index, scheme)

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)


@dataclass
class PointResult:
    index: int
    params: dict
    schemes: Mapping = field(default_factory=dict)  # scheme -> {dataset name: np.ndarray}


@dataclass
class Results(_RootAttributes):
    path: str
    attrs: dict
    points: list

    @property
    def in_memory(self) -> bool:
        """Whether the datasets are held in memory (``read_results(..., whole=True)``) rather
        than read from the file when asked for."""
        return not any(isinstance(p.schemes, _Schemes) for p in self.points)

    def blocks(self, index, scheme, names=None):
        """One (point, scheme)'s trials in blocks, as ResultsFile.blocks: read from the file,
        or its datasets whole when they are held in memory."""
        schemes = next(p.schemes for p in self.points if p.index == index)
        if isinstance(schemes, _Schemes):
            with ResultsFile(self.path) as f:
                yield from f.blocks(index, scheme, names)
        else:
            yield {k: v for k, v in schemes[scheme].items() if names is None or k in names}


def read_results(path, whole=False) -> Results:
    """A results file's attributes and points; each scheme's datasets are read whole when
    asked for (``points[i].schemes[name]``), or all at once with ``whole`` (the file may then
    go): for small files and tests. What must hold for any size reads in blocks
    (``Results.blocks``, ResultsFile). Raises JobError if it is missing or not ours."""
    with ResultsFile(path) as f:
        points = [PointResult(p.index, p.params,
                              {s: f.read(p.index, s) for s in p.schemes} if whole
                              else _Schemes(f.path, p.index, p.schemes))
                  for p in f.points]
        return Results(f.path, f.attrs, points)


def check_readable(path, key):
    """JobError naming ``key`` unless every dataset of the results file ``path`` reads back
    whole (its checksums verified): what a file to be continued must pass, since appending to a
    damaged file would bury the damage under new trials."""
    try:
        with ResultsFile(path) as f:
            for p in f.points:
                for s in p.schemes:
                    for _ in f.blocks(p.index, s):
                        pass
    except JobError as e:
        raise JobError(key, f"cannot continue {e}") from None


PROVENANCE = frozenset({"created", "command", "version", "mpi", "hosts", "provenance"})  # root


def provenance(attrs, hosts=None):
    """A file's provenance as one flat {key: value} for display and comparison (``analyze A B``):
    gcc_mpi's ``version``, the ``mpi`` line and the ``command`` from their root attributes, the
    keys of the ``provenance`` attribute (absent in files of earlier versions: then only these),
    and ``ranks_per_host`` ("vm×9") from ``hosts`` (default: the ``hosts`` attribute; a probe
    file's are its master's and workers' hosts)."""
    out = {"gcc_mpi": attrs.get("version"), "mpi": attrs.get("mpi"),
           "command": attrs.get("command")}
    try:
        out.update(json.loads(attrs.get("provenance") or "{}"))
    except ValueError:
        out["provenance"] = "(unreadable)"
    if hosts is None:
        try:
            hosts = json.loads(attrs.get("hosts") or "[]")
        except ValueError:
            hosts = []
    if hosts:
        counts = {}
        for h in hosts:
            counts[h] = counts.get(h, 0) + 1
        out["ranks_per_host"] = ", ".join(f"{h}×{n}" for h, n in counts.items())
    return {k: v for k, v in out.items() if v is not None}


def mismatches(a, b, ignore=None):
    """What differs between the results files ``a`` and ``b`` (a list of lines; empty when they
    hold the same job's same records): the points, their parameters, the schemes, and every
    dataset but those named in ``ignore`` (default: ``records.TIMINGS``, what the clock
    decides), compared a block of trials at a time with NaN equal to NaN; the root attributes
    but the run's provenance (when, which command, version, MPI, hosts), and the job but
    for the keys a resumed run may change (job.time_limit, decode.pipeline). A resumed file and an
    uninterrupted run of one job, or one job run by two versions of gcc_mpi, should have
    none."""
    from ..job.records import TIMINGS

    ignore = TIMINGS if ignore is None else frozenset(ignore)
    found = []
    with ResultsFile(a) as x, ResultsFile(b) as y:
        for key in sorted((set(x.attrs) | set(y.attrs)) - PROVENANCE):
            u, v = x.attrs.get(key), y.attrs.get(key)
            if key == "config":  # how long and how deep the job ran is not the job
                u, v = resumable_config(u or ""), resumable_config(v or "")
            if u != v:
                found.append(f"root attribute {key}")
        if [(p.index, p.params, p.schemes) for p in x.points] != \
                [(p.index, p.params, p.schemes) for p in y.points]:
            return found + ["the points, their parameters or their schemes"]
        for p in x.points:
            for s in p.schemes:
                where = f"point {p.index} {s}"
                names = set(x.names(p.index, s)) - ignore
                if names != set(y.names(p.index, s)) - ignore:
                    found.append(f"{where}: the datasets")
                    continue
                if x.trials(p.index, s) != y.trials(p.index, s):
                    found.append(f"{where}: the number of trials")
                    continue
                names = sorted(names)
                differ = set()
                for u, v in zip(x.blocks(p.index, s, names), y.blocks(p.index, s, names)):
                    differ |= {k for k in names if not np.array_equal(
                        u[k], v[k], equal_nan=u[k].dtype.kind == "f")}
                found += [f"{where}: {k}" for k in sorted(differ)]
    return found
