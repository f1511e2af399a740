"""The trials of an MPI run on rank 0: every round of every sweep point through the ``Master``,
and the records into the results file in trial order.

Rounds start in order as slots free up, up to ``decode.pipeline`` in flight; they finish out of
order. A trial's records are kept until all its schemes are decided, then go into a block of
``records.Records`` in trial order, and the block goes to the writer when a commit is due, when
it is full (BLOCK trials) and when the point ends or stops: a trial costs the master no HDF5
call, and every finished trial is kept. A sweep point's rounds all finish before the next point
starts (its shapes differ).
"""

import time

from ..job.records import Records
from ..core.trial import failed_record
from .mpi import RankFailure

BLOCK = 256          # trials of records held by the master before they go to the writer


def run_trials(master, prepared, writer, progress):
    """Record every trial of the prepared points (those a resumed file holds are skipped)."""
    master.writer = writer
    for k, (point, setup) in enumerate(prepared):
        writer.add_point(point.index, point.params)
        names = list(setup.codes)
        first = writer.align(point.index, names)
        progress.start_point(k)
        progress.skip(first)
        master.open(setup, point.index, point.config.decode.pipeline)
        book = Book(setup, point.index, names, range(first, point.config.job.trials), writer,
                    progress)
        try:
            rounds(master, setup, point.index, book)
        finally:
            book.hand_over()
    master.close()
    progress.close()
    master.writer = None  # closed by the caller next: what the ending finds is only said


def rounds(master, setup, point, book):
    """Start the rounds of ``book.trials`` in order as slots free up, and finish them. A
    scheme that runs no round (f failed on the inputs) gets its record at once."""
    for t in book.trials:
        master.where = (point, t)
        try:
            master.check()
        except RankFailure as e:  # a rank died between rounds
            master.losses.bury(e)
        X, delays = setup.draw(point, t, inject=True)
        t0 = time.perf_counter()
        Y_true, why = setup.reference(X)
        master.hung.timed(time.perf_counter() - t0)  # bounds a round nobody answers (hung)
        book.records[t] = {}
        for name in book.names:
            if Y_true is None:  # f failed on the inputs: no round at all
                book.records[t][name] = failed_record(setup.codes[name], delays, why)
                continue
            while len(master.rounds) >= master.depth:
                book.collect(master.advance())
            if master.start(setup, name, point, t, X, Y_true, delays) is None:
                book.records[t][name] = master.unstarted  # its encode failed: no round
        book.collect(())
    while master.rounds:
        book.collect(master.advance())


class Book:
    """A point's records on their way to the writer, in trial order."""

    def __init__(self, setup, point, names, trials, writer, progress):
        self.setup, self.point, self.names, self.trials = setup, point, names, trials
        self.writer, self.progress = writer, progress
        self.records = {}  # trial -> {scheme: record}, until the trial is complete
        self.block = {}    # scheme -> Records of the next trials to write
        self.filled = 0    # trials of the block filled

    def collect(self, retired):
        """Take the records of the rounds that retired; move the trials now complete, in
        order, into the block, and hand it over when it is full or a commit is due."""
        records, block, names = self.records, self.block, self.names
        for r in retired:
            records[r.trial][r.name] = r.rec
        while records:
            t = min(records)
            if len(records[t]) < len(names):
                return
            done = records.pop(t)
            if not block:
                span = range(t, min(t + BLOCK, self.trials.stop))
                block.update((name, Records(self.setup.codes[name].N, span)) for name in names)
            for name in names:
                block[name].put(self.filled, done[name])
            self.filled += 1
            self.progress.trial_done()
            if self.filled == len(block[names[0]]) or self.writer.due():
                self.hand_over()
                self.writer.flush()

    def hand_over(self):
        """The block's filled trials to the writer (a trial is written whole, or not at all)."""
        if self.filled:
            for name in self.names:
                self.writer.append(self.point, name, self.block[name].rows(self.filled))
        self.block.clear()
        self.filled = 0
