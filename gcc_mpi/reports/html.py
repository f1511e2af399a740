"""A report to share (``analyze OUT.h5 [MORE.h5 ...] --html report.html``): one
self-contained HTML page — the files and their provenance, every table, every figure (SVG
inlined as data URIs, so the page loads nothing), and each resolved job — that any browser
opens offline and that can be mailed as one file.

``build`` assembles the page of an ``analyze.Analysis`` (the files, their summary rows and
differences); the rest lays it out, from tables as (head, body, left) cells and figures as SVG.
"""

import base64
import html
import json
from datetime import datetime, timezone

from .. import __version__
from . import canvas, comparison, plots
from ..errors import JobError
from .rates import fit_rate_details, format_rates

ROW_NOTES = ("nmse [dB]: 10·log10 of the mean NMSE over the trials that did not fail, ± the "
             "half-width of its 95% confidence interval; relacc: the fraction of inputs whose "
             "argmax class is right (classifiers); latency: encode + send + wait + decode per "
             "trial; p99 [95% CI]: the 99th percentile of the latency with its "
             "distribution-free interval from order statistics; overhead: decode finished "
             "minus the arrival of the last result used.")


def build(analysis, rate=None, made=None):
    """The page of ``analysis`` (an analyze.Analysis): the files and their provenance, the
    summary table, the suspected workers, the equal-cost table (one file), the differences
    (several files), the rates against ``rate`` (or against code.workers when it is swept),
    every figure (``made``: ``analysis.figures()``, drawn here if None) and each resolved
    job."""
    labels, results = analysis.labels, analysis.results
    sections = [("files", "Files and provenance", provenance(labels, results)),
                ("summary", "Summary per point and scheme",
                 table(*analysis.cells()) + paragraph(ROW_NOTES + _too_few(analysis)))]
    named = suspected(labels, results)
    if named:
        sections.append(("suspects", "Suspected workers", named))
    entries = analysis.equal_cost()
    if entries:
        sections.append(("equal-cost", "Coding against replication at equal cost",
                         _equal_cost(entries)))
    if len(results) > 1:
        inner = (table(*comparison.difference_cells(analysis.differences))
                 if analysis.differences else paragraph(comparison.none_match(labels)))
        sections.append(("differences", "Differences",
                         paragraph(comparison.heading(labels)) + inner))
    key = rate or ("code.workers" if any("code.workers" in r["point"] for r in analysis.rows)
                   else None)
    if key:
        sections.append(("rates", f"Rates against {key}", "\n".join(
            (paragraph(label) if label else "") + _rates(rows, key)
            for label, rows in zip(labels, analysis.per_file))))
    name, made = made or analysis.figures()
    sections.append(("figures", "Figures", "\n".join(
        figure(canvas.svg(fig), f"{kind}: {plots.caption(kind)}", kind) for kind, fig in made)
        or paragraph("(no figure applies)")))
    sections.append(("jobs", "The jobs", "\n".join(
        details(f"{label + ': ' if label else ''}{r.path}: the resolved job",
                preformatted(r.config_toml or "(none recorded)"), open_=True)
        for label, r in zip(labels, results))))
    title = f"gcc_mpi report: {name}" if len(results) == 1 else \
        f"gcc_mpi report: {' vs '.join(labels)}"
    return page(title, sections, len(results))


def suspected(labels, results):
    """The "suspected: ..." lines of every file (reports.suspects, as analyze and the end of a
    run say them) and the rule that names a worker; "" when no file names one."""
    from .suspects import SUSPECT, suspect_lines

    lines = [(f"{label}: " if label else "") + line
             for label, r in zip(labels, results) for line in suspect_lines(r)]
    if not lines:
        return ""
    rule = (f"A worker is suspected when the robust decoders (code.<scheme>.robust) flagged its "
            f"result in more than {100 * SUSPECT:.0f}% of the decodes that used it; the file "
            "keeps each trial's flags (the dataset flagged).")
    return "\n".join(paragraph(line) for line in lines) + paragraph(rule)


def _too_few(analysis):
    """The summary's note on a p99 whose interval the trials cannot close, if one is shown."""
    from .tables import P99, too_few_note

    head, body, _ = analysis.cells()
    note = too_few_note([b[head.index(P99)] for b in body]) if P99 in head else ""
    return f" {note}." if note else ""


