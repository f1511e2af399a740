"""Stopping a job cleanly: SIGTERM (SLURM's time limit, scancel), SIGINT (Ctrl-C) and the job's
own deadline ``job.time_limit``. No MPI here: the simulator and the MPI runtime share it.

The signal handlers only take note; the trial loops call ``check()``, which raises
``Interrupted`` at a point where the state is clean (between trials in the simulator; in the MPI
master also while it waits for results, so a round with long delays is abandoned at once). Work
whose result is dropped whole on a stop runs inside ``abandoning()``, where the handler (and, for
the deadline, an alarm) raises ``Interrupted`` at once: the simulator's set-up and block of
trials, the MPI master's reference f(X), encodes and decodes, a worker's call of f (on its own
signal), so a trial that takes minutes (K = 2000, N = 3000: 40 s) does not hold a stop up for
the rest of it (24 s measured before), only for the numpy call under way. What a stop may still
wait for, f's calls under way, is said at start-up when f is slow (``wait_line``).
Whoever catches ``Interrupted`` keeps every finished trial, closes the file with ``complete =
false`` and exits with ``Interrupted.code``; ``--resume`` continues from there. A second Ctrl-C
raises KeyboardInterrupt immediately (the hard way out).

Exit codes: 143 (128 + SIGTERM), 130 (128 + SIGINT), 124 when job.time_limit is reached (as
timeout(1)).
"""

import signal
import threading
import time
from contextlib import nullcontext

TIME_LIMIT_CODE = 124
SIGNALS = (signal.SIGTERM, signal.SIGINT)
SIGALRM = signal.SIGALRM
PROMPT = 2.0  # seconds a stop may wait unsaid; a longer wait is said at start-up (wait_line)


class Interrupted(BaseException):
    """The job was asked to stop; ``code`` is the exit code it should end with. Not an
    Exception, as KeyboardInterrupt is not: raised inside a user's f or plug-in
    (``abandoning``), it must not be taken by their ``except Exception`` for their own failure
    (an erasure, a failed decode)."""

    def __init__(self, why, code):
        super().__init__(why)
        self.code = code


def kept_line(why, done, total, path):
    """The line a job stopped early ends with, whichever way it ran (simulate, an MPI run)."""
    return (f"{why} after {done} of {total} trials; {path} holds them (complete = false): the "
            "same command with --resume continues")


def wait_line(seconds, over_mpi, inputs=1):
    """The start-up line saying how long a stop may wait, when f took longer than PROMPT
    seconds on one input at the job's check (``seconds``; None: nothing to say). Rank 0's work
    and the simulator's are dropped at once, f with them unless it is inside compiled code
    (numpy, a model) then; over MPI a worker's f stops at once on the worker's own signal
    (hydra and SLURM signal every rank; rank 0 passes a stop it alone saw, SIGTERM to it or
    job.time_limit, on to the workers of its node), but a worker on another node finishes a
    call of f under way; the simulator calls f on up to ``inputs`` inputs at once."""
    if seconds is None or seconds <= PROMPT:
        return None
    if over_mpi:
        where = ("on a worker of another node than rank 0's when only rank 0 is stopped "
                 "(SIGTERM to it alone, job.time_limit)")
    else:
        where = f"inside compiled code (up to {inputs} inputs a call)"
    return (f"f took {seconds:.1f} s on one input: a stop (SIGTERM, SIGINT, "
            f"job.time_limit) drops the trial under way at once, but may wait about that long "
            f"per input for a call of f under way {where}")


class InterruptFlag:
    """Notes SIGTERM/SIGINT (installed by ``with``) and the job's deadline.

    ``time_limit``: seconds from construction (None: no limit). ``signum`` and ``since`` say
    which signal came first and when (time.monotonic()).
    """

    def __init__(self, time_limit=None):
        self.start = time.monotonic()
        self._old = {}  # the handlers ``with`` replaced (and SIGALRM's, once set)
        self.set_limit(time_limit)
        self.signum = None
        self.since = None
        self._abandon = False  # inside ``abandoning``: a stop raises at once
        self._abandoning = _Abandoning(self)

    def set_limit(self, time_limit):
        """Stop ``time_limit`` seconds after this flag was made (None: never)."""
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else self.start + time_limit
        if SIGALRM in self._old:  # its alarm was set (``abandoning``): now for this deadline
            signal.setitimer(signal.ITIMER_REAL, 0 if self.deadline is None else
                             max(self.deadline - time.monotonic(), 0.0) + 1e-3)

    # -- handlers --------------------------------------------------------------------------
    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in SIGNALS:
                self._old[s] = signal.signal(s, self._note)
        return self

    def __exit__(self, *exc):
        if SIGALRM in self._old:  # the deadline's alarm (``abandoning``)
            signal.setitimer(signal.ITIMER_REAL, 0)
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()
        return False

    def _note(self, signum, frame):
        if not self.note(signum) and signum == signal.SIGINT:
            raise KeyboardInterrupt  # Ctrl-C twice: stop now, however it ends
        self._raise_if_abandoning()

    def _alarm(self, signum, frame):
        self._raise_if_abandoning()

    def _raise_if_abandoning(self):
        if self._abandon:
            self._abandon = False  # once: the unwinding's own code is not interrupted again
            self.check()

    def abandoning(self):
        """Work inside is dropped whole on a stop: a signal, or the deadline passing, raises
        Interrupted at once (at the next Python instruction: a numpy call under way finishes)
        instead of at the next ``check()``. Only where the handlers are installed (``with``, in
        the main thread); elsewhere the work runs to its end, as outside. Cheap (the MPI master
        enters it three times a round): no generator, and the deadline's alarm is set once, at
        the first entry, and does nothing outside. Not nested."""
        return self._abandoning if self._old else nullcontext()

    def _enter_abandoning(self):
        self.check()
        if self.deadline is not None and SIGALRM not in self._old:
            # a little past the deadline: check() compares time.monotonic() with it
            self._old[SIGALRM] = signal.signal(SIGALRM, self._alarm)
            signal.setitimer(signal.ITIMER_REAL,
                             max(self.deadline - time.monotonic(), 0.0) + 1e-3)
        self._abandon = True

    def _leave_abandoning(self):
        self._abandon = False

    def note(self, signum):
        """Signal ``signum`` came (here, or to another rank of the job); True when it is the
        first."""
        if self.signum is not None:
            return False
        self.signum, self.since = signum, time.monotonic()
        return True

    # -- checks ----------------------------------------------------------------------------
    @property
    def requested(self):
        """A signal came or the deadline passed (no exception)."""
        return self.signum is not None or (self.deadline is not None
                                           and time.monotonic() > self.deadline)

    def check(self):
        """Raise Interrupted if a signal came or the deadline passed."""
        if self.signum is not None:
            name = signal.Signals(self.signum).name
            raise Interrupted(f"stopped by {name}", 128 + self.signum)
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Interrupted(f"stopped at job.time_limit = {self.time_limit:g} s", TIME_LIMIT_CODE)


class _Abandoning:
    """``InterruptFlag.abandoning``'s context, one per flag (a class: a generator's context
    costs several times as much to enter)."""

    __slots__ = ("flag",)

    def __init__(self, flag):
        self.flag = flag

    def __enter__(self):
        self.flag._enter_abandoning()

    def __exit__(self, *exc):
        self.flag._leave_abandoning()
        return False
