"""What imports what: no cycles, the rooms of the house, and a lean worker.

The static checks read every ``import`` of the package with ``ast`` (those inside functions
too: a lazy import is still a dependency). The worker check runs a small MPI job whose f, a
python target, writes the modules loaded in its process when it is first called — on a worker
rank that is everything the worker's start-up imported.
"""

import ast
import os
from pathlib import Path

import pytest

from mpirun import needs_mpiexec
from mpirun import run as launch

PACKAGE = Path(__file__).resolve().parent.parent / "gcc_mpi"

# what a worker may not load: it needs numpy, mpi4py, the job file's parser and its f only
# (rank 0 builds the data, the codes and the file: scipy, h5py and the modules below)
NOT_ON_A_WORKER = ("scipy", "h5py", "matplotlib", "gcc_mpi.codes", "gcc_mpi.simulate",
                   "gcc_mpi.setup", "gcc_mpi.trial", "gcc_mpi.results", "gcc_mpi.merge",
                   "gcc_mpi.analyze", "gcc_mpi.plots", "gcc_mpi.runtime.master")


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports():
    """{module: set of gcc_mpi modules it imports anywhere in its text}."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}  # "from . import protocol"
        graph[name] = {m for m in found if m.startswith("gcc_mpi") and m != name}
    return {k: {m for m in v if m in graph} for k, v in graph.items()}


def test_no_import_cycles():
    graph = imports()
    seen, path = set(), []

    def visit(m):
        if m in path:
            cycle = path[path.index(m):] + [m]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if m in seen:
            return
        path.append(m)
        for n in sorted(graph[m]):
            if not (m.startswith(n + ".")):  # a module importing its own package is no cycle
                visit(n)
        path.pop()
        seen.add(m)

    for m in sorted(graph):
        visit(m)


def test_the_rooms_of_the_house():
    """runtime/ never imports the simulator; the mathematics never imports MPI."""
    graph = imports()
    for m, deps in graph.items():
        if m.startswith("gcc_mpi.runtime"):
            assert "gcc_mpi.simulate" not in deps, m
    for path in [*PACKAGE.glob("codes/*.py"), *PACKAGE.glob("targets/*.py"),
                 PACKAGE / "stragglers.py", PACKAGE / "setup.py", PACKAGE / "trial.py"]:
        assert "mpi4py" not in path.read_text(), path


SPY_F = '''
import os
import sys

import numpy as np

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")
_written = False


def f(X):
    global _written
    if not _written:
        _written = True
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               f"modules-{RANK}.txt"), "w") as out:
            out.write("\\n".join(sorted(sys.modules)))
    return np.tanh(X[:, :2])
'''
SPY = """
[job]
name = "spy"
trials = 2
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "spy.py:f"
[code]
schemes = ["bacc", "gcc"]
[stragglers]
model = "none"
"""


@needs_mpiexec
def test_a_worker_imports_only_numpy_mpi4py_and_what_its_f_needs(tmp_path):
    (tmp_path / "spy.py").write_text(SPY_F)
    (tmp_path / "spy.toml").write_text(SPY)
    code, _, err = launch(["run", "spy.toml", "-o", "spy.h5", "-q"], tmp_path, ranks=4)
    assert code == 0, err
    master = set((tmp_path / "modules-0.txt").read_text().split())
    assert {"h5py", "gcc_mpi.codes", "mpi4py.MPI"} <= master  # the spy sees rank 0's modules
    for rank in (1, 2, 3):
        loaded = set((tmp_path / f"modules-{rank}.txt").read_text().split())
        assert {"numpy", "mpi4py.MPI", "gcc_mpi.runtime.worker"} <= loaded
        bad = sorted(m for m in loaded for p in NOT_ON_A_WORKER if m == p or
                     m.startswith(p + "."))
        assert not bad, f"rank {rank} imported {bad}"
    assert os.path.exists(tmp_path / "spy.h5")
