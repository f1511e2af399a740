"""Where the inputs x_1..x_K come from: the shipped digits, synthetic manifolds, user files.

``load_dataset(source, ...)`` validates its arguments and returns a :class:`Dataset`; each
trial then calls ``dataset.sample(rng, K)`` for a (K, dim) float64 batch of distinct rows.
Sources (the job-file key ``data.source``):

- ``digits``: the UCI digits shipped in ``gcc_mpi/_data/digits.npz``, pixels / 16 in [0, 1],
  dim 64, with labels.
- ``sphere``, ``swissroll``, ``torus``: a 2-D manifold in R^3, scaled to about unit RMS norm,
  embedded in R^dim by an orthonormal Q (dim x 3) fixed by ``seed`` for the whole job, plus
  optional isotropic Gaussian ``noise`` (std per coordinate).
- ``gaussian``: i.i.d. N(0, 1/dim) coordinates (unit expected norm, no manifold structure).
- ``file``: a 2-D numeric array from .npy, .npz or .h5/.hdf5 (``key`` names the array when the
  archive holds several).  Arrays with ndim > 2 (e.g. images (n, 1, 28, 28)) are flattened to
  (n, prod(rest)) rows, which is what the codes work on; the per-row shape is kept as
  ``shape`` so that a target taking images (onnx) can check it gets the same layout.  Pickled
  or object arrays are never loaded.  Exact duplicate rows are dropped (keeping the first, with
  its label) so a batch never holds the same input twice; ``duplicates`` says how many were
  (the check before any work warns of them).

No MPI and no randomness at import time; h5py is imported only for HDF5 files.
"""

import zipfile
from importlib import resources

import numpy as np

from ..errors import JobError
from .paths import located

SOURCES = ("digits", "sphere", "swissroll", "torus", "gaussian", "file")
MANIFOLDS = ("sphere", "swissroll", "torus")

# SeedSequence stream for the embedding Q; targets use streams 2 and 3.
EMBEDDING_STREAM = 1

# Swiss roll t ~ U[1.5 pi, 4.5 pi], height ~ U[0, 21]: E|p|^2 = E[t^2] + E[h^2].
_T0, _T1, _H = 1.5 * np.pi, 4.5 * np.pi, 21.0
_SWISS_SCALE = 1 / np.sqrt((_T1**3 - _T0**3) / (3 * (_T1 - _T0)) + _H**2 / 3)
# Torus R = 2, r = 1 with uniform angles: E|p|^2 = R^2 + r^2 = 5.
_TORUS_R, _TORUS_r = 2.0, 1.0
_TORUS_SCALE = 1 / np.sqrt(_TORUS_R**2 + _TORUS_r**2)


class Dataset:
    """A source of input rows in R^dim.

    Attributes: ``name``, ``dim``, ``n_rows`` (pool size, or None for an endless synthetic
    source), ``labels`` (ndarray aligned with ``X`` or None), ``shape`` (one row's shape as
    stored, e.g. (1, 28, 28) for images; (dim,) when the data were flat) and, for finite
    pools, ``X``.
    """

    name = "dataset"
    dim = None
    shape = None
    n_rows = None
    duplicates = 0  # exact duplicate rows dropped from a data file
    labels = None
    X = None

    def sample(self, rng, k):
        """``k`` distinct rows, shape (k, dim), float64, drawn with ``rng`` (a Generator)."""
        raise NotImplementedError

    def pool(self, rng, n):
        """``n`` rows for a reference pool (e.g. the manifold-aware code's graph): a sample."""
        return self.sample(rng, n)

    def __repr__(self):
        rows = "endless" if self.n_rows is None else f"{self.n_rows} rows"
        return f"<{type(self).__name__} {self.name!r}: dim {self.dim}, {rows}>"


def _check_k(k, limit=None):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise JobError("data.batch", f"must be an integer >= 1, got {k!r}")
    if limit is not None and k > limit:
        raise JobError("data.batch", f"asks for {k} distinct rows but the data has only {limit}")
    return int(k)


class PoolDataset(Dataset):
    """A finite pool of rows; batches are drawn without replacement."""

    def __init__(self, name, X, labels=None, path=None, shape=None, duplicates=0):
        self.name, self.X, self.labels, self.path = name, X, labels, path
        self.n_rows, self.dim = X.shape
        self.duplicates = duplicates
        self.shape = tuple(shape) if shape is not None else (self.dim,)

    def sample(self, rng, k):
        k = _check_k(k, self.n_rows)
        return self.X[rng.choice(self.n_rows, size=k, replace=False)]


