"""MPI start-up, the abort hook, signals, and how a rank waits.

Waiting is the whole game when ranks outnumber cores: the blocking calls of MPICH and of Open
MPI (Recv, Wait*, Probe) spin, so with 32 ranks on 2 cores every idle rank competes with the
one that has work. ``Waiter`` hides the ways to wait:

- busy:   Testsome/Testall/Improbe in a tight loop, without sleeping — lowest latency when
          every rank has a core to itself.
- polite: the same tests and, while nothing is ready, ``time.sleep`` with exponential back-off
          (SLEEP_MIN .. a cap) — idle ranks give their core away.

No rank ever blocks inside MPI (Waitsome, Recv, Probe): a wait there ends only when a peer
answers, and a peer that was stopped (SIGSTOP), is stuck, or died unseen never does. Every wait
is a loop that can see time pass — a deadline, ``job.time_limit``, the bound of a stop, the
moment a silent worker counts as hung (``hung``) — and calls the waiter's ``check`` (if set) on
every turn, which may raise to end the wait. Python runs signal handlers between bytecodes, so
a polling rank sees its own SIGTERM at its next turn.

``auto`` (the default) picks polite when this node runs more ranks than it has cores. Override
with ``--wait busy|polite|auto`` or the environment variable GCC_MPI_WAIT.

Signals: every rank notes SIGTERM and SIGINT (``interrupts.InterruptFlag``). MPICH's hydra forwards
both to every rank. Open MPI's mpiexec does not forward them: it kills every rank at once (the
file keeps every committed trial; ``--resume`` continues); SIGTERM to rank 0 stops cleanly under
both. SIGUSR1 is MPICH's dead-process notice: hydra sends it to the surviving ranks when a
process of the job died and the job was started with ``mpiexec -disable-auto-cleanup`` (its
default action would kill them too). Without that option hydra kills every rank itself.

Dead peers under ULFM (Open MPI ``mpiexec --with-ft ulfm``, ``fault_tolerant``): requests that
involve a dead rank complete with an error of class MPI_ERR_PROC_FAILED (Testsome:
MPI_ERR_IN_STATUS); the waiter turns it into ``RankFailure`` and the master buries the rank
(``deaths``). Ending the job under ULFM (``abort``): MPI_Abort ends only the rank that calls it
there, so the rank revokes COMM_WORLD and leaves; every other rank's next MPI call fails with
MPI_ERR_REVOKED and it leaves too.
"""

import logging
import os
import signal
import socket
import sys
import time
from contextlib import contextmanager

from ..errors import JobError, ResourceError, resource_line
from ..core.launcher import cores, launcher_local_size, launcher_rank
from .last_lines import drain, quiet_from_here
from .pace import IDLE_FIRST, SLEEP_GATHER, SLEEP_IDLE, SLEEP_MIN, Backoff

log = logging.getLogger(__name__)

WAIT_MODES = ("auto", "busy", "polite")
WAIT_ENV = "GCC_MPI_WAIT"

class RankFailure(Exception):
    """A rank of the job died: hydra's notice (SIGUSR1) came, or, under ULFM, a request
    completed with a process-failure error. The master's waits hand over to ``lost.Losses.bury``.
    ``revoked``: the error was MPI_ERR_REVOKED — no death, another rank ended the job
    (``abort``)."""

    def __init__(self, text, revoked=False):
        super().__init__(text)
        self.revoked = revoked


def failure_classes(MPI):
    """The error classes that mean "a peer died" under ULFM."""
    names = ("ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING", "ERR_REVOKED", "ERR_IN_STATUS")
    return frozenset(getattr(MPI, n) for n in names if hasattr(MPI, n))


class FailureNotice:
    """Counts SIGUSR1, hydra's notice that a process of the job died (``install`` on every
    rank before MPI starts, so that the notice does not kill the rank)."""

    def __init__(self):
        self.count = 0

    def install(self):
        if hasattr(signal, "SIGUSR1"):
            signal.signal(signal.SIGUSR1, self._note)
        return self

    def _note(self, signum, frame):
        self.count += 1


