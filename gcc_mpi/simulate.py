"""Run a whole job in one process: the same trials as the MPI runtime, arrival order from delays.

Each worker's result "arrives" after exactly its injected delay (compute and messaging take no
simulated time), so a trial's received set is the one the MPI master sees when the delays are
well separated. Records are buffered and appended to the HDF5 file in blocks, and flushed at
least every FLUSH_SECONDS so a long run can be watched and a killed one keeps its trials.
"""

import time

import numpy as np

from .progress import Progress
from .trial import PointSetup, decode_and_score, empty_record

FLUSH_SECONDS = 2.0


def simulate_scheme(setup, name, X, Y_true, delays):
    """One scheme's record for a trial with inputs X, exact results Y_true and these delays."""
    code, rule = setup.codes[name], setup.rules[name]
    rec = empty_record(code.N)
    rec["delay"] = delays
    t0 = time.perf_counter()
    X_coded, info = code.encode(X)
    rec["t_encode"] = time.perf_counter() - t0
    rec.update(info)
    received, t_stop = rule.simulate(delays[code.active])
    # only the results the master uses are computed: the rest would be thrown away
    Y_received = setup.target(X_coded[received]) if len(received) else np.empty((0, 0))
    rec.update(decode_and_score(code, received, Y_received, Y_true, setup.target.classifier,
                                info.get("alpha")))
    rec["arrival"][received] = delays[received]
    rec["used"][received] = True
    rec["t_scatter"] = 0.0
    rec["t_wait"] = t_stop
    rec["latency"] = rec["t_encode"] + rec["t_wait"] + rec["t_decode"]
    return rec


def stack(records, trials):
    rows = {k: np.array([r[k] for r in records]) for k in records[0]}
    rows["trial"] = np.asarray(trials, dtype=np.int64)
    return rows


def run_point(setup, point, writer, progress, trials):
    """Simulate ``trials`` (indices) of one sweep point, appending to ``writer``."""
    names = list(setup.codes)
    buffer = {name: [] for name in names}
    done = []
    last_flush = time.monotonic()
    for t in trials:
        X, Y_true, delays = setup.inputs(point.index, t)
        for name in names:
            buffer[name].append(simulate_scheme(setup, name, X, Y_true, delays))
        done.append(t)
        progress.trial_done()
        if time.monotonic() - last_flush > FLUSH_SECONDS or t == trials[-1]:
            for name in names:
                writer.append(point.index, name, stack(buffer[name], done))
                buffer[name].clear()
            writer.flush()
            done = []
            last_flush = time.monotonic()


def prepare(job, points=None):
    """(point, PointSetup) for each point: every data file, model and code is built, and so
    checked, before any output is written."""
    points = job.points if points is None else points
    return [(point, PointSetup.build(point.config, job.base_dir)) for point in points]


def simulate_job(job, writer, prepared=None, progress=None):
    """Simulate every trial of the prepared points (default: all of the job's) into ``writer``."""
    prepared = prepare(job) if prepared is None else prepared
    progress = progress or Progress(len(prepared) * job.config.job.trials, quiet=True)
    for point, setup in prepared:
        writer.add_point(point.index, point.params)
        first = min(writer.trials_done(point.index, name) for name in setup.codes)
        remaining = list(range(first, point.config.job.trials))
        progress.skip(point.config.job.trials - len(remaining))
        if remaining:
            run_point(setup, point, writer, progress, remaining)
    progress.close()
