"""The sbatch scripts in slurm/, run here without SLURM: `bash script` under a fake SLURM
environment (SLURM_NTASKS, SLURM_ARRAY_TASK_ID, SLURM_JOB_ID, ...) with the local mpiexec (the
MPICH wheel's, next to this python) or a fake `srun` that starts the ranks with it.

Each launch has a timeout and its process group is killed if it expires; nothing asserts on
wall-clock time.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gcc_mpi.__main__ import main
from gcc_mpi.results import read_results

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 120

JOB = """
[job]
name = "tiny"
seed = 11
trials = 3
[data]
source = "sphere"
dim = 5
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 3
[code]
workers = 4
schemes = ["uncoded", "bacc", "gcc"]
[stragglers]
model = "fixed"
delay = 0.2
[sweep]
"stragglers.count" = [0, 1, 2]
"""


def sbatch(script, args, cwd, **env):
    """`bash slurm/SCRIPT ARGS` as SLURM would start it: (exit code, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "GCC_MPI_")) and k != "PMI_RANK"}
    full.update(SLURM_JOB_ID="4242", SLURM_NTASKS="5", SLURM_SUBMIT_DIR=str(cwd),
                GCC_MPI_PYTHON=sys.executable, GCC_MPI_OUT=str(cwd / "results"))
    full.update(env)
    cmd = ["bash", str(ROOT / "slurm" / script), *args]
    proc = subprocess.Popen(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish in {TIMEOUT} s\n{err[-3000:]}")
    return proc.returncode, out, err


@pytest.fixture
def job(tmp_path):
    (tmp_path / "jobs").mkdir()
    path = tmp_path / "jobs" / "tiny.toml"
    path.write_text(JOB)
    return path


def test_array_of_point_runs_then_merge_and_analyze(tmp_path, job):
    results = tmp_path / "results"
    for i in range(3):  # the array tasks: SLURM_ARRAY_TASK_ID -> --point
        code, out, err = sbatch("sweep.sbatch", ["jobs/tiny.toml", "-q"], tmp_path,
                                SLURM_ARRAY_JOB_ID="4242", SLURM_ARRAY_TASK_ID=str(i),
                                GCC_MPI_LAUNCHER="mpiexec")
        assert code == 0, err
        assert f"point {i} on 5 ranks (mpiexec)" in out
        part = read_results(results / f"tiny-p{i}.h5")
        assert part.complete and [p.index for p in part.points] == [i]
        assert part.attrs["mpi"].startswith("MPICH")

    # a requeued task resumes its file: nothing left to do, nothing changes
    code, _, err = sbatch("sweep.sbatch", ["jobs/tiny.toml", "-q"], tmp_path,
                          SLURM_ARRAY_TASK_ID="1")
    assert code == 0, err
    assert len(read_results(results / "tiny-p1.h5").points[0].schemes["gcc"]["trial"]) == 3

    code, out, err = sbatch("analyze.sbatch", ["jobs/tiny.toml"], tmp_path)
    assert code == 0, err
    assert "merged 3 file(s)" in err and "3 of 3 point(s)" in err and "; complete" in err
    assert "stragglers.count  scheme" in out  # the table goes to the job's log
    merged = read_results(results / "tiny.h5")
    assert merged.complete and [p.index for p in merged.points] == [0, 1, 2]
    rows = json.loads((results / "tiny.json").read_text())
    assert [(r["point"], r["scheme"], r["trials"], r["trials_failed"]) for r in rows] == [
        ({"stragglers.count": s}, name, 3, 0) for s in (0, 1, 2)
        for name in ("uncoded", "bacc", "gcc")]
    assert (results / "tiny.csv").read_text().startswith("stragglers.count,scheme,trials,")
    assert sorted(p.name for p in (results / "tiny-figures").iterdir()) == [
        "tiny-latency-cdf.png", "tiny-mse-vs-S.png"]

    # the same job in the simulator: the same accuracy, point by point
    sim = tmp_path / "sim.h5"
    assert main(["simulate", str(job), "-o", str(sim), "-q"]) == 0
    for p, q in zip(merged.points, read_results(sim).points):
        for name in ("bacc", "gcc"):
            a, b = p.schemes[name], q.schemes[name]
            assert np.array_equal(a["used"], b["used"])
            np.testing.assert_allclose(a["nmse"], b["nmse"], rtol=1e-9)


def test_run_sbatch_with_srun_then_analyze(tmp_path, job):
    """GCC_MPI_LAUNCHER=srun: the script calls srun with GCC_MPI_SRUN_ARGS; a fake srun records
    its arguments and starts the ranks with the local mpiexec."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text(
        "#!/bin/bash\n"
        'echo "$@" > "$SRUN_LOG"\n'
        'while [[ $1 == --* ]]; do shift; done\n'
        f'exec "{BIN / "mpiexec"}" -n "$SLURM_NTASKS" "$@"\n')
    (fake / "srun").chmod(0o755)
    log = tmp_path / "srun.log"
    code, out, err = sbatch("run.sbatch", ["jobs/tiny.toml", "-q", "--set", "job.trials=2"],
                            tmp_path, GCC_MPI_LAUNCHER="srun", GCC_MPI_SRUN_ARGS="--mpi=pmix",
                            SRUN_LOG=str(log), PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    assert code == 0, err
    args = log.read_text().split()
    assert args[:4] == ["--mpi=pmix", sys.executable, "-m", "gcc_mpi"]
    assert args[4:] == ["run", "jobs/tiny.toml", "-o", f"{tmp_path}/results/tiny.h5", "--resume",
                        "-q", "--set", "job.trials=2"]
    res = read_results(tmp_path / "results" / "tiny.h5")
    assert res.complete and len(res.points) == 3
    assert res.attrs["mpi"].startswith("MPICH")

    # analyze.sbatch without point files analyses the run's own file
    code, out, err = sbatch("analyze.sbatch", ["jobs/tiny.toml", "--rate", "stragglers.count"],
                            tmp_path)
    assert code == 0, err
    assert "log-log slope of mean nmse against stragglers.count" in out
    rows = json.loads((tmp_path / "results" / "tiny.json").read_text())
    assert len(rows) == 9 and all(r["trials"] == 2 for r in rows)


def test_script_errors_are_clear(tmp_path, job):
    code, _, err = sbatch("sweep.sbatch", ["jobs/tiny.toml"], tmp_path)
    assert code != 0 and "SLURM_ARRAY_TASK_ID is not set: submit with sbatch --array" in err
    code, _, err = sbatch("run.sbatch", ["jobs/tiny.toml"], tmp_path, GCC_MPI_LAUNCHER="aprun")
    assert code == 2 and "GCC_MPI_LAUNCHER must be srun or mpiexec, got 'aprun'" in err
    code, _, err = sbatch("run.sbatch", [], tmp_path)
    assert code != 0 and "usage: sbatch slurm/run.sbatch JOB.toml" in err
    code, _, err = sbatch("analyze.sbatch", ["jobs/tiny.toml"], tmp_path)
    assert code == 2 and "neither" in err
    # a task beyond the job's points: gcc_mpi's one-line error, exit code 2, no file
    code, _, err = sbatch("sweep.sbatch", ["jobs/tiny.toml"], tmp_path, SLURM_ARRAY_TASK_ID="3")
    assert code == 2
    assert "gcc_mpi: error: --point: must be a sweep point index in 0..2" in err
    assert not (tmp_path / "results" / "tiny-p3.h5").exists()
