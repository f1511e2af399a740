"""Coding against replication and uncoded at the same cost (``analyze``'s last table): within a
sweep point every scheme ran on the same N workers for the same K inputs, so the point is the
equal-cost group. For each scheme: its p50 and p99 (with the p99's 95 % interval), its accuracy,
and its p99 as a ratio of replication's and of uncoded's, marked ``*`` when the two p99
intervals are apart (``comparison.apart``: the ratio is on one side of 1 beyond chance) and
``?`` when too few trials leave it open.

The cost is stated twice: N/K, the workers per input (replication's factor), and CPU-seconds
per batch, the cores a batch holds for its wall time, (N + 1) × the mean latency (rank 0 and N
workers reserved, whether a worker computes, sleeps or idles: what an allocation is billed).

One home for the table: ``equal_cost`` computes its entries, ``cells`` its text cells; the
text table, the HTML report and ``analyze --json``'s ``equal_cost`` key (``by_row``) read them.
"""

import json

from ..errors import JobError
from .comparison import apart
from .tables import P99, TOO_FEW, aligned, format_param, tail_text, too_few_note

BASELINES = ("replication", "uncoded")


def sizes(config_toml):
    """{point parameters as JSON: (N, K)} of the job a file records (empty if unreadable)."""
    from ..job.parse import parse_job

    try:
        job = parse_job(config_toml or "")
    except JobError:
        return {}
    return {_key(p.params): (p.config.code.workers, p.config.data.batch) for p in job.points}


def _key(params):
    return json.dumps(params, sort_keys=True)


def equal_cost(rows, config_toml):
    """One dict per row of a point that holds a baseline (replication or uncoded) and another
    scheme: ``point, N, K, scheme, workers_per_input`` (N/K), ``cpu_s_per_batch``, the row's
    latency and accuracy statistics, and for each baseline b in the point ``p99_over_<b>``
    and ``p99_over_<b>_apart`` (True, False, or None: open)."""
    found = sizes(config_toml)
    groups = {}
    for r in rows:
        if _key(r["point"]) in found:
            groups.setdefault(_key(r["point"]), []).append(r)
    return [e for key, group in groups.items() for e in compared(group, *found[key])]


# the row's statistics an entry repeats so that the table is read from the entries alone
STATS = ("trials", "mse_db", "mse_db_ci95", "relacc", "latency_p50", "latency_p99",
         "latency_p99_lo", "latency_p99_hi")


def compared(group, N, K):
    """The entries of ``group`` (rows of one equal-cost group: N workers, K inputs), each
    against the group's baselines; [] without a baseline and another scheme."""
    base = {r["scheme"]: r for r in group if r["scheme"] in BASELINES}
    if not base or len(base) == len(group):
        return []
    return [{"point": r["point"], "scheme": r["scheme"], **cost(r, base, N, K),
             **{k: r.get(k) for k in STATS}} for r in group]


def cost(r, base, N, K):
    """What the table adds to row ``r`` of a group of N workers for K inputs whose baselines
    are ``base`` ({scheme: row}): ``N, K, workers_per_input, cpu_s_per_batch`` and, per
    baseline b, ``p99_over_<b>`` and ``p99_over_<b>_apart``."""
    out = {"N": N, "K": K, "workers_per_input": N / K,
           "cpu_s_per_batch": None if r["latency_mean"] is None
           else (N + 1) * r["latency_mean"]}
    for b, rb in base.items():
        ok = r["latency_p99"] is not None and rb["latency_p99"]
        out[f"p99_over_{b}"] = r["latency_p99"] / rb["latency_p99"] if ok else None
        out[f"p99_over_{b}_apart"] = None if rb is r else apart(r, rb, "latency_p99")
    return out


def by_row(rows, config_toml):
    """``analyze --json``'s ``equal_cost`` of each of ``rows`` (one file's, in order): what its
    entry adds to the row (``cost``), or None where its point is no equal-cost group. The
    entries are ``equal_cost``'s, the ones the text table and the HTML report show."""
    found = {(_key(e["point"]), e["scheme"]): e for e in equal_cost(rows, config_toml)}
    shown = ("point", "scheme", *STATS)  # already in the row
    return [None if e is None else {k: v for k, v in e.items() if k not in shown}
            for e in (found.get((_key(r["point"]), r["scheme"])) for r in rows)]


def _ratio(e, b):
    if f"p99_over_{b}" not in e:
        return "-"
    value = e[f"p99_over_{b}"]
    if value is None:
        return "-"
    if e["scheme"] == b:
        return "1  "
    mark = {True: " *", False: "  "}.get(e[f"p99_over_{b}_apart"], f" {TOO_FEW}")
    return f"{value:.3g}{mark}"


LEGEND = ("at equal cost (each point: every scheme on the same N workers for K inputs); "
          "p99 ÷ a baseline: * = the two p99 intervals are apart, ? = too few trials to tell; "
          "CPU-s/batch = (N + 1) ranks × mean latency")


def cells(entries):
    """(head, body, left, note) of the equal-cost table of ``entries``: column titles, one
    list of text cells per entry, how many leading columns are names, and the line that
    explains an open p99 interval ("" if none is shown); the text table and the HTML report
    both lay these out."""
    keys = list(dict.fromkeys(k for e in entries for k in e["point"]))
    baselines = [b for b in BASELINES if any(f"p99_over_{b}" in e for e in entries)]
    head = [*keys, "N/K", "scheme", "nmse [dB]", "relacc", "p50 [ms]", P99,
            *(f"p99 ÷ {b}" for b in baselines), "CPU-s/batch"]
    body = []
    for e in entries:
        db = "-" if e["mse_db"] is None else f"{e['mse_db']:.2f}"
        body.append([*(format_param(e["point"].get(k)) for k in keys),
                     f"{e['N']}/{e['K']} = {e['workers_per_input']:.2g}", e["scheme"], db,
                     "-" if e["relacc"] is None else f"{e['relacc']:.3f}",
                     "-" if e["latency_p50"] is None else f"{1e3 * e['latency_p50']:.3f}",
                     tail_text(e, "latency_p99"), *(_ratio(e, b) for b in baselines),
                     "-" if e["cpu_s_per_batch"] is None else f"{e['cpu_s_per_batch']:.3g}"])
    note = too_few_note([b[head.index(P99)] for b in body])
    return head, body, len(keys) + 2, note


def format_equal_cost(entries):
    """The equal-cost table as text ("" without a point that has a baseline and another
    scheme)."""
    if not entries:
        return ""
    head, body, left, note = cells(entries)
    return "\n".join([f"# {LEGEND}", aligned(head, body, left)] + ([note] if note else []))
