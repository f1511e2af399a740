"""The docs keep up with the code: jobs.md's key table is the schema (every key, its default),
every link between the pages lands on a file and a heading, and the set-up the README and the
pages promise (the extras, the ignored folders) is what the project has."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gcc_mpi.job import schema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def key_table(text):
    """{dotted key: default text} of jobs.md's table "| key | default | allowed |": a row names
    one key or several, the first in full and the others in full or by their last part."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("| key | default | allowed |"):
            inside = True
            continue
        if not inside or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            break  # the table ends at its first line that is no row
        key_cell, default_cell = [c.strip() for c in line.strip("|").split("|")[:2]]
        names = re.findall(r"`([^`]+)`", key_cell)
        defaults = re.findall(r"`([^`]+)`", default_cell)
        table = names[0].rpartition(".")[0]
        keys = [names[0], *(n if "." in n else f"{table}.{n}" for n in names[1:])]
        for i, k in enumerate(keys):
            rows[k] = (defaults[i] if len(defaults) == len(keys) else
                       defaults[0] if len(defaults) == 1 else default_cell)
    return rows


def test_jobs_md_lists_every_key_with_its_default():
    rows = key_table((ROOT / "docs" / "jobs.md").read_text())
    listed = {k for k in rows if not k.startswith(("[", 'code."'))}
    assert listed == set(schema.KEYS), (sorted(set(schema.KEYS) - listed),
                                        sorted(listed - set(schema.KEYS)))
    assert "[sweep]" in rows and 'code."<plug-in>".<option>' in rows
    for key, shown in rows.items():
        if key not in schema.KEYS:
            continue
        default = schema.DEFAULTS[key]
        if shown == "—":
            assert default is None, key
        elif shown == "as gcc":
            assert default == schema.DEFAULTS["code.gcc." + key.rpartition(".")[2]], key
        else:
            value = tomllib.loads(f"v = {shown}")["v"]
            assert value == (list(default) if isinstance(default, tuple) else default), key


def test_the_key_table_check_can_fail():
    text = (ROOT / "docs" / "jobs.md").read_text()
    assert "code.gcc-manifold.pool" in key_table(text)
    broken = text.replace("| `code.gcc-manifold.ordering`", "\n| `code.gcc-manifold.ordering`")
    assert "code.gcc-manifold.pool" not in key_table(broken)  # a blank line ends the table


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)  # no code blocks
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_lands_on_a_file_and_a_heading(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        assert where.exists(), f"{page.name}: {target}: no such file"
        if anchor:
            assert anchor in anchors(where), f"{page.name}: {target}: no such heading"


def test_the_extras_the_docs_name_exist_and_the_tests_get_theirs():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for page in PAGES:
        for name in re.findall(r'"\.\[([a-z,]+)\]"|gcc_mpi\[([a-z]+)\]', page.read_text()):
            for extra in filter(None, ",".join(name).split(",")):
                assert extra in extras, f"{page.name} names the extra [{extra}]"
    names = {re.split(r"[<>=;]", d)[0] for d in extras["test"]}
    assert {"pandas", "selenium", "matplotlib"} <= names  # the API's DataFrames, the browser
    assert "pandas" in " ".join(extras["pandas"])


def test_the_readmes_folders_are_ignored():
    for folder in ("venv-ompi/", "venv/", "results/"):
        done = subprocess.run(["git", "check-ignore", "-q", folder + "x"], cwd=ROOT)
        assert done.returncode == 0, f"{folder} is not in .gitignore"