def before_start():
    """What a rank of a multi-rank launch starts before MPI does (forks, which MPI may not
    survive): rank 0's witness, and its host's warden if no rank of the host started it.
    Hydra's dead-process notice (SIGUSR1) is ignored until MPI is up (``FailureNotice``): a
    death while MPI starts would otherwise end every rank by the notice's default action, and
    hide which rank died from the warden that names it (``startwatch``)."""
    from . import warden, witness

    if launcher_rank() == 0:
        witness.start()  # names a rank whose death ends the job
    warden.start()  # ends what is left of the job on this host once the job ends here
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def leave(code, finalize=True):
    """This rank's end, in order: its host's warden told (before MPI_Finalize, in which a
    stopped rank would keep the others waiting), then ``code`` returned, for MPI_Finalize at
    exit; or, with ``finalize`` false, ``exit_without_finalize``.

    Hydra's dead-process notice (SIGUSR1, ``mpiexec -disable-auto-cleanup``) also comes when a
    rank merely exits after its MPI_Finalize, and Python puts its own handlers back to the
    default action (end the process) before mpi4py's MPI_Finalize runs at exit: so the notice
    is ignored from here on. A death this late leaves a rank in MPI_Finalize at most until
    its host's warden ends it (END_GRACE)."""
    if not finalize:
        exit_without_finalize(code)
    from . import warden

    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    warden.tell("leaving")
    return code


def exit_without_finalize(code, word="leaving"):
    """End this rank now, skipping MPI_Finalize: after a rank of the job died, Finalize's
    process-manager barrier would wait for it forever (MPICH, and now and then Open MPI under
    ULFM). What this rank wrote is read by the launcher first (``drain``) and given
    LAUNCHER_WRITES s to reach the launcher's own output; its host's warden is told
    ``word`` (``leaving``, or ``abort`` when this rank ends the job) last."""
    from . import warden

    try:
        drain((sys.stdout, sys.stderr), DRAIN)
        time.sleep(LAUNCHER_WRITES)
    except KeyboardInterrupt:  # one more Ctrl-C only cuts the wait short
        pass
    warden.tell(word)
    os._exit(code)


def library(MPI):
    """The MPI library's name and version, one line ("MPICH Version: 4.3.0", "Open MPI v5.0.11,
    package: ..."): Open MPI's string ends in a NUL byte, which HDF5 attributes cannot hold."""
    text = MPI.Get_library_version().replace("\0", "").strip()
    return text.splitlines()[0].strip() if text else "unknown MPI"


def flavour(MPI):
    """'openmpi', 'mpich' or 'other', from the library's own version string."""
    text = MPI.Get_library_version()
    if text.startswith("Open MPI"):
        return "openmpi"
    return "mpich" if text.startswith("MPICH") else "other"


FT_ENV = "OMPI_MCA_mpi_ft_enable"  # set by Open MPI's `mpiexec --with-ft ulfm` on every rank


def fault_tolerant(MPI):
    """True when this run has ULFM fault tolerance: Open MPI started with
    ``mpiexec --with-ft ulfm`` (or ``--mca mpi_ft_enable 1``), which its launcher passes to
    every rank as OMPI_MCA_mpi_ft_enable, and an mpi4py that has the ULFM calls. Then a dead
    peer makes requests complete with an error instead of ending the job."""
    on = os.environ.get(FT_ENV, "").strip().lower() in ("1", "true", "yes", "on", "enabled")
    return on and flavour(MPI) == "openmpi" and hasattr(MPI.Comm, "Get_failed")


def ft_mode(MPI):
    """The run's fault tolerance as a file's provenance records it: "ulfm" or "off"."""
    return "ulfm" if fault_tolerant(MPI) else "off"


def start():
    """Initialise MPI (once) and return the ``mpi4py.MPI`` module; this host's warden (if any)
    is told that this rank is past MPI_Init, where a rank that died or stopped before would
    have kept it for ever (``startwatch``), and holds this rank's check-in (``warden.check_in``)."""
    import mpi4py

    from . import warden

    # one thread talks to MPI on every rank: no need to pay for MPI_THREAD_MULTIPLE's locks
    mpi4py.rc.thread_level = "single"
    from mpi4py import MPI

    warden.check_in()  # held until this rank ends: its close says that it died (``checkin``)
    return MPI


def resolve_wait(mode, comm):
    """'busy' or 'polite' for ``mode`` ('auto', 'busy', 'polite' or None = $GCC_MPI_WAIT or
    'auto'). auto: polite when this node runs more ranks than it has cores."""
    mode = mode or os.environ.get(WAIT_ENV) or "auto"
    if mode not in WAIT_MODES:
        raise JobError(WAIT_ENV, f"must be one of {', '.join(WAIT_MODES)}, got {mode!r}")
    if mode != "auto":
        return mode
    return "polite" if local_ranks(comm) > cores() else "busy"


