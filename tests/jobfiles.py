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
