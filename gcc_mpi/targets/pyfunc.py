"""A user's Python function as the target: ``"package.module:function"`` or ``"file.py:function"``.

The function maps an (n, d) float64 array to an (n, m) array, vectorised over rows.  It may
declare ``fn.classifier = True`` (relacc is then reported) and ``fn.degree = p`` (a polynomial
of total degree p, which LCC needs).  m is learnt by :func:`gcc_mpi.targets.probe`.  A file is
imported as a fresh module; its folder is not put on ``sys.path``.
"""

import importlib
import importlib.util
import itertools
from pathlib import Path

import numpy as np

from ..errors import JobError
from .base import Target

KEY = "target.function"
_counter = itertools.count()


def load_function(spec, base_dir="."):
    """Resolve ``spec`` to a callable, or raise JobError("target.function", ...) saying why not."""
    if not isinstance(spec, str) or ":" not in spec:
        raise JobError(KEY, f"expected 'package.module:function' or 'path/to/file.py:function', "
                            f"got {spec!r}")
    where, _, attr = spec.rpartition(":")   # rpartition: Windows drive letters keep their colon
    if not where or not attr:
        raise JobError(KEY, f"expected 'package.module:function' or 'path/to/file.py:function', "
                            f"got {spec!r}")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(base_dir, Path(where).expanduser())
        if not path.is_file():
            raise JobError(KEY, f"file not found: {path}")
        name = f"_gcc_mpi_target_{next(_counter)}_{path.stem}"
        try:
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        except Exception as e:  # the user's code can raise anything while importing
            raise JobError(KEY, f"importing {path} failed: {type(e).__name__}: {e}") from None
    else:
        try:
            module = importlib.import_module(where)
        except Exception as e:
            raise JobError(KEY, f"importing module {where!r} failed: {type(e).__name__}: {e}"
                           ) from None
    obj = module
    for part in attr.split("."):     # "mod:Class.method" is allowed
        if not hasattr(obj, part):
            raise JobError(KEY, f"{where!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
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
