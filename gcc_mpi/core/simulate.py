"""Run a whole job in one process: the same trials as the MPI runtime, arrival order from delays.

Each worker's result "arrives" after exactly its injected delay (compute and messaging take no
simulated time), so a trial's received set is the one the MPI master sees when the delays are
well separated. A worker whose f fails on its coded input (raises, NaN/inf, wrong shape) is an
erasure, classified by the same function as on an MPI worker.

Trials run in blocks: a block draws its trials' inputs and delays, then each scheme works through
the block — received sets in one sort where the stop rule allows, records filled in place as
columns — and the block is kept whole or not at all. Every trial still draws from its own
seed and is encoded, evaluated and decoded by the same per-trial functions as on the MPI master,
so results do not depend on the block size. Blocks grow until one takes about BLOCK_SECONDS,
which bounds how late a stop (SIGTERM, SIGINT, job.time_limit, checked between schemes) is
honoured and the work it abandons; the finished blocks are kept. ``Simulator`` is the job
driver's in-process engine (``core.driver``): the driver hands the finished blocks to the file,
committed whenever the writer says a commit is due (at least every second:
files.writer.COMMIT_SECONDS), so a long run can be watched and a killed one loses at most that
and a block of work.
"""

import functools
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .erasures import evaluate_rows, summary
from ..job.records import INPUTS, Records, latency
# trials in a block: MAX_BLOCK (larger blocks save nothing more, they only hold more memory), and
# (trials in a block) x N x schemes at most BLOCK_CELLS, ~20 bytes each: resources.py counts them
from .resources import BLOCK_CELLS, MAX_BLOCK
from .trial import decode_and_score, failed_record, rows_of, timed_encode

BLOCK_SECONDS = 0.25


@dataclass
class Block:
    """A block of trials' inputs: ``X`` (B, K, d), ``delays`` (B, N) and, per trial, the exact
    results f(X) or None with the reason in ``why`` (f failed on the inputs themselves); the
    ``point`` they belong to, and ``liars`` (B, N) bool: the workers that lie in each trial
    (job.adversaries; None: none)."""

    trials: list
    X: np.ndarray
    delays: np.ndarray
    Y_true: list
    why: list
    point: int = 0
    liars: np.ndarray | None = None

    @classmethod
    def draw(cls, setup, point_index, trials):
        draws = [setup.draw(point_index, t) for t in trials]
        X = np.stack([x for x, _ in draws])
        references = [setup.reference(x) for x in X]
        liars = (np.stack([setup.adversaries.liars(point_index, t) for t in trials])
                 if setup.adversaries.on else None)
        return cls(list(trials), X, np.stack([d for _, d in draws]),
                   [y for y, _ in references], [why for _, why in references], point_index,
                   liars)


def master_scale(trace):
    """How much longer rank 0's encode and decode take in a probed job than in this process: the
    probe's median time for its reference computation (rank 0 among its workers) over this
    process's (``own_reference``). 1 without a probe's measurement. On a node with a core per
    rank it is about 1; 32 ranks on 2 cores make it a few times, which the trace of the
    workers' times alone does not contain."""
    if trace is None or trace.master is None:
        return 1.0
    return trace.master / own_reference()


def master_scale_line(prepared):
    """The line that says a probe's trace scales the simulated encode and decode times (None:
    no trace of the prepared points has rank 0's measurement)."""
    trace = next((s.trace for _, s in prepared if s.trace is not None), None)
    if trace is None or trace.master is None:
        return None
    return (f"encode and decode times x {master_scale(trace):.2f}: rank 0 of the probe took "
            f"{1e3 * trace.master:.2f} ms for a reference computation that takes "
            f"{1e3 * own_reference():.2f} ms here ({trace.source})")


@functools.cache
def own_reference():
    """This process's median time for gcc_mpi.files.traces.reference_work, timed once."""
    from ..files.traces import reference_work

    return float(np.median([reference_work() for _ in range(21)]))


