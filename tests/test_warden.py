"""The hosts' warden (gcc_mpi/runtime/warden.py) without MPI: a stand-in for the launcher's
daemon starts three "ranks", which tell the warden who they are; once one of them says it
leaves, the warden resumes the one that is stopped (it then ends by itself) and kills the one
that is still there after the grace."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from gcc_mpi.runtime import startwatch, warden

DAEMON = r"""
import json, subprocess, sys
ranks = {role: subprocess.Popen([sys.executable, "-c", sys.argv[1], role])
         for role in ("leaver", "stopped", "stuck")}
print(json.dumps({role: p.pid for role, p in ranks.items()}), flush=True)
print(json.dumps({role: p.wait() for role, p in ranks.items()}), flush=True)
"""

RANK = r"""
import os, sys, time
from gcc_mpi.runtime import warden
role, go = sys.argv[1], os.environ["GO"]
while not os.path.exists(go + ".up"):  # the test's warden listens
    time.sleep(0.02)
assert not warden.start()  # the socket is taken: this rank says "rank" to the warden there
open(f"{go}.{role}", "w").close()
while not os.path.exists(go):
    time.sleep(0.02)
if role == "leaver":
    warden.tell("leaving")
elif role == "stuck":
    time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warden is Linux only")
def test_the_warden_resumes_a_stopped_rank_and_kills_a_stuck_one(tmp_path):
    go = tmp_path / "go"
    daemon = subprocess.Popen([sys.executable, "-c", DAEMON, RANK], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "GO": str(go)})
    try:
        pids = json.loads(daemon.stdout.readline())
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(warden._ADDRESS.format(daemon=daemon.pid))
        listener.listen(8)
        (tmp_path / "go.up").touch()
        until = time.monotonic() + 60  # events, not times: the ranks said "rank", then /proc
        while not all((tmp_path / f"go.{role}").exists() for role in pids):
            assert time.monotonic() < until
            time.sleep(0.02)
        # the warden from here, its ranks' words waiting: one that knows no rank of its host
        # after its first look (a second) would take them all for ended (a slow start)
        watcher = threading.Thread(target=warden.watch, args=(listener, daemon.pid, set()),
                                   kwargs=dict(end_grace=2.0), daemon=True)
        watcher.start()
        os.kill(pids["stopped"], signal.SIGSTOP)  # says it is stopped
        while startwatch.state(pids["stopped"]) != "T":
            assert time.monotonic() < until, startwatch.state(pids["stopped"])
            time.sleep(0.02)
        go.touch()  # the leaver says "leaving"; the stopped one would end too, if resumed
        watcher.join(120)
        assert not watcher.is_alive()
        codes = json.loads(daemon.communicate(timeout=120)[0])  # every rank ended
        assert codes == {"leaver": 0, "stopped": 0, "stuck": -signal.SIGKILL}, codes
    finally:
        daemon.kill()
        daemon.wait()


PROXY = r"""
import ctypes, json, os, select, socket, subprocess, sys
ctypes.CDLL(None).prctl(15, b"hydra_pmi_proxy", 0, 0, 0)  # PR_SET_NAME: hydra's proxy, by name
ranks, pmi = {}, {}
for rank in (4, 5, 6):
    mine, theirs = socket.socketpair()  # the rank's PMI socket, as hydra hands it over
    env = dict(os.environ, PMI_RANK=str(rank), PMI_SIZE="9", MPI_LOCALNRANKS="3",
               PMI_FD=str(theirs.fileno()))
    ranks[rank] = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(rank), sys.argv[2]],
                                   pass_fds=[theirs.fileno()], env=env)
    theirs.close()
    pmi[mine] = ranks[rank]
print(json.dumps({rank: p.pid for rank, p in ranks.items()}), flush=True)
select.select(list(pmi), [], [])  # hydra's auto-cleanup: a PMI socket closed, kill them all
for p in ranks.values():
    p.kill()
print(json.dumps({rank: p.wait() for rank, p in ranks.items()}), flush=True)
sys.stdin.read()  # up, forwarding its ranks' output, until the warden is done
"""

CHECKED_IN = r"""
import fcntl, os, socket, sys, time
from gcc_mpi.runtime import warden
rank, victim, go = sys.argv[1], sys.argv[2], os.environ["GO"]
while not os.path.exists(go + ".up"):  # the test's warden listens
    time.sleep(0.02)
assert not warden.start()
if rank == victim:  # its PMI socket high, the MPI library's files below it: slow to release
    fd = int(os.environ["PMI_FD"])  # after the PMI socket (descending, as here), so that the
    fcntl.fcntl(fd, fcntl.F_DUPFD, 3000)  # others, killed at its close, end before it does
    os.close(fd)
    pairs = [socket.socketpair() for _ in range(500)]
    for a, b in pairs:
        a.sendall(bytes(65536))
warden.check_in()
open(f"{go}.{rank}", "w").close()
time.sleep(600)
"""

WARDEN = r"""
import socket, sys
from gcc_mpi.runtime import warden
from gcc_mpi.runtime.startwatch import StartWatch
daemon, go = int(sys.argv[1]), sys.argv[2]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(warden._ADDRESS.format(daemon=daemon))
listener.listen(8)
open(go + ".up", "w").close()
warden.watch(listener, daemon, set(), starting=StartWatch(daemon, expected=3, size=9))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warden is Linux only")
def test_the_warden_names_the_rank_that_died_not_the_first_seen_to_end(tmp_path):
    """A host without rank 0 under hydra (``warden.MidRun``): a stand-in proxy kills its three
    ranks once one's PMI socket closes. The victim (rank 5) releases 1000 files after its PMI
    socket, so the others, killed at its close, are seen to end (pidfd, /proc) before it: the
    warden must name it from its check-in (``checkin``), which closed first."""
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 4096:
        pytest.skip("needs a limit on open files above the stand-in's PMI socket (3000)")
    go = tmp_path / "go"
    proxy = subprocess.Popen([sys.executable, "-c", PROXY, CHECKED_IN, "5"], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env={**os.environ, "GO": str(go)})
    keeper = None
    try:
        pids = {int(r): p for r, p in json.loads(proxy.stdout.readline()).items()}
        keeper = subprocess.Popen([sys.executable, "-c", WARDEN, str(proxy.pid), str(go)],
                                  stderr=subprocess.PIPE, text=True)
        until = time.monotonic() + 60  # events, not times: each rank checked in
        while not all((tmp_path / f"go.{r}").exists() for r in pids):
            assert time.monotonic() < until and keeper.poll() is None
            time.sleep(0.02)
        os.kill(pids[5], signal.SIGKILL)
        assert json.loads(proxy.stdout.readline()) == {str(r): -9 for r in pids}
        err = keeper.communicate(timeout=120)[1]
        said = [x for x in err.splitlines() if x.startswith("gcc_mpi:")]
        host = socket.gethostname()
        assert len(said) == 1 and said[0].startswith(
            f"gcc_mpi: rank 5 (worker 4, pid {pids[5]} on {host}) died first and the job ended "
            f"with it (seen by {host}'s warden)"), err
    finally:
        for p in (keeper, proxy):
            if p is not None:
                p.kill()
                p.communicate()
