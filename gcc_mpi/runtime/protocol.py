"""The wire format between the master (rank 0) and the workers (ranks 1..N).

Start-up (once, pickled): every rank has loaded the job itself (the command line, before MPI
starts); rank 0 sends every other rank, with tag SETUP, ``("error", message)`` or ``("ok",
digest of the resolved job, [(d, m) per sweep point], master's host, master's pid)``; each
worker checks that its own job has that digest (a job file that differs between nodes ends the
job with one line), answers at once HELLO (tag SETUP, pickled: its pid and host), builds f, and
answers READY (tag SETUP, None) before the first trial. The pids let rank 0 tell which rank
died (see ``deaths``) also while f is being built, and name the processes it may have to
resume or end (``hung``); the master's pid names the socket of its witness (see ``witness``).

Hot path (preallocated float64 buffers, persistent requests on the master; integers are exact
in float64):

master -> worker, tag CTRL, ``[kind, seq, trial, point, delay, sent, d, m] + x``
    TASK  (x: the coded input, d values): sleep ``delay`` seconds, then reply f(x) (m values).
          The delay counts from when the worker can start the task: ``sent`` (the master's
          time.monotonic() when it sent the round) on the master's node (same CLOCK_MONOTONIC),
          so how late an idle worker notices the TASK does not add to it; the receipt time on
          another node; and never before the worker replied to its previous TASK (a worker
          works through its TASKs in the order they came, one at a time).
    STOP  (header only): the result of round ``seq`` is no longer needed. A worker that has
          not started that TASK yet skips it; one that is sleeping its delay stops.
    EXIT  (header only): leave the worker loop (sent only when no TASK is outstanding); ``seq``
          1: leave without MPI_Finalize (a rank died or was killed: Finalize would wait for it).
    SIGNAL (header only): send signal ``trial`` to process ``seq`` of this worker's node — how
          rank 0 resumes (SIGCONT) or ends (SIGKILL) a hung worker on another node (``hung``).
    LEAVE (header only): after its EXIT and BYE a worker stays (taking SIGNALs) until this
          comes, so that rank 0 can still reach every node once it knows who did not say BYE.
    One tag for all five, so MPI's non-overtaking rule delivers them in the order sent: the
    TASK of round s always comes before its STOP.
worker -> master, tag REPLY, ``[seq, trial, status] + y``
    status DONE: y = f(x) follows; CANCELLED: stopped (or skipped) before f ran, or f dropped
    on the worker's own SIGTERM/SIGINT (its SIGNALLED NOTICE sent first), nothing follows;
    FAILED: f raised or returned NaN/inf or the wrong shape (an erasure), nothing follows —
    the worker sent, just before, one pickled ``(seq, trial, code, text)`` with tag
    ERROR (``erasures`` codes; the failure path only, so the hot path stays buffer-based).

worker -> master, tag NOTICE, ``[kind, rank, value]`` (the failure and stop path only)
    SIGNALLED (value: the signal number): the worker got SIGTERM or SIGINT and will wait for
          EXIT; rank 0 stops the job as for its own signal. NOTIFIED (value: how many SIGUSR1
          the worker got): hydra reported a dead process. Rank 0 keeps one persistent receive
          per worker for these always active (``notices``) and takes them on every turn of any
          of its waits, which all poll (no rank blocks inside MPI: ``mpi``), so a signal that
          reached only a worker stops the job as soon as one that reached rank 0 would.
    BYE (value 0): the worker's last NOTICE, which ``Worker.serve`` sends itself on EXIT
          (through the worker's one ``NoticeSender``, after every NOTICE it sent). MPI delivers
          one sender's messages on a tag in order, so once rank 0 has every BYE it has
          received every NOTICE: none is left at MPI_Finalize, where MPICH's rank 0 would fail
          on it and skip the barrier that the other ranks then wait in for ever
          (docs/reliability.md, "Measured"). So every ``ending.shutdown`` receives every live
          rank's BYE, whether or not its master listened (under ULFM, where no rank calls
          MPI_Finalize, none). A probe's worker sends its compute times (tag SETUP, pickled)
          only after its BYE, and rank 0 receives them after its shutdown: sent before, a long
          list (too long to go eagerly) would wait for a receive that rank 0 posts only once
          every BYE came.

``seq`` numbers the rounds of a run (one round = one scheme of one trial of one point). Up to
``decode.pipeline`` rounds are in flight at once, each in its own *slot* (a TASK, REPLY and
STOP row per worker). Every TASK gets exactly one reply, and a worker replies in the order of
its TASKs; the master starts the receives of a round before those of any later round, so
MPI's ordering puts each reply in its own round's slot, and a slot is reused only after every
reply of its round came — or, for a worker that stopped answering, after its requests in that
slot were parked (``hung``): it gets no task in that slot until they complete. A reply whose
header names another round is a protocol error, never data; results that come after their
round was decided are received and discarded.
"""

import hashlib

import numpy as np

SETUP, CTRL, REPLY, ERROR, NOTICE = 11, 12, 13, 14, 15   # message tags