class SyntheticDataset(Dataset):
    """An endless source: ``draw(rng, k)`` -> (k, dim) rows, plus isotropic noise."""

    def __init__(self, name, dim, draw, noise=0.0):
        self.name, self.dim, self._draw, self.noise = name, dim, draw, noise
        self.shape = (dim,)

    def sample(self, rng, k):
        X = self._draw(rng, _check_k(k))
        if self.noise:
            X += self.noise * rng.standard_normal(X.shape)
        return X


class ManifoldDataset(SyntheticDataset):
    """A 2-D manifold in R^3 embedded in R^dim as Q @ p; ``Q`` (dim x 3) has orthonormal columns."""

    def __init__(self, name, dim, Q, noise=0.0):
        self.Q = Q
        param = {"sphere": _sphere, "swissroll": _swissroll, "torus": _torus}[name]
        super().__init__(name, dim, lambda rng, k: param(rng, k) @ Q.T, noise)


def _sphere(rng, k):
    p = rng.standard_normal((k, 3))
    return p / np.linalg.norm(p, axis=1, keepdims=True)


def _swissroll(rng, k):
    # scikit-learn's make_swiss_roll parametrisation, then scaled to unit RMS norm.
    t = rng.uniform(_T0, _T1, k)
    h = rng.uniform(0.0, _H, k)
    return _SWISS_SCALE * np.column_stack([t * np.cos(t), h, t * np.sin(t)])


def _torus(rng, k):
    # Uniform in the two angles (not in surface area): denser on the inner side, as is usual.
    u, v = rng.uniform(0.0, 2 * np.pi, (2, k))
    ring = _TORUS_R + _TORUS_r * np.cos(v)
    p = np.column_stack([ring * np.cos(u), ring * np.sin(u), _TORUS_r * np.sin(v)])
    return _TORUS_SCALE * p


