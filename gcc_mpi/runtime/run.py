"""What rank 0 does in ``python -m gcc_mpi run`` (the lifecycle around it is ``session``'s): the
job checked and set up before any MPI traffic beyond the start-up message (so bad input is one
line and exit 2), the results file opened, every trial recorded (``trials``), and the file
closed — complete, or with every committed trial and complete = false after an interruption,
which ``--resume`` continues.
"""

import sys


class RunWork:
    """Rank 0's part of a run of ``plan`` (a ``session.Plan``), step by step as ``session.lead``
    calls it."""

    what, heading = "job", ""
    stuck_code = None  # a hung worker that only MPI_Abort ends: the run's own code (file whole)

    def __init__(self, plan, comm, MPI, interrupts):
        self.plan, self.comm, self.MPI, self.interrupts = plan, comm, MPI, interrupts
        self.prepared = self.writer = self.progress = None

    def prepare(self):
        """The checks of ``validate`` and the job set up (data, f and codes built once), the
        output refused or opened; the (d, m) of each sweep point, None for one not run."""
        from ..core import preflight
        from ..files.outputs import job_inputs, refuse
        from ..files.writer import ResultWriter
        from .mpi import library, local_ranks

        plan, comm = self.plan, self.comm
        refuse(plan.output, overwrite=plan.overwrite, resume=plan.resume,
               inputs=job_inputs(plan.job))
        self.interrupts.set_limit(plan.job.config.job.time_limit)
        self.prepared, warnings = preflight.checked_setup(
            plan.job, plan.points, output=plan.output, resume=plan.resume, ranks=comm.size,
            local_ranks=local_ranks(comm), simulate=False)
        preflight.report(plan.job, warnings)
        self.writer = ResultWriter(plan.output, config_toml=plan.job.to_toml(),
                                   command=plan.command, mpi=library(self.MPI),
                                   overwrite=plan.overwrite, resume=plan.resume)
        shapes = [None] * len(plan.job.points)
        for point, setup in self.prepared:
            shapes[point.index] = (setup.dataset.dim, setup.target.output_dim)
        return shapes

    def cannot_start(self):
        self.writer.close(complete=False)

    def started(self, master):
        from .startup import worker_hosts

        self.writer.set_hosts([self.MPI.Get_processor_name()] + worker_hosts(master))

    def rounds(self, master):
        from ..core.progress import Progress
        from .trials import run_trials

        job = self.plan.job
        self.progress = Progress(len(self.prepared) * job.config.job.trials,
                                 points=len(self.prepared), quiet=self.plan.quiet)
        with self.writer:  # closed with complete = false if the rounds end early
            run_trials(master, self.prepared, self.writer, self.progress)

    def complete(self, master):
        if not self.plan.quiet and self.plan.summary is not None:
            print(self.plan.summary(self.plan.output))
        print(master.describe(), file=sys.stderr)
        print(f"wrote {self.plan.output}", file=sys.stderr)

    def interrupted(self, e):
        from ..core.interrupts import kept_line

        total = len(self.prepared) * self.plan.job.config.job.trials
        print(kept_line(e, self.progress.done, total, self.plan.output), file=sys.stderr,
              flush=True)

    def finished(self, master, code, interrupted):
        return code
