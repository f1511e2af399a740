"""The docs' simulate figures, made by the code: every figure block of the docs and the job files
is what its command gives today.

A figure block follows a marker line naming the command that made it and how it is written:

    <!-- figures: python -m gcc_mpi simulate jobs/digits-mlp.toml; lines relacc -->   (markdown:
    the fenced block or the table on the next line)
    # figures: python -m gcc_mpi simulate jobs/digits-mlp.toml; lines relacc   (a TOML comment:
    the comment lines under it indented by three spaces)

The command is `python -m gcc_mpi simulate [JOB] [--set KEY=VALUE ...]` (no JOB: the default
job), with paths from the repository's root; its seeds are the job's, so the figures repeat
exactly. Each command runs once, in memory, whatever the number of blocks naming it. Styles:

    lines [2] [ci] [relacc] [NAME=LABEL ...]   one line per sweep point: "S = 5: bacc -24.7 ..."
                                               (1 or 2 decimals, ± the 95% interval, (relacc);
                                               a scheme shown under a shorter label)
    md [relacc]                                the same as a markdown table
    rate KEY                                   analyze --rate KEY's slopes (not its head)
    cells                                      the nmse and relacc cells of a table as the command
                                               line prints it (other cells: an MPI run's timings,
                                               left as measured)

    python benchmarks/figures.py            # check: each block that differs, as a diff; exit 1
    python benchmarks/figures.py --write    # rewrite every block from today's code

tests/test_figures.py runs the check. Figures a marker does not precede are the benchmarks' own
(each names its command) or timings and MPI runs, labelled with the machine that measured them.
"""

