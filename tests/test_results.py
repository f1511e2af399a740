"""Round trip of the HDF5 writer and reader (gcc_mpi.files.results)."""


import h5py
import numpy as np
import pytest

from gcc_mpi import __version__
from gcc_mpi.errors import JobError
from gcc_mpi.files.format import FORMAT
from gcc_mpi.files.reader import ResultsFile, read_results
from gcc_mpi.files.writer import ResultWriter

CONFIG = '[job]\nname = "t"\ntrials = 4\n'
FLOATS = ("mse", "nmse", "relacc", "t_encode", "t_scatter", "t_wait", "t_decode", "latency",
          "lambda_enc", "lambda_dec")


def make_rows(start, n, workers=3, k=2):
    rng = np.random.default_rng(start)
    rows = {"trial": np.arange(start, start + n), "failed": np.zeros(n, bool),
            "reason": [""] * n, "delay": rng.random((n, workers)),
            "arrival": rng.random((n, workers)), "used": np.ones((n, workers), bool),
            "alpha": rng.random((n, k))}
    rows.update({name: rng.random(n) for name in FLOATS})
    return rows


def writer(path, **kw):
    return ResultWriter(path, config_toml=CONFIG, command="gcc_mpi simulate t.toml",
                        mpi="simulate", **kw)


def test_round_trip(tmp_path):
    path = tmp_path / "sub" / "out.h5"  # parent folder is created
    with writer(path) as w:
        w.add_point(0, {"stragglers.count": 5, "stragglers.model": "fixed"})
        w.add_point(1, {"stragglers.count": 10, "stragglers.model": "fixed"})
        w.add_point(0, {"stragglers.count": 5, "stragglers.model": "fixed"})  # idempotent
        a = make_rows(0, 3)
        a["failed"][1], a["reason"][1] = True, "worker 2: ZeroDivisionError"
        w.append(0, "gcc", a)
        w.append(0, "gcc", make_rows(3, 2))
        w.append(0, "gcc-manifold", make_rows(0, 1))
        w.append(1, "bacc", make_rows(0, 4))
        assert w.trials_done(0, "gcc") == 5
        assert w.trials_done(0, "gcc-manifold") == 1
        assert w.trials_done(1, "gcc") == 0 and w.trials_done(7, "gcc") == 0
        with pytest.raises(ValueError, match="lack"):
            w.append(0, "gcc", {"trial": np.arange(1)})
        with pytest.raises(KeyError, match="add_point"):
            w.append(9, "gcc", make_rows(0, 1))

    r = read_results(path)
    assert r.attrs["format"] == FORMAT and r.attrs["complete"] is True and r.complete
    assert r.config_toml == CONFIG and r.attrs["version"] == __version__
    assert r.attrs["mpi"] == "simulate" and r.attrs["command"].startswith("gcc_mpi")
    assert r.attrs["created"].endswith("+00:00")
    assert [p.index for p in r.points] == [0, 1]
    assert r.points[0].params == {"stragglers.count": 5, "stragglers.model": "fixed"}
    assert list(r.points[0].schemes) == ["gcc", "gcc-manifold"]  # creation order kept
    gcc = r.points[0].schemes["gcc"]
    assert gcc["trial"].tolist() == [0, 1, 2, 3, 4] and gcc["trial"].dtype == np.int64
    assert gcc["failed"].tolist() == [False, True, False, False, False]
    assert gcc["reason"].tolist() == ["", "worker 2: ZeroDivisionError", "", "", ""]
    assert gcc["delay"].shape == (5, 3) and gcc["used"].dtype == bool
    np.testing.assert_array_equal(gcc["nmse"][:3], a["nmse"])
    np.testing.assert_array_equal(gcc["alpha"][:3], a["alpha"])
    assert len(r.points[0].schemes["gcc-manifold"]["mse"]) == 1

    with h5py.File(path, "r") as f:  # plain h5py: attrs per swept key, chunked resizable data
        g = f["point_001"]
        assert g.attrs["index"] == 1 and g.attrs["stragglers.count"] == 10
        assert g.attrs["stragglers.model"] == "fixed"
        d = f["point_000/gcc/delay"]
        assert d.maxshape == (None, 3) and d.chunks is not None and d.dtype == np.float64