def local_ranks(comm):
    """Ranks on this node, as the launcher says (no collective call at start-up, where ranks
    arrive seconds apart); all of COMM_WORLD when the launcher does not say."""
    return launcher_local_size() or comm.size


class Waiter:
    """How one rank waits for requests and messages: ``polite`` (test + back-off sleep) or busy
    (test in a tight loop). ``hi`` caps the polite sleeps of ``some`` (the master's gather).
    ``check``: called on every turn of a wait; whatever it raises ends the wait. ``ft``: ULFM is
    on, so an MPI error of a process-failure class raises ``RankFailure``.

    The master's ``listen`` gives it ``control``, its ``notices.Notices``: polled on every turn
    (it takes the NOTICEs that came and listens again; the next ``check`` acts on them).
    ``idle``: the back-off of a wait for a message (default IDLE_FIRST to SLEEP_IDLE)."""

    def __init__(self, MPI, mode, hi=SLEEP_GATHER, check=None, ft=False, idle=None):
        self.MPI = MPI
        self.mode = mode
        self.polite = mode == "polite"
        self.gather = Backoff(SLEEP_MIN, hi)
        self.idle = idle or Backoff(IDLE_FIRST, SLEEP_IDLE)
        self.check = check
        self.failures = failure_classes(MPI) if ft else frozenset()
        self.control = None

    def watch(self, check):
        """Call ``check`` on every turn of a wait from now on (None: nothing)."""
        self.check = check

    def listen(self, control):
        """Poll ``control`` (a ``notices.Notices``) on every turn from now on (None: none)."""
        self.control = control

    def raise_failure(self, e):
        """Raise MPI exception ``e`` of a wait: as RankFailure if it says a peer died or the
        job ended (ULFM), else as is."""
        cls = e.Get_error_class()
        if cls in self.failures:
            raise RankFailure(str(e), revoked=cls == getattr(self.MPI, "ERR_REVOKED", None)) \
                from None
        raise e

    def poll_control(self):
        """Take the NOTICEs that came (``control``), then run ``check``."""
        if self.control is not None:
            self.control.poll()
        if self.check is not None:
            self.check()

    def some(self, requests, until=None):
        """Indices of requests completed now, in the order MPI reports them; [] once the
        clock (time.perf_counter) passes ``until``; None when no request is active."""
        try:
            return self._testsome(requests, until)
        except self.MPI.Exception as e:
            self.raise_failure(e)

    def _testsome(self, requests, until):
        Testsome = self.MPI.Request.Testsome
        backoff = self.gather
        backoff.reset()
        while True:
            done = Testsome(requests)
            if done is None or done:
                return done
            self.poll_control()
            if until is not None:
                left = until - time.perf_counter()
                if left <= 0:
                    return []
                if self.polite:
                    backoff.sleep(left)
            elif self.polite:
                backoff.sleep()

    def test(self, requests):
        """Indices of ``requests`` complete now, without waiting (None when none is active)."""
        try:
            return self.MPI.Request.Testsome(requests)
        except self.MPI.Exception as e:
            self.raise_failure(e)

    def all(self, requests, until=None):
        """Wait until every request is complete: True, or False once time.perf_counter()
        passes ``until``."""
        Testall = self.MPI.Request.Testall
        backoff = self.gather
        backoff.reset()
        try:
            while not Testall(requests):
                self.poll_control()
                if until is not None and time.perf_counter() > until:
                    return False
                if self.polite:
                    backoff.sleep()
        except self.MPI.Exception as e:
            self.raise_failure(e)
        return True

    def probe(self, comm, source, tag, status):
        """The next matching message (an ``MPI.Message`` to ``Recv``), waiting for it."""
        backoff = self.idle
        backoff.reset()
        while True:
            message = improbe(comm, source, tag, status)
            if message is not None:
                return message
            if self.check is not None:
                self.check()
            if self.polite:
                backoff.sleep()

    def recv_object(self, comm, source, tag, until=None):
        """A pickled message (start-up, errors), waited for politely like ``probe``; None
        once time.perf_counter() passes ``until``."""
        backoff = self.idle
        backoff.reset()
        try:
            while True:
                message = comm.improbe(source, tag)  # lowercase: sized for the pickle
                if message is None:  # see ``improbe``
                    message = comm.improbe(source, tag)
                if message is not None:
                    return message.recv()
                self.poll_control()
                if until is not None and time.perf_counter() > until:
                    return None
                backoff.sleep()
        except self.MPI.Exception as e:
            self.raise_failure(e)


