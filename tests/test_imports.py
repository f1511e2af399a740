"""What imports what: no cycles, every module in its layer, no private names across modules, and
a lean worker.

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
NOT_ON_A_WORKER = ("scipy", "h5py", "matplotlib", "gcc_mpi.codes", "gcc_mpi.core.simulate",
                   "gcc_mpi.core.point", "gcc_mpi.core.trial", "gcc_mpi.files.writer",
                   "gcc_mpi.files.reader", "gcc_mpi.files.merge", "gcc_mpi.reports",
                   "gcc_mpi.runtime.master")


def module_name(path, package=PACKAGE):
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(package=PACKAGE):
    """{module: set of gcc_mpi modules it imports anywhere in its text}. ``from X import a``
    counts X.a when that is a module, else X (the package ``gcc_mpi`` itself only for a name
    it defines)."""
    modules = {module_name(path, package) for path in package.rglob("*.py")}
    graph = {}
    for path in package.rglob("*.py"):
        name = module_name(path, package)
        home = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = home.split(".")[:len(home.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for a in node.names:  # "from . import protocol" imports a module
                    found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


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


# The layers of the package, bottom to top, each a folder (docs/contributing.md draws them): a
# module may import the modules of its own layer and of the layers below, never above. The files
# (results, probe traces) sit below the core because the one job driver owns the writer. The two
# rooms of the sixth layer are peers that never import each other: the MPI runtime and the reports.
LAYERS = [
    ("base", {"gcc_mpi", "errors", "logs"}),
    ("job", {"job"}),
    ("maths", {"codes", "targets"}),
    ("files", {"files"}),
    ("core", {"core"}),
    ("runtime", {"runtime"}),
    ("reports", {"reports"}),
    ("interface", {"__main__", "cli", "api"}),
]
PEERS = {"runtime": "reports", "reports": "runtime"}


def layer_of(module):
    """The layer of a gcc_mpi module (its first component below the package decides)."""
    top = module.split(".")[1] if module != "gcc_mpi" else "gcc_mpi"
    for rank, (layer, members) in enumerate(LAYERS):
        if top in members:
            return rank, layer
    pytest.fail(f"{module} is in no layer: add it to LAYERS (and docs/contributing.md)")


def wrong_arrows(graph):
    """The imports that go up a layer or across the peers, as "a -> b (layer -> layer)"."""
    wrong = []
    for m, deps in sorted(graph.items()):
        rank, layer = layer_of(m)
        for d in sorted(deps):
            d_rank, d_layer = layer_of(d)
            if PEERS.get(layer) == d_layer:
                wrong.append(f"{m} -> {d} ({layer} -> {d_layer}: peers)")
            elif d_rank > rank and not (m.startswith(d + ".") or d == "gcc_mpi"):
                wrong.append(f"{m} -> {d} ({layer} -> {d_layer})")
    return wrong


def test_every_module_stays_in_its_layer():
    """No import goes up a layer (docs/contributing.md, "Layers"), nor between the runtime and
    the reports; the mathematics never imports MPI; a module of the runtime never imports the
    simulator (rank 0's transitive use of it in the checks before a run aside)."""
    graph = imports()
    assert wrong_arrows(graph) == []
    for m, deps in graph.items():
        if m.startswith("gcc_mpi.runtime"):
            assert "gcc_mpi.core.simulate" not in deps, m
    for path in [*PACKAGE.glob("job/*.py"), *PACKAGE.glob("codes/*.py"),
                 *PACKAGE.glob("targets/*.py"), *PACKAGE.glob("files/*.py"),
                 *PACKAGE.glob("core/*.py")]:
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(m.split(".")[0] == "mpi4py" for m in names), path


def test_an_arrow_the_wrong_way_is_caught(tmp_path):
    """The layer check fails on a copy of the package with one import turned around: the job
    schema importing the results file, and the runtime importing the reports."""
    import shutil

    copy = tmp_path / "gcc_mpi"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    config = copy / "job" / "config.py"
    config.write_text(config.read_text() + "\n\ndef _up():\n"
                                           "    from ..files.reader import read_results\n")
    session = copy / "runtime" / "session.py"
    session.write_text(session.read_text() + "\n\ndef _across():\n"
                                             "    from ..reports.analyze import summarize\n")
    assert wrong_arrows(imports(copy)) == [
        "gcc_mpi.job.config -> gcc_mpi.files.reader (job -> files)",
        "gcc_mpi.runtime.session -> gcc_mpi.reports.analyze (runtime -> reports: peers)"]


def private_imports(package=PACKAGE):
    """Where a module uses another module's private name (``from x import _y``, ``x._y``)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree, imported = ast.parse(path.read_text()), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                    "gcc_mpi")):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        found.append(f"{module_name(path)}: {a.name}")
                    imported.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                imported |= {(a.asname or a.name).split(".")[0] for a in node.names
                             if a.name.startswith("gcc_mpi")}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                    and node.value.id in imported):
                found.append(f"{module_name(path)}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    assert private_imports() == []


# settings a library documents as module attributes to assign (mpi4py's initialisation options)
LIBRARY_SETTINGS = {"mpi4py.rc"}


def _owned(tree):
    """Attribute names the classes of a module give their own instances: ``self.x = ...`` in
    their methods, their ``__slots__`` and class-level names."""
    owned = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id == "self"):
                owned.add(node.attr)
        for node in cls.body:
            for t in (node.targets if isinstance(node, ast.Assign) else
                      [node.target] if isinstance(node, ast.AnnAssign) else []):
                if isinstance(t, ast.Name):
                    owned.add(t.id)
                if isinstance(t, ast.Name) and t.id == "__slots__":
                    owned |= {e.value for e in ast.walk(node.value)
                              if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return owned


def _created(function):
    """Names a function binds to an object it makes (``x = Call(...)``, ``with Call() as x``)."""
    made = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.withitem) and isinstance(node.context_expr, ast.Call):
            if isinstance(node.optional_vars, ast.Name):
                made.add(node.optional_vars.id)
    return made


def outside_assignments(package=PACKAGE):
    """Where a module assigns an attribute of an object it did not create: not ``self``'s own,
    not of an object the function made, not of an instance of the module's own classes (by
    attribute name), e.g. ``master.writer = w`` or ``self.waiter.check = f``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        owned = _owned(tree)
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for function in functions:
            made = _created(function)
            for node in ast.walk(function):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                           else [])
                for t in [e for target in targets
                          for e in (target.elts if isinstance(target, ast.Tuple) else [target])]:
                    if not isinstance(t, ast.Attribute):
                        continue
                    x = t.value
                    if isinstance(x, ast.Name) and (x.id in ("self", "cls") or x.id in made
                                                    or t.attr in owned):
                        continue
                    if ast.unparse(x) in LIBRARY_SETTINGS:
                        continue
                    found.append(f"{module_name(path, package)}:{t.lineno}: {ast.unparse(t)}")
    return found


def test_no_module_sets_another_objects_attributes():
    """An object's attributes are set by its own class (or by the module that made it): the
    collaborators of an object are given when it is built or through its methods, never
    assigned from outside (docs/contributing.md)."""
    assert outside_assignments() == []


def test_an_assignment_from_outside_is_caught(tmp_path):
    """The check fails on a copy of the package where the rounds are told their results file
    from outside, as they were before the job driver."""
    import shutil

    copy = tmp_path / "gcc_mpi"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    driver = copy / "core" / "driver.py"
    driver.write_text(driver.read_text().replace(
        "    progress = progress or Quiet()\n",
        "    progress = progress or Quiet()\n    engine.events = sink\n"))
    assert [f.split(":")[0] + f.split(":")[2] for f in outside_assignments(copy)] == [
        "gcc_mpi.core.driver engine.events"]


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


def test_no_module_is_over_500_lines():
    """A module does one job (docs/contributing.md, "Style"): none of gcc_mpi/ exceeds 500
    lines; a longer one is split by its jobs."""
    long = {module_name(p): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}, long
