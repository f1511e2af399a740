"""The one job driver: what every run of a job's trials does, whichever engine runs them.

A run (``simulate``, ``run`` on rank 0, ``gcc_mpi.run_simulation``, the benchmarks) is, in order:

1. ``JobRun.prepare``: the output refused unless it may be written (``files.outputs.refuse``),
   the job's time limit set on its interrupt flag, the checks of ``validate`` with the job set
   up by them (``preflight.checked_setup``) and their warnings said;
2. ``JobRun.open``: the results file opened (``files.writer.ResultWriter``);
3. ``JobRun.run``: the points' trials by an ``Engine`` (``run_points``, the one function that
   runs a job's points): each point added to the file, the trials a resumed file holds skipped,
   the others handed to the engine, and their records buffered on their way to the file
   (``RecordBuffer``); the file closed, complete, or with every finished trial and complete =
   false when ``Interrupted`` (a signal, ``job.time_limit``) or any error ends the run;
4. the end-of-job lines and the exit code: ``JobRun.completed`` (the table, the engine's own
   line, "wrote X"; 0) or ``JobRun.stopped`` (the kept trials and the ``--resume`` hint; the
   interruption's code).

The engines: the in-process simulator (``core.simulate.Simulator``) and the MPI round engine
(``runtime.master.Master``), which rank 0 runs inside the MPI lifecycle (``runtime.session``:
``prepare`` and ``open`` before the handshake, ``run`` as its rounds, the end lines after).
No MPI here.
"""

import logging
from typing import Protocol

import numpy as np

from ..job.records import Records
from ..logs import PLAIN

log = logging.getLogger(__name__)


class Engine(Protocol):
    """What runs a job's trials for the driver: the in-process simulator or the MPI rounds."""

    def held(self, config, names) -> int:
        """Trials of records the driver may hold for a point of ``config`` with schemes
        ``names`` before they go to the file (``core.resources`` counts that memory)."""

    def run_point(self, point, setup, trials, out) -> None:
        """Run ``trials`` (a range, in order) of sweep point ``point`` (set up as ``setup``,
        ``core.point.PointSetup``) and give ``out`` (a ``RecordBuffer``) every finished trial's
        records, in trial order: ``out.trial(t, {scheme: record})`` or a block of whole trials
        ``out.block({scheme: columns}, n)``. May raise ``Interrupted`` (or an engine's own
        failure) between or during trials: what ``out`` was given is kept."""

    def close(self) -> None:
        """Every point ran: let go of what the points held (the MPI engine's requests)."""


class RecordSink(Protocol):
    """Where a run's records go: the results file (``ResultWriter``) or a stand-in (the
    probe's rounds, a benchmark's memory)."""

    def add_point(self, index: int, params: dict) -> None:
        """Sweep point ``index`` (its swept ``params``) is about to run."""

    def align(self, index: int, schemes) -> int:
        """The first trial of point ``index`` not yet held for every one of ``schemes``."""

    def append(self, index: int, scheme: str, rows: dict) -> None:
        """Records of consecutive whole trials of one scheme, as columns."""

    def due(self) -> bool:
        """Whether the records held should be handed over now (a commit is due)."""

    def flush(self, force: bool = False) -> None:
        """Commit what was appended, when due (``force``: now)."""


