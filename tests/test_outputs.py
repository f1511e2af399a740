"""No command writes over a file it reads, and every file a command writes follows the `-o`
convention: a folder or an existing file is refused (unless --overwrite) with one line naming the
option, exit 2, the file byte for byte unchanged; a file the command reads is refused even with
--overwrite (gcc_mpi/files/outputs.py: ``refuse``)."""

import numpy as np
import pytest
from jobfiles import small_job
from mpirun import needs_mpiexec
from mpirun import run as launch
from refusals import one_line

import gcc_mpi
from gcc_mpi.cli.main import main
from gcc_mpi.errors import JobError


@pytest.fixture
def made(tmp_path, monkeypatch):
    """A folder holding a job file, its straggler trace (.npy) and two results files of it."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(4)
    np.save(tmp_path / "d.npy", 0.001 + rng.exponential(0.002, (40, 6)))
    (tmp_path / "job.toml").write_text(small_job("edges", ["bacc", "gcc"], 3))
    for name, seed in (("a.h5", 1), ("b.h5", 1)):
        assert main(["simulate", "job.toml", "-o", name, "-q", "--set", f"job.seed={seed}"]) == 0
    return tmp_path


def refused(argv, capsys, victim, option):
    """``argv`` exits 2 with one line naming ``option``, and ``victim`` is unchanged."""
    return one_line(capsys, argv, victim, f"error: {option}: ")


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_analyze_never_writes_over_the_file_it_reads(made, capsys, option):
    for extra in ([], ["--overwrite"]):
        err = refused(["analyze", "a.h5", option, "a.h5", *extra], capsys, made / "a.h5", option)
        assert "is also an input" in err
    # a second file compared is an input too, and so is the same file under another name
    refused(["analyze", "a.h5", "b.h5", option, "b.h5", "--overwrite"], capsys, made / "b.h5",
            option)
    (made / "link.h5").symlink_to(made / "a.h5")
    refused(["analyze", "a.h5", option, "link.h5", "--overwrite"], capsys, made / "a.h5", option)


def test_analyze_refuses_an_existing_output_unless_overwrite(made, capsys):
    (made / "t.csv").write_text("mine")
    err = refused(["analyze", "a.h5", "--csv", "t.csv"], capsys, made / "t.csv", "--csv")
    assert "exists; use --overwrite" in err
    assert main(["analyze", "a.h5", "--csv", "t.csv", "--overwrite"]) == 0
    assert (made / "t.csv").read_text().startswith("point.") or "scheme" in \
        (made / "t.csv").read_text()


def test_analyze_refuses_existing_figures_unless_overwrite(made, capsys):
    pytest.importorskip("matplotlib")
    assert main(["analyze", "a.h5", "--plot", "figs"]) == 0
    figures = sorted((made / "figs").iterdir())
    assert figures
    (made / "t.csv").unlink(missing_ok=True)
    err = refused(["analyze", "a.h5", "--plot", "figs", "--csv", "t.csv"], capsys, figures[0],
                  "--plot")
    assert "exists; use --overwrite" in err and not (made / "t.csv").exists()  # nothing written
    assert main(["analyze", "a.h5", "--plot", "figs", "--overwrite"]) == 0


def test_merge_never_writes_over_an_input(made, capsys):
    for extra in ([], ["--overwrite"]):
        refused(["merge", "a.h5", "b.h5", "-o", "a.h5", *extra], capsys, made / "a.h5", "-o")


def test_simulate_never_writes_over_its_job_or_its_trace(made, capsys):
    (made / "t.toml").write_text(small_job("edges", ["bacc"], 2, '[stragglers]\nmodel = "trace"'
                                           '\npath = "d.npy"\n'))
    for out in ("t.toml", "d.npy"):
        refused(["simulate", "t.toml", "-o", out, "--overwrite"], capsys, made / out, "-o")


def test_plan_never_writes_over_its_job_or_its_trace(made, capsys):
    args = ["plan", "job.toml", "--trace", "d.npy", "--target-nmse", "0", "--trials", "4",
            "--schemes", "bacc", "--overwrite"]
    refused([*args, "--write", "job.toml"], capsys, made / "job.toml", "--write")
    refused([*args, "--write", "d.npy"], capsys, made / "d.npy", "--write")
    assert main([*args, "--write", "best.toml"]) == 0   # --overwrite of a new file: written
    assert main(["validate", "best.toml"]) == 0


def test_the_api_follows_the_same_rule(made):
    pytest.importorskip("matplotlib")
    results = gcc_mpi.read_results("a.h5")
    before = (made / "a.h5").read_bytes()
    with pytest.raises(JobError, match="is also an input"):
        gcc_mpi.report(results, "a.h5", overwrite=True)
    (made / "r.html").write_text("mine")
    with pytest.raises(JobError, match="exists"):
        gcc_mpi.report("a.h5", "r.html")
    assert gcc_mpi.report("a.h5", "r.html", overwrite=True) == "r.html"
    job = gcc_mpi.load_job("job.toml")
    with pytest.raises(JobError, match="is also an input"):
        gcc_mpi.run_simulation(job, "job.toml", overwrite=True)
    assert (made / "a.h5").read_bytes() == before


@needs_mpiexec
def test_probe_refuses_an_existing_file_and_its_job(made):
    before = (made / "a.h5").read_bytes()
    for out, extra in (("a.h5", []), ("job.toml", ["--overwrite"])):
        code, _, err = launch(["probe", "job.toml", "-o", out, "--rounds", "2", *extra], made,
                              ranks=3)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "-o: " in err, err
    assert (made / "a.h5").read_bytes() == before
