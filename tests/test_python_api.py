"""The public Python API: docs/python.md's notebook session runs top to bottom using only
``gcc_mpi``'s public names; every name in ``gcc_mpi.__all__`` is documented, none is hidden by
a submodule of the same name, and importing the package loads none of them; the command line
calls the same functions.
"""

import ast
import logging
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jobfiles import small_job

import gcc_mpi
import gcc_mpi.api
from gcc_mpi.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python.md"


def python_blocks(text):
    """The ```python blocks of a page, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_notebook_session_runs_top_to_bottom(tmp_path):
    session = "\n".join(python_blocks(PAGE.read_text()))
    used = public_names_used(session)
    assert used and used <= set(gcc_mpi.__all__), used - set(gcc_mpi.__all__)
    shutil.copytree(ROOT / "jobs", tmp_path / "jobs")
    (tmp_path / "session.py").write_text(session)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "session.py"], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "did you mean \"bacc\"?" in out  # the JobError cell
    assert (tmp_path / "digits-mlp.h5").exists() and (tmp_path / "report.html").exists()
    figures = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert "digits-mlp-tradeoff.png" in figures and "digits-mlp-mse-vs-S.png" in figures
    assert "my-own.png" in figures
    # the page shows what its cells print (the trials are seeded: the figures repeat exactly)
    printed = [line.rstrip() for line in out.splitlines()]
    shown = text_blocks(PAGE.read_text())
    assert len(shown) == 2  # the pivot of mse_db and the differences
    for block in shown:
        assert printed_in(block, printed), ("docs/python.md shows\n" + "\n".join(block)
                                            + "\nbut the session printed\n" + out[-4000:])


def text_blocks(text):
    """The ```text blocks of a page (what its cells print), as lists of lines."""
    return [[line.rstrip() for line in b.splitlines()]
            for b in re.findall(r"^```text\n(.*?)^```", text, re.S | re.M)]


def printed_in(block, printed):
    """Whether the lines of ``block`` are printed, in a row, among ``printed``."""
    return any(printed[i:i + len(block)] == block for i in range(len(printed)))


def test_a_changed_figure_is_not_printed():
    block = text_blocks(PAGE.read_text())[0]
    assert printed_in(block, ["x", *block, "y"])
    changed = [block[0], block[1], block[2].replace("-30.2", "-30.3"), *block[3:]]
    assert not printed_in(changed, ["x", *block, "y"])


def public_names_used(source):
    """The attributes of ``gm`` (import gcc_mpi as gm) a script uses; it fails on any import of
    a submodule of gcc_mpi or of a name from one."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gcc_mpi"):
            assert node.module == "gcc_mpi", f"imports from {node.module}"
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                assert a.name == "gcc_mpi" or not a.name.startswith("gcc_mpi"), a.name
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "gm"):
            names.add(node.attr)
    return names


def test_every_public_name_is_documented_and_none_is_a_submodule():
    assert set(gcc_mpi.api.__all__) <= set(gcc_mpi.__all__)  # the package re-exports them all
    submodules = {m.name for m in pkgutil.iter_modules(gcc_mpi.__path__)}
    for name in gcc_mpi.__all__:
        assert name not in submodules, f"importing gcc_mpi.{name} would hide the API's {name}"
        obj = getattr(gcc_mpi, name)
        if name == "__version__":
            continue
        doc = obj.__doc__ or ""
        assert len(doc.strip()) > 40, name
        if callable(obj) and not isinstance(obj, type) and obj.__module__ == "gcc_mpi.api":
            assert "Returns\n    -------" in doc, f"{name}: no numpydoc Returns section"


def test_importing_the_package_loads_no_api_module():
    code = ("import sys, gcc_mpi; print(sorted(m for m in sys.modules if m.startswith('gcc_mpi') "
            "or m == 'numpy'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "['gcc_mpi']"  # a worker and the BLAS pinning rely on it


JOB = small_job("api", ["uncoded", "bacc", "gcc"], 6,
                '[stragglers]\ncount = 1\n[sweep]\n"stragglers.delay" = [0.1, 0.2]\n')


def test_in_memory_and_on_file_are_the_same_trials(tmp_path):
    (tmp_path / "api.toml").write_text(JOB)
    job = gcc_mpi.load_job(tmp_path / "api.toml", ["job.trials=4"])
    assert job.config.job.trials == 4
    memory = gcc_mpi.run_simulation(job)
    kept = gcc_mpi.run_simulation(job, tmp_path / "kept.h5")
    assert memory.path == "api (in memory)" and kept.path == str(tmp_path / "kept.h5")
    for a, b in zip(memory.points, kept.points, strict=True):
        for name in a.schemes:
            assert np.array_equal(a.schemes[name]["nmse"], b.schemes[name]["nmse"])
    assert main(["simulate", str(tmp_path / "api.toml"), "-o", str(tmp_path / "cli.h5"), "-q",
                 "--set", "job.trials=4"]) == 0
    cli = gcc_mpi.read_results(tmp_path / "cli.h5")
    assert np.array_equal(cli.points[1].schemes["gcc"]["nmse"],
                          kept.points[1].schemes["gcc"]["nmse"])
    assert cli.attrs["command"].startswith("python -m gcc_mpi")
    assert kept.attrs["command"] == f"gcc_mpi.run_simulation({str(tmp_path / 'api.toml')!r})"


def test_dataframes_of_rows_and_of_trials(tmp_path):
    (tmp_path / "api.toml").write_text(JOB)
    results = gcc_mpi.run_simulation(gcc_mpi.load_job(tmp_path / "api.toml"))
    rows = gcc_mpi.to_dataframe(results)
    assert list(rows.columns[:2]) == ["stragglers.delay", "scheme"]
    assert len(rows) == 6 and {"mse_db", "mse_db_ci95", "latency_mean",
                               "erasures_raised"} <= set(rows.columns)
    expected = [r["mse_db"] for r in gcc_mpi.summarize(results)]  # uncoded: nmse 0, no dB
    assert rows["mse_db"].isna().tolist() == [e is None for e in expected] == [True, False,
                                                                                False] * 2
    assert rows["mse_db"].dropna().tolist() == [e for e in expected if e is not None]
    trials = gcc_mpi.to_dataframe(results, trials=True)
    assert len(trials) == 2 * 3 * 6  # points x schemes x trials
    assert trials.query("scheme == 'gcc' and `stragglers.delay` == 0.2").nmse.tolist() == \
        results.points[1].schemes["gcc"]["nmse"].tolist()
    both = gcc_mpi.to_dataframe([results, results], labels=["a", "b"])
    assert both["file"].tolist() == ["a"] * 6 + ["b"] * 6


def test_the_command_line_validates_with_the_apis_check(tmp_path, monkeypatch, capsys):
    (tmp_path / "api.toml").write_text(JOB)
    calls = []
    real = gcc_mpi.api.check

    def spy(job, **kw):
        calls.append(job.config.job.name)
        return real(job, **kw)

    monkeypatch.setattr(gcc_mpi.api, "check", spy)
    assert main(["validate", str(tmp_path / "api.toml")]) == 0
    assert calls == ["api"] and "valid" in capsys.readouterr().err


def test_to_dataframe_without_pandas_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "api.toml").write_text(JOB)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError,
                       match=r'needs pandas: pip install "gcc_mpi\[pandas\]"'):
        gcc_mpi.to_dataframe([{"point": {}, "scheme": "bacc"}])


def test_the_library_says_nothing_unless_its_user_asks(tmp_path, monkeypatch, capsys, caplog):
    """The package only logs (a NullHandler of its own): nothing on stderr from the API; a
    user's handler gets the records, and a level quiets them."""
    from gcc_mpi.logs import Stderr

    logger = logging.getLogger("gcc_mpi")  # as a fresh interpreter has it, without the CLI's
    monkeypatch.setattr(logger, "handlers", [h for h in logger.handlers
                                             if not isinstance(h, Stderr)])
    before = logger.level
    logger.setLevel(logging.NOTSET)  # setLevel, not an assignment: it clears the loggers' caches
    try:
        said_only_if_asked(tmp_path, logger, capsys, caplog)
    finally:
        logger.setLevel(before)


def said_only_if_asked(tmp_path, logger, capsys, caplog):
    (tmp_path / "f.py").write_text("def labels(x):\n    return (x[:, :1] > 0).astype(int)\n")
    (tmp_path / "job.toml").write_text('[target]\nkind = "python"\nfunction = "f.py:labels"\n'
                                       '[data]\nsource = "gaussian"\ndim = 3\nbatch = 3\n'
                                       '[code]\nworkers = 6\nschemes = ["gcc"]\n')
    job = gcc_mpi.load_job(tmp_path / "job.toml")
    with caplog.at_level(logging.WARNING, logger="gcc_mpi"):
        warnings = gcc_mpi.check(job, say=True)
    assert len(warnings) == 1 and "f returns integers" in warnings[0]
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == \
        [("gcc_mpi.core.preflight", "WARNING", warnings[0])]
    assert capsys.readouterr().err == ""
    caplog.clear()
    logger.setLevel(logging.ERROR)
    assert gcc_mpi.check(job, say=True) == warnings and caplog.records == []