def improbe(comm, source, tag, status):
    """``comm.Improbe`` that sees a message which arrived since the last call. MPICH (ch4, as
    shipped in the wheel) matches against the messages it has already pulled in and only then
    makes progress, so a probe right after a message arrived misses it and the next one finds
    it: measured at 32 ranks on 2 cores, 99.98 % of TASKs were missed once, i.e. noticed a whole
    back-off sleep (0.5-1 ms) late. A second probe right away costs a microsecond."""
    message = comm.Improbe(source, tag, status)
    return message if message is not None else comm.Improbe(source, tag, status)


def where(comm):
    return f"rank {comm.rank} of {comm.size} on {socket.gethostname()}"


@contextmanager
def abort_on_error(comm):
    """Run a rank's part of the job; any exception ends the whole job instead of leaving the
    other ranks waiting for this one: its message on stderr (naming the rank), then
    MPI_Abort — exit code 2 for a JobError on rank 0 (bad job input found late), else 1 (one
    line too, on rank 0, when the disk or memory ran out). Rank 0's witness is told first that
    rank 0 ends the job itself."""
    from . import witness

    try:
        yield
    except BaseException as e:  # noqa: BLE001 - anything is this rank failing
        witness.done()
        abort(comm, _say_why(comm, e))


def _say_why(comm, e):
    """Say why this rank ends the job (rank 0 in one line where it can); its exit code."""
    if isinstance(e, KeyboardInterrupt):
        if comm.rank == 0:
            log.info("interrupted")
        return 1
    if isinstance(e, JobError) and comm.rank == 0:
        log.error("%s", e)
        return 2
    if isinstance(e, (ResourceError, MemoryError)) and comm.rank == 0:
        # no disk or memory left: one line, the results file kept
        log.error("%s", resource_line(e))
        return 1
    _report(comm, e)
    return 1


def _report(comm, e):
    log.critical("%s failed: %s: %s", where(comm), type(e).__name__, e,
                 exc_info=(type(e), e, e.__traceback__))  # the traceback, then the line


DRAIN = 2.0  # seconds MPI_Abort waits at most for the launcher to read this rank's last lines
# Seconds a rank that leaves without MPI_Finalize stays after the launcher read its last lines.
# Open MPI's prterun, under --with-ft ulfm, ends as soon as its last rank has, and may drop
# lines it read but had not written out yet: rank 0's "another rank ended the job" line, read
# (the pipe empty) 10 ms before rank 0 left, was lost in 5 of 66 runs of test_ulfm's
# exception test (quiet machine); staying 0.05 or 0.3 s after the read, in 0 of 60 each.
LAUNCHER_WRITES = 0.5


def abort(comm, code):
    """End the whole job with exit code ``code``, once the launcher has read what this rank
    wrote. A rank's stdout and stderr are pipes to the launcher (hydra's proxy, Open MPI's
    prted), which on MPI_Abort kills the job and may never read what is still in them, so the
    line just printed before the abort would be lost. One more Ctrl-C only cuts that wait short.

    Under ULFM MPI_Abort ends only the rank that calls it (the other ranks and mpiexec run on):
    the rank revokes COMM_WORLD and leaves without MPI_Finalize instead; every other rank's next
    MPI call fails with MPI_ERR_REVOKED and it leaves with exit code 0 (``Worker``), so that the
    launcher returns this rank's code (Open MPI's launcher can stay up for ever when every rank
    leaves non-zero at once). The measurements: docs/reliability.md, "Measured"."""
    try:
        drain((sys.stdout, sys.stderr), DRAIN)
    except KeyboardInterrupt:
        pass
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and fault_tolerant(MPI):
        try:
            comm.Revoke()
        except MPI.Exception:  # revoked already (by another rank)
            pass
        exit_without_finalize(code, "abort")
    quiet_from_here()
    comm.Abort(code)


def ended_elsewhere(MPI, e):
    """The MPI error ``e`` says that the job is over for this worker under ULFM: the
    communicator was revoked (a rank ended the job, ``abort``) or rank 0 died."""
    if not fault_tolerant(MPI):
        return False
    names = ("ERR_REVOKED", "ERR_PROC_FAILED", "ERR_PROC_FAILED_PENDING")
    return e.Get_error_class() in {getattr(MPI, n) for n in names if hasattr(MPI, n)}
