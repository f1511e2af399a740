"""The resource check counts everything and refuses up front; running out during a run is one
line and exit code 1, the results file at its last commit.

A full disk is a child whose file size is limited (RLIMIT_FSIZE: its writes fail with EFBIG as
they would with ENOSPC on a full disk; benchmarks/long_job.py's notes and docs/reliability.md
also show a real full tmpfs), memory a child whose address space is limited (RLIMIT_AS) running
a decoder that needs more.
"""

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpirun import needs_mpiexec, ours, run

from gcc_mpi.core import resources
from gcc_mpi.cli.main import main
from gcc_mpi.job.parse import load_job, parse_job
from gcc_mpi.errors import JobError
from gcc_mpi.files.reader import ResultsFile
from test_faults import assert_same_results

JOBS = Path(__file__).resolve().parent.parent / "jobs"
# run main() with a resource limit set once gcc_mpi and what it imports are loaded
LIMITED = textwrap.dedent("""
    import resource, sys
    import h5py, numpy, scipy.linalg
    import gcc_mpi.codes.letcc, gcc_mpi.files.writer, gcc_mpi.core.simulate
    from gcc_mpi.cli.main import main
    which, extra = getattr(resource, sys.argv[1]), int(sys.argv[2])
    if which == resource.RLIMIT_AS:  # on top of what the process maps already
        status = open("/proc/self/status").read()
        extra += int(status.split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(which, (extra, extra))
    if sys.argv[3] == "-c":
        code, sys.argv = sys.argv[4], [sys.argv[0], *sys.argv[5:]]
        exec(code)
    else:
        sys.exit(main(sys.argv[3:]))
""")