def finish(records, ran, received, t_stop, delays, scale=1.0):
    """The fields that follow from where the trials ``ran`` stopped: ``received`` (one array
    per trial) and ``t_stop`` (seconds); a result arrives after its worker's delay. ``scale``:
    of the encode and decode times (``master_scale``)."""
    c = records.columns
    if scale != 1.0:
        c["t_encode"][ran] *= scale
        c["t_decode"][ran] *= scale
    for i, r in zip(ran, received):
        c["arrival"][i, r] = delays[i, r]
        c["used"][i, r] = True
    c["t_scatter"][ran] = 0.0
    c["t_wait"][ran] = t_stop
    c["latency"][ran] = latency(c["t_encode"][ran], t_stop, c["t_decode"][ran])


def scheme_block(setup, name, block):
    """One scheme's Records of a block: every trial on the block's inputs and delays."""
    code, rule = setup.codes[name], setup.policies[name]
    records = Records(code.N, block.trials)
    records.columns["delay"][:] = block.delays
    if block.liars is not None:  # the liars among the workers that compute for this scheme
        records.columns["adversary"][:, code.active] = block.liars[:, code.active]
    ran = []
    for i, why in enumerate(block.why):
        if why:
            liars = None if block.liars is None else block.liars[i]
            records.put(i, failed_record(code, block.delays[i], why, liars))
        else:
            ran.append(i)
    arrivals = block.delays[ran][:, code.active]
    received, t_stop = rule.simulate_block(arrivals)
    sent = []  # the trials whose encode gave coded inputs
    for j, i in enumerate(ran):
        stopped = run_trial(setup, name, block, i, arrivals[j], received[j], t_stop[j], records)
        if stopped is not None:
            received[j], t_stop[j] = stopped
            sent.append(j)
    finish(records, [ran[j] for j in sent], [received[j] for j in sent], t_stop[sent],
           block.delays, master_scale(setup.trace))
    return records


def run_trial(setup, name, block, i, arrival, received, t_stop, records):
    """Encode, compute and decode trial ``i`` of the block into ``records``, given where the
    stop rule stops (``received``, ``t_stop``) when no result is erased; returns where the
    master really stops; None when the encode failed (a plug-in's: its failed trial, nothing
    sent, as on the MPI master)."""
    code, target = setup.codes[name], setup.target
    X_coded, fields = timed_encode(code, block.X[i])  # row j: worker code.active[j]'s
    records.put(i, fields)
    if X_coded is None:
        return None
    # only the results the master uses are computed: the rest would be thrown away ...
    Y, codes, _ = evaluate_rows(target, X_coded[rows_of(code, received)], target.output_dim,
                                batch=len(received) > 0)
    if codes.any():
        # ... unless some are erasures: then every row is classified (one f call each) and the
        # received set is the one the master builds when those results do not count
        Y_all, codes, texts = evaluate_rows(target, X_coded, target.output_dim, batch=False)
        received, t_stop, erased = setup.policies[name].simulate_erasures(arrival, codes == 0)
        Y = Y_all[rows_of(code, received)]
        error = records.columns["error"][i]
        error[erased] = codes[rows_of(code, erased)]
        by_worker = [""] * code.N
        for row, w in enumerate(code.active.tolist()):
            by_worker[w] = texts[row]
        records.put(i, {"error_text": summary(error, by_worker)})
    # a liar's result replaces its true one (over MPI the worker sends it so)
    Y = setup.adversaries.corrupt(block.point, block.trials[i], received, Y)
    records.put(i, decode_and_score(code, received, Y, block.Y_true[i], target.classifier,
                                    fields))
    return received, t_stop


def simulate_scheme(setup, name, X, Y_true, delays):
    """One scheme's record (a dict) for one trial with inputs X, exact results Y_true and these
    delays: a block of one."""
    block = Block([0], X[None], delays[None], [Y_true], [""])
    columns = scheme_block(setup, name, block).columns
    return {k: v[0] for k, v in columns.items() if k != "trial"}


def block_columns(setup, point_index, trials, names, stop=None):
    """{scheme: columns} of a block of trials: every scheme on the same inputs and delays."""
    block = Block.draw(setup, point_index, trials)
    columns = {}
    for name in names:
        if stop is not None:
            stop.check()  # a slow f: do not finish the block's other schemes first
        columns[name] = scheme_block(setup, name, block).columns
    return columns


def next_size(size, seconds, most=MAX_BLOCK):
    """Trials in the next block after ``size`` took ``seconds``: about BLOCK_SECONDS' worth, at
    most twice as many (one short block may just have been lucky) and at most ``most``."""
    return int(max(1, min(size * BLOCK_SECONDS / max(seconds, 1e-9), 2 * size, most)))


