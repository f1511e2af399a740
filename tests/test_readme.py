"""The README's walk-throughs run verbatim, top to bottom, in a fresh directory.

Every ```bash block of README.md is a walk-through; its lines run in order in one new folder
holding what a fresh clone has next to the README (jobs/ and examples/), with this Python and
its mpiexec first on PATH, and each must exit 0. Only these lines are changed or left out, and why:

- ``pip install ...``: the package is already installed in the environment running this test
  (reinstalling from the clone is what .ci/run does);
- ``python -m pytest ...``: the test suite itself, which is running;
- the Open MPI walk-through (lines naming ``venv-ompi/``): it builds a second environment from
  PyPI, which is what .ci/run's Open MPI stage does before it runs the MPI tests there;
- ``mpiexec -n R python -m gcc_mpi`` (the default job) with more than MAX_RANKS ranks runs on
  MAX_RANKS (2 cores here): the default job adapts to any allocation, so it is the same
  walk-through, only cheaper;
- ``mpiexec -n R ... run JOB.toml`` runs as written with ``--set job.trials=2``: the job's N
  needs its R ranks, and two trials per sweep point show that it runs.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from mpirun import MPIEXEC, TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
MAX_RANKS = 8
SKIP = {"pip": "the package is already installed here", "pytest": "the test suite itself"}


def walkthrough_lines(text):
    """(line number, command) of every line in the ```bash blocks, in order."""
    lines, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            inside = line.strip() == "```bash" if not inside else False
            continue
        if inside and line.strip() and not line.strip().startswith("#"):
            lines.append((number, line.strip()))
    return lines


def adapted(command):
    """The command as this test runs it (see the module notes), or None to leave it out."""
    words = shlex.split(command, comments=True)
    if "pip" in words or "pytest" in words or any(w.startswith("venv-ompi/") for w in words):
        return None
    if words[:2] == ["mpiexec", "-n"]:
        body = command.partition(" #")[0].rstrip()
        if "run" in words:
            command = f"{body} --set job.trials=2"
        elif int(words[2]) > MAX_RANKS:
            command = body.replace(f"-n {words[2]}", f"-n {MAX_RANKS}", 1)
    return command


def test_walkthrough_lines_are_found():
    text = "intro\n```bash\npip install .   # x\nmpiexec -n 32 python -m gcc_mpi\n```\n" \
           "```toml\nx = 1\n```\n```bash\nmpiexec -n 41 python -m gcc_mpi run j.toml  # y\n```\n"
    found = [adapted(c) for _, c in walkthrough_lines(text)]
    assert found == [None, "mpiexec -n 8 python -m gcc_mpi",
                     "mpiexec -n 41 python -m gcc_mpi run j.toml --set job.trials=2"]


def test_readme_walkthroughs_run_top_to_bottom(tmp_path):
    shutil.copytree(ROOT / "jobs", tmp_path / "jobs")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("GCC_MPI_WAIT", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                   str(Path(MPIEXEC).parent), env.get("PATH", "")])
    ran = []
    for number, line in walkthrough_lines((ROOT / "README.md").read_text()):
        command = adapted(line)
        if command is None:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=3 * TIMEOUT)
        assert done.returncode == 0, (f"README.md line {number}: {command}\n"
                                      f"{done.stderr[-3000:]}")
        assert "Traceback" not in done.stderr, f"README.md line {number}: {done.stderr}"
        ran.append(command)
    assert any(re.match(r"mpiexec -n \d+ python -m gcc_mpi\s*(#|$)", c) for c in ran), ran
    assert any(" simulate " in c for c in ran) and any(" analyze " in c for c in ran), ran
