"""A multilayer perceptron stored as plain arrays in an .npz, evaluated with numpy.

File format (what ``data/train_digits_mlp.py`` writes): arrays ``W0, b0, W1, b1, ..., WL, bL``
with ``Wi`` of shape (inputs, outputs) (scikit-learn's ``coefs_`` layout, so x @ W + b) and
an optional string array ``activation`` (relu | tanh | logistic | identity, default relu)
applied after every layer but the last.  The output is the last layer's logits: argmax is the
class, so the target is a classifier.
"""

import zipfile
from importlib import resources

import numpy as np

from ..errors import JobError
from ..job.paths import located
from .base import Target

KEY = "target.model"
SHIPPED = "_data/digits_mlp.npz"


def _relu(h):
    return np.maximum(h, 0.0, out=h)


def _logistic(h):
    h *= -1.0
    np.exp(h, out=h)
    h += 1.0
    return np.reciprocal(h, out=h)


ACTIVATIONS = {"relu": _relu, "tanh": lambda h: np.tanh(h, out=h),
               "logistic": _logistic, "identity": lambda h: h}


class MLPTarget(Target):
    """Forward pass of an MLP; ``weights`` and ``biases`` are lists of float64 arrays."""

    name = "mlp"
    classifier = True
    key = KEY

    def __init__(self, weights, biases, activation="relu", source="<arrays>"):
        if activation not in ACTIVATIONS:
            raise JobError(KEY, f"{source}: activation {activation!r} is not supported; "
                                f"use one of {', '.join(sorted(ACTIVATIONS))}")
        prev = None
        for i, (W, b) in enumerate(zip(weights, biases)):
            if W.ndim != 2 or b.shape != (W.shape[1],) or (prev is not None and W.shape[0] != prev):
                raise JobError(KEY, f"{source}: layer {i} has W{i} {W.shape} and b{i} {b.shape}; "
                                    "expected W of shape (inputs, outputs) chaining from the "
                                    "previous layer and b of shape (outputs,)")
            prev = W.shape[1]
        self.weights = [np.ascontiguousarray(W, dtype=np.float64) for W in weights]
        self.biases = [np.asarray(b, dtype=np.float64) for b in biases]
        self.activation = activation
        self._act = ACTIVATIONS[activation]
        self.input_dim = self.weights[0].shape[0]
        self.output_dim = self.weights[-1].shape[1]
        self.source = source

    def __call__(self, X):
        h = np.asarray(X, dtype=np.float64)
        last = len(self.weights) - 1
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ W          # a fresh array, so the in-place bias and activation are safe
            h += b
            if i < last:
                h = self._act(h)
        return h

    @classmethod
    def load(cls, model=None, base_dir="."):
        """Read an .npz model (``model`` relative to ``base_dir``); None = shipped digits MLP."""
        if model is None:
            with resources.files("gcc_mpi").joinpath(SHIPPED).open("rb") as fh:
                return cls._from_npz(fh, f"shipped {SHIPPED}")
        path = located(model, base_dir)
        if not path.is_file():
            raise JobError(KEY, f"file not found: {path}")
        return cls._from_npz(path, str(path))

    @classmethod
    def _from_npz(cls, file, source):
        try:
            z = np.load(file, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise JobError(KEY, f"{source}: expected an .npz archive of W0, b0, W1, b1, ...")
            with z:
                arrays = {name: z[name] for name in z.files}
        except JobError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise JobError(KEY, f"cannot read {source} as an .npz archive (pickled data is never "
                                f"loaded): {e}") from None
        n = 0
        while f"W{n}" in arrays and f"b{n}" in arrays:
            n += 1
        if n == 0:
            raise JobError(KEY, f"{source}: no layers found; expected arrays W0, b0, W1, b1, ... "
                                f"but the archive holds {', '.join(sorted(arrays)) or 'nothing'}")
        weights = [arrays[f"W{i}"] for i in range(n)]
        biases = [arrays[f"b{i}"] for i in range(n)]
        for name, a in zip([f"W{i}" for i in range(n)] + [f"b{i}" for i in range(n)],
                           weights + biases):
            if a.dtype.kind not in "fiu" or not np.all(np.isfinite(a)):
                raise JobError(KEY, f"{source}: {name} must hold finite real numbers")
        activation = str(arrays.get("activation", "relu"))
        return cls(weights, biases, activation, source)
