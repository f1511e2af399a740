"""Checks of a resolved job before any work: what `validate` reports, and what `run` (on rank 0,
before any trial) and `simulate` do first, so that bad input is one line and exit 2
(``checked_setup``, which sets the job up as it checks it: nothing is loaded twice).

- the data: the file opens, has numeric 2-D rows without NaN/inf, and holds at least K rows;
- the target: it loads (a python function imports, an ONNX model's input and output are
  unambiguous and match the data) and gives a finite (1, m) output for one input row;
- resources: the memory the job needs fits the machine, its results file the disk
  (gcc_mpi.core.resources);

and the warnings (one line each, once): f returns integers or booleans (a classifier returning
labels is not smooth, so approximate codes decode it poorly; return scores), and an approximate
scheme decoding K inputs from fewer than K results (N - S < K). No MPI here, no output written.
"""

import logging

import numpy as np

from . import resources
from ..job.rules import resolved_stragglers
from ..job.stragglers import MODELS

log = logging.getLogger(__name__)


def checked_setup(job, points=None, *, output=None, resume=False, ranks=None, local_ranks=None,
                  simulate=True):
    """The check before any work that ``validate``, ``simulate`` and the MPI run (rank 0)
    share, and the job set up by it: every point's data and f loaded once and checked, the
    memory the job needs, every point's codes and straggler trace built (``setup.prepare``: a
    plug-in scheme is imported and tried on a small batch, a trace file read and matched with
    N), and, given the results file's path (``output``; ``resume``: it is continued), whether
    the file fits its disk. Raises JobError for the first problem; returns (prepared points,
    warnings: lines without a prefix). ``ranks``/``local_ranks``/``simulate`` as in
    ``resources.check``."""
    from .point import prepare  # the codes and scipy: not before a job is known to be good

    points = job.points if points is None else points
    warnings, loaded, seen = [], {}, {}
    for point in points:
        c = point.config
        key = (c.data, c.target, c.job.seed)  # sweep points of one data set and f: one load
        if key not in seen:
            seen[key] = _data_and_f(c, job.base_dir, warnings, point, len(job.points))
        loaded[point.index] = seen[key]
    shapes = {i: (dataset.dim, target.output_dim) for i, (dataset, target) in loaded.items()}
    warnings += resources.check(job, points, shapes, ranks=ranks, local_ranks=local_ranks,
                                simulate=simulate)
    prepared = prepare(job, points, loaded)
    unfair = [(point, setup) for point, setup in prepared if _short(point.config, setup.codes)]
    if unfair:
        point, setup = unfair[0]
        warnings.append(_fairness(point.config, setup.codes, len(unfair), len(points)))
    if output is not None:
        check_disk(job, prepared, output, resume=resume, simulate=simulate)
    return prepared, warnings


def check_disk(job, prepared, output, resume=False, simulate=True):
    """Refuse (JobError) a job whose results file will not fit the free space of the folder of
    ``output`` (resources.check_disk), timing a few trials of a point (``seconds_per_trial``
    of the simulator, or of rank 0's part of an MPI trial) when job.time_limit must be
    counted; returns the bytes the file will grow by."""
    from .simulate import seconds_per_trial

    setups = {point.index: setup for point, setup in prepared}

    def per_trial(point):
        depth = None if simulate else point.config.decode.pipeline
        return seconds_per_trial(setups[point.index], point.index, depth)

    return resources.check_disk(job, [point for point, _ in prepared], output, resume=resume,
                                seconds_per_trial=per_trial)


def _data_and_f(c, base_dir, warnings, point, n_points):
    """A point's (dataset, target), loaded and checked (``setup.load_data_and_f``); a warning
    appended when the data file's duplicate rows were dropped, and when f returns integers or
    booleans."""
    from .point import load_data_and_f

    dataset, target = load_data_and_f(c, base_dir)
    dropped = dataset.duplicates
    if dropped:
        warnings.append(f"data.path: {dropped} duplicate row{'s' if dropped > 1 else ''} of "
                        f"{dataset.path.name} dropped (a batch never holds one input twice): "
                        f"{dataset.n_rows} unique rows left")
    kind = _output_kind(target, dataset.sample(np.random.default_rng(0), 1))
    if kind in "biu":
        what = "booleans" if kind == "b" else "integers"
        where = f" (sweep point {point.index})" if n_points > 1 else ""
        warnings.append(f"{target.key}: f returns {what}{where}: a function of labels or "
                        "counts is not smooth, so the approximate codes decode it poorly; "
                        "return scores or probabilities (e.g. a classifier's logits) instead")
    return dataset, target


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


def _short(c, codes):
    """Whether an approximate scheme of this config decodes K inputs from fewer results."""
    if c.decode.wait != "fastest" or all(code.exact for code in codes.values()):
        return False
    return c.code.workers - resolved_stragglers(c) < c.data.batch


def _fairness(c, codes, count, total):
    N, K, S = c.code.workers, c.data.batch, resolved_stragglers(c)
    late_key = MODELS[c.stragglers.model].late_key or "p"
    s_key = "decode.stragglers" if c.decode.stragglers != "auto" else f"stragglers.{late_key}"
    where = f" at {count} of {total} sweep points (first: N = {N}, K = {K}, S = {S})" \
        if total > 1 else ""
    names = ", ".join(name for name, code in codes.items() if not code.exact)
    return (f"code.workers, {s_key}, data.batch: N - S = {N} - {S} = {N - S} results for "
            f"K = {K} inputs{where}, so {names} decode from fewer results than inputs and "
            f"compare poorly; for a fair comparison make N - S >= K (code.workers >= {K + S}, "
            f"or S <= {max(N - K, 0)}, or data.batch <= {N - S})")


def report(job, warnings):
    """Log what the default job chose (INFO) and the warnings (WARNING), one record each, from
    one process only (rank 0 under a launcher)."""
    from .launcher import launcher_rank

    if launcher_rank():
        return
    if job.note:
        log.info("%s", job.note)
    for w in warnings:
        log.warning("%s", w)