def limited(tmp_path, which, extra, args):
    """Run ``main(args)`` in a child limited by resource ``which`` (or, for args "-c CODE",
    the code ``CODE``) and return what it did."""
    return subprocess.run([sys.executable, "-c", LIMITED, which, str(extra), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def one_line(capsys, argv, code, start):
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(start), err
    return err


SMALL = ["code.workers=20", 'code.schemes=["bacc"]']
WIDE = ["code.workers=400", 'code.schemes=["bacc"]']


# digits-mlp has 5 sweep points x 4 schemes: 20 groups of 23 datasets. Its 1000 trials took 43
# s of CI for what sphere-poly's 1000 trials (chunks filled and spilled) check as well.
@pytest.mark.parametrize("job_file, sets, trials", [
    *[("sphere-poly.toml", sets, t) for sets in (SMALL, WIDE) for t in (1, 150, 1000)],
    ("digits-mlp.toml", [], 1), ("digits-mlp.toml", [], 150)])
def test_the_file_estimate_is_what_the_writer_writes(tmp_path, job_file, sets, trials):
    """file_bytes against real files: whole chunks per dataset, a checksum per chunk, the
    strings' heap. Measured (estimate / file) 1.00-1.04 from 1 to 3000 trials, N = 20 to 400,
    1 to 20 (point, scheme) groups; before chunks were counted, 150 trials of digits-mlp were
    estimated at half their 5.2 MB and 1 trial at a twelfth. Never below by more than 2%, above
    by at most 10%."""
    out = tmp_path / "o.h5"
    sets = [*sets, f"job.trials={trials}"]
    assert main(["simulate", str(JOBS / job_file), "-o", str(out), "-q",
                 *[a for s in sets for a in ("--set", s)]]) == 0
    job = load_job(JOBS / job_file, sets)
    ratio = resources.file_bytes(job.points, trials) / out.stat().st_size
    assert 0.98 < ratio < 1.1, ratio


def test_check_disk_counts_the_trials_or_what_the_time_limit_allows(tmp_path):
    job = parse_job('[job]\ntrials = 1000\n[code]\nworkers = 40\nschemes = ["bacc", "gcc"]\n')
    per_trial = resources.record_bytes(job.points[0].config)
    assert per_trial == 2 * (resources.RECORD_BYTES * 40 + resources.TRIAL_BYTES)
    empty = resources.file_bytes(job.points, 0)
    out = tmp_path / "o.h5"
    assert resources.check_disk(job, job.points, out, free=10**9) == \
        resources.file_bytes(job.points, 1000)
    with pytest.raises(JobError, match=r"^job.trials: the results file would reach about"):
        resources.check_disk(job, job.points, out, free=999 * per_trial)
    timed = job.with_overrides(["job.time_limit=10"])
    # 10 s at 0.1 s per trial: 100 trials fit where 1000 do not
    hundred = resources.file_bytes(timed.points, 100)
    assert resources.check_disk(timed, timed.points, out, free=hundred,
                                seconds_per_trial=lambda p: 0.1) == hundred
    with pytest.raises(JobError, match=r"^job.time_limit: in 10 s this job may run about 100 "):
        resources.check_disk(timed, timed.points, out, free=hundred - 1,
                             seconds_per_trial=lambda p: 0.1)
    out.write_bytes(b"x" * (empty + 400 * per_trial))  # --resume: what the file holds is written
    assert resources.check_disk(job, job.points, out, resume=True,
                                free=700 * per_trial) == \
        resources.file_bytes(job.points, 1000) - out.stat().st_size


def test_a_job_whose_file_cannot_fit_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """10^12 trials: refused before anything is written (exit 2, one line); with a time limit
    the trials it allows count (timed on a few trials), and a short one runs."""
    monkeypatch.chdir(tmp_path)
    job = str(JOBS / "sphere-poly.toml")
    many = ["--set", "job.trials=1000000000000"]
    one_line(capsys, ["simulate", job, *many, "-o", "big.h5"], 2,
             "gcc_mpi: error: job.trials: the results file would reach about ")
    one_line(capsys, ["simulate", job, *many, "--set", "job.time_limit=1e9", "-o", "big.h5"],
             2, "gcc_mpi: error: job.time_limit: in 1e+09 s this job may run about ")
    assert not (tmp_path / "big.h5").exists()
    assert main(["simulate", job, *many, "--set", "job.time_limit=6", "-o", "big.h5", "-q"]) \
        == 124
    capsys.readouterr()
    with ResultsFile("big.h5") as f:
        assert f.trials(0, "gcc") > 0 and not f.complete
    # too little memory: refused however many trials (memory no longer grows with them)
    monkeypatch.setattr(resources, "memory_limit", lambda: (100 * 2**20, "memory"))
    one_line(capsys, ["simulate", job, *many, "-o", "small.h5"], 2,
             "gcc_mpi: error: code.schemes: N = 40 workers need about ")


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from gcc_mpi.errors import ResourceError
    from gcc_mpi.files.writer import ResultWriter
    try:
        with ResultWriter(sys.argv[1], config_toml="x = 1", command="t", mpi="simulate",
                          resume=True) as w:
            w.add_point(0, {})
            t = w.align(0, ["a"])
            while t < 3000:
                w.append(0, "a", {"trial": np.arange(t, t + 50), "delay": np.ones((50, 100))})
                t += 50
                w.commit()
                print(t, flush=True)
    except ResourceError as e:
        print("full:", e, flush=True)
""")


def test_a_full_disk_keeps_the_last_commit_and_resume_continues(tmp_path):
    """The writer commits every 50 trials (40 KB) until the file may grow no more: a
    ResourceError naming the file, which holds its last commit, no byte past it; --resume
    (no limit) continues to the whole run."""
    r = limited(tmp_path, "RLIMIT_FSIZE", 300_000, ["-c", WRITER, "w.h5"])
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[-1].startswith("full: cannot write w.h5: File too large; "
                                                      "it holds its last commit, and --resume"), r
    committed = int(lines[-2])
    assert 0 < committed < 3000 and (tmp_path / "w.h5").stat().st_size <= 300_000
    with ResultsFile(tmp_path / "w.h5") as f:
        assert f.read(0, "a")["trial"].tolist() == list(range(committed))
    r = subprocess.run([sys.executable, "-c", WRITER, "w.h5"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "3000", r
    with ResultsFile(tmp_path / "w.h5") as f:
        d = f.read(0, "a")
        assert d["trial"].tolist() == list(range(3000)) and (d["delay"] == 1).all()


def test_a_full_disk_in_a_run_is_one_line_and_exit_1(tmp_path):
    job = str(JOBS / "sphere-poly.toml")
    sets = ["--set", "job.trials=150", "--set", 'code.schemes=["bacc", "letcc"]']
    r = limited(tmp_path, "RLIMIT_FSIZE", 100_000, ["simulate", job, *sets, "-o", "cut.h5"])
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("gcc_mpi: error: cannot write cut.h5: File too large"), r.stderr
    with ResultsFile(tmp_path / "cut.h5") as f:  # whatever it held last, it opens
        assert not f.complete
    assert main(["simulate", job, *sets, "-o", str(tmp_path / "cut.h5"), "--resume", "-q"]) == 0
    assert main(["simulate", job, *sets, "-o", str(tmp_path / "full.h5"), "-q"]) == 0
    assert_same_results(tmp_path / "cut.h5", tmp_path / "full.h5")


def test_out_of_memory_is_one_line_and_the_file_keeps_its_last_commit(tmp_path):
    """Point 1's decoder needs the global smoother of 4500 results (a large fixed lambda is
    not local): 4500^2 floats per matrix, more than the 250 MB the child has left."""
    (tmp_path / "mem.toml").write_text(
        '[job]\nname = "mem"\ntrials = 20\n[data]\nsource = "sphere"\ndim = 3\nbatch = 4\n'
        '[target]\nkind = "polynomial"\ndegree = 2\noutputs = 2\n[code]\nschemes = ["letcc"]\n'
        '[code.letcc]\nlambda_dec = 1000.0\n[stragglers]\nmodel = "none"\n'
        '[sweep]\n"code.workers" = [20, 4500]\n')
    r = limited(tmp_path, "RLIMIT_AS", 250 * 2**20, ["simulate", "mem.toml", "-o", "m.h5"])
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("gcc_mpi: error: out of memory (MemoryError)"), r.stderr
    with ResultsFile(tmp_path / "m.h5") as f:
        assert not f.complete and f.trials(0, "letcc") == 20
        assert all(p.index == 0 or not p.schemes for p in f.points)
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY  # ours untouched


F = """
import os, resource
if os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK")) == "0" and LIMIT:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def f(X):
    return X[:, :2] ** 2
"""
FULL = ('[job]\nname = "full"\ntrials = 400\n[data]\nsource = "sphere"\ndim = 3\nbatch = 3\n'
        '[target]\nkind = "python"\nfunction = "f.py:f"\n[code]\nworkers = 4\n'
        'schemes = ["bacc", "letcc"]\n[stragglers]\nmodel = "none"\n')


@needs_mpiexec
def test_a_full_disk_in_an_mpi_run_is_one_line_from_rank_0_and_exit_1(tmp_path):
    """Rank 0 of 5 finds its file may grow no more (its f's module sets RLIMIT_FSIZE when rank 0
    imports it, after MPI started): one line, MPI_Abort's exit code 1, the file at its last
    commit; --resume (no limit) continues it to the end."""
    (tmp_path / "f.py").write_text("LIMIT = 150_000\n" + F)
    (tmp_path / "full.toml").write_text(FULL)
    code, _, err = run(["run", "full.toml", "-o", "cut.h5", "-q"], tmp_path, 5)
    errors = [line for line in err.splitlines() if line.startswith("gcc_mpi: error:")]
    assert code == 1 and "ResourceError" not in err and "writer.py" not in err, err
    assert len(errors) == 1 and errors[0].startswith("gcc_mpi: error: cannot write cut.h5: "
                                                     "File too large"), err
    # the one line is the last: no "Abort(1) ..." of MPICH's, no traceback cut off mid-print
    assert ours(err).splitlines()[-1] == errors[0] and "Traceback" not in err, err
    with ResultsFile(tmp_path / "cut.h5") as f:
        held = {f.trials(p.index, s) for p in f.points for s in p.schemes}
        assert not f.complete and len(held) <= 1 and held <= set(range(400))
    (tmp_path / "f.py").write_text("LIMIT = None\n" + F)
    code, _, err = run(["run", "full.toml", "-o", "cut.h5", "--resume", "-q"], tmp_path, 5)
    assert code == 0, err
    with ResultsFile(tmp_path / "cut.h5") as f:
        assert f.complete and f.trials(0, "bacc") == f.trials(0, "letcc") == 400
