"""The command line as a new user meets it: --version, help, every mistake one line and exit 2,
and the default job on any allocation (over MPI with 4 and 8 ranks)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpirun import needs_mpiexec
from mpirun import run as launch

from gcc_mpi import __version__
from gcc_mpi.cli.main import build_parser, invoked_as, main

JOBS = Path(__file__).resolve().parent.parent / "jobs"
APPROXIMATE = ("bacc", "letcc", "gcc", "gcc-manifold")


def test_version_and_help_name_the_command_as_invoked(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"gcc-mpi {__version__}"
    script = Path(sys.executable).with_name("gcc-mpi")
    if script.exists():  # the installed entry point
        out = subprocess.run([str(script), "--version"], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == f"gcc-mpi {__version__}"
        usage = subprocess.run([str(script), "--help"], capture_output=True, text=True).stdout
        assert usage.startswith("usage: gcc-mpi ")
    assert invoked_as("/usr/bin/gcc-mpi") == "gcc-mpi"
    assert invoked_as("/x/gcc_mpi/__main__.py") == "python -m gcc_mpi"


def test_help_is_plain_text():
    parser = build_parser("gcc-mpi")
    texts = [parser.format_help()] + [p.format_help() for p in
                                      parser._subparsers._group_actions[0].choices.values()]
    for text in texts:
        assert "``" not in text and "`" not in text and ":class:" not in text, text


@pytest.mark.parametrize("argv, key", [
    (["analyze", "x.h5", "--bogus"], "unrecognized arguments: --bogus"),
    (["simulate", str(JOBS / "sphere-poly.toml"), "--frobnicate"], "unrecognized arguments"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["analyze", "folder"], "folder: is a folder, not a results file"),
    (["simulate", str(JOBS / "sphere-poly.toml"), "-o", "folder"], "-o: folder is a folder"),
    (["merge", "x.h5", "-o", "folder"], "-o: folder is a folder"),
    (["validate", "nope.toml"], "job file: nope.toml: no such file"),
    # 300 characters: no file name can hold it (it was a traceback over MPI, valid to validate)
    (["validate", "--set", "job.name=" + "a" * 300], "job.name: "),
    (["simulate", "--set", "job.name=" + "a" * 300, "-q"], "job.name: "),
])
def test_mistakes_are_one_line(tmp_path, monkeypatch, capsys, argv, key):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and key in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]  # no .tmp, no results/
    assert list((tmp_path / "folder").iterdir()) == []


def test_existing_output_is_refused_with_a_hint_and_untouched(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.h5").write_bytes(b"mine")
    argv = ["simulate", str(JOBS / "sphere-poly.toml"), "-o", "out.h5", "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--overwrite" in err and "--resume" in err
    assert (tmp_path / "out.h5").read_bytes() == b"mine"



def test_a_closed_stdout_ends_analyze_quietly(tmp_path):
    """`analyze out.h5 | head`: the reader is gone before the table is written; the command
    ends with 141 (128 + SIGPIPE) and no traceback. The pipe's read end is closed before the
    command starts, so its first write fails every time."""
    assert main(["simulate", str(JOBS / "sphere-poly.toml"), "-o", str(tmp_path / "o.h5"), "-q",
                 "--set", "job.trials=2"]) == 0
    for extra in ([], ["--json"]):
        read, write = os.pipe()
        os.close(read)
        done = subprocess.run([sys.executable, "-m", "gcc_mpi", "analyze", "o.h5", *extra],
                              cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
        os.close(write)
        assert done.returncode == 141 and done.stderr == "", done.stderr

def test_single_process_names_the_ranks_the_job_needs(tmp_path):
    code, out, err = launch(["run", str(JOBS / "digits-mlp.toml"), "--set", "job.trials=1",
                             "--set", 'code.schemes=["bacc"]', "-q", "-o", "o.h5"], tmp_path)
    assert code == 0, err
    # N = 40 workers + rank 0; the command as typed, its options kept
    assert (f"`mpiexec -n 41 python -m gcc_mpi run {JOBS / 'digits-mlp.toml'} --set job.trials=1"
            " --set 'code.schemes=[\"bacc\"]' -q -o o.h5`") in err
    code, out, err = launch(["-q", "-o", "d.h5", "--set", "job.trials=2"], tmp_path)
    assert code == 0, err
    assert "`mpiexec -n 8 python -m gcc_mpi -q -o d.h5 --set job.trials=2`" in err
    assert "default job for 8 ranks: N = 7 workers, K = 3 inputs per batch" in err


@needs_mpiexec
def test_simulate_under_a_multi_rank_launch_is_refused(tmp_path):
    code, out, err = launch(["simulate", str(JOBS / "sphere-poly.toml"), "-q"], tmp_path, ranks=3)
    assert code == 2 and err.count("gcc_mpi: error: simulate runs in one process") == 1, err
    assert not (tmp_path / "results").exists()


@needs_mpiexec
def test_bad_data_under_mpiexec_is_one_line_from_rank_0(tmp_path):
    (tmp_path / "j.toml").write_text('[data]\nsource = "file"\npath = "nope.npy"\nbatch = 2\n')
    code, out, err = launch(["run", "j.toml"], tmp_path, ranks=4)
    assert code == 2 and err.strip().splitlines() == [
        f"gcc_mpi: error: data.path: file not found: {tmp_path / 'nope.npy'}"], err


@needs_mpiexec
def test_a_name_no_file_can_hold_is_the_same_line_under_mpiexec_and_in_simulate(tmp_path):
    argv = ["--set", "job.name=" + "a" * 300, "-q"]
    lines = []
    for command, ranks in (("run", 4), ("simulate", None)):
        code, out, err = launch([command, *argv], tmp_path, ranks=ranks)
        errors = [line for line in err.splitlines() if line.startswith("gcc_mpi: error: ")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
        lines.append(errors[0])
    assert lines[0] == lines[1] and lines[0].startswith("gcc_mpi: error: job.name: "), lines
    assert not (tmp_path / "results").exists()


def table_db(out):
    """{scheme: nmse in dB} from the summary table ("-": exactly 0, -inf)."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+\d+ \((\d+)\)\s+(-?[\d.]+|-)\s", line)
        if m:
            rows[m[1]] = float("-inf") if m[3] == "-" else float(m[3])
    return rows


@needs_mpiexec
@pytest.mark.parametrize("ranks", [4, 8])
def test_default_job_over_mpi_fits_the_allocation(tmp_path, ranks):
    code, out, err = launch(["-o", "d.h5"], tmp_path, ranks=ranks)
    assert code == 0, err
    assert out.splitlines()[0].split()[:4] == ["scheme", "trials", "(failed)", "nmse"]
    db = table_db(out)
    assert set(db) == {"uncoded", "replication", *APPROXIMATE}
    assert all(db[s] < -10 for s in APPROXIMATE), db  # benchmarks/default_job.py: R = 4..64
    assert db["uncoded"] < -250 and db["replication"] < -250  # exact, at round-off
    assert err.count(f"default job for {ranks} ranks: N = {ranks - 1} workers") == 1
    assert "warning" not in err.lower() and "Traceback" not in err
