"""The job layer shared by the simulator and the MPI master: a loaded job's points prepared for
running.

``prepare`` builds, for every sweep point, its data, f, one code and one wait policy per scheme
(``trial.PointSetup``; a trial's inputs and delays are then drawn from its own seed), so every
data file, model and code is checked before any output is written. ``simulate`` and
``runtime.run`` both call it: the MPI room does not walk through the simulator's to set a job
up. Rank 0 only — a worker builds nothing but f (``runtime.worker.build_targets``).
"""

from .trial import PointSetup


def prepare(job, points=None):
    """(point, PointSetup) for each point (default: all of the job's): every data file, model
    and code is built, and so checked, before any output is written."""
    points = job.points if points is None else points
    return [(point, PointSetup.build(point.config, job.base_dir)) for point in points]
