"""Test-only target f for tests/test_probe.py: on MPI rank r >= 1 it sleeps STEP * (r + 1)
seconds (rank 0 — the master's reference, or the simulator — does not sleep), so a probe of it
has known per-worker times: worker w (rank w + 1) takes about STEP * (w + 2), large against the
few milliseconds that a loaded machine adds to each wake-up."""

import os
import time

STEP = 0.05  # seconds per rank


def rank():
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def f(X):
    r = rank()
    if r:
        time.sleep(STEP * (r + 1))
    return X[:, :2] * 1.0
