"""What rank 0 does in ``python -m gcc_mpi run`` (the lifecycle around it is ``session``'s): the
job checked and set up before any MPI traffic beyond the start-up message (so bad input is one
line and exit 2), the results file opened, every trial recorded (the job driver,
``core.driver``, with the ``Master`` as its engine), and the file
closed — complete, or with every committed trial and complete = false after an interruption,
which ``--resume`` continues.
"""

import logging

from ..core.driver import JobRun

log = logging.getLogger(__name__)


class RunWork:
    """Rank 0's part of a run of ``spec`` (a ``session.Spec``), step by step as ``session.lead``
    calls it (``session.Work``): the job driver's ``JobRun`` with the Master as its engine."""

    what, heading = "job", ""
    stuck_code = None  # a hung worker that only MPI_Abort ends: the run's own code (file whole)

    def __init__(self, spec, comm, MPI, interrupts):
        self.spec, self.comm, self.MPI = spec, comm, MPI
        self.run = JobRun(spec.job, spec.points, spec.output, interrupts=interrupts,
                          overwrite=spec.overwrite, resume=spec.resume, command=spec.command,
                          quiet=spec.quiet, summary=spec.summary,
                          named=spec.named)
        self.events = self.run  # where the Master records a lost or hung worker

    def prepare(self):
        """The checks of ``validate`` and the job set up (data, f and codes built once), the
        output refused or opened; the (d, m) of each sweep point, None for one not run."""
        from .mpi import ft_mode, library, local_ranks

        prepared = self.run.prepare(ranks=self.comm.size, local_ranks=local_ranks(self.comm),
                                    simulate=False)
        self.run.open(library(self.MPI), ft=ft_mode(self.MPI))
        shapes = [None] * len(self.spec.job.points)
        for point, setup in prepared:
            shapes[point.index] = (setup.dataset.dim, setup.target.output_dim)
        return shapes

    def cannot_start(self):
        self.run.abandon()

    def started(self, master):
        from .startup import worker_hosts

        self.run.set_hosts([self.MPI.Get_processor_name()] + worker_hosts(master))
        line = self.run.wait_line(over_mpi=True)  # after the ranks' line: how long a stop waits
        if line:
            log.info("%s", line)

    def run_rounds(self, master):
        self.run.run(master)  # the file closed with complete = false if the rounds end early

    def complete(self, master):
        self.run.completed(master.describe())

    def interrupted(self, e):
        self.run.stopped(e)

    def finished(self, master, code, interrupted):
        return code