import argparse
import difflib
import os
import re
import shlex
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gcc_mpi as gm  # noqa: E402
from gcc_mpi.reports.analyze import table_cells  # noqa: E402
from gcc_mpi.reports.rates import FLOOR_DB, fit_rate_details, format_rates  # noqa: E402
from gcc_mpi.reports.tables import format_param  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^(?:<!--|#) figures: (?P<command>[^;]+); (?P<style>.+?)(?: -->)?$")
LABELS = {"stragglers.count": "S", "code.workers": "N"}  # a swept key as the lines name it
PREFIX = "#   "  # a figure line in a TOML comment
# an exact scheme's nmse is 0 or round-off (f on one row against f on the batch: -330 dB here)
EXACT_DB = -250.0
CHECKED = ("nmse [dB] ± ci95", "relacc")  # the cells style's columns


def files(root=ROOT):
    """The files that may hold figure blocks."""
    found = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for folder in ("jobs", "examples", "gcc_mpi/jobs"):
        found += sorted((root / folder).rglob("*.toml"))
    return found


def blocks(text):
    """(command, style, first line, end line) of every figure block of ``text``: the block is
    lines[first:end] (0-based, end excluded)."""
    lines, found = text.split("\n"), []
    for i, line in enumerate(lines):
        m = MARK.match(line.strip())
        if not m:
            continue
        first = end = i + 1
        if line.startswith("#"):
            while end < len(lines) and lines[end].startswith(PREFIX):
                end += 1
        elif lines[first].startswith("```"):
            first += 1
            end = first
            while not lines[end].startswith("```"):
                end += 1
        else:
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
        found.append((m["command"].strip(), m["style"].strip(), first, end))
    return found


def run(command, root=ROOT):
    """The summary rows (analyze.summarize) of a marker's command, simulated in memory."""
    words = shlex.split(command)
    if words[:4] != ["python", "-m", "gcc_mpi", "simulate"]:
        raise SystemExit(f"figures: {command!r}: not a `python -m gcc_mpi simulate` command")
    job, sets, rest = None, [], words[4:]
    while rest:
        word = rest.pop(0)
        if word == "--set":
            sets.append(rest.pop(0))
        else:
            job = root / word
    return gm.summarize(gm.run_simulation(gm.load_job(job, sets)))


def render(style, rows, old):
    """The block's lines for ``rows`` in ``style`` (``old``: its lines now, for ``cells``)."""
    words = style.split()
    if words[0] == "lines":
        return lines_style(rows, words[1:])
    if words[0] == "md":
        return md_style(rows, "relacc" in words)
    if words[0] == "rate":
        return format_rates(fit_rate_details(rows, words[1]), words[1]).split("\n")[1:]
    if words[0] == "cells":
        return cells_style(rows, old)
    raise SystemExit(f"figures: unknown style {style!r}")


def _db(r, digits, ci):
    if r["mse_db"] is None or r["mse_db"] < EXACT_DB:
        return "exact"
    shown = f"{r['mse_db']:.{digits}f}"
    return shown + (f" ± {r['mse_db_ci95']:.{digits}f}" if ci else "")


def _points(rows):
    """[((swept key's label, value), its rows)] in the file's order; ("", "") without a sweep."""
    points = {}
    for r in rows:
        label = ", ".join(LABELS.get(k, k) for k in r["point"])
        value = ", ".join(format_param(v) for v in r["point"].values())
        points.setdefault((label, value), []).append(r)
    return list(points.items())


def lines_style(rows, words):
    digits = 2 if "2" in words else 1
    names = dict(w.split("=", 1) for w in words if "=" in w)
    points = _points(rows)
    cells = [[_db(r, digits, "ci" in words) for r in group] for _, group in points]
    width = [max(len(c) for c in column) for column in zip(*cells)]
    head = max(len(value) for (_, value), _ in points)
    out = []
    for ((label, value), group), row in zip(points, cells):
        shown = [f"{names.get(r['scheme'], r['scheme'])} {c.rjust(w)}"
                 + (f" ({r['relacc']:.3f})" if "relacc" in words else "")
                 for r, c, w in zip(group, row, width)]
        start = f"{label} = {value.rjust(head)}: " if label else ""
        out.append(start + "  ".join(shown))
    return out


def md_style(rows, relacc):
    points = _points(rows)
    out = ["| " + " | ".join([points[0][0][0], *(r["scheme"] for r in points[0][1])]) + " |",
           "|" + "---|" * (1 + len(points[0][1]))]
    for ((_, value), group) in points:
        cells = [_db(r, 1, False).replace("-", "−")
                 + (f" ({r['relacc']:.3f})" if relacc else "") for r in group]
        out.append("| " + " | ".join([value, *cells]) + " |")
    return out


def cells_style(rows, old):
    """``old`` (a table as the command line prints it) with its nmse and relacc cells made from
    ``rows``, matched by scheme. A figure at the round-off floor is left as it is: an exact
    scheme's -309 dB over MPI is -333 dB or 0 in the simulator (f on one row or the batch)."""
    head, body, _ = table_cells(rows)
    made = {cells[head.index("scheme")]: dict(zip(head, cells)) for cells in body}
    spans = [m.span() for m in re.finditer(r"-+", old[1])]
    titles = [old[0][a:b].strip() for a, b in spans]
    out = old[:2]
    for line in old[2:]:
        scheme = line[slice(*spans[0])].strip()
        row = next(r for r in rows if r["scheme"] == scheme)
        for title in CHECKED:
            if title in titles and (row["mse_db"] is not None and row["mse_db"] > FLOOR_DB):
                a, b = spans[titles.index(title)]
                line = line[:a] + made[scheme][title].rjust(b - a) + line[b:]
        out.append(line)
    return out


def update(text, results):
    """``text`` with every figure block made from ``results`` ({command: rows})."""
    lines = text.split("\n")
    for command, style, first, end in reversed(blocks(text)):
        prefix = PREFIX if lines[first - 1].startswith("#") else ""
        old = [line[len(prefix):] for line in lines[first:end]]
        lines[first:end] = [prefix + line for line in render(style, results[command], old)]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true", help="rewrite the blocks (default: check)")
    args = p.parse_args(argv)
    texts = {path: path.read_text() for path in files()}
    results = {}
    for text in texts.values():
        for command, *_ in blocks(text):
            if command not in results:
                results[command] = run(command)
    differs = 0
    for path, text in texts.items():
        new = update(text, results)
        if new != text:
            differs += 1
            name = str(path.relative_to(ROOT))
            if args.write:
                path.write_text(new)
            else:
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), name, name + " (the code)"))
    verb = "rewrote" if args.write else "differ from the code:"
    print(f"# figures: {sum(len(blocks(t)) for t in texts.values())} blocks, "
          f"{len(results)} commands; {differs} files {verb}", file=sys.stderr)
    return 1 if differs and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