def embedding(seed, dim):
    """The job's fixed orthonormal map R^3 -> R^dim: Q (dim x 3) from stream 1 of ``seed``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JobError("job.seed", f"must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), EMBEDDING_STREAM]))
    Q, R = np.linalg.qr(rng.standard_normal((dim, 3)))
    return Q * np.sign(np.diag(R))  # sign fix: Q is then Haar-distributed, not QR-biased


def load_dataset(source, *, dim=50, path=None, key=None, labels_key=None, noise=0.0, seed=0,
                 base_dir="."):
    """Build the dataset ``source`` (see the module docstring); every error names its job key.

    ``dim`` applies to synthetic sources; ``path``/``key``/``labels_key`` to ``file`` (relative
    paths resolve against ``base_dir``, the job file's folder); ``noise`` is the std of the
    Gaussian noise added to synthetic samples; ``seed`` fixes the embedding for the whole job.
    """
    if source == "digits":
        with resources.files("gcc_mpi").joinpath("_data/digits.npz").open("rb") as fh:
            with np.load(fh, allow_pickle=False) as z:
                X, y = z["X"].astype(np.float64) / 16.0, z["y"].astype(np.int64)
        return PoolDataset("digits", X, y, shape=(8, 8))
    if source == "file":
        return _load_file(path, key, labels_key, base_dir)
    if source not in SOURCES:
        raise JobError("data.source", f"unknown source {source!r}; choose one of "
                                      f"{', '.join(SOURCES)}")

    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.floating, np.integer)) \
            or not np.isfinite(noise) or noise < 0:
        raise JobError("data.noise", f"must be a number >= 0 (noise std), got {noise!r}")
    lowest = 3 if source in MANIFOLDS else 1
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < lowest:
        raise JobError("data.dim", f"must be an integer >= {lowest} for source {source!r}, "
                                   f"got {dim!r}")
    dim, noise = int(dim), float(noise)
    if source == "gaussian":
        return SyntheticDataset("gaussian", dim,
                                lambda rng, k: rng.standard_normal((k, dim)) / np.sqrt(dim), noise)
    return ManifoldDataset(source, dim, embedding(seed, dim), noise)


# ---------------------------------------------------------------- user files

def _load_file(path, key, labels_key, base_dir):
    if path is None:
        raise JobError("data.path", 'required when data.source = "file" (.npy, .npz, .h5 or .hdf5)')
    file = located(path, base_dir)
    if not file.is_file():
        raise JobError("data.path", f"file not found: {file}")
    suffix = file.suffix.lower()
    if suffix in (".h5", ".hdf5"):
        X, labels = _read_h5(file, key, labels_key)
    elif suffix in (".npy", ".npz"):
        X, labels = _read_numpy(file, key, labels_key)
    else:
        raise JobError("data.path", f"unsupported file type {suffix or '(none)'!r} for {file}; "
                                    "use .npy, .npz, .h5 or .hdf5")
    shape = np.shape(X)[1:]
    X = _check_rows(X, file, "data.key" if key is not None else "data.path")
    if labels is not None:
        labels = np.asarray(labels).reshape(-1)
        if len(labels) != len(X):
            raise JobError("data.labels_key", f"{labels_key!r} in {file} has {len(labels)} "
                                              f"labels but the data has {len(X)} rows")
    _, first = np.unique(X, axis=0, return_index=True)
    duplicates = len(X) - len(first)
    if duplicates:  # drop exact duplicates so sampled batches have distinct rows
        first.sort()
        X = X[first]
        labels = labels[first] if labels is not None else None
    return PoolDataset("file", X, labels, path=file, shape=shape, duplicates=duplicates)


def _choose(names, key, file, what="arrays"):
    """The archive member named by ``key``, defaulting to the only one; errors list the choices."""
    listing = ", ".join(repr(n) for n in names) or "none"
    if key is None:
        if len(names) == 1:
            return names[0]
        raise JobError("data.key", f"required: {file} holds {len(names)} {what} ({listing})")
    if key not in names:
        raise JobError("data.key", f"{key!r} is not in {file}; available {what}: {listing}")
    return key


def _read_numpy(file, key, labels_key):
    try:
        obj = np.load(file, allow_pickle=False)
        if not isinstance(obj, np.lib.npyio.NpzFile):  # decided by content, not by suffix
            if key is not None or labels_key is not None:
                raise JobError("data.key" if key is not None else "data.labels_key",
                               f"{file} is a single .npy array; remove this key or use an .npz")
            return obj, None
        with obj:
            X = obj[_choose(obj.files, key, file)]
            labels = None
            if labels_key is not None:
                if labels_key not in obj.files:
                    raise JobError("data.labels_key", f"{labels_key!r} is not in {file}; available "
                                   f"arrays: {', '.join(repr(n) for n in obj.files)}")
                labels = obj[labels_key]
            return X, labels
    except JobError:
        raise
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise JobError("data.path", f"{file} holds pickled or object data, which is never "
                                        "loaded (allow_pickle=False); save a numeric array"
                           ) from None
        raise JobError("data.path", f"cannot read {file}: {e}") from None
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise JobError("data.path", f"cannot read {file}: {type(e).__name__}: {e}") from None


def _read_h5(file, key, labels_key):
    import h5py

    try:
        with h5py.File(file, "r") as h5:
            names = []
            h5.visititems(lambda name, obj: names.append(name)
                          if isinstance(obj, h5py.Dataset) else None)
            X = h5[_choose(names, key, file, "datasets")][()]
            labels = None
            if labels_key is not None:
                if labels_key not in names:
                    raise JobError("data.labels_key", f"{labels_key!r} is not a dataset in {file}; "
                                   f"available: {', '.join(repr(n) for n in names)}")
                labels = h5[labels_key][()]
            return X, labels
    except JobError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as e:
        raise JobError("data.path", f"cannot read {file} as HDF5: {e}") from None


def _check_rows(X, file, where):
    """``X`` as finite float64 rows (n, d): ndim > 2 flattened, everything else refused."""
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise JobError(where, f"the array in {file} has dtype {X.dtype}; expected real numbers")
    if X.ndim < 2:
        raise JobError(where, f"the array in {file} has shape {X.shape}; expected 2-D rows "
                               "(n, d): save one input per row, e.g. (n, 1) for scalars")
    if X.ndim > 2:
        X = X.reshape(len(X), -1)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise JobError(where, f"the array in {file} has shape {X.shape}; it needs at least "
                               "one row and one column")
    X = X.astype(np.float64)
    bad = ~np.isfinite(X)
    if bad.any():
        row = int(np.argwhere(bad)[0, 0])
        raise JobError(where, f"{file} holds {int(bad.sum())} NaN or inf values (first in "
                              f"row {row}); clean the data first")
    return X
