"""Ranks on several hosts: the three hosts of .ci/hosts-up.sh (network, UTS and mount
namespaces on this machine; docs/clusters.md), 2 or 3 ranks on each, rank 0 and mpiexec on the
first, the others reached through .ci/hosts-ssh (tests/mpirun.py's ``Launch(hosts=R)``). What
runs only there: the delays of workers off rank 0's node counted from receipt, the hosts in the
results and probe files, deaths and silences that rank 0 cannot see by pid.

The bed is brought up here (as root) if it is not; where it cannot be, the tests (marked
``hosts``, a tier of tests/tiers.py) skip with the reason and how to run them, and fail under
GCC_MPI_TEST_HOSTS=required (set by .ci/run). Both of .ci/run's stages run them (MPICH and
Open MPI). Faults come from outside, once the results file shows the run under way; nothing
waits a fixed time.
"""

import json
import os
import re
import signal
import subprocess

import pytest
from mpirun import BED, CI, KEEP_GOING, OPENMPI, Launch, needs_mpiexec, ranks_of, run
from test_faults import SLOW, SLOW_F, assert_consistent, trials_in, write
from test_runtime import AGREE, assert_same_as_simulate
from tiers import unavailable

from gcc_mpi.core.erasures import HUNG, LOST
from gcc_mpi.files.traces import read_probe
from gcc_mpi.files.reader import read_results

on_hosts = pytest.mark.hosts

HOSTS = r"gcc_mpi: ranks by host and pid: (.*)\n"  # the whole line


@pytest.fixture(scope="module")
def bed():
    """The bed's hosts, up (.ci/hosts-up.sh is idempotent: a second call only checks)."""
    up = subprocess.run(["bash", str(CI / "hosts-up.sh")], capture_output=True, text=True,
                        timeout=120)
    if up.returncode != 0:
        why = ((up.stderr.strip() or up.stdout.strip()).splitlines() or ["no output"])[-1]
        unavailable("hosts", f"no multi-host bed (.ci/hosts-up.sh failed: {why})")
    return BED


def on(job, host):
    """The worker ranks of ``job`` on ``host`` (from rank 0's start-up line)."""
    job.wait_for(lambda: re.search(HOSTS, job.err()), "the start-up line")
    return sorted(r for r, (_, h) in ranks_of(job.err()).items() if h == host and r > 0)


