"""One trial's logic, shared by the simulator and the MPI master.

A trial draws K inputs and one delay per worker from its own seed (``setup.PointSetup.draw``),
and then for each scheme: encodes, lets the workers compute, stops waiting by the decode
policy (``WaitPolicy``, the job's ``decode.wait``), decodes and scores. The simulator derives
the arrival order from the delays; the MPI master observes it. Both call ``WaitPolicy.done`` on
the same received sets and ``score`` on the same decoder output, which is what makes ``run``
and ``simulate`` of one job agree.
"""

import time

import numpy as np

from ..codes import DecodeError
from ..job.records import INPUTS, empty_record


class WaitPolicy:
    """When a scheme stops waiting. Approximate schemes wait by the policy: the fastest
    N - S results, everything by a deadline, or all. Exact schemes (uncoded, replication, lcc)
    gain nothing from more results and stop as soon as they can decode, but never later than
    the deadline; with wait = "all" every scheme waits for all of its workers."""

    def __init__(self, code, wait, stragglers, deadline=None):
        self.code, self.wait, self.deadline = code, wait, deadline
        self.n_active = len(code.active)
        self.need = max(self.n_active - stragglers, 1) if wait == "fastest" else self.n_active

    def done(self, mask, count):
        """Whether to stop now, with the results in ``mask`` (``count`` of them) received."""
        if self.wait == "all":
            return count == self.n_active
        if self.code.exact:
            return self.code.decodable(mask)
        return count >= self.need

    def simulate(self, arrival):
        """(received workers in arrival order, stop time) for arrival times of the active
        workers."""
        return self.simulate_erasures(arrival)[:2]

    def fixed_count(self):
        """How many results every trial stops at when that does not depend on which ones arrive
        (no deadline, and done() only counts): the fastest that many are received. Else None."""
        if self.deadline is None and (self.wait == "all" or not self.code.exact):
            return self.need
        return None

    def simulate_block(self, arrivals):
        """``simulate`` for each row of ``arrivals`` (trials x active workers): (list of received
        workers in arrival order, stop times). When the count is fixed, one sort for the block."""
        n = self.fixed_count()
        if n is None:
            both = [self.simulate(a) for a in arrivals]
            return [r for r, _ in both], np.array([t for _, t in both], dtype=float)
        order = np.argsort(arrivals, axis=1, kind="stable")[:, :n]
        t_stop = np.take_along_axis(arrivals, order[:, n - 1:], axis=1)[:, 0]
        return list(self.code.active[order]), t_stop

    def simulate_erasures(self, arrival, ok=None):
        """(received, stop time, erased) when the active workers' results arrive at ``arrival``
        and only those with ``ok`` (bool per active worker; default all) are usable: the others
        are erasures, which arrive but do not count. ``erased``: the workers whose erasures
        arrived before the master stopped waiting (the ones it records), in arrival order."""
        order = np.argsort(arrival, kind="stable")
        times = arrival[order]
        workers = self.code.active[order]
        good = np.ones(len(order), bool) if ok is None else np.asarray(ok, bool)[order]
        positions = np.flatnonzero(good)  # where the usable results are in the arrival order
        g_workers, g_times = workers[positions], times[positions]
        horizon = len(positions) if self.deadline is None else int(
            np.searchsorted(g_times, self.deadline, "right"))
        mask = np.zeros(self.code.N, bool)
        # done() is monotone in the received set, so the first prefix that is done is found by
        # bisection: log2(N) checks instead of N for the exact schemes' decodability test.
        lo, hi = 1, horizon + 1  # hi = "not done within the horizon"
        while lo < hi:
            mid = (lo + hi) // 2
            mask[:] = False
            mask[g_workers[:mid]] = True
            if self.done(mask, mid):
                hi = mid
            else:
                lo = mid + 1
        if lo <= horizon:
            received, t_stop, seen = g_workers[:lo], g_times[lo - 1], positions[lo - 1]
        else:
            received = g_workers[:horizon]
            t_stop = (self.deadline if self.deadline is not None
                      else times[-1] if len(times) else 0.0)
            seen = int(np.searchsorted(times, t_stop, "right"))
        erased = workers[:seen][~good[:seen]]
        return received, t_stop, erased


def score(Y_hat, Y_true, classifier):
    """(mse, nmse, relacc) of a decoded batch; relacc is NaN when f is not a classifier."""
    err = np.sum((Y_hat - Y_true) ** 2)
    mse = err / Y_true.size
    nmse = err / np.sum(Y_true**2)
    relacc = np.mean(Y_hat.argmax(1) == Y_true.argmax(1)) if classifier else np.nan
    return mse, nmse, relacc


