"""Small job files for the tests: a degree-2 polynomial of Gaussian inputs (d = 4, K = 3) on
N = 6 workers, which every scheme decodes in milliseconds."""

import json

SMALL = """[job]
name = "{name}"
trials = {trials}
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 2
[code]
workers = 6
schemes = {schemes}
"""


def small_job(name, schemes, trials, more=""):
    """The text of a small job named ``name`` comparing ``schemes`` (a list) for ``trials``
    trials; ``more``: further tables ([stragglers], [sweep], ...)."""
    return SMALL.format(name=name, trials=trials, schemes=json.dumps(schemes)) + more


# two faulty nodes (tests/test_suspects.py, test_robust.py): the same two workers of 23 (24
# ranks over MPI) lie in every trial. gcc's lambda_dec is fixed: its automatic one falls to
# ~2e-12 here (it nearly interpolates a degree-2 polynomial), where the last-bit difference
# between f row by row (a worker's) and on the batch (simulate's) moves gcc's nmse by up to
# 1.3e-3 relative — in one process as over MPI, with liars or without; at 1e-6 by 3e-9, within
# test_runtime's NMSE_RTOL
FAULTY = small_job("faulty", ["bacc", "gcc"], 30, """
[code.gcc]
lambda_dec = 1e-6
[adversaries]
count = 2
placement = "fixed"
kind = "bit-flip"
bit = 62
""").replace("workers = 6", "workers = 23")
