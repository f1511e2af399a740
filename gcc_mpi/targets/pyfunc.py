"""A user's Python function as the target: ``"package.module:function"`` or ``"file.py:function"``.

The function maps an (n, d) float64 array to an (n, m) array, vectorised over rows.  It may
declare ``fn.classifier = True`` (relacc is then reported) and ``fn.degree = p`` (a polynomial
of total degree p, which LCC needs).  m is learnt by :func:`gcc_mpi.targets.probe`.  How the
file or module is imported: gcc_mpi.job.user_code.
"""

import numpy as np

from ..job import user_code
from ..errors import JobError
from .base import Target

KEY = "target.function"


def load_function(spec, base_dir="."):
    """Resolve ``spec`` to a callable, or raise JobError("target.function", ...) saying why not."""
    obj = user_code.load(spec, base_dir, KEY, "function")
    if not callable(obj):
        raise JobError(KEY, f"{spec!r} is a {type(obj).__name__}, not a callable")
    return obj


class PythonTarget(Target):
    """Wraps a user function; every call checks the output shape and finiteness."""

    name = "python"
    key = KEY

    def __init__(self, function, base_dir="."):
        self.spec = function
        self.fn = load_function(function, base_dir)
        self.classifier = bool(getattr(self.fn, "classifier", False))
        degree = getattr(self.fn, "degree", None)
        self.degree = int(degree) if degree is not None else None

    def raw(self, X):
        """f(X) without the checks below (workers classify bad outputs as erasures)."""
        return self.fn(np.asarray(X, dtype=np.float64))

    def __call__(self, X):
        X = np.asarray(X, dtype=np.float64)
        Y = self.raw(X)   # the user's own exceptions propagate with their traceback
        try:
            Y = np.asarray(Y, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise JobError(KEY, f"{self.spec} did not return numbers: {e}") from None
        m = "m" if self.output_dim is None else self.output_dim
        if Y.ndim != 2 or Y.shape[0] != X.shape[0] or (
                self.output_dim is not None and Y.shape[1] != self.output_dim):
            raise JobError(KEY, f"{self.spec} returned shape {Y.shape} for an input of shape "
                                f"{X.shape}; expected ({X.shape[0]}, {m}): one output row per "
                                "input row")
        if not np.all(np.isfinite(Y)):
            raise JobError(KEY, f"{self.spec} returned NaN or inf")
        return Y