def decode_and_score(code, received, Y_received, Y_true, classifier, encoded=None):
    """Decode and score one scheme's trial: a dict of the per-trial record fields it sets.
    ``encoded``: the fields the trial's encode gave (``timed_encode``): the trial's data points
    if the encoder chose them (info["alpha"]) and the inputs a code that ``uses_inputs`` needs."""
    encoded = encoded or {}
    extra = {"inputs": encoded.get(INPUTS)} if uses_inputs(code) else {}
    t0 = time.perf_counter()
    try:
        Y_hat, info = code.decode(received, Y_received, encoded.get("alpha"), **extra)
        if not built_in(code) and np.shape(Y_hat) != np.shape(Y_true):
            raise ValueError(f"decode returned shape {np.shape(Y_hat)}, expected "
                             f"{np.shape(Y_true)}")
    except DecodeError as e:
        return {"failed": True, "reason": str(e), "t_decode": time.perf_counter() - t0}
    except Exception as e:
        if built_in(code):  # a bug of ours: seen, not recorded as a trial that failed
            raise
        # a plug-in's mistake mid-run is that scheme's failed trial, in both engines, and
        # every other scheme's comparison goes on
        return {"failed": True, "reason": f"decode raised {type(e).__name__}: {e}",
                "t_decode": time.perf_counter() - t0}
    t_decode = time.perf_counter() - t0
    if not np.all(np.isfinite(Y_hat)):
        return {"failed": True, "reason": "decoder output is not finite", "t_decode": t_decode}
    mse, nmse, relacc = score(Y_hat, Y_true, classifier)
    return {"failed": False, "reason": "", "t_decode": t_decode, "mse": mse, "nmse": nmse,
            "relacc": relacc, **info}


def built_in(code):
    """Whether ``code`` is one of gcc_mpi's own schemes (not a plug-in's)."""
    return type(code).__module__.startswith("gcc_mpi.")


def uses_inputs(code):
    """Whether ``decode`` takes the trial's inputs; optional in the interface (a plug-in that does
    not subclass LinearCode may leave it out)."""
    return getattr(code, "uses_inputs", False)


def rows_of(code, workers):
    """The rows of a trial's coded inputs (one per active worker, in ``code.active``'s order)
    that ``workers`` got; -1 for a worker that got none."""
    row = np.full(code.N, -1)
    row[code.active] = np.arange(len(code.active))
    return row[np.asarray(workers, dtype=np.int64)]


def timed_encode(code, X):
    """(coded inputs of the active workers, record fields: t_encode and the encoder's facts, and
    for a code that ``uses_inputs`` the trial's inputs under INPUTS).

    A plug-in's encode that raises, or gives no usable coded inputs (not one finite row of d
    values per active worker), mid-run gives (None, the fields of that scheme's failed trial
    with the reason): nothing is computed or sent for it, and every other scheme's trial goes
    on, in both engines. A built-in scheme's is a bug of ours: raised, it ends the run."""
    t0 = time.perf_counter()
    try:
        X_coded, info = code.encode(X)
        reason = "" if built_in(code) else coded_problem(code, X, X_coded)
    except Exception as e:
        if built_in(code):
            raise
        reason = f"encode raised {type(e).__name__}: {e}"
    if reason:
        fields = {"failed": True, "reason": reason, "t_encode": time.perf_counter() - t0}
        return None, {**fields, **no_alpha(code)}
    fields = {"t_encode": time.perf_counter() - t0, **info}
    if uses_inputs(code):
        fields[INPUTS] = (X, X_coded)
    return X_coded, fields


def coded_problem(code, X, X_coded):
    """What is wrong with a plug-in's coded inputs ``X_coded`` of the batch ``X``, or ""."""
    want = (len(code.active), X.shape[1])
    if np.shape(X_coded) != want:
        return f"encode returned shape {np.shape(X_coded)}, expected {want}"
    if not np.all(np.isfinite(X_coded)):
        return "encode returned NaN or inf"
    return ""


def mark_liars(rec, code, liars):
    """Record the trial's liars (bool (N,) or None: none) among ``code``'s active workers."""
    if liars is not None:
        rec["adversary"][code.active] = liars[code.active]
    return rec


def encode_record(code, X, delays, liars=None):
    """Start one scheme's record of a trial: the delays and ``liars`` (``mark_liars``), then
    the timed encode. Returns (record, coded inputs of the active workers), None for the coded
    inputs when the encode failed (``timed_encode``: the record is then that scheme's failed
    trial)."""
    rec = mark_liars(empty_record(code.N), code, liars)
    rec["delay"] = delays
    X_coded, fields = timed_encode(code, X)
    rec.update(fields)
    return rec, X_coded


def no_alpha(code):
    """The alpha of a trial that chose none (NaN), for a code that chooses each trial's."""
    return {"alpha": np.full(code.K, np.nan)} if code.trial_alpha else {}


def failed_record(code, delays, reason, liars=None):
    """The record of a trial that could not run at all (f failed on its inputs); a code that
    chooses each trial's alpha records none (NaN) for it."""
    rec = mark_liars(empty_record(code.N), code, liars)
    rec.update(failed=True, reason=reason, delay=delays, **no_alpha(code))
    return rec
