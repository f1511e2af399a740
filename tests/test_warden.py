"""The hosts' warden (gcc_mpi/runtime/warden.py) without MPI: a stand-in for the launcher's
daemon starts three "ranks"; once one of them says it leaves, the warden resumes the one that
is stopped (it then ends by itself) and kills the one that is still there after the grace."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from gcc_mpi.runtime import warden

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
        watcher = threading.Thread(target=warden.watch, args=(listener, daemon.pid),
                                   kwargs=dict(end_grace=2.0), daemon=True)
        watcher.start()
        os.kill(pids["stopped"], signal.SIGSTOP)
        until = time.monotonic() + 60  # an event, not a time: /proc says it is stopped
        while warden.ranks(daemon.pid).get(pids["stopped"]) != "T":
            assert time.monotonic() < until, warden.ranks(daemon.pid)
            time.sleep(0.02)
        go.touch()  # the leaver says "leaving"; the stopped one would end too, if resumed
        watcher.join(120)
        assert not watcher.is_alive()
        codes = json.loads(daemon.stdout.readline())
        assert codes == {"leaver": 0, "stopped": 0, "stuck": -signal.SIGKILL}, codes
    finally:
        daemon.kill()
        daemon.wait()
