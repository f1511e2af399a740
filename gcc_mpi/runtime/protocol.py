"""The wire format between the master (rank 0) and the workers (ranks 1..N).

Start-up (once, pickled): rank 0 sends every other rank, with tag SETUP, ``("error", message)``
or ``("ok", resolved job TOML, base dir, [(d, m) per sweep point], master's host, master's
pid)``; each worker builds f and answers READY (tag SETUP, pickled: its pid and host) before the
first trial. The pids let rank 0 tell which rank died when hydra reports a dead process (see
``master``); the master's pid names the socket of its witness (see ``witness``).

Hot path (preallocated float64 buffers, uppercase Isend/Irecv; integers are exact in float64):

master -> worker, tag CTRL, ``[kind, seq, trial, point, delay, sent, d, m] + x``
    TASK  (x: the coded input, d values): sleep ``delay`` seconds, then reply f(x) (m values).
          ``sent`` is the master's time.monotonic() when it sent the round: a worker on the
          master's node (same CLOCK_MONOTONIC) counts the delay from then, so how late an idle
          worker notices the TASK does not add to it; a worker on another node counts from
          when it received the TASK.
    STOP  (header only): the result of round ``seq`` is no longer needed.
    EXIT  (header only): leave the worker loop.
    One tag for all three, so MPI's non-overtaking rule delivers them in the order sent: a STOP
    for round s always comes before the TASK of any later round.
worker -> master, tag REPLY, ``[seq, trial, status] + y``
    status DONE: y = f(x) follows; CANCELLED: stopped while sleeping, nothing follows;
    FAILED: f raised or returned NaN/inf or the wrong shape (an erasure), nothing follows —
    the worker sent, just before, one pickled ``(seq, trial, code, text)`` with tag ERROR
    (``erasures`` codes; the failure path only, so the hot path stays buffer-based).

``seq`` numbers the rounds of a run (one round = one scheme of one trial of one point), so
every reply says which round and trial it belongs to. Every TASK gets exactly one reply, and
the master receives it before it starts the next round: results that arrive after the master
stopped waiting are received and discarded within their own round (with their ERROR message),
and a reply whose header names another round is a protocol error, never data.
"""

import numpy as np

SETUP, CTRL, REPLY, ERROR = 11, 12, 13, 14   # message tags

TASK, STOP, EXIT = 1.0, 2.0, 3.0         # CTRL kinds
KIND, SEQ, TRIAL, POINT, DELAY, SENT, DIM, OUT = range(8)
HEADER = 8                               # CTRL header length

DONE, CANCELLED, FAILED = 0.0, 1.0, 2.0  # REPLY status
R_SEQ, R_TRIAL, R_STATUS = range(3)
REPLY_HEADER = 3


class ProtocolError(RuntimeError):
    """A message that the protocol does not allow (a bug, never bad input)."""


def fill_tasks(task, seq, trial, point, delays, X_coded):
    """Write one round's TASK messages into ``task`` (rows >= len(delays), HEADER + d columns);
    the caller stamps column SENT just before sending."""
    n, d = X_coded.shape
    rows = task[:n]
    rows[:, KIND] = TASK
    rows[:, SEQ] = seq
    rows[:, TRIAL] = trial
    rows[:, POINT] = point
    rows[:, DELAY] = delays
    rows[:, DIM] = d
    rows[:, HEADER:HEADER + d] = X_coded
    return rows


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
    if reply[R_SEQ] != seq or reply[R_TRIAL] != trial:
        raise ProtocolError(f"rank {rank} replied for round {reply[R_SEQ]:.0f} (trial "
                            f"{reply[R_TRIAL]:.0f}) while round {seq} (trial {trial}) was due")
    status = reply[R_STATUS]
    if status not in (DONE, CANCELLED, FAILED):
        raise ProtocolError(f"rank {rank} sent reply status {status!r}")
    return status


class MasterBuffers:
    """The master's preallocated buffers for up to ``n`` workers, inputs of dimension ``d`` and
    outputs of dimension ``m``: one TASK row, one STOP row and one REPLY row per worker
    (separate rows, so no buffer is reused while a request on it is pending)."""

    def __init__(self, n, d, m):
        self.n, self.d, self.m = n, d, m
        self.task = np.zeros((n, HEADER + d))
        self.task[:, OUT] = m
        self.stop = np.zeros((n, HEADER))
        self.reply = np.zeros((n, REPLY_HEADER + m))

    def fits(self, n, d, m):
        return n <= self.n and d == self.d and m == self.m

    def outputs(self, rows):
        """The y parts of the replies in ``rows`` (a copy, in that order)."""
        return self.reply[rows, REPLY_HEADER:]
