"""Tests that apply to one MPI only are marked with it, not skipped: ``ulfm`` (Open MPI's fault
tolerance, ``mpiexec --with-ft ulfm``) and ``hydra`` (MPICH's mpiexec: it forwards SIGINT and
ends the job itself when a rank exits). The environment whose mpiexec is the other MPI
deselects them and says so, in the report's header and at its end; the environment where they
apply runs them, so that .ci/run's two stages (MPICH: ``python -m pytest -q -rs``; Open MPI:
``python -m pytest -q -rs -m mpi``) run every test once. Without a known mpiexec nothing is
deselected: the MPI tests then fail, as a broken install should.

The tiers of tests/tiers.py (``browser``, ``slurm``, ``hosts``: what pip does not bring) skip
where what they need is absent; the report's end says, one line per tier, how many were left
out and how to run them. A test that takes a tier's fixture must carry its mark.
"""

import pytest
from mpirun import FLAVOUR, MPI_NAME
from tiers import TIERS

_MOVED = pytest.StashKey[dict]()  # mark -> how many tests this run deselected for it

# mark -> (the mpiexec flavour it needs, that MPI's name, the environment that runs it)
ONLY = {
    "ulfm": ("openmpi", "Open MPI", "the Open MPI environment: python -m pytest -q -rs -m mpi"),
    "hydra": ("mpich", "MPICH", "the MPICH environment: python -m pytest -q -rs"),
}


def elsewhere(item):
    """The mark of ``item`` that needs the other MPI, or None when it runs here."""
    known = {flavour for flavour, _, _ in ONLY.values()}
    for mark, (flavour, _, _) in ONLY.items():
        if item.get_closest_marker(mark) and FLAVOUR in known and FLAVOUR != flavour:
            return mark
    return None


def pytest_report_header(config):
    return [f"gcc_mpi: mpiexec is {MPI_NAME if FLAVOUR in ('mpich', 'openmpi') else FLAVOUR}; "
            + "; ".join(f"tests marked {mark} run only under {name}"
                        for mark, (_, name, _) in ONLY.items())]


def pytest_collection_modifyitems(config, items):
    moved = {}
    for item in items:
        # .ci/run's Open MPI stage selects -m mpi: a ulfm test without the mpi mark never runs
        for mark in ONLY:
            if item.get_closest_marker(mark) and not item.get_closest_marker("mpi"):
                raise pytest.UsageError(f"{item.nodeid} is marked {mark} but not mpi")
        for tier, (fixture, _, _) in TIERS.items():
            if fixture in item.fixturenames and not item.get_closest_marker(tier):
                raise pytest.UsageError(f"{item.nodeid} takes {fixture} but is not marked {tier}")
        mark = elsewhere(item)
        if mark:
            moved.setdefault(mark, []).append(item)
    if moved:
        gone = {item for marked in moved.values() for item in marked}
        config.hook.pytest_deselected(items=list(gone))
        items[:] = [item for item in items if item not in gone]
    config.stash[_MOVED] = {mark: len(marked) for mark, marked in moved.items()}


def pytest_terminal_summary(terminalreporter, config):
    for mark, count in config.stash.get(_MOVED, {}).items():
        _, name, where = ONLY[mark]
        terminalreporter.write_line(f"gcc_mpi: {count} test(s) marked {mark} deselected: they "
                                    f"need {name} and run in {where}")
    for tier, (_, needs, how) in TIERS.items():
        # by test id: a skipped test has one report per phase that ran
        skipped = {r.nodeid for r in terminalreporter.stats.get("skipped", ())
                   if tier in getattr(r, "keywords", {})}
        if skipped:
            terminalreporter.write_line(f"gcc_mpi: {len(skipped)} {tier} test(s) left out: they "
                                        f"need {needs}; to run them: {how}")
