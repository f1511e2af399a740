"""Data sources: shipped digits, synthetic manifolds, user files and their error messages."""

import h5py
import numpy as np
import pytest

from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.errors import JobError


def rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- digits

def test_digits_pool():
    ds = load_dataset("digits")
    assert (ds.name, ds.dim, ds.n_rows, ds.shape) == ("digits", 64, 1797, (8, 8))
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0          # pixels / 16
    assert ds.labels.shape == (1797,) and set(ds.labels) == set(range(10))
    X = ds.sample(rng(), 40)
    assert X.shape == (40, 64) and X.dtype == np.float64
    assert len(np.unique(X, axis=0)) == 40                   # without replacement
    np.testing.assert_array_equal(X, ds.sample(rng(), 40))   # seeded
    assert not np.array_equal(X, ds.sample(rng(1), 40))
    assert len(np.unique(ds.sample(rng(), 1797), axis=0)) == 1797


@pytest.mark.parametrize("k", [1798, 0, 2.5])
def test_batch_out_of_range(k):
    with pytest.raises(JobError, match="data.batch"):
        load_dataset("digits").sample(rng(), k)


# ---------------------------------------------------------------- synthetic

@pytest.mark.parametrize("source", ["sphere", "swissroll", "torus"])
def test_manifold_lies_in_span_of_fixed_embedding(source):
    ds = load_dataset(source, dim=20, seed=3)
    Q = ds.Q
    assert Q.shape == (20, 3) and ds.n_rows is None and ds.labels is None
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)
    np.testing.assert_array_equal(Q, load_dataset(source, dim=20, seed=3).Q)  # fixed per job
    assert not np.allclose(Q, load_dataset(source, dim=20, seed=4).Q)
    X = ds.sample(rng(), 2000)
    assert X.shape == (2000, 20) and len(np.unique(X, axis=0)) == 2000
    P = X @ Q                                                # back to R^3
    np.testing.assert_allclose(P @ Q.T, X, atol=1e-12)       # in the span of Q
    assert 0.8 < np.sqrt(np.mean(np.sum(X**2, axis=1))) < 1.2   # about unit RMS norm
    np.testing.assert_array_equal(X, ds.sample(rng(), 2000))


def test_sphere_and_torus_equations():
    sphere = load_dataset("sphere", dim=5)
    np.testing.assert_allclose(np.linalg.norm(sphere.sample(rng(), 500) @ sphere.Q, axis=1), 1.0)
    torus = load_dataset("torus", dim=5)
    x, y, z = (np.sqrt(5) * torus.sample(rng(), 500) @ torus.Q).T   # undo the 1/sqrt(5) scale
    np.testing.assert_allclose((np.hypot(x, y) - 2.0) ** 2 + z**2, 1.0)


def test_noise_is_isotropic_with_given_std():
    ds = load_dataset("sphere", dim=200, noise=0.1)
    X = ds.sample(rng(), 500)
    off_manifold = X - X @ ds.Q @ ds.Q.T
    assert abs(off_manifold.std() - 0.1) < 0.005


def test_gaussian_has_unit_expected_norm():
    X = load_dataset("gaussian", dim=30).sample(rng(), 5000)
    assert X.shape == (5000, 30)
    assert abs(np.mean(np.sum(X**2, axis=1)) - 1.0) < 0.02


