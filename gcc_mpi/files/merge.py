"""Merge results files of one job into one file of the same contract (``python -m gcc_mpi merge``).

The usual inputs are the point files of a job array (``run JOB.toml --point I`` for each I), but
any split works: by point, or by scheme within a point. Pure functions on paths, in the manner
of Dedalus' ``tools/post.py``: everything is checked before the output is created —

- every input is a ``gcc_mpi/1`` file written for the identical resolved job (root attribute
  ``config``), and each of its point groups is a point of that job with that point's parameters;
- each (point, scheme) comes from one file only: the same one in two files is an error naming
  both, unless their datasets are identical (the same file given twice, say).

The output is written with :class:`~gcc_mpi.files.writer.ResultWriter`, one (point, scheme) at a
time and a block of trials at a time (``ResultsFile.blocks``; so memory holds one block, whatever
the files' sizes), and so is a (point, scheme) found twice compared: root attributes ``config``
and ``format`` as the inputs', ``command``, ``created`` and ``version`` of the merge, ``mpi`` from
the inputs (their distinct values joined by "; "), ``lost`` and ``hung`` the unions of the inputs'
lost and hung ranks, ``hosts`` rank by rank the inputs' distinct hosts joined by "; " (point files
of an array may have run on different nodes), ``provenance`` key by key the inputs' distinct
values joined by "; ",
``complete`` true only if every input is complete and every scheme of every point of the job is
present. Points are written in index order with their global index (``point_007`` stays
``point_007``), schemes in the job's order.
"""

import contextlib
import json
import os

import h5py
import numpy as np

from ..job.parse import parse_job
from ..errors import JobError
from .outputs import refuse
from .reader import ResultsFile, open_results
from .writer import ResultWriter
from .format import point_name
from .journal import journal_path


def _attr(f, key, default=None):
    v = f.attrs.get(key, default)
    return v.decode() if isinstance(v, bytes) else v


def _first_difference(a, b):
    for i, (x, y) in enumerate(zip(a.splitlines() + [""], b.splitlines() + [""])):
        if x != y:
            return f" (line {i + 1}: {x!r} against {y!r})"
    return ""


def _same_data(a, b, index, scheme):
    """Whether ResultsFiles ``a`` and ``b`` hold the same datasets for (point, scheme), read a
    block of trials at a time (NaN equal to NaN)."""
    if sorted(a.names(index, scheme)) != sorted(b.names(index, scheme)) or \
            a.trials(index, scheme) != b.trials(index, scheme):
        return False
    for x, y in zip(a.blocks(index, scheme), b.blocks(index, scheme)):
        for k in x:
            if x[k].shape != y[k].shape:
                return False
            nan = x[k].dtype.kind == "f" and y[k].dtype.kind == "f"
            if not np.array_equal(x[k], y[k], equal_nan=nan):
                return False
    return True


