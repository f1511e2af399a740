"""Crash safety of the results writer: SIGKILL at random moments and inside a commit.

tests/writer_child.py appends known rows (``rows``) and commits every few milliseconds; each
kill must leave a file that gcc_mpi reads whole (trials 0..n-1 of every scheme, as written) and
that --resume continues to exactly what an uninterrupted writer writes. A kill before a commit's
pages are in place leaves the last commit, which plain h5py opens; a kill while they are written
leaves the journal, which the next opener applies. The children wait for events on their stdout
("committed", "in place", "in commit"), never for a fixed time.
"""

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

import writer_child
from writer_child import POINTS, SCHEMES, TRIALS, rows

from gcc_mpi.files import journal
from gcc_mpi.files.journal import journal_path
from gcc_mpi.files.reader import ResultsFile

CHILD = Path(__file__).resolve().parent / "writer_child.py"
TIMEOUT = 60  # seconds for a child to reach an event (a guard against hangs)


class Child:
    def __init__(self, path, *args):
        self.proc = subprocess.Popen([sys.executable, str(CHILD), str(path), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = []

    def wait_for(self, predicate):
        """Read stdout lines until ``predicate(line)``; False if the child ended first."""
        until = time.monotonic() + TIMEOUT
        while time.monotonic() < until:
            if select.select([self.proc.stdout], [], [], 1.0)[0]:
                line = self.proc.stdout.readline().decode()
                if not line:
                    return False
                self.lines.append(line)
                if predicate(line):
                    return True
        self.kill()
        raise AssertionError(f"no event within {TIMEOUT} s: {self.lines[-3:]}")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def plain_h5py_opens(path):
    """Whether plain h5py (no gcc_mpi, another process) opens the file and its datasets."""
    code = ("import h5py, sys; f = h5py.File(sys.argv[1], 'r', locking=False); "
            "[f[p][s][d].shape for p in f for s in f[p] for d in f[p][s]]")
    return subprocess.run([sys.executable, "-c", code, str(path)],
                          capture_output=True).returncode == 0


def assert_rows(path, complete=False):
    """Every (point, scheme) holds trials 0..n-1 exactly as written, n equal across schemes."""
    with ResultsFile(path) as f:
        assert not complete or f.complete
        for p in f.points:
            n = {f.trials(p.index, s) for s in p.schemes}
            assert len(n) == 1, n
            n = n.pop()
            assert not complete or n == TRIALS
            for s in p.schemes:
                d, want = f.read(p.index, s), rows(0, n)
                assert d.keys() == want.keys()
                for k in d:
                    assert np.array_equal(d[k], want[k]), (p.index, s, k)
        return [f.trials(p.index, SCHEMES[0]) for p in f.points]


KILL_SECONDS = 15  # kills go on for this long (at least MIN_KILLS of them)
MIN_KILLS = 6


def test_random_kills_leave_readable_files_that_resume_to_the_whole_run(tmp_path):
    """Many SIGKILLs of one writer's file, each at a random moment: every other one after a
    random number of commits, the others at a random moment of a commit's in-place writes
    (the writer sleeps between two halves of its pages: a torn commit). After each, the file
    holds at least what the writer said it committed, exactly as written; then the run goes on
    to a complete file equal to an uninterrupted run."""
    path = tmp_path / "out.h5"
    rng = random.Random(26)
    kills = torn = 0
    done = False
    start = time.monotonic()
    while not done and (kills < MIN_KILLS or time.monotonic() - start < KILL_SECONDS):
        tearing = kills % 2 == 1
        child = Child(path, *(["--slow-in-place"] if tearing else []))
        wanted, seen = rng.randint(1, 6), 0

        def event(line):
            nonlocal seen
            seen += line.startswith("in place" if tearing else "committed")
            return seen >= wanted or line.startswith("done")

        if not child.wait_for(event) or child.lines[-1].startswith("done"):
            done = True
        else:
            time.sleep(rng.uniform(0, writer_child.IN_PLACE_SECONDS if tearing else 0.02))
        child.kill()
        kills += 1
        journal_left = os.path.exists(journal_path(path))
        torn += journal_left
        assert journal_left or plain_h5py_opens(path)
        held = assert_rows(path)  # gcc_mpi finishes a commit a journal holds
        said = [line for line in child.lines if line.startswith("committed")]
        if said:
            point, trials = map(int, said[-1].split()[1:])
            assert held[point] >= trials  # nothing the writer said it committed is lost
        assert not os.path.exists(journal_path(path))
        assert not journal_left or plain_h5py_opens(path)  # the finished commit is plain HDF5
    assert kills >= MIN_KILLS and torn >= 1, (kills, torn)
    if not done:
        child = Child(path)
        assert child.wait_for(lambda line: line.startswith("done"))
        child.kill()
    assert_rows(path, complete=True)
    with h5py.File(path, "r", locking=False) as f:
        assert f.attrs["complete"] and len(f) == POINTS


def test_a_kill_inside_a_commit_is_finished_by_the_next_opener(tmp_path, monkeypatch):
    """Killed while the second commit writes its pages in place: the journal is left beside
    the file; a reader finds it and, no writer being alive, applies it (the file then holds
    that commit, and plain h5py opens it again); --resume continues."""
    monkeypatch.setattr(journal, "READ_WAIT", 0.2)  # the paused commit never lets go
    path = tmp_path / "out.h5"
    child = Child(path, "--pause-in-commit")
    assert child.wait_for(lambda line: line.startswith("in commit"))
    # the writer is alive and holds its lock: a reader reads through the journal and leaves it
    held_live = assert_rows(path)
    assert os.path.exists(journal_path(path)) and sum(held_live) > 0
    child.kill()
    assert os.path.exists(journal_path(path))
    held = assert_rows(path)
    assert held == held_live and not os.path.exists(journal_path(path))
    assert plain_h5py_opens(path)
    child = Child(path)
    assert child.wait_for(lambda line: line.startswith("done"))
    child.kill()
    assert_rows(path, complete=True)
