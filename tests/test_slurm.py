"""slurm/ on a live SLURM (in CI the one-node slurmctld/slurmd of .ci/slurm-up.sh), and the
refusal of a launch whose tasks are not one MPI job.

The live tests (marked ``slurm``, a tier of tests/tiers.py) skip, with the reason and how to
run them, where no SLURM node answers; with GCC_MPI_TEST_SLURM=required (set by .ci/run after
bringing SLURM up) they fail instead. Jobs are small (a few
trials); every wait polls `scontrol show job` with an overall timeout, and every job a test
submitted is cancelled when it ends. Nothing asserts on wall-clock time.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tiers import unavailable

from gcc_mpi.cli.main import main
from gcc_mpi.errors import JobError
from gcc_mpi.files.reader import read_results
from gcc_mpi.core import launcher

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TIMEOUT = 150  # seconds a job (or a sweep) may take here: a guard against hangs
GUARD = "--time=5"  # SLURM ends a job the tests lost track of after 5 minutes
live = pytest.mark.slurm
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "BOOT_FAIL", "DEADLINE", "PREEMPTED"}

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
delay = 0.03
[sweep]
"stragglers.count" = [0, 1, 2]
"""


def _slurm_down():
    """Why no live SLURM can run the tests here, or None when a node is up."""
    if shutil.which("sbatch") is None:
        return "no sbatch on PATH: SLURM is not installed (.ci/slurm-up.sh brings one up)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                              timeout=30)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer in 30 s: slurmctld is not running"
    states = proc.stdout.split()
    if proc.returncode or not any(s.startswith(("idle", "mix", "alloc")) for s in states):
        return (f"no SLURM node is up (sinfo: {proc.stderr.strip() or ' '.join(states)}); "
                ".ci/slurm-up.sh starts slurmctld and slurmd")
    return None


@pytest.fixture(scope="module")
def slurm():
    """Skips (fails under GCC_MPI_TEST_SLURM=required) without a live SLURM; collects the ids
    of the jobs the tests submit and cancels them at the end."""
    reason = _slurm_down()
    if reason:
        unavailable("slurm", reason)
    submitted = []
    yield submitted
    if submitted:
        subprocess.run(["scancel", *submitted], capture_output=True, timeout=30)


def env_for(tmp_path, **extra):
    """The environment sbatch passes to the jobs: this python, output in tmp_path/results."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "GCC_MPI_", "PMI_", "OMPI_"))}
    # this python's bin folder first, as an activated venv has it: a job whose GCC_MPI_PYTHON
    # is a wrapper script finds the mpiexec installed beside this python on PATH
    env["PATH"] = os.pathsep.join([os.path.dirname(PY), env.get("PATH", os.defpath)])
    env.update({"GCC_MPI_PYTHON": PY, "GCC_MPI_OUT": str(tmp_path / "results"), **extra})
    return env


def sbatch(slurm, tmp_path, *args, env=None):
    """Submit `sbatch --parsable ARGS` from tmp_path; the job id."""
    proc = subprocess.run(["sbatch", "--parsable", GUARD, *args], cwd=tmp_path, capture_output=True,
                          text=True, env=env or env_for(tmp_path), timeout=60)
    assert proc.returncode == 0, proc.stderr
    jid = proc.stdout.strip().split(";")[0]
    slurm.append(jid)
    return jid


def show(jid):
    """`scontrol show job -o JID` as one {field: value} per job (an array: one per task)."""
    proc = subprocess.run(["scontrol", "show", "job", "-o", jid], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in proc.stdout.splitlines()]


def wait_until(predicate, what, timeout=TIMEOUT):
    """Poll predicate() (a true value ends the wait and is returned) until timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.3)


def finished(jid, restarts=0):
    """Wait until job (every task of an array) reached a final state; its records."""
    def done():
        jobs = show(jid)
        return jobs if all(j["JobState"] in FINAL and int(j["Restarts"]) >= restarts
                           for j in jobs) else None
    return wait_until(done, f"job {jid} to end")


def write_job(tmp_path, text=JOB, name="tiny"):
    (tmp_path / "jobs").mkdir(exist_ok=True)
    (tmp_path / "jobs" / f"{name}.toml").write_text(text)
    return f"jobs/{name}.toml"


# -- live SLURM -----------------------------------------------------------------------------

@live
@pytest.mark.parametrize("launcher", [{}, {"GCC_MPI_LAUNCHER": "srun",
                                           "GCC_MPI_SRUN_ARGS": "--mpi=pmi2"}],
                         ids=["mpiexec", "srun-pmi2"])