def test_existing_file_refused_overwrite_and_resume(tmp_path):
    path = tmp_path / "out.h5"
    w = writer(path)
    w.add_point(0, {})
    w.append(0, "gcc", make_rows(0, 2))
    w.close(complete=False)
    with pytest.raises(JobError, match="exists; use --overwrite or --resume"):
        writer(path)
    with pytest.raises(JobError, match="different job"):
        ResultWriter(path, config_toml=CONFIG + "x = 1\n", command="", mpi="", resume=True)

    with writer(path, resume=True) as w:
        w.add_point(0, {})
        assert w.trials_done(0, "gcc") == 2
        w.append(0, "gcc", make_rows(2, 3))
    r = read_results(path)
    assert r.points[0].schemes["gcc"]["trial"].tolist() == [0, 1, 2, 3, 4] and r.complete

    with writer(path, overwrite=True) as w:
        pass
    assert read_results(path).points == []


def test_interrupted_write_is_realigned(tmp_path):
    path = tmp_path / "out.h5"
    with writer(path) as w:
        w.add_point(0, {})
        w.append(0, "gcc", make_rows(0, 3))
    with h5py.File(path, "a") as f:  # as if killed between two resizes of one append
        f["point_000/gcc/mse"].resize(4, axis=0)
    assert len(read_results(path).points[0].schemes["gcc"]["nmse"]) == 3
    with writer(path, resume=True) as w:
        assert w.trials_done(0, "gcc") == 3
        w.append(0, "gcc", make_rows(3, 1))
    d = read_results(path).points[0].schemes["gcc"]
    assert {len(a) for a in d.values()} == {4} and d["trial"].tolist() == [0, 1, 2, 3]


def test_exception_marks_incomplete(tmp_path):
    path = tmp_path / "out.h5"
    with pytest.raises(RuntimeError):
        with writer(path) as w:
            w.add_point(0, {})
            raise RuntimeError("boom")
    assert read_results(path).complete is False


