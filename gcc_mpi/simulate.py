"""Run a whole job in one process: the same trials as the MPI runtime, arrival order from delays.

Each worker's result "arrives" after exactly its injected delay (compute and messaging take no
simulated time), so a trial's received set is the one the MPI master sees when the delays are
well separated. A worker whose f fails on its coded input (raises, NaN/inf, wrong shape) is an
erasure, classified by the same function as on an MPI worker. Records are buffered and appended
to the HDF5 file in blocks, and flushed at least every FLUSH_SECONDS so a long run can be
watched and a killed one keeps its trials; a stopped one (SIGTERM, SIGINT, job.time_limit)
keeps every finished trial.
"""

import time

import numpy as np

from .erasures import evaluate_rows, summary
from .progress import Progress
from .trial import PointSetup, decode_and_score, encode_record, failed_record

FLUSH_SECONDS = 2.0


def simulate_scheme(setup, name, X, Y_true, delays):
    """One scheme's record for a trial with inputs X, exact results Y_true and these delays."""
    code, rule = setup.codes[name], setup.rules[name]
    rec, X_coded = encode_record(code, X, delays)
    arrival = delays[code.active]
    m = setup.target.output_dim
    received, t_stop = rule.simulate(arrival)
    # only the results the master uses are computed: the rest would be thrown away ...
    Y_received, codes, _ = evaluate_rows(setup.target, X_coded[received], m,
                                         batch=len(received) > 0)
    if codes.any():
        # ... unless some are erasures: then every row is classified (one f call each) and the
        # received set is the one the master builds when those results do not count
        Y_all, codes, texts = evaluate_rows(setup.target, X_coded, m, batch=False)
        received, t_stop, erased = rule.simulate_erasures(arrival, codes == 0)
        Y_received = Y_all[received]
        rec["error"][erased] = codes[erased]
        rec["error_text"] = summary(rec["error"], texts)
    rec.update(decode_and_score(code, received, Y_received, Y_true, setup.target.classifier,
                                rec.get("alpha")))
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


def trial_records(setup, point_index, t, names, stop=None):
    """{scheme: record} of trial ``t``: every scheme on the same inputs and delays."""
    X, delays = setup.draw(point_index, t)
    Y_true, why = setup.reference(X)
    records = {}
    for name in names:
        if stop is not None:
            stop.check()  # a slow f: do not finish the trial's other schemes first
        records[name] = (simulate_scheme(setup, name, X, Y_true, delays) if Y_true is not None
                         else failed_record(setup.codes[name].N, delays, why))
    return records


def run_point(setup, point, writer, progress, trials, stop=None):
    """Simulate ``trials`` (indices) of one sweep point, appending to ``writer``. On Stop (from
    ``stop.check()``) or any other exception, the trials finished so far are written first."""
    names = list(setup.codes)
    buffer = {name: [] for name in names}
    done = []

    def write():
        if done:
            for name in names:
                writer.append(point.index, name, stack(buffer[name], done))
                buffer[name].clear()
            done.clear()
        writer.flush()

    last_flush = time.monotonic()
    try:
        for t in trials:
            if stop is not None:
                stop.check()
            for name, rec in trial_records(setup, point.index, t, names, stop).items():
                buffer[name].append(rec)
            done.append(t)
            progress.trial_done()
            if time.monotonic() - last_flush > FLUSH_SECONDS:
                write()
                last_flush = time.monotonic()
    finally:
        write()


def prepare(job, points=None):
    """(point, PointSetup) for each point: every data file, model and code is built, and so
    checked, before any output is written."""
    points = job.points if points is None else points
    return [(point, PointSetup.build(point.config, job.base_dir)) for point in points]


def simulate_job(job, writer, prepared=None, progress=None, stop=None):
    """Simulate every trial of the prepared points (default: all of the job's) into ``writer``;
    trials already in it (a resumed file) are kept and skipped. ``stop``: a StopFlag whose
    ``check`` may end the run early by raising Stop."""
    prepared = prepare(job) if prepared is None else prepared
    progress = progress or Progress(len(prepared) * job.config.job.trials, quiet=True)
    try:
        for k, (point, setup) in enumerate(prepared):
            writer.add_point(point.index, point.params)
            first = writer.align(point.index, list(setup.codes))
            progress.start_point(k)
            progress.skip(first)
            remaining = list(range(first, point.config.job.trials))
            if remaining:
                run_point(setup, point, writer, progress, remaining, stop)
    finally:
        progress.close()
