"""The docs' simulate figures are what the code gives: every block after a `figures:` marker in
README.md, docs/ and the job files equals what benchmarks/figures.py makes from its command today
(each command simulated once, in memory, whatever the number of blocks naming it). A figure that
looks like a job file's table but has no marker fails too, so a new table cannot slip past.
docs/python.md's figures are its session's own output (tests/test_python_api.py)."""

import difflib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("figures", ROOT / "benchmarks" / "figures.py")
figures = importlib.util.module_from_spec(_spec)
sys.modules["figures"] = figures
_spec.loader.exec_module(figures)

MARKED = [p for p in figures.files() if figures.blocks(p.read_text())]


class Runs(dict):
    """{command: its summary rows}, each command simulated once, when first asked for."""

    def __missing__(self, command):
        self[command] = figures.run(command)
        return self[command]


@pytest.fixture(scope="module")
def results():
    return Runs()


@pytest.mark.parametrize("path", MARKED, ids=[str(p.relative_to(ROOT)) for p in MARKED])
def test_every_figure_block_is_what_its_command_gives(path, results):
    text = path.read_text()
    made = figures.update(text, results)
    diff = "".join(difflib.unified_diff(text.splitlines(True), made.splitlines(True),
                                        "the text", "the code"))
    assert made == text, f"{path.name}: run python benchmarks/figures.py --write\n{diff}"


def test_a_changed_figure_is_caught(results):
    for name, old, new in [("README.md", "-24.82 ± 2.53", "-23.94 ± 2.53"),
                           ("jobs/digits-mlp.toml", "gcc -29.5 (1.000)", "gcc -27.3 (1.000)"),
                           ("docs/own-model.md", "| −26.5 (0.998) |", "| −24.4 (0.998) |")]:
        text = (ROOT / name).read_text()
        assert text.count(old) == 1, (name, old)
        changed = text.replace(old, new)
        assert figures.update(changed, results) == text, name


# a line of figures: "S = 5: bacc -24.7 ..." or "N = 20: ..." in a job's comment, a table row
FIGURE_LINE = re.compile(r"^#\s+[SN] =\s*\d+: \S+ -?\d")


def test_every_job_files_table_has_its_marker():
    for path in figures.files():
        lines = path.read_text().split("\n")
        inside = {i for *_, first, end in figures.blocks("\n".join(lines))
                  for i in range(first, end)}
        loose = [line for i, line in enumerate(lines) if FIGURE_LINE.match(line)
                 and i not in inside]
        assert not loose, f"{path.name}: figures without a marker: {loose}"


def test_own_scheme_md_shows_the_example_job_as_it_is():
    job = (ROOT / "examples" / "systematic-berrut.toml").read_text()
    assert f"```toml\n{job}```" in (ROOT / "docs" / "own-scheme.md").read_text()
