"""Several results files side by side (``analyze A.h5 B.h5 ...``): one table whose rows name
their file, and the differences of matching (point, scheme) rows with their 95 % intervals.

Each file is named by a label: the one given, or the file's name without ``.h5`` (with as many
of its parent folders as it takes to tell the files apart). Points match when their parameters
agree; a key swept in one file but not in another takes there the value of that file's job, so
a sweep of S in A meets B's fixed S. The first file is the reference: every other file's rows
are compared with the reference's matching row.

A difference of B from A (B minus A) is shown with the half-width of its 95 % interval,
sqrt(ci_A² + ci_B²) from the rows' own intervals (``analyze``: the NMSE in dB by the delta
method, the mean latency and relacc by their standard errors), which treats the runs as
independent; it is marked when it is larger than that half-width, i.e. unlikely to be chance.
Two runs of one job with the same seed draw the same inputs and delays, so their trials are
paired and the independent interval is conservative for them. A p99 difference has no
half-width: it is marked when the two p99 intervals (order statistics, ``analyze``) are
disjoint (``apart``), and left open ("?") when a missing upper end cannot decide. Last, the
provenance that differs between the files (``files.reader.provenance``), one line per key.
"""

import json
import math
import os
import sys

from ..job.keys import lookup
from ..errors import JobError
from .tables import TOO_FEW, aligned, format_param

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# (row field, its interval's field, the column's title, scale for display, decimals)
COMPARED = (
    ("mse_db", "mse_db_ci95", "Δ nmse [dB] ± ci95", 1.0, 2),
    ("relacc", "relacc_ci95", "Δ relacc ± ci95", 1.0, 3),
    ("latency_mean", "latency_mean_ci95", "Δ latency mean [ms] ± ci95", 1e3, 3),
    ("latency_p99", "latency_p99_ci95", "Δ p99 [ms]", 1e3, 3),
)


def labels_for(paths, labels=None):
    """The files' labels: ``labels`` (as many as files, distinct), else their names without
    the suffix, with parent folders added until they differ."""
    paths = [os.fspath(p) for p in paths]
    if labels:
        labels = list(labels)
        if len(labels) != len(paths):
            raise JobError("--label", f"give one label per file: {len(paths)} file(s), "
                                      f"{len(labels)} label(s)")
        if len(set(labels)) != len(labels):
            raise JobError("--label", f"labels must differ, got {', '.join(labels)}")
        return labels
    parts = [os.path.normpath(os.path.abspath(p)).split(os.sep) for p in paths]
    for depth in range(1, max(map(len, parts)) + 1):
        names = ["/".join(p[-depth:]).removesuffix(".h5") for p in parts]
        if len(set(names)) == len(names):
            return names
    seen = {}  # the same file (or in-memory results of one job) twice: numbered
    for i, name in enumerate(names):
        seen[name] = seen.get(name, 0) + 1
        names[i] = name if seen[name] == 1 else f"{name} ({seen[name]})"
    return names


def label_rows(results, labels, per_file):
    """The rows of every file (``per_file``: each file's ``analyze.summarize`` rows, in the
    order of ``results``), each with ``file`` (its label) and ``path``, and with ``point``
    holding, besides the file's own swept keys, the job's value of every key that another file
    sweeps (so matching points carry the same parameters)."""
    swept = list(dict.fromkeys(k for rows in per_file for r in rows for k in r["point"]))
    out = []
    for label, res, rows in zip(labels, results, per_file):
        try:
            config = tomllib.loads(res.config_toml or "")
        except tomllib.TOMLDecodeError:
            config = {}
        for r in rows:
            point = {k: r["point"][k] if k in r["point"] else lookup(config, k) for k in swept}
            out.append({"file": label, "path": res.path, **r, "point": point})
    return out


def _key(r):
    return json.dumps(r["point"], sort_keys=True), r["scheme"]


def differences(rows):
    """One dict per row of a file other than the first that matches a row of the first
    (same point and scheme): ``file``, ``reference``, ``point``, ``scheme`` and, for each
    compared statistic, its difference (this file minus the reference), the half-width of the
    difference's 95 % interval (``<stat>_ci95``) and whether the difference is larger
    (``<stat>_differs``); None where either row lacks the value or its interval."""
    if not rows:
        return []
    reference = rows[0]["file"]
    base = {_key(r): r for r in rows if r["file"] == reference}
    out = []
    for r in rows:
        ref = base.get(_key(r))
        if r["file"] == reference or ref is None:
            continue
        d = {"file": r["file"], "reference": reference, "point": r["point"],
             "scheme": r["scheme"]}
        for stat, ci, *_ in COMPARED:
            a, b = ref.get(stat), r.get(stat)
            delta = None if a is None or b is None else b - a
            width = None
            if delta is not None and ref.get(ci) is not None and r.get(ci) is not None:
                width = math.hypot(ref[ci], r[ci])
            d[stat], d[f"{stat}_ci95"] = delta, width
            d[f"{stat}_differs"] = None if width is None else abs(delta) > width
        a, b = ref.get("latency_p99"), r.get("latency_p99")
        d["latency_p99"] = None if a is None or b is None else b - a
        d["latency_p99_ci95"] = None  # no half-width: the two intervals decide (apart)
        d["latency_p99_differs"] = apart(ref, r, "latency_p99")
        out.append(d)
    return out


