"""``python -m gcc_mpi probe``: measure each worker's real task times over MPI (the file format
is gcc_mpi/files/traces.py's, its table gcc_mpi/reports/probe.py's; the lifecycle ``session``'s).

Rank 0 drives the run's own ``Master`` one round at a time (``Master.round``), on a probe job
made from the user's (``probe_job``): every rank but 0 is a worker and computes the job's f on a
real input of its own — scheme "uncoded" with K = N = ranks - 1, so worker w gets row w of a
fresh batch every round — no delay is injected and the master waits for every result
(decode.wait = "all"). So the probe goes through the same messages, waiting and polling as a
run, and the Master stamps each result's arrival since its round's send exactly as in a run.
The workers run the usual worker loop with f wrapped in a timer, and send rank 0 their list of
compute times once, after EXIT (the hot path stays as in a run). SIGTERM/SIGINT stop the
rounds as in a run; the rounds finished are written (complete = false), exit code 143/130.
"""

import logging
import time

import numpy as np

from . import protocol as P
from .deaths import WorkerLost
from ..logs import PLAIN

log = logging.getLogger(__name__)

DEFAULT_ROUNDS = 300
REPORT_GRACE = 10.0  # seconds for the workers' compute times after EXIT


def probe_job(job, ranks, rounds):
    """The probe's job on ``ranks`` ranks: ``job``'s first sweep point, with every rank but 0 a
    worker on its own input and nothing injected, ``rounds`` times."""
    from ..job.config import Job, Point, replace

    n = ranks - 1
    config = replace(job.points[0].config, {
        "code.workers": n, "data.batch": n, "code.schemes": ["uncoded"],
        "stragglers.model": "none", "decode.wait": "all", "decode.deadline": None,
        "decode.pipeline": 1, "job.trials": rounds})
    return Job(config, {}, [Point(0, {}, config)], job.source, job.base_dir)


class Timer:
    """A worker's side of the probe: times every call of f, reports the times after EXIT and
    its BYE (protocol)."""

    def __init__(self):
        self.times = []

    def wrap(self, targets):
        return [None if t is None else _Timed(t, self.times) for t in targets]

    def report(self, comm, waiter):
        waiter.all([comm.isend(self.times, dest=0, tag=P.SETUP)],
                   time.perf_counter() + REPORT_GRACE)


class _Timed:
    def __init__(self, target, times):
        self.target, self.times = target, times
        self.output_dim = target.output_dim

    def __call__(self, X):
        from ..core.erasures import call

        t0 = time.perf_counter()
        try:
            return call(self.target, X)
        finally:
            self.times.append(time.perf_counter() - t0)


class ProbeRounds:
    """The probe's engine for the job driver (``core.driver.Engine``): the Master's rounds one
    at a time (``Master.round``), rank 0's reference computation between them as a run's
    decode (``master_work``: seconds per round)."""

    def __init__(self, master, workers, master_work):
        self.master, self.workers, self.master_work = master, workers, master_work

    def held(self, config, names):
        return 1  # every round goes to ``Arrivals`` at once: an interruption keeps them all

    def run_point(self, point, setup, trials, out):
        from ..files.traces import reference_work

        master = self.master
        master.open(setup, 0, 1)
        for t in trials:
            X, delays = setup.draw(0, t)  # model "none": no delay
            Y_true = setup.reference(X)[0]
            if Y_true is None:  # f fails on this batch on rank 0: the workers' erasures say so
                Y_true = np.ones((self.workers, setup.target.output_dim))
            rec = master.round(setup, "uncoded", t, X, Y_true, delays)
            # between rounds, as a run's decode: the workers wait for their next task
            self.master_work[t] = reference_work()
            out.trial(t, {"uncoded": rec})

    def close(self):
        self.master.close()


