"""Launching `[mpiexec -n R] python -m gcc_mpi ARGS` from the tests: each launch is a subprocess
in its own session with a timeout; on timeout its whole process group is killed and the test
fails, so no rank outlives a test.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 120  # seconds per launch (a guard against hangs, not a measurement)


def _find_mpiexec():
    near = Path(sys.executable).with_name("mpiexec")  # the mpich wheel's, next to this python
    return str(near) if near.exists() else shutil.which("mpiexec")


MPIEXEC = _find_mpiexec()
# mpich (its mpiexec) is a hard dependency: a missing mpiexec is a broken install, so a test
# that launches ranks fails (in Launch) instead of being skipped; the mark only labels them.
needs_mpiexec = pytest.mark.mpi


class Launch:
    """`[mpiexec [options] -n ranks] python -m gcc_mpi ARGS` in its own session; output goes to
    files so that a test can read stderr while the job runs."""

    def __init__(self, args, cwd, ranks=None, mpiexec_options=(), env=None, name="job"):
        cmd = [sys.executable, "-m", "gcc_mpi", *args]
        if ranks is not None:
            if MPIEXEC is None:
                pytest.fail("no mpiexec beside python or on PATH: the mpich wheel (a dependency "
                            "of gcc_mpi) is not installed")
            cmd = [MPIEXEC, *mpiexec_options, "-n", str(ranks), *cmd]
        full_env = {k: v for k, v in os.environ.items() if k != "GCC_MPI_WAIT"}
        full_env.update(OPENBLAS_NUM_THREADS="1", **(env or {}))
        self.out_path, self.err_path = cwd / f"{name}.out", cwd / f"{name}.err"
        self.cmd = " ".join(cmd)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=out, stderr=err,
                                         start_new_session=True)
        self.deadline = time.monotonic() + TIMEOUT

    def err(self):
        return self.err_path.read_text()

    def signal(self, signum):
        self.proc.send_signal(signum)

    def kill(self):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

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
        """(exit code, stdout, stderr) once the job ends; kills it and fails on timeout."""
        try:
            self.proc.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.cmd} did not finish in {TIMEOUT} s\n{self.err()[-3000:]}")
        return self.proc.returncode, self.out_path.read_text(), self.err()

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


def run(args, cwd, ranks=None, **kw):
    return Launch(args, cwd, ranks, **kw).wait()