def test_run_sbatch_runs_the_default_job(slurm, tmp_path, launcher):
    """`sbatch --ntasks=12 slurm/run.sbatch` without a job file: the default job on 12 ranks
    (N = 11), started by the MPICH wheel's mpiexec or by srun --mpi=pmi2."""
    env = env_for(tmp_path, **launcher)
    jid = sbatch(slurm, tmp_path, "--ntasks=12", "--output=run.out",
                 str(ROOT / "slurm" / "run.sbatch"), "-q", "--set", "job.trials=3", env=env)
    (job,) = finished(jid)
    log = (tmp_path / "run.out").read_text()
    assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", log
    name = launcher.get("GCC_MPI_LAUNCHER", "mpiexec")
    assert f"job (default) on 12 ranks ({name}, {PY})" in log
    res = read_results(tmp_path / "results" / "default.h5")
    assert res.complete and res.attrs["mpi"].startswith("MPICH")
    for rows in res.points[0].schemes.values():
        assert rows["delay"].shape == (3, 11)  # 3 trials, N = ranks - 1 = 11 workers
    if not launcher:  # analyze.sbatch without a job file: the default job's file
        code, out, err = bash("analyze.sbatch", [], tmp_path)
        assert code == 0, err
        assert "scheme" in out and "uncoded" in out
        rows = json.loads((tmp_path / "results" / "default.json").read_text())
        assert [r["trials"] for r in rows] == [3] * len(res.points[0].schemes)