class Arrivals:
    """Where the driver puts the probe's records (``core.driver.RecordSink``): each round's
    arrival per worker, in memory until the probe file is written."""

    def __init__(self, rounds, workers):
        self.arrival = np.full((rounds, workers), np.nan)
        self.done = 0  # rounds held

    def add_point(self, index, params):
        pass

    def align(self, index, schemes):
        return 0

    def append(self, index, scheme, rows):
        self.arrival[rows["trial"]] = rows["arrival"]
        self.done = int(rows["trial"][-1]) + 1

    def due(self):
        return True

    def flush(self, force=False):
        pass


class ProbeWork:
    """Rank 0's part of a probe of ``spec`` (``spec.job`` is the probe's job, ``probe_job``),
    step by step as ``session.lead`` calls it (``session.Work``)."""

    what, heading = "probe", "probe: "
    stuck_code = 1  # a hung worker that only MPI_Abort ends: no file is written yet
    events = None   # a lost or hung worker is only said: the probe file has no place for it

    def __init__(self, spec, comm, MPI, interrupts):
        self.spec, self.comm, self.MPI = spec, comm, MPI
        self.setup = None
        W, rounds = comm.size - 1, spec.probe_rounds
        self.arrivals = Arrivals(rounds, W)
        self.master_work = np.full(rounds, np.nan)  # rank 0's reference computation

    def prepare(self):
        from ..files.outputs import job_inputs, refuse
        from ..core.point import PointSetup

        job = self.spec.job
        self.setup = PointSetup.build(job.config, job.base_dir)
        refuse(self.spec.output, overwrite=self.spec.overwrite, inputs=job_inputs(job))
        return [(self.setup.dataset.dim, self.setup.target.output_dim)]

    def cannot_start(self):
        pass

    def started(self, master):
        pass

    @property
    def done(self):
        """Rounds done."""
        return self.arrivals.done

    def run_rounds(self, master):
        from ..core.driver import run_points
        from ..core.progress import Progress

        engine = ProbeRounds(master, self.comm.size - 1, self.master_work)
        run_points(engine, [(self.spec.job.points[0], self.setup)], self.arrivals,
                   Progress(self.spec.probe_rounds, quiet=self.spec.quiet))

    def complete(self, master):
        pass

    def interrupted(self, e):
        """A stop is said once the file holds the rounds done (``finished``); a lost worker
        ends the probe at once, without a file."""
        if isinstance(e, WorkerLost):
            log.info("%s after %s of %s rounds; no probe file is written", e, self.done,
                     self.spec.probe_rounds)

    def finished(self, master, code, interrupted):
        """After the workers' EXITs: their compute times, the probe file, the table."""
        from ..files.traces import write_probe
        from ..core.provenance import collect
        from .mpi import ft_mode, library
        from .startup import worker_hosts

        compute = self._compute_times(master)
        out, done = self.spec.output, self.done
        write_probe(out, self.arrivals.arrival[:done], compute, worker_hosts(master),
                    range(1, self.comm.size),
                    complete=interrupted is None, config=self.spec.job.to_toml(),
                    command=self.spec.command, mpi=library(self.MPI),
                    master_host=self.MPI.Get_processor_name(), master=self.master_work[:done],
                    provenance=collect(ft_mode(self.MPI)))
        if interrupted is not None:
            log.info("%s after %s of %s rounds; %s holds them (complete = false)", interrupted,
                     done, self.spec.probe_rounds, out)
            return interrupted.code
        if not self.spec.quiet and self.spec.summary is not None:
            print(self.spec.summary(out))
        log.info("wrote %s", out, extra=PLAIN)
        return code

    def _compute_times(self, master):
        """(rounds, workers) seconds each worker's f took, as each sent them after its BYE."""
        from .mpi import Waiter

        until = time.perf_counter() + REPORT_GRACE
        waiter = Waiter(self.MPI, "polite")
        compute = np.full((self.done, self.comm.size - 1), np.nan)
        for r in range(1, self.comm.size):
            if r in master.deaths.dead:
                continue
            times = waiter.recv_object(self.comm, r, P.SETUP, until)
            if times is None:
                log.info("rank %s did not send its compute times", r)
                continue
            n = min(len(times), self.done)
            compute[:n, r - 1] = times[:n]
        return compute
