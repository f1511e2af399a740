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
        watcher = threading.Thread(target=warden.watch, args=(listener, daemon.pid, set()),
                                   kwargs=dict(end_grace=2.0), daemon=True)
        watcher.start()
        (tmp_path / "go.up").touch()
        until = time.monotonic() + 60  # events, not times: the ranks said "rank", then /proc
        while not all((tmp_path / f"go.{role}").exists() for role in pids):
            assert time.monotonic() < until
            time.sleep(0.02)
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