def test_not_a_results_file(tmp_path):
    with pytest.raises(JobError, match="no such file"):
        read_results(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("hello")
    with pytest.raises(JobError, match="not a readable HDF5"):
        read_results(tmp_path / "text.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["format"] = "something/2"
    with pytest.raises(JobError, match="not a gcc_mpi results file"):
        read_results(tmp_path / "other.h5")
    with pytest.raises(JobError, match="--resume: cannot continue .*not a gcc_mpi results file"):
        writer(tmp_path / "other.h5", resume=True)


def test_buffered_appends_give_the_file_of_one_block_append(tmp_path):
    """Rows appended one trial at a time are buffered and written at the commit: the file holds
    what one append of the whole block gives, a dataset first seen in a later append (an
    encoder's alpha) is filled (NaN) before it, and a bad append fails at once, keeping the
    earlier rows."""
    rows = make_rows(0, 6)
    late = rows.pop("alpha")
    with writer(tmp_path / "one.h5") as w:
        w.add_point(0, {})
        w.append(0, "gcc", {k: v[:2] for k, v in rows.items()})
        w.append(0, "gcc", {**{k: v[2:] for k, v in rows.items()}, "alpha": late[2:]})
    with writer(tmp_path / "many.h5") as w:
        w.add_point(0, {})
        for t in range(6):
            row = {k: v[t:t + 1] for k, v in rows.items()}
            if t >= 2:
                row["alpha"] = late[t:t + 1]
            w.append(0, "gcc", row)
            assert w.trials_done(0, "gcc") == t + 1  # buffered rows count
        with pytest.raises(ValueError, match="per-trial shape"):
            w.append(0, "gcc", {**{k: v[:1] for k, v in rows.items()}, "alpha": late[:1, :1]})
        with pytest.raises(ValueError, match="lack"):
            w.append(0, "gcc", {k: v[:1] for k, v in rows.items()})  # alpha is known now
        assert w.trials_done(0, "gcc") == 6
    one = read_results(tmp_path / "one.h5").points[0].schemes["gcc"]
    many = read_results(tmp_path / "many.h5").points[0].schemes["gcc"]
    assert one.keys() == many.keys() == set(rows) | {"alpha"}
    for k in one:
        np.testing.assert_array_equal(many[k], one[k])
    assert np.isnan(many["alpha"][:2]).all() and (many["alpha"][2:] == late[2:]).all()


def test_memory_held_does_not_grow_with_the_trials(tmp_path, monkeypatch):
    """Rows are written into the file once they reach PENDING_BYTES, commit or not; between
    commits the writer holds those rows and the pages of the next commit, not the file."""
    import gcc_mpi.files.writer as results

    monkeypatch.setattr(results, "PENDING_BYTES", 64 << 10)
    with writer(tmp_path / "out.h5") as w:
        w.add_point(0, {})
        most = 0
        for t in range(0, 6000, 10):
            w.append(0, "gcc", make_rows(t, 10, workers=40))
            most = max(most, w._pending_bytes, w._file.pending_bytes())
            if t % 1000 == 0:
                w.commit()
        assert w.trials_done(0, "gcc") == 6000
    assert most < 600 << 10  # measured: 68 KB of rows, 300-500 KB of pages (5.5 MB written)
    assert len(read_results(tmp_path / "out.h5").points[0].schemes["gcc"]["trial"]) == 6000


def test_the_disk_changes_at_commits_only(tmp_path, monkeypatch):
    """Rows HDF5 has written since the last commit are not in the file on disk, which opens
    with plain h5py and holds that commit (no journal is left behind between commits)."""
    import gcc_mpi.files.writer as results

    monkeypatch.setattr(results, "PENDING_BYTES", 1 << 10)
    path = tmp_path / "out.h5"
    w = writer(path)
    w.add_point(0, {})
    w.append(0, "gcc", make_rows(0, 3))
    w.commit()
    for t in range(3, 203):
        w.append(0, "gcc", make_rows(t, 1))  # handed to HDF5 past PENDING_BYTES
    assert w._pending_bytes < 1 << 10
    with h5py.File(path, "r", locking=False) as f:
        assert f["point_000/gcc/trial"][()].tolist() == [0, 1, 2]
    assert not (tmp_path / "out.h5.journal").exists()
    w.close(complete=True)
    assert read_results(path).points[0].schemes["gcc"]["trial"].tolist() == list(range(203))


def test_a_reader_reads_one_commit_however_long_it_keeps_the_file_open(tmp_path):
    """While a gcc_mpi reader has the file open, commits go to the journal only (the file does
    not change in place): the reader keeps reading the commit it opened, whole; a reader opened
    meanwhile reads the latest one through the journal; the first commit after they close
    writes everything in place."""
    path = tmp_path / "out.h5"
    w = writer(path)
    w.add_point(0, {})
    w.append(0, "gcc", make_rows(0, 100))
    w.commit()
    with ResultsFile(path) as early:
        for t in range(100, 3000, 100):
            w.append(0, "gcc", make_rows(t, 100))
            w.commit()
        assert (tmp_path / "out.h5.journal").exists()  # the commits wait beside the file
        with ResultsFile(path) as late:
            assert late.read(0, "gcc")["trial"].tolist() == list(range(3000))
        d = early.read(0, "gcc")  # every dataset, strings too, as it was when opened
        assert d["trial"].tolist() == list(range(100))
        assert d["reason"].tolist() == [""] * 100
        np.testing.assert_array_equal(d["nmse"], make_rows(0, 100)["nmse"])
    w.append(0, "gcc", make_rows(3000, 1))
    w.commit()
    assert not (tmp_path / "out.h5.journal").exists()
    with h5py.File(path, "r", locking=False) as f:  # plain h5py: the file itself holds it
        assert f["point_000/gcc/trial"][()].tolist() == list(range(3001))
    w.close(complete=True)