@live
def test_sweep_sh_runs_the_array_then_merges_and_analyses(slurm, tmp_path):
    """`bash slurm/sweep.sh jobs/sweep-small.toml --ntasks=12`: 4 array tasks (N = 11), then the
    dependent analysis; the merged file holds the 4 points, with the simulator's accuracy."""
    (tmp_path / "jobs").mkdir()
    shutil.copy(ROOT / "jobs" / "sweep-small.toml", tmp_path / "jobs")
    # stragglers 0.5 s late: on a loaded machine no punctual worker is as late, so the fastest
    # N - S are the simulator's (the round does not wait for the stragglers)
    proc = subprocess.run(
        ["bash", str(ROOT / "slurm" / "sweep.sh"), "jobs/sweep-small.toml", "--ntasks=12", GUARD,
         "--", "--set", "job.trials=3", "--set", "stragglers.delay=0.5", "-q"],
        cwd=tmp_path, env=env_for(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    array, analysis = proc.stdout.splitlines()[-1].split()
    slurm += [array, analysis]
    assert "4 sweep point(s), N <= 11" in proc.stderr and "--array=0-3" in proc.stderr
    (done,) = finished(analysis)
    tasks = show(array)
    logs = {p.name: p.read_text() for p in tmp_path.glob("*.out")}
    assert done["JobState"] == "COMPLETED", logs
    assert sorted(int(t["ArrayTaskId"]) for t in tasks) == [0, 1, 2, 3]
    assert all(t["JobState"] == "COMPLETED" and t["NumTasks"] == "12" for t in tasks)
    assert done["Dependency"] == "(null)"  # it waited for the array (afterok), now satisfied
    results = tmp_path / "results"
    merged = read_results(results / "sweep-small.h5")
    assert merged.complete and [p.index for p in merged.points] == [0, 1, 2, 3]
    rows = json.loads((results / "sweep-small.json").read_text())
    assert [(r["point"], r["scheme"], r["trials"]) for r in rows] == [
        ({"stragglers.count": s}, name, 3) for s in (0, 2, 4, 6)
        for name in ("bacc", "letcc", "gcc")]
    sim = tmp_path / "sim.h5"
    assert main(["simulate", str(tmp_path / "jobs" / "sweep-small.toml"), "--set", "job.trials=3",
                 "--set", "stragglers.delay=0.5", "-o", str(sim), "-q"]) == 0
    for p, q in zip(merged.points, read_results(sim).points):
        for name in ("bacc", "gcc"):
            assert np.array_equal(p.schemes[name]["used"], q.schemes[name]["used"])
            # a worker computes f one coded row at a time (BLAS rounds a row as it likes) and
            # gcc's automatic lengthscale may pick a long, ill-conditioned kernel that turns
            # those last bits into 3e-9 of the nmse (measured here); another decoder or
            # another received set differs by far more than 1e-6
            np.testing.assert_allclose(p.schemes[name]["nmse"], q.schemes[name]["nmse"],
                                       rtol=1e-6)


@live
def test_a_failed_array_task_cancels_the_analysis(slurm, tmp_path):
    """Task 1's python fails: the analysis (afterok, --kill-on-invalid-dep) is cancelled
    instead of pending forever, and nothing is merged."""
    job = write_job(tmp_path)
    wrapper = tmp_path / "python"
    wrapper.write_text('#!/bin/bash\n[[ ${SLURM_ARRAY_TASK_ID:-} == 1 ]] && exit 3\n'
                       f'exec "{PY}" "$@"\n')
    wrapper.chmod(0o755)
    env = env_for(tmp_path, GCC_MPI_PYTHON=str(wrapper))
    proc = subprocess.run(["bash", str(ROOT / "slurm" / "sweep.sh"), job, GUARD, "--", "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    array, analysis = proc.stdout.splitlines()[-1].split()
    slurm += [array, analysis]
    (cancelled,) = finished(analysis)
    assert cancelled["JobState"] == "CANCELLED"
    assert cancelled["Reason"] == "DependencyNeverSatisfied"
    states = {int(t["ArrayTaskId"]): (t["JobState"], t["NumTasks"]) for t in finished(array)}
    assert states == {0: ("COMPLETED", "5"), 1: ("FAILED", "5"), 2: ("COMPLETED", "5")}
    log = (tmp_path / f"gcc_mpi-sweep-{array}_1.out").read_text()
    assert f"run.sbatch: {wrapper} cannot import gcc_mpi" in log and "GCC_MPI_PYTHON" in log
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["tiny-p0.h5",
                                                                        "tiny-p2.h5"]


@live
def test_scancel_stops_with_143_and_requeue_resumes(slurm, tmp_path):
    """SIGTERM (scancel; the time limit sends the same): the ranks close the file, the job
    ends with exit code 143; requeued, it appends to its log and resumes to the end."""
    job = write_job(tmp_path, JOB.replace("trials = 3", "trials = 150").replace(
        '[sweep]\n"stragglers.count" = [0, 1, 2]', '[decode]\nwait = "all"'), name="slow")
    jid = sbatch(slurm, tmp_path, "--ntasks=5", "--output=slow.out",
                 str(ROOT / "slurm" / "run.sbatch"), job, "-q")
    out = tmp_path / "results" / "slow.h5"

    def some_trials():
        try:
            return len(read_results(out).points[0].schemes["gcc"]["trial"]) > 0
        except (JobError, OSError, KeyError, IndexError):  # not written yet
            return False
    wait_until(some_trials, "the first trials in the file")
    subprocess.run(["scancel", jid], check=True, timeout=30)
    (job_,) = finished(jid)
    log = (tmp_path / "slow.out").read_text()
    assert job_["JobState"] == "CANCELLED" and job_["ExitCode"] == "143:0", log
    assert "gcc_mpi: stopped by SIGTERM after" in log and "stopped (exit code 143" in log
    first = read_results(out)
    assert not first.complete
    before = {k: v["nmse"] for k, v in first.points[0].schemes.items()}
    assert 0 < min(len(v) for v in before.values()) < 150

    # requeued (SLURM holds a requeued job ~2 min: start it now), it continues the file
    subprocess.run(["scontrol", "requeue", jid], check=True, timeout=30)
    subprocess.run(["scontrol", "update", f"jobid={jid}", "StartTime=now"], check=True,
                   timeout=30)
    (job_,) = finished(jid, restarts=1)
    log = (tmp_path / "slow.out").read_text()
    assert job_["JobState"] == "COMPLETED" and job_["ExitCode"] == "0:0", log
    assert log.count("gcc_mpi: job jobs/slow.toml on 5 ranks") == 2  # appended, not truncated
    res = read_results(out)
    assert res.complete
    for name, nmse in before.items():
        after = res.points[0].schemes[name]
        assert list(after["trial"]) == list(range(150))
        np.testing.assert_array_equal(after["nmse"][:len(nmse)], nmse)


@live
def test_srun_without_pmi_is_refused_but_the_batch_script_runs_gcc_mpi(slurm, tmp_path):
    """srun --mpi=none -n 3: three lone MPI processes, refused (run, probe, simulate: exit 2, one
    line naming PMI, no file). The batch script itself (SLURM_NTASKS=3, no step) runs
    simulate and analyze."""
    job = write_job(tmp_path)
    env = env_for(tmp_path)
    for args in (["-o", "x.h5"], ["probe", job, "-o", "x.h5"],
                 ["simulate", job, "-o", "x.h5"]):
        proc = subprocess.run(["srun", GUARD, "--mpi=none", "-n", "3", PY, "-m", "gcc_mpi", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert proc.returncode != 0, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("gcc_mpi")]
        assert len(lines) == 1 and "SLURM_STEP_NUM_TASKS=3" in lines[0], proc.stderr
        assert ("PMI" in lines[0] and "srun --mpi=pmi2" in lines[0]) or args[0] == "simulate"
        assert "exit code 2" in proc.stderr  # srun: "tasks 0-2: Exited with exit code 2"
        assert not (tmp_path / "x.h5").exists() and not (tmp_path / "results").exists()

    script = tmp_path / "plain.sh"
    script.write_text(f"#!/bin/bash\nset -e\n{PY} -m gcc_mpi simulate {job} -o sim.h5 -q\n"
                      f"{PY} -m gcc_mpi analyze sim.h5 --json > sim.json\n"
                      f"{PY} -m gcc_mpi run {job} -o single.h5 -q\n")
    jid = sbatch(slurm, tmp_path, "--ntasks=3", "--output=plain.out", str(script))
    (job_,) = finished(jid)
    log = (tmp_path / "plain.out").read_text()
    assert job_["JobState"] == "COMPLETED", log
    assert "this is a single process" in log  # `python -m gcc_mpi` alone: the simulator
    assert len(json.loads((tmp_path / "sim.json").read_text())) == 9
    assert read_results(tmp_path / "single.h5").attrs["mpi"] == "simulate"


# -- without SLURM --------------------------------------------------------------------------

def test_which_environments_mean_several_tasks(monkeypatch):
    """The batch script (SLURM_NTASKS, no step id) is one process; an srun step, hydra's PMI
    and Open MPI's mpirun say how many tasks were started, and which one this is."""
    for var in os.environ:
        if var.startswith(("SLURM_", "PMI_", "OMPI_", "MV2_")):
            monkeypatch.delenv(var)
    assert launcher.launched_tasks() is None and launcher.several_tasks_error("run") is None
    monkeypatch.setenv("SLURM_NTASKS", "12")  # sbatch --ntasks=12, inside the batch script
    monkeypatch.setenv("SLURM_PROCID", "0")
    assert launcher.launched_tasks() is None and launcher.several_tasks_error("simulate") is None
    monkeypatch.setenv("SLURM_STEP_ID", "0")  # srun -n 1 python -m gcc_mpi simulate
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")
    assert launcher.launched_tasks() == (1, "SLURM_STEP_NUM_TASKS", 0)
    assert launcher.several_tasks_error("simulate") is None
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "3")  # srun -n 3
    line = launcher.several_tasks_error("run")
    assert line.startswith("MPI sees a single process in each task, but the launcher started 3 "
                           "tasks (SLURM_STEP_NUM_TASKS=3)")  # logged as an error
    assert "\n" not in line and "`srun --mpi=pmi2`" in line and "mpiexec" in line
    monkeypatch.setenv("SLURM_PROCID", "2")
    assert launcher.several_tasks_error("run") == ""  # refused too, silently: task 0 says it
    # hydra inside an allocation: its proxy step has one task per node, PMI_SIZE the ranks
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")
    monkeypatch.setenv("PMI_SIZE", "12")
    monkeypatch.setenv("PMI_RANK", "0")
    assert launcher.launched_tasks() == (12, "PMI_SIZE", 0)
    assert "mpiexec" in launcher.several_tasks_error("run")
    assert launcher.several_tasks_error("simulate").startswith(
        "simulate runs in one process, but the launcher started 12 tasks "
        "(PMI_SIZE=12)")


def test_a_foreign_launcher_is_refused_on_every_rank(tmp_path):
    """Open MPI's mpirun says 5 ranks while the MPICH wheel's mpi4py starts a singleton: exit 2
    on every rank, one line from rank 0, no file."""
    job = write_job(tmp_path)
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PMI_"))}
        env.update(OMPI_COMM_WORLD_SIZE="5", OMPI_COMM_WORLD_RANK=str(rank))
        proc = subprocess.run([PY, "-m", "gcc_mpi", "run", job, "-o", "x.h5"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 2
        ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("gcc_mpi")]
        if rank == 0:  # (mpi4py warns about the environment too, in lines of its own)
            assert len(ours) == 1 and "(OMPI_COMM_WORLD_SIZE=5)" in ours[0], proc.stderr
        else:
            assert ours == []
        assert not (tmp_path / "x.h5").exists()


def bash(script, args, cwd, **env):
    """`bash slurm/SCRIPT ARGS` outside SLURM: (exit code, stdout, stderr)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCC_MPI_"))}
    full.update({"GCC_MPI_PYTHON": PY, "GCC_MPI_OUT": str(cwd / "results"), **env})
    proc = subprocess.run(["bash", str(ROOT / "slurm" / script), *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=TIMEOUT)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("who", ["script", "launcher"])
def test_a_stop_ends_with_143_whatever_mpiexec_says(tmp_path, who):
    """hydra may answer a stop with "BAD TERMINATION" and 255 (the OR of the ranks' codes) or
    15 (a rank it saw die by SIGTERM): run.sbatch exits 143, the documented code. SLURM's
    SIGTERM reaches the batch shell and every process (script), or only the ranks (launcher:
    sbatch --signal=TERM@60)."""
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/bash\ntrap 'echo BAD TERMINATION >&2; exit $code' TERM\n"
                    "echo $$ > started.tmp; mv started.tmp started\nwhile :; do sleep 0.1; done\n")
    fake.chmod(0o755)
    code = "255" if who == "script" else "15"
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCC_MPI_"))}
    full.update(GCC_MPI_PYTHON=PY, GCC_MPI_MPIEXEC=str(fake), SLURM_NTASKS="3", code=code)
    proc = subprocess.Popen(["bash", str(ROOT / "slurm" / "run.sbatch")], cwd=tmp_path,
                            env=full, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(lambda: (tmp_path / "started").exists(), "the fake mpiexec to start", 60)
        if who == "script":
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            os.kill(int((tmp_path / "started").read_text()), signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, err
    assert "BAD TERMINATION" in err and "gcc_mpi: stopped (exit code 143" in err
    if who == "launcher":  # (the script's own wait may end first, with 143, when it is signalled)
        assert "gcc_mpi: stopped (exit code 143; mpiexec said 15); results/default.h5" in err


def test_job_time_limit_and_failures_keep_their_exit_codes(tmp_path):
    """Without a signal, run.sbatch exits with the launcher's code: 124 (job.time_limit), 1, 2."""
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/bash\nexit $code\n")
    fake.chmod(0o755)
    for code in (124, 1, 2, 0):
        full = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCC_MPI_"))}
        full.update(GCC_MPI_PYTHON=PY, GCC_MPI_MPIEXEC=str(fake), SLURM_NTASKS="3",
                    code=str(code))
        proc = subprocess.run(["bash", str(ROOT / "slurm" / "run.sbatch")], cwd=tmp_path,
                              env=full, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == code, proc.stderr
        assert ("stopped (exit code 124)" in proc.stderr) == (code == 124)


def test_script_errors_are_one_clear_line(tmp_path):
    job = write_job(tmp_path)
    code, _, err = bash("run.sbatch", [job], tmp_path, GCC_MPI_LAUNCHER="aprun")
    assert code == 2 and "GCC_MPI_LAUNCHER must be srun or mpiexec, got 'aprun'" in err
    code, _, err = bash("run.sbatch", [job], tmp_path, GCC_MPI_PYTHON="/nonexistent/python")
    assert code == 2 and err.count("\n") == 1
    assert "python '/nonexistent/python' (GCC_MPI_PYTHON=/nonexistent/python) is not found" in err
    other = tmp_path / "python3"  # a python of another environment
    other.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'gcc_mpi'\" >&2\n"
                     "exit 1\n")
    other.chmod(0o755)
    code, _, err = bash("run.sbatch", [job], tmp_path, GCC_MPI_PYTHON=str(other))
    assert code == 2 and err.count("\n") == 1
    assert f"{other} cannot import gcc_mpi and mpi4py (ModuleNotFoundError: No module " in err
    assert "set GCC_MPI_PYTHON to the python of the environment that has gcc_mpi" in err
    code, _, err = bash("analyze.sbatch", [job], tmp_path)
    assert code == 2 and "neither" in err
    code, _, err = bash("analyze.sbatch", [job], tmp_path, GCC_MPI_PYTHON="/nonexistent/py")
    assert code == 2 and "set GCC_MPI_PYTHON" in err
    assert not (tmp_path / "results").exists()
    # sweep.sh: the job is checked, and the allocation, before anything is submitted
    code, out, err = bash("sweep.sh", [], tmp_path)
    assert code == 2 and "usage: bash slurm/sweep.sh JOB.toml" in err
    code, out, err = bash("sweep.sh", [job, "--", "--set", "code.workers=0"], tmp_path)
    assert code == 2 and "gcc_mpi: error: code.workers: must be" in err and out == ""
    code, out, err = bash("sweep.sh", [job, "-n", "4"], tmp_path)
    assert code == 2 and out == ""
    assert "--ntasks=4 is too few for jobs/tiny.toml: a sweep point has code.workers = 4, " \
           "which needs 5 ranks" in err
