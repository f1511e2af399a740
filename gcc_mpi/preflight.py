"""Checks of a resolved job before any work: what `validate` reports, and what `run` (on rank 0,
before any trial) and `simulate` do first, so that bad input is one line and exit 2
(``checked_setup``, with the building of every point's codes and trace).

- the data: the file opens, has numeric 2-D rows without NaN/inf, and holds at least K rows;
- the target: it loads (a python function imports, an ONNX model's input and output are
  unambiguous and match the data) and gives a finite (1, m) output for one input row;
- resources: the memory the job needs fits the machine (gcc_mpi.resources);

and the warnings (one line each, once): f returns integers or booleans (a classifier returning
labels is not smooth, so approximate codes decode it poorly; return scores), and an approximate
scheme decoding K inputs from fewer than K results (N - S < K). No MPI here, no output written.
"""

import sys
from pathlib import Path

import numpy as np

from . import resources
from .config import resolved_stragglers
from .datasets import load_dataset
from .errors import JobError
from .targets import check_layout, probe, target_for

APPROXIMATE = ("bacc", "letcc", "gcc", "gcc-manifold")


def check(job, points=None, *, ranks=None, local_ranks=None, simulate=True):
    """Check ``points`` (default: all) of ``job``; raise JobError for the first problem, else
    return the warnings (lines, without a prefix). ``ranks``/``local_ranks``/``simulate`` as
    in ``resources.check``."""
    points = job.points if points is None else points
    warnings, shapes, seen = [], {}, {}
    for point in points:
        c = point.config
        key = (c.data, c.target, c.job.seed)  # sweep points of one data set and f: one check
        if key not in seen:
            seen[key] = _data_and_target(c, job.base_dir, warnings, point, len(job.points))
        shapes[point.index] = seen[key]
    unfair = [p for p in points if _short(p.config)]
    if unfair:
        warnings.append(_fairness(unfair[0].config, len(unfair), len(points)))
    warnings += resources.check(job, points, shapes, ranks=ranks, local_ranks=local_ranks,
                                simulate=simulate)
    return warnings


def checked_setup(job, points=None, **resources):
    """The check before any work that ``validate``, ``simulate`` and the MPI run share:
    ``check`` (data, f, memory; ``resources`` as there), then every point's data, f, codes and
    straggler trace built (``job.prepare``: a plug-in scheme is imported and tried on a small
    batch, a trace file read and matched with N). Returns (prepared points, warnings)."""
    from .job import prepare

    points = job.points if points is None else points
    warnings = check(job, points, **resources)
    return prepare(job, points), warnings


def _data_and_target(c, base_dir, warnings, point, n_points):
    """(d, m) of a point's data and f, after checking both; warnings appended."""
    d = c.data
    dataset = load_dataset(d.source, dim=d.dim, path=d.path, key=d.key, noise=d.noise,
                           labels_key=d.labels_key, seed=c.job.seed, base_dir=base_dir)
    if dataset.n_rows is not None and d.batch > dataset.n_rows:
        raise JobError("data.batch", f"{d.batch} inputs per batch but the {d.source} data have "
                                     f"only {dataset.n_rows} rows")
    target = target_for(c, dataset.dim, base_dir)
    check_layout(target, dataset)
    x = dataset.sample(np.random.default_rng(0), 1)
    probe(target, x)
    kind = _output_kind(target, x)
    if kind in "biu":
        what = "booleans" if kind == "b" else "integers"
        where = f" (sweep point {point.index})" if n_points > 1 else ""
        warnings.append(f"{target.key}: f returns {what}{where}: a function of labels or "
                        "counts is not smooth, so the approximate codes decode it poorly; "
                        "return scores or probabilities (e.g. a classifier's logits) instead")
    return dataset.dim, target.output_dim


def _output_kind(target, x):
    """numpy dtype kind of f's own output ('f', 'i', 'u', 'b'), before any conversion."""
    session = getattr(target, "session", None)
    if session is not None:  # onnx: the declared type of the chosen output
        out = next(o for o in session.get_outputs() if o.name == target.output_name)
        t = out.type.removeprefix("tensor(").rstrip(")")
        return "b" if t == "bool" else "u" if t.startswith("uint") else \
            "i" if t.startswith("int") else "f"
    fn = getattr(target, "fn", None)
    if fn is None:
        return "f"
    return np.asarray(fn(np.asarray(x, dtype=np.float64).reshape(1, -1))).dtype.kind


def _short(c):
    """Whether an approximate scheme of this config decodes K inputs from fewer results."""
    if c.decode.wait != "fastest" or not set(c.code.schemes) & set(APPROXIMATE):
        return False
    return c.code.workers - resolved_stragglers(c) < c.data.batch


def _fairness(c, count, total):
    N, K, S = c.code.workers, c.data.batch, resolved_stragglers(c)
    s_key = "decode.stragglers" if c.decode.stragglers != "auto" else "stragglers.count" \
        if c.stragglers.model in ("fixed", "adversarial") else "stragglers.p"
    where = f" at {count} of {total} sweep points (first: N = {N}, K = {K}, S = {S})" \
        if total > 1 else ""
    names = ", ".join(s for s in c.code.schemes if s in APPROXIMATE)
    return (f"code.workers, {s_key}, data.batch: N - S = {N} - {S} = {N - S} results for "
            f"K = {K} inputs{where}, so {names} decode from fewer results than inputs and "
            f"compare poorly; for a fair comparison make N - S >= K (code.workers >= {K + S}, "
            f"or S <= {max(N - K, 0)}, or data.batch <= {N - S})")


def check_output(path, overwrite=False, resume=False):
    """JobError for an output path that cannot be written as asked, before any work: a folder,
    or an existing file without --overwrite or --resume (which is never touched)."""
    path = Path(path)
    if path.is_dir():
        raise JobError("-o", f"{path} is a folder; give the results file's name, e.g. "
                             f"-o {path / 'out.h5'}")
    if path.exists() and not (overwrite or resume):
        raise JobError("-o", f"{path} exists; use --overwrite or --resume to replace or "
                             "continue it, or choose another -o")


def report(job, warnings, stream=None):
    """Print what the default job chose and the warnings, one line each, from one process only
    (rank 0 under a launcher)."""
    from .runtime.mpi import launcher_rank

    if launcher_rank():
        return
    stream = stream or sys.stderr
    if job.note:
        print(f"gcc_mpi: {job.note}", file=stream)
    for w in warnings:
        print(f"gcc_mpi: warning: {w}", file=stream)
