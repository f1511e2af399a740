"""Every results and probe file records where and with what it was made (``core.provenance``),
the command says how the ranks were launched (``core.launcher.launch_command``), files of
earlier versions without it still read, and ``analyze A B`` prints where two files' provenance
differs."""

import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from gcc_mpi.cli.main import main
from gcc_mpi.core.provenance import LIBRARIES, collect, git_commit
from gcc_mpi.files.merge import merge
from gcc_mpi.files.reader import provenance, read_results
from gcc_mpi.files.writer import ResultWriter

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"python", *LIBRARIES, "ft", "host", "cpu", "cores", "cores_usable", "os"}
CONFIG = '[job]\nname = "p"\n'


def write(path, provenance=None):
    """A one-point, one-scheme file, with ``provenance`` (None: as files before it was kept)."""
    with ResultWriter(path, config_toml=CONFIG, command="test", mpi="simulate",
                      provenance=provenance) as w:
        w.add_point(0, {})
        w.append(0, "bacc", {"trial": np.arange(3), "failed": np.zeros(3, bool),
                             "reason": [""] * 3, "nmse": np.full(3, 0.1), "mse": np.full(3, 0.1),
                             "latency": np.full(3, 0.01)})
    return path


def test_a_simulated_file_records_its_provenance(tmp_path):
    out = tmp_path / "s.h5"
    assert main(["simulate", str(ROOT / "jobs" / "sphere-poly.toml"), "-o", str(out), "-q",
                 "--set", "job.trials=2", "--set", 'code.schemes=["bacc"]',
                 "--set", "stragglers.count=1"]) == 0
    with h5py.File(out, "r") as f:
        recorded = json.loads(f.attrs["provenance"])
    assert KEYS <= set(recorded)
    assert recorded["python"] == platform.python_version() and recorded["ft"] == "simulate"
    for name in LIBRARIES:
        assert recorded[name] == importlib.metadata.version(name)
    assert recorded["cores"] == os.cpu_count() and recorded["host"] == platform.node()
    if (ROOT / ".git").exists():  # run from a checkout: its HEAD
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        assert recorded["commit"] == head
    shown = provenance(read_results(out).attrs)
    assert shown["ft"] == "simulate" and shown["command"].startswith("python -m gcc_mpi")


def test_slurm_ids_are_recorded_when_present(monkeypatch):
    for var in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_STEP_ID",
                "SLURM_CLUSTER_NAME"):
        monkeypatch.delenv(var, raising=False)
    assert not any(k.startswith("slurm") for k in collect("off"))
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "4240")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")
    got = collect("ulfm")
    assert (got["slurm_job"], got["slurm_array_job"], got["slurm_array_task"]) == \
        ("4242", "4240", "2")
    assert got["ft"] == "ulfm" and "slurm_step" not in got


