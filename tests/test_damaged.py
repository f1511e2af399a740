"""Any unreadable input is one line and exit 2, the input untouched: a results file or a probe
file damaged in its middle (4 KiB of random bytes at a few offsets: its metadata checksums and
the fletcher32 checksum of every numeric chunk find it), an empty file (what a failed create
leaves), a folder, a file of another format. For analyze, merge, --resume, plan --trace, the
trace straggler model and the API (a JobError, never h5py's OSError or KeyError)."""

import shutil

import numpy as np
import pytest
from jobfiles import small_job
from refusals import one_line

import gcc_mpi
from gcc_mpi.cli.main import main
from gcc_mpi.errors import JobError
from gcc_mpi.files.traces import write_probe

SEEDS = (1, 2, 3, 4, 5)


def damage(src, dst, seed, blocks=3, size=4096):
    """A copy of ``src`` with ``blocks`` runs of ``size`` random bytes past its superblock."""
    shutil.copy(src, dst)
    data = bytearray(dst.read_bytes())
    rng = np.random.default_rng(seed)
    for at in rng.integers(2048, len(data) - size, blocks):
        data[at:at + size] = rng.bytes(size)
    dst.write_bytes(bytes(data))
    return dst


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A results file of 40 trials of a small job, and its job file."""
    folder = tmp_path_factory.mktemp("good")
    (folder / "job.toml").write_text(small_job("damaged", ["bacc", "gcc"], 40))
    assert main(["simulate", str(folder / "job.toml"), "-o", str(folder / "good.h5"), "-q"]) == 0
    return folder


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_results_file_is_one_line_for_every_reader(good, tmp_path, capsys, seed):
    bad = damage(good / "good.h5", tmp_path / "bad.h5", seed)
    one_line(capsys, ["analyze", str(bad)], bad, "damaged: cannot be read")
    one_line(capsys, ["merge", str(bad), "-o", str(tmp_path / "m.h5")], bad, "damaged")
    assert not (tmp_path / "m.h5").exists()
    one_line(capsys, ["simulate", str(good / "job.toml"), "-o", str(bad), "--resume", "-q"],
             bad, "--resume: cannot continue", "damaged")
    with pytest.raises(JobError, match="damaged"):
        gcc_mpi.read_results(bad, whole=True)


def test_the_damage_is_caught_on_reading_not_only_on_opening(good, tmp_path):
    """The lazy API: the file opens (its root is whole), the damaged scheme fails when read."""
    bad = damage(good / "good.h5", tmp_path / "bad.h5", SEEDS[0])
    with pytest.raises(JobError, match=f"{bad}: damaged"):
        results = gcc_mpi.read_results(bad)
        for p in results.points:
            for s in p.schemes:
                p.schemes[s]["nmse"].sum()


@pytest.mark.parametrize("kind", ["empty", "folder", "text", "other hdf5"])
def test_what_is_not_a_results_file_is_one_line(good, tmp_path, capsys, kind):
    path = tmp_path / "x.h5"
    if kind == "folder":
        path.mkdir()
    elif kind == "other hdf5":
        import h5py

        with h5py.File(path, "w") as f:
            f.attrs["format"] = "something/2"
    else:
        path.write_bytes(b"" if kind == "empty" else b"hello")
    argvs = [["analyze", str(path)], ["merge", str(path), "-o", str(tmp_path / "m.h5")]]
    if kind != "folder":
        argvs.append(["simulate", str(good / "job.toml"), "-o", str(path), "--resume", "-q"])
    for argv in argvs:
        if kind == "folder":
            capsys.readouterr()
            assert main(argv) == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
        else:
            one_line(capsys, argv, path)
    assert not (tmp_path / "m.h5").exists()


def test_resume_onto_an_empty_file_leaves_it_empty(good, tmp_path, capsys):
    empty = tmp_path / "e.h5"
    empty.write_bytes(b"")
    line = one_line(capsys, ["simulate", str(good / "job.toml"), "-o", str(empty), "--resume",
                             "-q"], empty, "is empty (0 bytes)")
    assert line.startswith("gcc_mpi: error: --resume: ")
    assert empty.stat().st_size == 0


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_damaged_probe_file_is_one_line_for_plan_and_the_trace_model(tmp_path, capsys, seed):
    rng = np.random.default_rng(0)
    rounds, workers = 400, 6
    good = tmp_path / "probe.h5"
    write_probe(good, arrival=0.001 + rng.exponential(0.002, (rounds, workers)),
                compute=np.full((rounds, workers), 1e-4), hosts=["h"] * (workers + 1),
                ranks=np.arange(1, workers + 1), config="", command="test", mpi="none",
                master_host="h", complete=True)
    bad = damage(good, tmp_path / "bad.h5", seed, blocks=2, size=1024)
    (tmp_path / "job.toml").write_text(small_job("t", ["bacc"], 3, '[stragglers]\nmodel = '
                                                 '"trace"\npath = "bad.h5"\n'))
    one_line(capsys, ["plan", str(tmp_path / "job.toml"), "--trace", str(bad),
                      "--target-nmse", "0"], bad, "--trace: ", "not a readable probe file")
    one_line(capsys, ["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "o.h5"),
                      "-q"], bad, "stragglers.path: ", "not a readable probe file")
    assert not (tmp_path / "o.h5").exists()
