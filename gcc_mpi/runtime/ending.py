"""The end of a run's rounds on rank 0: the rounds in flight abandoned after an interruption,
every worker let go in order, or the job ended with MPI_Abort when that cannot be done.

Interrupted (SIGTERM, SIGINT, job.time_limit): the waits raise ``Interrupted``; the rounds in
flight are abandoned — their workers STOPped (queued tasks skipped) and drained — the file
closed with complete = false (every trial committed before is kept) and every rank sent EXIT,
each step bounded by GRACE seconds, after which MPI_Abort ends the job.

Every ending, whoever drives the master (a run, a probe, a benchmark's block), goes through
``shutdown``: EXIT to every live worker, every one's BYE, LEAVE (protocol).
"""

import logging
import time

import numpy as np

from . import protocol as P
from .deaths import WorkerLost
from .hung import Stuck, named
from .master import GRACE
from .mpi import RankFailure, abort

log = logging.getLogger(__name__)


def abandon(master, grace=GRACE):
    """After an interruption: the rounds in flight abandoned (``Master.abandon``); True when
    they were drained within ``grace`` seconds."""
    return master.abandon(grace)


def shutdown(master, grace=GRACE):
    """EXIT to every other live rank (idle ones too), then every one's BYE, which its
    ``Worker.serve`` sends on EXIT, then LEAVE; the ranks that stood in the way, empty when
    all EXITs and LEAVEs were delivered and all BYEs came (within ``grace`` seconds): then no
    NOTICE is left unreceived at MPI_Finalize (protocol). The NOTICE receives are cancelled at
    the end. Until their LEAVE the workers stay, so that one of each node can still resume or
    end a silent one there.

    A master that did not listen listens now: a worker cannot tell whether its master
    listened, so every worker says BYE, and a BYE left unreceived is the very failure the BYE
    is there to prevent (MPICH's rank 0 fails in MPI_Finalize and skips the barrier in which
    the workers then wait for ever). Under ULFM, where nobody calls MPI_Finalize, the BYEs say
    that every worker is free to leave: the launcher waits for every process, a stopped one
    too.

    First every hung worker is resumed or ended (``Hung.settle``: ``Stuck`` when only
    MPI_Abort can); after any death the EXIT tells the workers to leave without MPI_Finalize,
    which would wait for the dead."""
    m = master
    m.listen()  # a no-op when it listens already
    m.orphans.extend(m.hung.settle(m.deaths, m.losses.discard, m.slots, m.ft))
    rows = np.zeros((m.comm.size - 1, P.HEADER))
    dead = m.deaths.dead
    ranks = [r for r in range(1, m.comm.size) if r not in dead]
    m.deaths.exits_sent(ranks)  # their end is no death now
    m.notices.await_byes()  # a BYE answers this EXIT (benchmarks: one master per block)
    sends = [m.send_control(P.fill_control(rows[r - 1], P.EXIT, 1 if dead else 0), r)
             for r in ranks]
    until = time.perf_counter() + grace
    try:
        while time.perf_counter() < until + grace:  # a death, then the rest: bounded too
            try:
                return _farewell(m, ranks, rows, sends, until, grace)
            except RankFailure as e:  # one more died: forget its EXIT
                buried = m.losses.bury(e)
                for i, rank in enumerate(ranks):
                    if rank in buried and sends[i]:
                        m.cancel(sends[i])
                        m.orphans.append(sends[i])
                        sends[i] = m.MPI.REQUEST_NULL
        # one death after another until the bound: the ones that did not leave stood in the way
        return (set(ranks) - m.deaths.left) or set(ranks)
    finally:
        m.unlisten()
        m.deaths.exits_over()


def _farewell(m, ranks, rows, sends, until, grace):
    """The EXITs delivered, every BYE (or the silent resumed or ended), then LEAVE; the ranks
    whose EXIT or LEAVE was not delivered in time (empty: all went)."""
    if not m.waiter.all(sends, until) and (late := _undelivered(m, ranks, sends)):
        return late
    if not m.notices.farewells(ranks, until, m.waiter):
        _silent_at_the_end(m, ranks)
    ranks = [r for r in ranks if r not in m.deaths.dead]
    leaves = [m.send_control(P.fill_control(rows[r - 1], P.LEAVE), r) for r in ranks]
    if not m.waiter.all(leaves, time.perf_counter() + grace):
        return _undelivered(m, ranks, leaves)
    return set()


def _undelivered(m, ranks, requests):
    """The ranks of ``requests`` (one each) whose request is not complete: a rank that died
    unseen (its EXIT never delivered, and under ULFM no error either: a death that no way of
    ``Deaths`` told of) or a rank stuck, which the ending names. One whose request fails
    (MPI's report of its death, late) stood in the way too; none when all completed after
    all, a moment late."""
    left = set()
    for rank, request in zip(ranks, requests):
        try:
            if not request.Test():
                left.add(rank)
        except m.MPI.Exception:
            left.add(rank)
    return left


def _silent_at_the_end(m, ranks):
    """Live ranks whose BYE did not come (stopped after their last task, stuck): resumed,
    their BYE awaited again, then ended (``Hung.resume_or_end``: ``Stuck`` but under ULFM)."""
    notices = m.notices

    def silent():
        notices.poll()
        return set(ranks) - m.deaths.dead - m.deaths.left - notices.byes

    m.hung.resume_or_end(m.deaths, silent(), m.ft, silent)


def finish(master, code, stuck=None):
    """The end of a run or a probe on rank 0: every worker let go (``shutdown``) and
    ``code``, the exit code, returned. When they cannot all be let go in order, MPI_Abort ends
    every process of the job: with ``stuck`` (default ``code``: a run's file is whole by then)
    when only a hung worker stood in the way (``Stuck``), else with ``code`` or 1."""
    try:
        standing = shutdown(master, GRACE)
        if not standing:
            return code
        why, code = unfinished(master, standing), code or 1
    except Stuck as e:
        why, code = str(e), code if stuck is None else stuck
    except WorkerLost as e:
        why, code = str(e), code or 1
    log.critical("%s; ending the job with MPI_Abort", why)
    abort(master.comm, code)


def unfinished(master, standing):
    """The ending's words when ``standing`` (ranks) did not take their EXIT and LEAVE in
    order: each named, as a silent rank is (``hung.named``), so that the one line says who
    stood in the way."""
    return (f"not every worker took its EXIT: {named(standing, master.peers)} did not in "
            "time")