def apart(a, b, stat):
    """Whether the 95 % intervals (``<stat>_lo``, ``<stat>_hi``) of the rows ``a`` and ``b``
    are disjoint (True), overlap (False), or cannot tell (None: an end is missing where it
    would decide, as the upper end of a p99 from fewer than 368 trials). Disjoint intervals
    mark a difference: a true common value lies outside one of them, which each end allows
    with probability at most 2.5 %, so chance marks at most 5 % in each direction."""
    lo_a, hi_a, lo_b, hi_b = (x.get(f"{stat}_{end}") for x in (a, b) for end in ("lo", "hi"))
    if (lo_b is not None and hi_a is not None and lo_b > hi_a) or \
            (lo_a is not None and hi_b is not None and lo_a > hi_b):
        return True
    return None if None in (lo_a, hi_a, lo_b, hi_b) else False


def shown(d, stat, scale, decimals):
    """A difference as text: "+1.23 ± 0.45 *" (the mark when it is larger than its interval)."""
    if d[stat] is None:
        return "-"
    value = scale * d[stat]
    text = f"{value if round(value, decimals) else 0.0:+.{decimals}f}"  # no "-0.00"
    if d[f"{stat}_ci95"] is not None:
        text += f" ± {scale * d[f'{stat}_ci95']:.{decimals}f}"
    mark = {True: " *", None: f" {TOO_FEW}"}.get(d[f"{stat}_differs"], "  ")
    return text + mark


def heading(labels):
    """What the differences are: against the first file, with the intervals' meaning."""
    return (f"differences against {labels[0]} (the first file): file minus {labels[0]}, with "
            "the half-width of the 95% interval; * = larger than its interval (p99: the two "
            f"p99 intervals are disjoint; {TOO_FEW} = too few trials to tell)")


def none_match(labels):
    return f"no point and scheme of {', '.join(labels[1:])} matches one of {labels[0]}"


def difference_cells(diffs):
    """(head, body, left) of the differences' table, as analyze.table_cells."""
    keys = list(dict.fromkeys(k for d in diffs for k in d["point"]))
    columns = [c for c in COMPARED if any(d[c[0]] is not None for d in diffs)]
    body = [[d["file"], *(format_param(d["point"].get(k)) for k in keys), d["scheme"],
             *(shown(d, stat, scale, decimals) for stat, _, _, scale, decimals in columns)]
            for d in diffs]
    return ["file", *keys, "scheme", *(title for _, _, title, *_ in columns)], body, len(keys) + 2


def format_differences(diffs, labels):
    """The differences as an aligned text table, headed by what they are against."""
    if len(labels) < 2:
        return ""
    if not diffs:
        return f"# {heading(labels)}\n({none_match(labels)})"
    return f"# {heading(labels)}\n" + aligned(*difference_cells(diffs))


def provenance_differences(results, labels):
    """{key: [value of each file]} of the provenance keys (``files.reader.provenance``) whose
    values are not all the same, in the first file's order of keys ("-" where a file lacks one,
    e.g. a file written before the key was recorded)."""
    from ..files.reader import provenance

    each = [provenance(r.attrs) for r in results]
    keys = list(dict.fromkeys(k for p in each for k in p))
    found = {}
    for k in keys:
        values = [p.get(k, "-") for p in each]
        if len(set(map(str, values))) > 1:
            found[k] = values
    return found


def format_provenance(found, labels):
    """The provenance differences as a short block: one line per key, each file's value (the
    block says so when the files agree on everything recorded)."""
    if not found:
        return "# provenance: the same in every file (versions, MPI, CPU, hosts, command)"
    width = max(map(len, found))
    lines = ["# provenance that differs:"]
    for k, values in found.items():
        lines.append(f"#   {k:<{width}}  " + "  |  ".join(
            f"{label}: {v}" for label, v in zip(labels, values)))
    return "\n".join(lines)