def _equal_cost(entries):
    """The equal-cost table: the cells the text table lays out (``equal_cost.cells``), a
    ratio whose intervals are apart set off as a marked difference (its " *")."""
    from .equal_cost import LEGEND, cells

    head, body, left, note = cells(entries)
    return table(head, body, left) + paragraph(LEGEND[0].upper() + LEGEND[1:] + "."
                                               + (f" {note}." if note else ""))


def _rates(rows, key):
    try:
        return preformatted(format_rates(fit_rate_details(rows, key), key))
    except JobError as e:  # the key is not swept in this one of the files
        return paragraph(str(e))


def provenance(labels, results):
    """The table of the files: where each came from and what it holds."""
    head = ["file", "path", "complete", "mpi", "gcc_mpi", "created", "command", "points",
            "schemes", "workers lost"]
    body = []
    for label, r in zip(labels, results):
        lost = json.loads(r.attrs.get("lost", "[]") or "[]")
        schemes = list(dict.fromkeys(s for p in r.points for s in p.schemes))
        body.append([label or "-", r.path, "yes" if r.complete else "no (interrupted)",
                     r.attrs.get("mpi"), r.attrs.get("version"), r.attrs.get("created"),
                     r.attrs.get("command"), len(r.points), ", ".join(schemes), len(lost)])
    from ..files.reader import provenance as recorded

    kept = "\n".join(details(f"{label + ': ' if label else ''}where and with what it ran",
                              preformatted("\n".join(f"{k}: {v}" for k, v in
                                                      recorded(r.attrs).items())))
                      for label, r in zip(labels, results))
    if len(results) > 1:
        kept += preformatted(comparison.format_provenance(
            comparison.provenance_differences(results, labels), labels))
    return table(head, body, left=len(head)) + kept


LONG = 30  # characters: a longer cell may wrap anywhere, so that wide tables fit the page
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
p.lead { color: #555; margin-top: 0; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; max-width: 100%; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #eee; vertical-align: top; }
td.long { overflow-wrap: anywhere; min-width: 12em; }
th { text-align: left; background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.differs { font-weight: bold; color: #a40; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
code { font-size: 0.95em; }
"""


def _e(text):
    return html.escape(str(text), quote=True)


def table(head, body, left, marked=()):
    """An HTML table of text cells: the first ``left`` columns are names, the rest numbers
    (right-aligned); a cell ending in " *" is a marked difference (``marked`` columns)."""
    rows = ["<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for cells in body:
        tds = []
        for i, c in enumerate(cells):
            cls = "" if i < left else "num"
            if str(c).endswith(" *"):
                cls += " differs"
            if len(str(c)) > LONG:  # a path or a command: may wrap anywhere
                cls += " long"
            tds.append(f'<td class="{cls.strip()}">{_e(c)}</td>' if cls else f"<td>{_e(c)}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def figure(svg_bytes, caption, alt):
    """A figure: the SVG inlined as a data URI, and its caption."""
    data = base64.b64encode(svg_bytes).decode("ascii")
    return (f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{_e(alt)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def page(title, sections, files):
    """The whole page: ``sections`` are (id, heading, inner HTML) in order; ``files`` the
    number of results files, for the lead line."""
    made = datetime.now(timezone.utc).isoformat(timespec="seconds")
    nav = " ".join(f'<a href="#{_e(i)}">{_e(h)}</a>' for i, h, _ in sections)
    body = "\n".join(f'<section id="{_e(i)}"><h2>{_e(h)}</h2>\n{inner}\n</section>'
                     for i, h, inner in sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gcc_mpi {_e(__version__)}">
<title>{_e(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{_e(title)}</h1>
<p class="lead">{files} results file{'s' if files != 1 else ''}, reported by gcc_mpi
{_e(__version__)} on {_e(made)}.</p>
<nav>{nav}</nav>
{body}
</body>
</html>
"""


def preformatted(text):
    return f"<pre>{_e(text)}</pre>"


def paragraph(text):
    return f"<p>{_e(text)}</p>"


def details(summary, inner, open_=False):
    return (f"<details{' open' if open_ else ''}><summary>{_e(summary)}</summary>\n{inner}\n"
            "</details>")
