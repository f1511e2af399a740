"""docs/clusters.md's rehearsal (three hosts on one machine, .ci/hosts-up.sh) runs as written.

Each ```bash block after a ``<!-- rehearsal: NAME -->`` line runs verbatim under
``bash -euo pipefail``, as root, in a folder that stands for the clone: its ``.ci/`` and, under
Open MPI, ``venv-ompi/`` (this environment: the README's Open MPI set-up). The environment is
the README's install: this python and its mpiexec first on PATH, and none of Open MPI's
variables (``OMPI_*``), so a block sets what it needs. The ``bed`` block runs, then the block
of this MPI (``mpich`` or ``openmpi``: tests/mpirun.py's FLAVOUR); each must exit 0, and the
MPI block must write the file the page names, whose ``hosts`` are the three hosts three times
each, and print them. The block that takes the bed down is not marked: the hosts tests share
the bed.
"""

import json
import os
import re
import sys
from pathlib import Path

import pytest
from mpirun import BED, CI, FLAVOUR, MPIEXEC, Script, needs_mpiexec
from test_hosts import bed  # noqa: F401 (the fixture: the bed up, or skip / fail)

from gcc_mpi.files.reader import read_results

PAGE = Path(__file__).resolve().parent.parent / "docs" / "clusters.md"
BLOCK = re.compile(r"^<!-- rehearsal: (\w+) -->\n+```bash\n(.*?)^```$", re.S | re.M)
WRITES = {"mpich": "rehearsal.h5", "openmpi": "rehearsal-ompi.h5"}  # what the page promises


def blocks(text):
    """{name: script} of the marked blocks of ``text``."""
    return dict(BLOCK.findall(text))


def test_the_marked_blocks_are_found():
    text = "x\n<!-- rehearsal: one -->\n\n```bash\na \\\n  b\n```\n```bash\nc\n```\n" \
           "<!-- rehearsal: two -->\n```bash\nd\n```\n"
    assert blocks(text) == {"one": "a \\\n  b\n", "two": "d\n"}
    assert set(blocks(PAGE.read_text())) == {"bed", *WRITES}


def clone(folder):
    """``folder`` as the clone the page's commands run in, and a reader's environment."""
    (folder / ".ci").symlink_to(CI)
    if FLAVOUR == "openmpi":
        (folder / "venv-ompi").symlink_to(sys.prefix)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OMPI_") and k != "GCC_MPI_WAIT"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(Path(MPIEXEC).parent),
                                   env.get("PATH", "")])
    return env


@needs_mpiexec
@pytest.mark.hosts
@pytest.mark.usefixtures("bed")
def test_the_rehearsal_runs_as_written(tmp_path):
    found = blocks(PAGE.read_text())
    assert FLAVOUR in WRITES, f"mpiexec is {FLAVOUR}: the page has blocks for {list(WRITES)}"
    env = clone(tmp_path)
    code, out, err = Script(found["bed"], tmp_path, env, name="bed").wait()
    assert code == 0, f"the bed block:\n{found['bed']}\n{err}"
    assert out.splitlines()[-1:] == [BED[1]], out  # `.ci/hosts-ssh gcc-host2 hostname`
    code, out, err = Script(found[FLAVOUR], tmp_path, env, name=FLAVOUR).wait()
    assert code == 0, f"the {FLAVOUR} block:\n{found[FLAVOUR]}\n{err}"
    hosts = [h for h in BED for _ in range(3)]
    res = read_results(tmp_path / WRITES[FLAVOUR])
    assert res.complete and json.loads(res.attrs["hosts"]) == hosts, res.attrs
    assert json.dumps(hosts) in out, out
