"""The start of an MPI run, between MPI_Init and the first round: rank 0's start-up message to
every other rank, and the handshake in which each tells its pid and host (HELLO) and then that
its f is built (READY) — see ``protocol``.

A rank that dies meanwhile is buried and the run goes on without it; a rank that stays silent
(stopped, stuck) is ended; when no rank answers at all, or a death cannot be named, the run
cannot start (``WorkerLost``). Every wait is bounded (STARTUP_SILENCE, or ten times what rank 0
itself took to build the job: the workers build f as rank 0 did).
"""

import logging
import re
import signal
import time

from . import protocol as P
from .deaths import WorkerLost
from .mpi import IDLE_FIRST, SLEEP_IDLE, Backoff, RankFailure

log = logging.getLogger(__name__)

STARTUP_SILENCE = 30.0  # seconds a worker may stay silent at start-up once all others are READY


def announce(comm, waiter, message):
    """Send the start-up message (pickled, once) to every other rank."""
    requests = [comm.isend(message, dest=r, tag=P.SETUP) for r in range(1, comm.size)]
    waiter.all(requests)


def handshake(comm, master, built=0.0):
    """HELLO (pid, host), then READY, of every other rank (protocol), into ``master.peers``.
    A rank that dies meanwhile is buried (``Deaths``: ULFM, or hydra's notice and its pid) and
    the run goes on without it. A rank silent max(STARTUP_SILENCE, 10 x the start-up so far)
    s after the last other one answered (stopped, stuck) is ended (SIGKILL) and counts as
    dead. When no rank answers a phase within max(STARTUP_SILENCE, 10 x ``built``, the
    seconds rank 0 took to build the job: the workers build f as rank 0 did), or a death cannot
    be named (hydra's notice before the dead rank's HELLO): WorkerLost."""
    from mpi4py import MPI

    deaths, peers = master.deaths, master.peers
    start, backoff = time.perf_counter(), Backoff(IDLE_FIRST, SLEEP_IDLE)
    for phase in ("HELLO", "READY"):
        waiting, last = set(range(1, comm.size)) - deaths.dead, None
        since = time.perf_counter()
        while waiting:
            came = False
            try:
                for r in sorted(waiting):
                    message = comm.improbe(r, P.SETUP)
                    if message is not None:
                        answer = message.recv()
                        peers[r] = answer if phase == "HELLO" else peers[r]
                        waiting.discard(r)
                        last, came = time.perf_counter(), True
                deaths.check()
            except (RankFailure, MPI.Exception) as e:
                found = deaths.news(e if isinstance(e, RankFailure) else master.failure(e))
                deaths.defer(found)
                waiting -= found
            now = time.perf_counter()
            if came:
                backoff.reset()
            elif last is None and now - since > max(STARTUP_SILENCE, 10 * built):
                raise WorkerLost(f"no worker answered at start-up ({phase}) within "
                                 f"{now - since:.0f} s")
            elif last is not None and now - last > max(STARTUP_SILENCE, 10 * (last - start)):
                if phase == "HELLO":
                    raise WorkerLost(f"ranks {sorted(waiting)} did not answer at start-up")
                end_silent(master, waiting)
                waiting = set()
            else:
                backoff.sleep()


def end_silent(master, ranks):
    """Workers silent at start-up (stopped or stuck: they never even took the job): ended
    (SIGKILL), dead from now on."""
    hung, deaths = master.hung, master.deaths
    for rank in sorted(ranks):
        pid, host = master.peers.get(rank, (None, None))
        log.info("rank %s (worker %s, pid %s on %s) did not get ready within %g s of the "
                 "others; ending it (SIGKILL)", rank, rank - 1, pid, host, STARTUP_SILENCE)
        deaths.expect(rank)
    hung.signal(deaths, ranks, signal.SIGKILL)


def worker_hosts(master):
    """The host of each worker, rank 1 on, as its HELLO said ("?" for one that never did)."""
    return [master.peers.get(r, (None, "?"))[1] for r in range(1, master.comm.size)]


def read_pid_map(line):
    """{rank: (pid, host)} from a ``pid_map`` text (what follows "ranks by host and pid: " on
    rank 0's start-up line): how tests and benchmarks find the process of a rank."""
    ranks = {}
    for part in line.split("; "):
        host, _, rest = part.partition(": ")
        span = re.fullmatch(r"ranks (\d+)-(\d+) = pids (\d+)-(\d+)", rest)
        one = re.fullmatch(r"rank (\d+) = pid (\d+)", rest)
        if span:
            r0, r1, p0 = (int(span.group(i)) for i in (1, 2, 3))
            ranks.update({r: (p0 + r - r0, host) for r in range(r0, r1 + 1)})
        elif one:
            ranks[int(one.group(1))] = (int(one.group(2)), host)
        else:
            ranks.update({int(r): (int(p), host) for r, p in re.findall(r"(\d+)=(\d+)", rest)})
    return ranks


def pid_map(peers):
    """{rank: (pid, host)} as "host: ranks 0-6 = pids 4100-4106; ..." (or "rank=pid" pairs
    when the pids are not consecutive)."""
    by_host = {}
    for r, (pid, host) in sorted(peers.items()):
        by_host.setdefault(host, []).append((r, pid))
    parts = []
    for host, pairs in by_host.items():
        (r0, p0), (r1, p1) = pairs[0], pairs[-1]
        if all(pid - p0 == r - r0 for r, pid in pairs):
            parts.append(f"{host}: ranks {r0}-{r1} = pids {p0}-{p1}" if len(pairs) > 1
                         else f"{host}: rank {r0} = pid {p0}")
        else:
            parts.append(f"{host}: " + ", ".join(f"{r}={pid}" for r, pid in pairs))
    return "; ".join(parts)
