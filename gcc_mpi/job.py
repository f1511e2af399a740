"""The job layer shared by the simulator and the MPI master: a loaded job's points prepared for
running, and the records of their trials in the form the results file takes.

``prepare`` builds, for every sweep point, its data, f, one code and one stop rule per scheme
(``trial.PointSetup``; a trial's inputs and delays are then drawn from its own seed), so every
data file, model and code is checked before any output is written. ``simulate`` and
``runtime.run`` both call it: the MPI room does not walk through the simulator's to set a job
up. Rank 0 only — a worker builds nothing but f (``runtime.worker.build_targets``).

``Records`` holds one scheme's records of a block of trials as columns, filled in place one
trial at a time — by the simulator a block at a time, by the MPI master as rounds are decided —
and handed to ``ResultWriter.append`` whole: no dict per trial to stack, no HDF5 call per trial.
"""

import numpy as np

from .trial import INPUTS, PointSetup, empty_record


def prepare(job, points=None):
    """(point, PointSetup) for each point (default: all of the job's): every data file, model
    and code is built, and so checked, before any output is written."""
    points = job.points if points is None else points
    return [(point, PointSetup.build(point.config, job.base_dir)) for point in points]


class Records:
    """One scheme's records of the trials ``trials`` as columns along the trial axis (the
    defaults of ``trial.empty_record`` until set): the form the writer appends."""

    def __init__(self, N, trials):
        n = len(trials)
        self.columns = {k: _column(v, n) for k, v in empty_record(N).items()}
        self.columns["trial"] = np.asarray(trials, dtype=np.int64)

    def __len__(self):
        return len(self.columns["trial"])

    def put(self, i, fields):
        """Set trial ``i``'s ``fields`` (a dict as timed_encode, decode_and_score or
        failed_record give, or a whole record); a field first seen here (an encoder's alpha)
        gets a NaN column; the trial's working inputs (trial.INPUTS) are not kept."""
        for k, v in fields.items():
            if k == INPUTS:
                continue
            column = self.columns.get(k)
            if column is None:
                column = self.columns[k] = np.full((len(self),) + np.shape(v), np.nan)
            column[i] = v

    def rows(self, n=None):
        """The columns of the first ``n`` trials (default: all), for ``ResultWriter.append``."""
        return self.columns if n is None else {k: c[:n] for k, c in self.columns.items()}


def _column(value, n):
    """``n`` copies of a record's default ``value``; strings as objects, to hold any length."""
    a = np.asarray(value)
    return np.repeat((a.astype(object) if a.dtype.kind == "U" else a)[None], n, axis=0)