def start_slow(tmp_path, trials=40, env=None, options=(), hosts=2):
    """slow.toml (tests/test_faults.py) over the hosts, ``hosts`` ranks each, under way: the
    launch, once 3 trials are in the file."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "h.h5", "-q", "--set", f"job.trials={trials}"],
                 tmp_path, hosts=hosts, mpiexec_options=options, env=env)
    job.wait_for(lambda: trials_in(tmp_path / "h.h5") >= 3, "3 trials in the file")
    return job


@needs_mpiexec
@on_hosts
def test_the_default_job_runs_over_three_hosts_and_records_them(tmp_path, bed):
    code, out, err = run(["-o", "d.h5", "--set", "job.trials=5"], tmp_path, hosts=3)
    assert code == 0, err
    res = read_results(tmp_path / "d.h5")
    assert res.complete and "gcc" in out
    assert json.loads(res.attrs["hosts"]) == [h for h in bed for _ in range(3)]
    assert {h for _, h in ranks_of(err).values()} == set(bed)


@needs_mpiexec
@on_hosts
def test_simulate_agrees_with_mpi_when_workers_are_off_rank_0s_node(tmp_path, bed):
    """tests/test_runtime.py's AGREE job (N = 6 and 8, 2 fixed stragglers 1 s late) on 3 x 3
    ranks: 6 of the 8 workers are on other hosts, where a TASK's delay counts from its
    receipt, not from rank 0's clock; the used sets and accuracy are the simulator's."""
    (tmp_path / "agree.toml").write_text(AGREE)
    code, _, err = run(["run", "agree.toml", "-o", "run.h5", "-q"], tmp_path, hosts=3)
    assert code == 0, err
    code, _, err = run(["simulate", "agree.toml", "-o", "sim.h5", "-q"], tmp_path)
    assert code == 0, err
    mpi = read_results(tmp_path / "run.h5")
    assert json.loads(mpi.attrs["hosts"])[3:] == [bed[1]] * 3 + [bed[2]] * 3
    assert_same_as_simulate(mpi, read_results(tmp_path / "sim.h5"))


@needs_mpiexec
@on_hosts
def test_probe_has_a_row_per_worker_with_its_host(tmp_path, bed):
    code, out, err = run(["probe", "-o", "p.h5", "--rounds", "20"], tmp_path, hosts=2)
    assert code == 0, err
    p = read_probe(tmp_path / "p.h5")
    assert list(p["host"]) == [bed[0], bed[1], bed[1], bed[2], bed[2]]
    assert p["attrs"]["master_host"] == bed[0]
    rows = [line.split() for line in out.splitlines()]
    assert [r[2] for r in rows if r and r[0].isdigit()] == list(p["host"])  # worker, rank, host


@needs_mpiexec
@on_hosts
def test_a_worker_killed_on_another_host(tmp_path, bed):
    """SIGKILL of a worker on the second host. ULFM: MPI reports it (no pid of rank 0's node
    to look at); it is a permanent straggler and the job completes. MPICH (plain hydra): that
    host's proxy ends its other ranks, the other proxies fail an assertion and end theirs, so
    rank 0's witness has no one to forward its line: the warden of the second host names the
    rank (``warden.MidRun``); the file keeps the trials committed, complete = false."""
    job = start_slow(tmp_path, options=KEEP_GOING if OPENMPI else ())
    victim = on(job, bed[1])[0]
    os.kill(ranks_of(job.err())[victim][0], signal.SIGKILL)
    code, _, err = job.wait()
    res = read_results(tmp_path / "h.h5")
    assert_consistent(res, at_most=40)
    if OPENMPI:
        assert code == 0 and res.complete, err
        lost = json.loads(res.attrs["lost"])
        assert [e["rank"] for e in lost] == [victim], err
        assert re.search(rf"gcc_mpi: rank {victim} \(worker \d+, pid \d+ on {bed[1]}\) died "
                         r"during trial \d+", err), err
        t = lost[0]["trial"]
        assert (res.points[0].schemes["bacc"]["error"][t + 1:, victim - 1] == LOST).all()
    else:
        assert code != 0 and not res.complete, err
        said = re.findall(r"gcc_mpi: (?!ranks by host).*", err)
        assert len(said) == 1, err
        assert re.match(rf"gcc_mpi: rank {victim} \(worker {victim - 1}, pid \d+ on {bed[1]}\) "
                        rf"died first and the job ended with it \(seen by {bed[1]}'s warden\)",
                        said[0]), err


@needs_mpiexec
@on_hosts
def test_a_worker_that_exits_on_another_host(tmp_path, bed):
    """os._exit(3) in f on a worker of the third host, with the MPI's keep-going option.
    Under ULFM the daemon of that host reports it (on rank 0's own node Open MPI 5.0.11 does
    not: rank 0 looks for the pid there), so it is a permanent straggler and the job completes
    (the launcher returns the dead rank's code, 3). Under MPICH hydra's notice comes, rank 0
    cannot tell which rank it was and stops the job with one line (the file keeps every
    committed trial)."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    env = {"DIE_RANK": "5", "DIE_AT": "8", "DIE_HOW": "exit"}  # rank 5: the third host's
    code, _, err = run(["run", "slow.toml", "-o", "x.h5", "-q", "--set", "job.trials=12"],
                       tmp_path, hosts=2, mpiexec_options=KEEP_GOING, env=env)
    assert ranks_of(err)[5][1] == bed[2]
    res = read_results(tmp_path / "x.h5")
    assert_consistent(res, at_most=12)
    if OPENMPI:
        assert code == 3 and res.complete, err
        assert [e["rank"] for e in json.loads(res.attrs["lost"])] == [5], err
        assert res.points[0].schemes["bacc"]["error"][-1, 4] == LOST
    else:
        assert code == 1 and not res.complete, err
        assert "gcc_mpi: a rank died (hydra reported a dead process) but not on rank 0's " \
               "node, so rank 0 cannot tell which" in err, err


@needs_mpiexec
@on_hosts
def test_a_worker_stopped_for_good_on_another_host(tmp_path, bed):
    """SIGSTOP of a worker on the second host, never continued: after HANG_MIN (3 s) without
    a reply rank 0 counts it as hung, the rounds go on without it (error code 5), and at the
    end a worker of its host resumes it (SIGCONT), so that it takes its EXIT: exit 0, a
    complete file naming it in ``hung``."""
    job = start_slow(tmp_path, trials=60)
    victim = on(job, bed[1])[-1]
    os.kill(ranks_of(job.err())[victim][0], signal.SIGSTOP)
    code, _, err = job.wait()
    assert code == 0, err
    res = read_results(tmp_path / "h.h5")
    assert res.complete
    assert_consistent(res, at_most=60)
    hung = json.loads(res.attrs["hung"])
    assert [(e["rank"], e["host"]) for e in hung] == [(victim, bed[1])], err
    t = hung[0]["trial"]
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 60 and not d["used"][t + 1:, victim - 1].any(), name
    assert (res.points[0].schemes["bacc"]["error"][t + 1:, victim - 1] == HUNG).all()
    assert not res.points[0].schemes["bacc"]["failed"].any()


@needs_mpiexec
@on_hosts
@pytest.mark.ulfm
def test_an_abort_ends_the_job_when_the_only_rank_of_a_host_is_stopped(tmp_path, bed):
    """Under ULFM: the third host's first worker killed (survived), its other one stopped for
    good. At the end no live rank of that host can resume it, so rank 0 ends the job (revoke,
    exit 1); the stopped rank never sees the revoke and Open MPI's mpiexec would wait for it
    for ever, until the warden of rank 0's host ends mpiexec 5 s after the abort. No process
    is left on any host (``Launch.wait``); the file is complete."""
    job = start_slow(tmp_path, trials=30, options=KEEP_GOING)
    first, last = on(job, bed[2])
    ranks = ranks_of(job.err())
    os.kill(ranks[first][0], signal.SIGKILL)
    job.wait_for_err(rf"rank {first} \(worker \d+, pid \d+ on {bed[2]}\) died", 60)
    os.kill(ranks[last][0], signal.SIGSTOP)
    code, _, err = job.wait()
    assert code != 0, err
    assert f"rank {last} on {bed[2]} does not answer and no live rank of {bed[2]} can end it" \
        in err, err
    assert job.processes() == []
    assert read_results(tmp_path / "h.h5").complete


@needs_mpiexec
@on_hosts
def test_rank_0_killed_leaves_no_process_on_any_host(tmp_path, bed):
    """SIGKILL of rank 0: the launcher ends every rank on every host (``Launch.wait`` fails
    if any process of the launch, on any host, outlives it by 10 s), and no line blames a
    worker (a host's warden sees its ranks killed, but rank 0 died first: ``warden.MidRun``);
    the file on disk is the last commit."""
    job = start_slow(tmp_path)
    assert len(on(job, bed[2])) == 2
    os.kill(ranks_of(job.err())[0][0], signal.SIGKILL)
    code, _, err = job.wait()
    assert code != 0
    assert job.processes() == []
    assert "died first" not in err, err
    res = read_results(tmp_path / "h.h5")
    assert not res.complete and trials_in(tmp_path / "h.h5") >= 3
