"""The target interface shared by every kind, and small validation helpers."""

import numpy as np

from ..errors import JobError


class Target:
    """A function f: R^d -> R^m evaluated row-wise on an (n, d) block.

    Attributes: ``name``, ``input_dim`` (d, or None when any d is accepted), ``output_dim`` (m),
    ``classifier`` (True when argmax of the output is a class, so relacc is meaningful) and
    ``degree`` (total degree for polynomial targets, else None).  ``key`` is the job-file key
    blamed when the function misbehaves.
    """

    name = "target"
    input_dim = None
    output_dim = None
    classifier = False
    degree = None
    key = "target.kind"
    call_seconds = None  # seconds one call on one input took at the job's check

    def __call__(self, X):
        raise NotImplementedError

    def learn_output_dim(self, m):
        """The output dimension m, when the target does not declare it (a python target learns
        it from a call)."""
        if self.output_dim is None:
            self.output_dim = m

    def __repr__(self):
        return (f"<{type(self).__name__} {self.name!r}: R^{self.input_dim or 'd'} -> "
                f"R^{self.output_dim}, degree={self.degree}, classifier={self.classifier}>")


def positive_int(value, key, what):
    """``value`` as an int >= 1, or a JobError naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise JobError(key, f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def seed_sequence(seed, stream):
    """A SeedSequence for one fixed-per-job object; ``stream`` keeps objects independent."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JobError("job.seed", f"must be an integer >= 0, got {seed!r}")
    return np.random.SeedSequence([int(seed), stream])