class RecordBuffer:
    """One point's finished trials on their way to the sink, in trial order: whole blocks of
    trials (the simulator) or one trial at a time (the MPI rounds, filled in place into a
    ``Records`` block). They go to the sink when a commit is due, when ``most`` trials are held,
    and at the end of the point however it ends (``hand_over``): a trial is written whole or
    not at all, and a trial costs no call of the sink."""

    def __init__(self, sink, point, codes, trials, most, progress):
        self.sink, self.point, self.trials, self.most = sink, point, trials, most
        self.progress = progress
        self.sizes = {name: code.N for name, code in codes.items()}
        self.blocks = {name: [] for name in codes}  # columns of whole trials, in order
        self.held = 0       # trials in ``blocks`` and ``filling``
        self.filling = {}   # scheme -> Records being filled one trial at a time
        self.filled = 0     # trials of ``filling`` filled

    def block(self, columns, n):
        """``n`` whole consecutive trials: {scheme: columns}."""
        for name, c in columns.items():
            self.blocks[name].append(c)
        for _ in range(n):
            self.progress.trial_done()
        self.held += n
        self._maybe_hand_over()

    def trial(self, t, records):
        """Trial ``t`` (the next in order), whole: {scheme: record}."""
        filling = self.filling
        if not filling:
            span = range(t, min(t + self.most, self.trials.stop))
            filling.update((name, Records(N, span)) for name, N in self.sizes.items())
        for name, rec in records.items():
            filling[name].put(self.filled, rec)
        self.filled += 1
        self.held += 1
        self.progress.trial_done()
        if self.filled == len(next(iter(filling.values()))):
            self._close_filling()
        self._maybe_hand_over()

    def _close_filling(self):
        if self.filled:
            for name, records in self.filling.items():
                self.blocks[name].append(records.rows(self.filled))
        self.filling.clear()
        self.filled = 0

    def _maybe_hand_over(self):
        if self.sink.due() or self.held >= self.most:
            self.hand_over()

    def hand_over(self):
        """Every whole trial held to the sink, then a commit if due."""
        self._close_filling()
        for name, blocks in self.blocks.items():
            if blocks:
                self.sink.append(self.point, name, concat(blocks))
                blocks.clear()
        self.held = 0
        self.sink.flush()


def concat(blocks):
    """The columns of consecutive blocks as one; a column some block lacks (an encoder's alpha
    when no trial of the block was encoded) is NaN there."""
    if len(blocks) == 1:
        return blocks[0]
    like = {k: column for columns in blocks for k, column in columns.items()}
    return {k: np.concatenate([columns.get(k, np.full((len(columns["trial"]),) + v.shape[1:],
                                                      np.nan)) for columns in blocks])
            for k, v in like.items()}


class Quiet:
    """Progress that shows nothing (a benchmark's run)."""

    done = 0

    def start_point(self, k):
        pass

    def skip(self, n):
        pass

    def trial_done(self):
        pass

    def close(self):
        pass


def run_points(engine, prepared, sink, progress=None):
    """Run every trial of the ``prepared`` points ((point, setup) pairs) with ``engine`` into
    ``sink``: the one loop of a job's points, for every engine. Trials the sink holds already
    (a resumed file) are skipped; the records of every finished trial are handed over, however
    the run ends."""
    progress = progress or Quiet()
    try:
        for k, (point, setup) in enumerate(prepared):
            sink.add_point(point.index, point.params)
            names = list(setup.codes)
            first = sink.align(point.index, names)
            progress.start_point(k)
            progress.skip(first)
            trials = range(first, point.config.job.trials)  # not a list: 10^12 trials fit
            if not trials:
                continue
            out = RecordBuffer(sink, point.index, setup.codes, trials,
                               engine.held(point.config, names), progress)
            try:
                engine.run_point(point, setup, trials, out)
            finally:
                out.hand_over()
        engine.close()
    finally:
        progress.close()