@pytest.mark.parametrize("kwargs, match", [
    ({"source": "sphere", "dim": 2}, "data.dim: must be an integer >= 3"),
    ({"source": "torus", "dim": 3.0}, "data.dim"),
    ({"source": "gaussian", "dim": 0}, "data.dim: must be an integer >= 1"),
    ({"source": "sphere", "noise": -1.0}, "data.noise"),
    ({"source": "mnist"}, "data.source: unknown source 'mnist'; choose one of digits"),
    ({"source": "file"}, "data.path: required"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(JobError, match=match):
        load_dataset(**kwargs)


# ---------------------------------------------------------------- user files

A = np.arange(24, dtype=np.float32).reshape(6, 4)


def test_npy_relative_to_base_dir(tmp_path):
    np.save(tmp_path / "x.npy", A)
    ds = load_dataset("file", path="x.npy", base_dir=tmp_path)
    assert (ds.n_rows, ds.dim, ds.labels) == (6, 4, None)
    np.testing.assert_array_equal(ds.X, A)
    assert ds.X.dtype == np.float64
    assert ds.sample(rng(), 6).shape == (6, 4)


def test_npz_key_and_labels(tmp_path):
    np.savez(tmp_path / "d.npz", X=A, y=np.arange(6), other=np.zeros(3))
    ds = load_dataset("file", path=str(tmp_path / "d.npz"), key="X", labels_key="y")
    np.testing.assert_array_equal(ds.X, A)
    np.testing.assert_array_equal(ds.labels, np.arange(6))
    np.savez(tmp_path / "one.npz", data=A)               # a single array needs no key
    np.testing.assert_array_equal(load_dataset("file", path=tmp_path / "one.npz").X, A)


def test_h5_key(tmp_path):
    with h5py.File(tmp_path / "d.h5", "w") as h5:
        h5["group/X"] = A
        h5["labels"] = np.arange(6)
    ds = load_dataset("file", path="d.h5", key="group/X", labels_key="labels", base_dir=tmp_path)
    np.testing.assert_array_equal(ds.X, A)
    np.testing.assert_array_equal(ds.labels, np.arange(6))
    with pytest.raises(JobError, match=r"data.key: 'X' is not in .*available datasets: 'group/X'"):
        load_dataset("file", path="d.h5", key="X", base_dir=tmp_path)
    with pytest.raises(JobError, match="data.key: required: .* holds 2 datasets"):
        load_dataset("file", path="d.h5", base_dir=tmp_path)


def test_images_are_flattened_and_duplicates_dropped(tmp_path):
    imgs = np.arange(5 * 3 * 2).reshape(5, 3, 2)
    imgs[3] = imgs[1]                                    # a duplicate image
    np.savez(tmp_path / "img.npz", X=imgs, y=np.arange(5))
    ds = load_dataset("file", path=tmp_path / "img.npz", key="X", labels_key="y")
    assert (ds.n_rows, ds.dim, ds.shape) == (4, 6, (3, 2))   # one row's stored shape is kept
    assert ds.duplicates == 1
    np.testing.assert_array_equal(ds.labels, [0, 1, 2, 4])   # first occurrence kept, in order
    np.save(tmp_path / "flat.npy", imgs.reshape(5, 6))
    assert load_dataset("file", path=tmp_path / "flat.npy").shape == (6,)


def test_file_errors(tmp_path):
    def fails(match, **kwargs):
        with pytest.raises(JobError, match=match):
            load_dataset("file", base_dir=tmp_path, **kwargs)

    fails("data.path: file not found: .*missing.npy", path="missing.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    fails("data.path: .* pickled or object data, which is never loaded", path="obj.npy")
    np.savez(tmp_path / "objz.npz", X=np.array([[1, "a"]], dtype=object))
    fails("data.path: .* pickled or object data", path="objz.npz", key="X")
    bad = A.copy()
    bad[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", bad)
    fails(r"data.path: .* 1 NaN or inf values \(first in row 2\)", path="nan.npy")
    np.savez(tmp_path / "d.npz", X=A, y=np.arange(5))
    fails(r"data.key: 'Z' is not in .*; available arrays: 'X', 'y'", path="d.npz", key="Z")
    fails(r"data.key: required: .* holds 2 arrays \('X', 'y'\)", path="d.npz")
    fails("data.labels_key: 'lab' is not in", path="d.npz", key="X", labels_key="lab")
    fails("data.labels_key: 'y' in .* has 5 labels but the data has 6 rows",
          path="d.npz", key="X", labels_key="y")
    np.save(tmp_path / "v.npy", np.arange(5.0))
    fails(r"data.path: .* shape \(5,\); expected 2-D rows", path="v.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    fails("needs at least one row", path="empty.npy")
    np.save(tmp_path / "s.npy", np.array([["a", "b"]]))
    fails("dtype <U1; expected real numbers", path="s.npy")
    fails("data.key: .* is a single .npy array", path="v.npy", key="X")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    fails("data.path: cannot read", path="junk.npz")
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    fails("data.path: cannot read .* as HDF5", path="junk.h5")
    (tmp_path / "x.csv").write_text("1,2\n")
    fails("data.path: unsupported file type '.csv'", path="x.csv")


DUPLICATED = """[job]
name = "dup"
trials = 2
[data]
source = "file"
path = "x.npy"
batch = {batch}
[target]
kind = "linear"
[code]
workers = 6
schemes = ["bacc"]
"""


@pytest.mark.parametrize("batch", [3, 4])
def test_duplicate_rows_are_one_warning_and_the_shortfall_says_unique(tmp_path, capsys, batch):
    """5 rows, 2 of them repeats of others: one warning line with the count; a batch larger
    than the 3 unique rows is refused in one line that says they are unique rows."""
    from gcc_mpi.cli.main import main

    x = np.arange(15.0).reshape(5, 3)
    x[3] = x[0]
    x[4] = x[1]
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "dup.toml").write_text(DUPLICATED.format(batch=batch))
    code = main(["validate", str(tmp_path / "dup.toml")])
    err = capsys.readouterr().err.splitlines()
    if batch == 3:
        assert code == 0
        assert [e for e in err if "warning" in e] == [
            "gcc_mpi: warning: data.path: 2 duplicate rows of x.npy dropped (a batch never holds "
            "one input twice): 3 unique rows left"]
    else:
        assert code == 2
        assert err[-1].endswith("data.batch: 4 inputs per batch but the file data have only 3 "
                                "unique rows (2 duplicate rows dropped)"), err