TASK, STOP, EXIT, SIGNAL, LEAVE = 1.0, 2.0, 3.0, 4.0, 5.0  # CTRL kinds
KIND, SEQ, TRIAL, POINT, DELAY, SENT, DIM, OUT = range(8)
HEADER = 8                               # CTRL header length

SIGNALLED, NOTIFIED, BYE = 1.0, 2.0, 3.0  # NOTICE kinds
N_KIND, N_RANK, N_VALUE = range(3)
NOTICE_SIZE = 3

DONE, CANCELLED, FAILED = 0.0, 1.0, 2.0  # REPLY status
R_SEQ, R_TRIAL, R_STATUS = range(3)
REPLY_HEADER = 3


class ProtocolError(RuntimeError):
    """A message that the protocol does not allow (a bug, never bad input)."""


def fill_tasks(task, workers, seq, trial, delays, X_coded):
    """Write one round's TASK messages into the rows ``workers`` of a slot's ``task`` array
    (kind, point, d and m are set once per slot); the caller stamps column SENT just before
    sending."""
    task[workers, SEQ] = seq
    task[workers, TRIAL] = trial
    task[workers, DELAY] = delays
    task[workers, HEADER:] = X_coded


def check_error(message, seq, trial, rank):
    """(code, text) of an ERROR message, after checking it belongs to round ``seq``."""
    if (not isinstance(message, tuple) or len(message) != 4
            or message[0] != seq or message[1] != trial):
        raise ProtocolError(f"rank {rank} sent error message {message!r:.120} while round {seq} "
                            f"(trial {trial}) was due")
    return int(message[2]), str(message[3])


def fill_control(row, kind, seq=0, trial=0):
    """A header-only message (STOP or EXIT) in ``row``."""
    row[:HEADER] = 0.0
    row[KIND], row[SEQ], row[TRIAL] = kind, seq, trial
    return row[:HEADER]


def check_reply(reply, seq, trial, rank):
    """The status of a reply, after checking that it belongs to round ``seq`` of ``trial``."""
    r_seq, r_trial, status = reply[:REPLY_HEADER].tolist()  # floats: cheaper than numpy scalars
    if r_seq != seq or r_trial != trial:
        raise ProtocolError(f"rank {rank} replied for round {r_seq:.0f} (trial {r_trial:.0f}) "
                            f"while round {seq} (trial {trial}) was due")
    if status not in (DONE, CANCELLED, FAILED):
        raise ProtocolError(f"rank {rank} sent reply status {status!r}")
    return status


class Slots:
    """The master's buffers and persistent requests for ``depth`` rounds in flight on ``n``
    workers with inputs of dimension ``d`` and outputs of dimension ``m`` (one sweep point).

    Slot s has, per worker w (rank w + 1), a TASK row ``task[s, w]``, a STOP row ``stop[s, w]``
    and a REPLY row ``reply[s, w]``: no buffer is reused while a request on it is pending.
    ``recvs`` and ``sends`` hold the persistent receive of REPLY and send of TASK for every
    (slot, worker), flat: request i belongs to slot i // n, worker i % n. A round starts only
    its own active workers' requests (``Startall``); one ``Testsome`` over ``recvs`` sees
    every round in flight (inactive requests are ignored)."""

    def __init__(self, comm, depth, n, d, m, point):
        self.depth, self.n, self.d, self.m = depth, n, d, m
        self.task = np.zeros((depth, n, HEADER + d))
        self.task[:, :, KIND] = TASK
        self.task[:, :, POINT] = point
        self.task[:, :, DIM] = d
        self.task[:, :, OUT] = m
        self.stop = np.zeros((depth, n, HEADER))
        self.reply = np.zeros((depth, n, REPLY_HEADER + m))
        self.recvs = [comm.Recv_init(self.reply[s, w], source=w + 1, tag=REPLY)
                      for s in range(depth) for w in range(n)]
        self.sends = [comm.Send_init(self.task[s, w], dest=w + 1, tag=CTRL)
                      for s in range(depth) for w in range(n)]
        self.free = list(range(depth))[::-1]  # slots not in use (pop takes slot 0 first)

    def fits(self, depth, n, d, m):
        return (depth, n, d, m) == (self.depth, self.n, self.d, self.m)

    def requests(self, slot, workers):
        """(receives, sends) of ``workers`` in ``slot``."""
        base = slot * self.n
        return ([self.recvs[base + w] for w in workers], [self.sends[base + w] for w in workers])

    def outputs(self, slot, workers):
        """The y parts of the replies of ``workers`` in ``slot`` (a copy, in that order)."""
        return self.reply[slot, workers, REPLY_HEADER:]

    def release(self, keep=()):
        """Free every persistent request but those in ``keep`` (sends to a dead rank that may
        never complete)."""
        keep = {id(r) for r in keep}
        for request in self.recvs + self.sends:
            if request and id(request) not in keep:
                request.Free()


def digest(job):
    """A short fingerprint of the resolved job (every key, defaults filled in): what rank 0 and
    each worker compare at start-up."""
    return hashlib.sha256(job.to_toml().encode()).hexdigest()[:16]
