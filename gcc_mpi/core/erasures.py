"""Erasures: a worker result that is not usable, and why (no MPI, no scipy: workers import it).

A worker whose f raises, returns NaN or inf, or returns the wrong shape has its result *erased*:
the master records the reason per worker and trial and decodes from the other results, exactly
as if the worker were a straggler that never replied. The MPI worker and the simulator classify a
coded row with the same function, ``evaluate_row``, so both record the same codes and texts.

Codes (dataset ``error``, (trials, N) int8): 0 none; 1 f raised; 2 NaN or inf in f's output;
3 output of the wrong shape; 4 the worker's rank died (MPI only, a permanent straggler from then
on); 5 the worker's rank did not answer (MPI only: a stopped or stuck process, no reply for
longer than its tasks could take; it gets no task until it answers again). Only erasures the
master saw before it stopped waiting are recorded, like ``used``.
"""

import numpy as np

NONE, RAISED, NONFINITE, SHAPE, LOST, HUNG = 0, 1, 2, 3, 4, 5
CODES = {NONE: "none", RAISED: "f raised", NONFINITE: "NaN or inf in f's output",
         SHAPE: "output of the wrong shape", LOST: "rank died", HUNG: "rank did not answer"}
TEXT_MAX = 200  # characters of an exception's message kept per erasure
# what f raising is f's failure (an erasure, or a trial failed on its inputs), not the run's:
# any exception, and SystemExit - an f that calls sys.exit() would otherwise end a simulation
# quietly and kill a worker's rank over MPI
F_FAILURES = (Exception, SystemExit)


def call(target, X):
    """f(X) as the worker computes it: the target's unchecked output when it has one (a python
    target's own checks would turn NaN into an exception), as a float64 array."""
    raw = getattr(target, "raw", None)
    return np.asarray(raw(X) if raw is not None else target(X), dtype=np.float64)


def check(Y, n, m):
    """(code, text) for an output ``Y`` of f on ``n`` rows where (n, m) is expected."""
    if Y.shape != (n, m):
        return SHAPE, f"returned shape {Y.shape}, expected {(n, m)}"
    if not np.all(np.isfinite(Y)):
        return NONFINITE, "returned NaN or inf"
    return NONE, ""


def raised(e):
    """(RAISED, one line naming the exception) for an exception raised by f."""
    text = " ".join(f"{type(e).__name__}: {e}".split())
    return RAISED, text if len(text) <= TEXT_MAX else text[:TEXT_MAX - 3] + "..."


def evaluate_row(target, x, m):
    """(y, code, text) of f on one coded input ``x`` (d values): y has m values when code is
    NONE, else it is None and (code, text) say why the result is erased."""
    try:
        Y = call(target, x.reshape(1, -1))
    except F_FAILURES as e:  # whatever the user's f raises is an erasure
        return (None, *raised(e))
    code, text = check(Y, 1, m)
    return (Y[0] if code == NONE else None), code, text


def evaluate_rows(target, X, m, batch=True):
    """(Y (n, m) with NaN rows where erased, codes (n,) int8, texts (n,) list): f on every row
    of ``X`` as n separate workers would compute it — one batch call when it is clean, else (or
    with ``batch=False``) one call per row to find which rows fail."""
    n = X.shape[0]
    codes = np.zeros(n, np.int8)
    texts = [""] * n
    if batch:
        try:
            Y = call(target, X)
            if check(Y, n, m)[0] == NONE:
                return Y, codes, texts
        except F_FAILURES:  # find the rows that fail, one at a time
            pass
    Y = np.full((n, m), np.nan)
    for i in range(n):
        y, codes[i], texts[i] = evaluate_row(target, X[i], m)
        if y is not None:
            Y[i] = y
    return Y, codes, texts


def summary(codes, texts):
    """One line for a trial's erasures, e.g. "workers 2, 5: ValueError: boom; worker 7: returned
    NaN or inf" (workers numbered from 0, worker n = MPI rank n + 1); "" when there are none."""
    groups = {}
    for w in np.flatnonzero(codes):
        groups.setdefault(texts[w] or CODES[int(codes[w])], []).append(int(w))
    parts = []
    for text, workers in groups.items():
        label = "worker" if len(workers) == 1 else "workers"
        parts.append(f"{label} {', '.join(map(str, workers))}: {text}")
    return "; ".join(parts)