class JobRun:
    """One run of ``job``'s ``points`` into the results file ``output``, step by step (module
    docstring). ``interrupts``: the run's ``InterruptFlag`` (its time limit is set here);
    ``kept``: ``output`` is the user's (refused unless it may be written; False: a scratch file
    read back into memory); ``summary``: the text to print for the complete file (the command
    line's table), unless ``quiet``; ``named``: the lines naming the workers the complete file
    accuses (the command line's "suspected: ..." lines), said quiet or not, as a dead rank is."""

    def __init__(self, job, points, output, *, interrupts, overwrite=False, resume=False,
                 command="", quiet=False, summary=None, named=None, kept=True):
        self.job, self.points, self.output = job, tuple(points), output
        self.interrupts, self.overwrite, self.resume = interrupts, overwrite, resume
        self.command, self.quiet, self.summary, self.kept = command, quiet, summary, kept
        self.named = named
        self.prepared = self.writer = self.progress = None
        self.total = len(self.points) * job.config.job.trials

    def prepare(self, *, say=True, **checks):
        """Refuse the output, set the time limit, check and set up the points (``checks``: the
        MPI run's ``ranks``, ``local_ranks``, ``simulate=False``, as ``preflight.checked_setup``
        takes them) and say the warnings. JobError: nothing was written. Returns the prepared
        (point, setup) pairs."""
        from . import preflight
        from ..files.outputs import job_inputs, refuse

        if self.kept:
            refuse(self.output, overwrite=self.overwrite, resume=self.resume,
                   inputs=job_inputs(self.job))
        self.interrupts.set_limit(self.job.config.job.time_limit)
        self.prepared, warnings = preflight.checked_setup(
            self.job, self.points, output=self.output, resume=self.resume, **checks)
        if say:
            preflight.report(self.job, warnings)
        return self.prepared

    def wait_line(self, over_mpi):
        """The start-up line saying how long a stop may wait (``interrupts.wait_line``), from
        the slowest f of the prepared points; None when a stop waits PROMPT seconds at most."""
        from .interrupts import wait_line

        seconds = [s.target.call_seconds for _, s in self.prepared
                   if s.target.call_seconds is not None]
        inputs = max(p.config.code.workers for p, _ in self.prepared)
        return wait_line(max(seconds, default=None), over_mpi, inputs)

    def open(self, mpi, ft="simulate"):
        """Open the results file (``mpi``: what it records as the MPI library; ``ft``: the
        run's fault tolerance, as ``provenance.collect`` takes it)."""
        from ..files.writer import ResultWriter
        from .progress import Progress
        from .provenance import collect

        self.writer = ResultWriter(self.output, config_toml=self.job.to_toml(),
                                   command=self.command, mpi=mpi, overwrite=self.overwrite,
                                   resume=self.resume, provenance=collect(ft))
        self.progress = Progress(self.total, points=len(self.prepared), quiet=self.quiet)

    def run(self, engine):
        """Every trial of the prepared points by ``engine``, into the file, which is closed
        after: complete, or complete = false when anything ends the run early."""
        with self.writer:
            run_points(engine, self.prepared, self.writer, self.progress)

    def simulate(self):
        """The whole run in this process (``simulate``, ``run_simulation``): prepared, opened
        and run by the simulator."""
        from .simulate import Simulator, master_scale_line

        with self.interrupts.abandoning():  # a big job's codes take minutes to build
            prepared = self.prepare()
        for line in (master_scale_line(prepared), self.wait_line(over_mpi=False)):
            if line:
                log.info("%s", line)
        self.open("simulate")
        self.run(Simulator(self.interrupts))

    def abandon(self):
        """The run cannot start (after ``open``): the file closed, complete = false."""
        self.writer.close(complete=False)

    def set_hosts(self, hosts):
        """The hosts of the ranks, in rank order, for the file."""
        self.writer.set_hosts(hosts)

    def lost(self, rank, point, trial):
        """A worker died in ``trial`` of ``point``: recorded while the file is open (what an
        ending finds after the file closed is only said)."""
        if self.writer is not None and not self.writer.closed:
            self.writer.add_lost(rank, point, trial)

    def hung(self, rank, point, trial, host):
        """A worker stopped answering in ``trial`` of ``point``: recorded as ``lost`` is."""
        if self.writer is not None and not self.writer.closed:
            self.writer.add_hung(rank, point, trial, host)

    @property
    def done(self):
        """Trials the file holds (those a resumed file held included)."""
        return self.progress.done if self.progress is not None else 0

    def completed(self, *lines):
        """The end of a complete run: the summary (unless quiet), ``lines`` (an engine's own),
        the workers ``named``, "wrote OUTPUT"; the exit code 0."""
        if not self.quiet and self.summary is not None:
            print(self.summary(self.output))
        for line in [*lines, *(self.named(self.output) if self.named is not None else ())]:
            log.info("%s", line)
        log.info("wrote %s", self.output, extra=PLAIN)
        return 0

    def stopped(self, why):
        """The end of a run stopped early (``why``: Interrupted, or the MPI engine's lost
        worker): the line saying which trials the file keeps; ``why``'s exit code."""
        from .interrupts import kept_line

        if self.writer is None:  # stopped while the job was set up (``simulate``)
            log.info("%s before the first trial; %s was not written", why, self.output)
        else:
            log.info("%s", kept_line(why, self.done, self.total, self.output))
        return why.code