def test_git_commit_reads_loose_packed_and_worktree_refs(tmp_path):
    sha, other = "a" * 40, "b" * 40
    (tmp_path / "gcc_mpi").mkdir()
    (tmp_path / "gcc_mpi" / "__init__.py").write_text("")
    assert git_commit(tmp_path) is None  # not a checkout
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs\n{other} refs/heads/x\n{sha} refs/heads/main\n")
    assert git_commit(tmp_path) == sha
    (git / "refs" / "heads" / "main").write_text(other + "\n")  # a loose ref wins
    assert git_commit(tmp_path) == other
    tree = tmp_path / "wt"
    (tree / "gcc_mpi").mkdir(parents=True)
    (tree / "gcc_mpi" / "__init__.py").write_text("")
    (git / "worktrees" / "wt").mkdir(parents=True)
    (git / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/x\n")
    (git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (tree / ".git").write_text(f"gitdir: {git / 'worktrees' / 'wt'}\n")
    assert git_commit(tree) == other  # refs/heads/x, from the common packed-refs


def test_the_launchers_command_line_is_found_above_the_rank(tmp_path):
    """A process run as ``mpiexec`` (a link to python, so /proc shows the name typed) starts a
    child the way a launcher starts a rank: the child finds the launcher's whole command line,
    options included."""
    launcher = tmp_path / "mpiexec"
    launcher.symlink_to(sys.executable)
    rank = ("import subprocess, sys; subprocess.run([sys.executable, '-c', 'from "
            "gcc_mpi.core.launcher import launch_command; print(launch_command())'], check=True)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([str(launcher), "-c", rank, "--with-ft", "ulfm", "--hostfile", "h",
                          "-n", "9"], capture_output=True, text=True, env=env, check=True)
    line = out.stdout.strip()
    assert line.startswith(str(launcher)) and line.endswith("--with-ft ulfm --hostfile h -n 9")


def test_the_command_without_a_visible_launcher_says_which_launched(monkeypatch):
    from argparse import Namespace

    from gcc_mpi.cli import commands

    monkeypatch.setattr("gcc_mpi.core.launcher.launch_command", lambda: None)
    args = Namespace(argv=["run", "job.toml"])
    monkeypatch.delenv("SLURM_STEP_ID", raising=False)
    assert commands.recorded_command(args, 5) == "mpiexec -n 5 python -m gcc_mpi run job.toml"
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    assert commands.recorded_command(args, 5) == "srun -n 5 python -m gcc_mpi run job.toml"
    assert commands.recorded_command(args) == "python -m gcc_mpi run job.toml"
    monkeypatch.setattr("gcc_mpi.core.launcher.launch_command",
                        lambda: "mpirun --hostfile h -n 5 ./wrap.sh")
    assert commands.recorded_command(args, 5) == \
        "mpirun --hostfile h -n 5 ./wrap.sh  # each rank: python -m gcc_mpi run job.toml"


def test_a_file_without_provenance_still_reads_and_compares(tmp_path, capsys):
    old = write(tmp_path / "old.h5")
    new = write(tmp_path / "new.h5", dict(collect("off"), numpy="0.0-test"))
    assert provenance(read_results(old).attrs) == {"gcc_mpi": read_results(old).attrs["version"],
                                                   "mpi": "simulate", "command": "test"}
    assert main(["analyze", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    block = out[out.index("# provenance that differs:"):].splitlines()
    numpy_line = next(line for line in block if line.startswith("#   numpy "))
    assert "old: -" in numpy_line and "new: 0.0-test" in numpy_line
    assert not any(line.startswith("#   command ") for line in block)  # the same: not shown
    assert main(["analyze", str(old), str(new), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert "numpy" not in files[0]["provenance"] and files[1]["provenance"]["numpy"] == "0.0-test"


def test_same_provenance_is_one_line_and_hosts_become_ranks_per_host(tmp_path, capsys):
    same = dict(collect("off"))
    a, b = write(tmp_path / "a.h5", same), write(tmp_path / "b.h5", same)
    assert main(["analyze", str(a), str(b)]) == 0
    assert "# provenance: the same in every file" in capsys.readouterr().out
    attrs = {"version": "x", "hosts": json.dumps(["n1", "n1", "n2", "n1"])}
    assert provenance(attrs)["ranks_per_host"] == "n1×3, n2×1"


def test_merge_keeps_the_inputs_provenance_joining_what_differs(tmp_path):
    a = write(tmp_path / "a.h5", {"numpy": "1", "cpu": "X", "slurm_array_task": "0"})
    with ResultWriter(tmp_path / "b.h5", config_toml=CONFIG, command="test", mpi="simulate",
                      provenance={"numpy": "1", "cpu": "Y", "slurm_array_task": "1"}) as w:
        w.add_point(0, {})
        w.append(0, "gcc", {"trial": np.arange(3), "failed": np.zeros(3, bool),
                            "reason": [""] * 3, "nmse": np.full(3, 0.1), "mse": np.full(3, 0.1),
                            "latency": np.full(3, 0.01)})
    merge([a, tmp_path / "b.h5"], tmp_path / "all.h5")
    got = json.loads(read_results(tmp_path / "all.h5").attrs["provenance"])
    assert got == {"numpy": "1", "cpu": "X; Y", "slurm_array_task": "0; 1"}