def _survey(paths):
    """Open every input and check it: (config text, job, {(index, scheme): path}, {path: attrs
    of interest}). Raises JobError naming the file(s) at the first problem."""
    config = job = None
    first = None
    sources = {}      # (index, scheme) -> path it is taken from
    info = {}         # path -> (complete, mpi)
    ranks = dict(lost=[], hung=[])  # every input's ``lost`` and ``hung`` entries, each once
    hosts = []        # rank r -> the inputs' hosts of rank r, each once
    provenance = {}   # key -> the inputs' values, each once
    for path in paths:
        with open_results(path) as f:
            text = _attr(f, "config", "")
            if config is None:
                config, first = text, path
                try:
                    job = parse_job(text)
                except JobError as e:
                    raise JobError(path, f"its config attribute is not a valid job ({e})") from None
            elif text != config:
                raise JobError("merge", f"{path} was written for a different job than {first}"
                                        f"{_first_difference(text, config)}; merge files of one "
                                        "job only")
            info[path] = (bool(f.attrs.get("complete", False)), _attr(f, "mpi", ""))
            for key, value in json.loads(_attr(f, "provenance", "{}")).items():
                seen = provenance.setdefault(key, [])
                seen += [value] if value not in seen else []
            for key, entries in ranks.items():
                entries += [e for e in json.loads(_attr(f, key, "[]")) if e not in entries]
            for r, host in enumerate(json.loads(_attr(f, "hosts", "[]"))):
                hosts += [[] for _ in range(r + 1 - len(hosts))]
                hosts[r] += [host] if host not in hosts[r] else []
            for name, g in f.items():
                if not (isinstance(g, h5py.Group) and name.startswith("point_")):
                    continue
                index = int(g.attrs.get("index", -1))
                if not 0 <= index < len(job.points) or name != point_name(index):
                    raise JobError(path, f"group {name} (index {index}) is not a point of its job "
                                         f"(points 0..{len(job.points) - 1})")
                params = json.loads(_attr(g, "params_json", "{}"))
                expected = json.loads(json.dumps(job.points[index].params))
                if params != expected:
                    raise JobError(path, f"{name} has parameters {params}, but point {index} of "
                                         f"its job has {expected}")
                for scheme in g:
                    other = sources.get((index, scheme))
                    if other is None:
                        sources[(index, scheme)] = path
                        continue
                    with ResultsFile(path) as this, ResultsFile(other) as o:
                        same = _same_data(this, o, index, scheme)
                    if not same:
                        raise JobError("merge", f"point {index} {expected}, scheme {scheme!r} is "
                                                f"in both {other} and {path} with different data; "
                                                "leave one of them out")
    joined = {k: v[0] if len(v) == 1 else "; ".join(map(str, v)) for k, v in provenance.items()}
    return config, job, sources, info, dict(ranks, hosts=["; ".join(h) for h in hosts],
                                            provenance=joined or None)


def merge(paths, out, *, overwrite=False, command="python -m gcc_mpi merge"):
    """Merge the results files ``paths`` into a new file ``out``; returns a one-line report.

    Raises JobError (nothing written) if an input is missing, not ours, of another job, or if two
    inputs hold different data for one (point, scheme); and if ``out`` exists (unless
    ``overwrite``) or is one of the inputs.
    """
    paths = [os.fspath(p) for p in paths]
    out = os.fspath(out)
    if not paths:
        raise JobError("merge", "no input files")
    refuse(out, overwrite=overwrite, inputs=paths)
    config, job, sources, info, ranks = _survey(paths)

    expected = {(p.index, s) for p in job.points for s in p.config.code.schemes}
    present = set(sources)
    complete = all(c for c, _ in info.values()) and expected <= present
    mpi = "; ".join(dict.fromkeys(m for _, m in info.values() if m))
    files = {}
    # written beside ``out`` and renamed over it once whole: an input found damaged half-way
    # leaves neither a partial file nor, with --overwrite, a lost old one
    partial = out + ".partial"
    try:
        writer = ResultWriter(partial, config_toml=config, command=command, mpi=mpi,
                              overwrite=True, provenance=ranks["provenance"])
        with writer:
            order = lambda e: (e["point"], e["trial"], e["rank"])  # noqa: E731
            for e in sorted(ranks["lost"], key=order):
                writer.add_lost(e["rank"], e["point"], e["trial"])
            for e in sorted(ranks["hung"], key=order):
                writer.add_hung(e["rank"], e["point"], e["trial"], e["host"])
            if ranks["hosts"]:
                writer.set_hosts(ranks["hosts"])
            for point in job.points:
                names = [s for s in point.config.code.schemes if (point.index, s) in present]
                names += sorted(s for i, s in present if i == point.index and s not in names)
                if not names:
                    continue
                writer.add_point(point.index, point.params)
                for scheme in names:
                    path = sources[(point.index, scheme)]
                    if path not in files:
                        files[path] = ResultsFile(path)
                    for rows in files[path].blocks(point.index, scheme):
                        writer.append(point.index, scheme, rows)
                        writer.flush()
            writer.close(complete=complete)
        os.replace(partial, out)
    except BaseException:
        for left in (partial, journal_path(partial)):
            with contextlib.suppress(OSError):
                os.remove(left)
        raise
    finally:
        for f in files.values():
            f.close()

    points = len({i for i, _ in present})
    missing = sorted(expected - present)
    state = "complete" if complete else (
        f"incomplete: {len(missing)} (point, scheme) missing" if missing
        else "incomplete: an input is incomplete")
    return (f"merged {len(paths)} file(s) into {out}: {points} of {len(job.points)} point(s), "
            f"{len(present)} (point, scheme) group(s); {state}")