class Simulator:
    """The in-process engine of the job driver (``core.driver.Engine``): a point's trials in
    blocks, each block's inputs and delays drawn once and every scheme run on them. ``stop``:
    an InterruptFlag whose ``check`` (between schemes) may end the run by raising Interrupted,
    and which raises at once from a signal or the time limit while a block runs
    (``InterruptFlag.abandoning``); the unfinished block is dropped."""

    def __init__(self, stop=None):
        self.stop = stop

    def held(self, config, names):
        """At most two blocks' worth of trials (resources.py counts them)."""
        return max(1, min(MAX_BLOCK, BLOCK_CELLS // (config.code.workers * len(names))))

    def run_point(self, point, setup, trials, out):
        """Blocks of ``trials`` into ``out``, each block about BLOCK_SECONDS long."""
        names = list(setup.codes)
        most = self.held(point.config, names)
        size, start = 1, 0
        while start < len(trials):
            t0 = time.monotonic()
            block = trials[start:start + size]
            with self.stop.abandoning() if self.stop is not None else nullcontext():
                columns = block_columns(setup, point.index, block, names, self.stop)
            out.block(columns, len(block))
            start += len(block)
            size = next_size(len(block), time.monotonic() - t0, most)

    def close(self):
        pass


def seconds_per_trial(setup, point_index, depth=None, trials=2):
    """Seconds a trial of every scheme of one sweep point takes, timed on a few of its trials
    after one more (which builds decoders): in this process, or (``depth``: decode.pipeline)
    rank 0's part of a trial over MPI — every scheme's encode, decode and wait for its
    results, the waits shared among the rounds in flight. Decoder caches aside, nothing is
    kept: the run computes those trials again."""
    names = list(setup.codes)
    block_columns(setup, point_index, [0], names)
    t0 = time.perf_counter()
    columns = block_columns(setup, point_index, range(1, 1 + trials), names)
    if depth is None:
        return (time.perf_counter() - t0) / trials
    return sum(float(np.nansum(c["t_encode"] + c["t_decode"] + c["t_wait"] / depth))
               for c in columns.values()) / trials


def replay(setup, point_index, trial_index, name, used, arrival=None):
    """One scheme's recorded trial decoded again in this process from the results its record
    says were used: a check that a decode used those results and no others (a late result of
    another round, a race of arrivals). The trial's inputs are drawn from its seed and encoded
    (``timed_encode``), f is computed on the coded inputs of the workers in ``used`` (bool per
    worker) one row per call, as each worker computes its own, and they are decoded — in the
    order of ``arrival`` (the recorded seconds per worker) when given, the order the master
    received them in, else by worker — and scored (``decode_and_score``).

    Returns the record fields the encode and the decode set (the timings are this process's),
    with ``used``; a trial whose inputs f fails on gives its ``failed_record``."""
    code = setup.codes[name]
    X, delays = setup.draw(point_index, trial_index)
    Y_true, why = setup.reference(X)
    liars = setup.adversaries.liars(point_index, trial_index) if setup.adversaries.on else None
    if Y_true is None:
        return failed_record(code, delays, why, liars)
    X_coded, fields = timed_encode(code, X)
    if X_coded is None:  # a plug-in's encode failed: nothing was used
        return {**fields, "used": np.zeros(code.N, bool)}
    received = np.flatnonzero(used)
    if arrival is not None:
        received = received[np.argsort(np.asarray(arrival)[received], kind="stable")]
    rows = rows_of(code, received)  # X_coded holds the active workers' rows
    if (rows < 0).any():
        raise ValueError(f"{name}, trial {trial_index}: a used worker got no coded input")
    Y, _, _ = evaluate_rows(setup.target, X_coded[rows], setup.target.output_dim,
                            batch=False)
    Y = setup.adversaries.corrupt(point_index, trial_index, received, Y)
    rec = {k: v for k, v in fields.items() if k != INPUTS}
    rec.update(decode_and_score(code, received, Y, Y_true, setup.target.classifier, fields))
    rec["used"] = np.zeros(code.N, bool)
    rec["used"][received] = True
    return rec
