"""What ``analyze`` says of a probe file: each worker's measured times and the tail, as a table,
JSON and a figure (the file itself is traces.py's)."""

import json
import logging
import os
from pathlib import Path

import numpy as np

from .canvas import figure, require_matplotlib, save
from .statistics import quantile_ci95
from .tables import P99, aligned, tail_text, too_few_note
from ..files.traces import FORMAT, read_probe
from ..files.outputs import refuse
from ..logs import PLAIN

log = logging.getLogger(__name__)

QUANTILES = (50, 90, 99)


def _q(a):
    """The QUANTILES of ``a`` and p99's distribution-free 95 % interval (``p99_lo``,
    ``p99_hi``; None for an end that too few values cannot bound)."""
    lo, hi = quantile_ci95(np.asarray(a, np.float64), 0.99)
    return {**{f"p{q}": float(np.percentile(a, q)) for q in QUANTILES},
            "p99_lo": lo, "p99_hi": hi}


def summarize_probe(p, slowest=3):
    """The ``analyze --json`` object of a probe file (seconds)."""
    arrival, compute = p["arrival"], p["compute"]
    T, W = arrival.shape
    workers = [{"worker": w, "rank": int(p["rank"][w]), "host": p["host"][w],
                **{f"arrival_{k}": v for k, v in _q(arrival[:, w]).items()},
                **{f"compute_{k}": v for k, v in _q(compute[:, w]).items()}}
               for w in range(W)] if T else []
    pooled = _q(arrival.ravel()) if T else dict.fromkeys(
        [f"p{q}" for q in QUANTILES] + ["p99_lo", "p99_hi"])
    tail = {}
    if T:
        by_p50 = sorted(workers, key=lambda r: -r["arrival_p50"])[:slowest]
        by_p99 = sorted(workers, key=lambda r: -r["arrival_p99"])[:slowest]
        everyone = np.max(arrival, axis=1)  # a round that waits for every worker
        tail = {"p99_over_p50": pooled["p99"] / pooled["p50"] if pooled["p50"] > 0 else None,
                "slowest_by_p50": [r["worker"] for r in by_p50],
                "slowest_by_p99": [r["worker"] for r in by_p99],
                "wait_all_p50": float(np.percentile(everyone, 50)),
                "wait_all_p99": float(np.percentile(everyone, 99)),
                **dict(zip(("wait_all_p99_lo", "wait_all_p99_hi"),
                           quantile_ci95(everyone, 0.99))),
                "compute_share_p50": float(np.median(compute) / np.median(arrival))
                if np.median(arrival) > 0 else None}
        master = p.get("master")
        if master is not None and len(master):
            tail["master_reference_p50"] = float(np.median(master))
    a = p["attrs"]
    return {"format": FORMAT, "rounds": T, "workers": W, "complete": bool(a.get("complete")),
            "hosts": sorted(set(p["host"])), "pooled": pooled, "tail": tail,
            "per_worker": workers}


def _ms(x):
    return "-" if x is None else f"{1e3 * x:.3f}"


def format_probe(s):
    head = ["worker", "rank", "host", "p50 [ms]", "p90 [ms]", P99,
            "compute p50 [ms]"]
    body = [[str(r["worker"]), str(r["rank"]), r["host"], _ms(r["arrival_p50"]),
             _ms(r["arrival_p90"]),
             tail_text(r, "arrival_p99"),
             _ms(r["compute_p50"])]
            for r in s["per_worker"]]
    pooled = s["pooled"]
    body.append(["all", "-", ",".join(s["hosts"]) or "-", _ms(pooled["p50"]),
                 _ms(pooled["p90"]), tail_text(pooled, "p99"), "-"])
    lines = [aligned(head, body, left={2})]
    note = too_few_note([b[5] for b in body])
    if note:  # p99 of one worker's few rounds: the pooled one is the one to read
        lines.append(note.replace("trials", "rounds"))
    t = s["tail"]
    if t:
        ratio = "-" if t["p99_over_p50"] is None else f"{t['p99_over_p50']:.2f}"
        per = {r["worker"]: r for r in s["per_worker"]}
        slow = ", ".join(f"{w} ({_ms(per[w]['arrival_p50'])} ms)" for w in t["slowest_by_p50"])
        share = "-" if t["compute_share_p50"] is None else f"{100 * t['compute_share_p50']:.0f}%"
        lines += ["", f"tail: pooled p99/p50 = {ratio}; slowest workers by p50: {slow}; "
                      f"by p99: {', '.join(map(str, t['slowest_by_p99']))}",
                  f"a round that waits for every worker: p50 {_ms(t['wait_all_p50'])} ms, "
                  f"p99 {tail_text(t, 'wait_all_p99')} ms; "
                  f"f is {share} of the median task time"]
        if "master_reference_p50" in t:
            lines.append(f"rank 0 between rounds: {_ms(t['master_reference_p50'])} ms (p50) for "
                         "the reference computation that scales the simulator's encode and "
                         "decode times")
    return "\n".join(lines)


def probe_figure(outdir, name):
    """The file ``plot_probe`` writes."""
    return os.path.join(outdir, f"{name}-probe-cdf.png")


def plot_probe(p, outdir, name):
    """Per-worker CDFs of the measured times (and the pooled one) as one PNG; returns its path."""
    require_matplotlib()
    os.makedirs(outdir, exist_ok=True)
    fig, ax = figure()
    arrival = 1e3 * p["arrival"]
    T, W = arrival.shape
    frac = np.arange(1, T + 1) / T
    for w in range(W):
        ax.step(np.sort(arrival[:, w]), frac, where="post", lw=0.8, alpha=0.6)
    pooled = np.sort(arrival.ravel())
    ax.step(pooled, np.arange(1, pooled.size + 1) / pooled.size, where="post", color="black",
            lw=2, label=f"all {W} workers (median {np.median(pooled):.3g} ms)")
    if pooled.size and pooled[0] > 0 and pooled[-1] / pooled[0] > 20:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("time from send to the result's arrival on rank 0 [ms]")
    ax.set_ylabel("fraction of rounds with time ≤ x")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(f"probe: {T} rounds on {W} workers, one line per worker", fontsize=10)
    return save(fig, probe_figure(outdir, name))


def main_analyze_probe(path, json_out=False, plot=None, overwrite=False):
    """``analyze PROBE.h5``: the per-worker table and tail summary (or JSON); ``plot``: CDFs
    (the figure refused as ``refuse`` says, unless ``overwrite``)."""
    p = read_probe(path)
    if plot:
        require_matplotlib()  # a missing extra fails before any output
        refuse(probe_figure(plot, Path(path).stem), "--plot", overwrite=overwrite,
               inputs=[path])
    s = summarize_probe(p)
    if plot:
        log.info("wrote %s", plot_probe(p, plot, Path(path).stem), extra=PLAIN)
    if json_out:
        print(json.dumps(s, indent=2))
    else:
        a = p["attrs"]
        print(f"# {path}: probe of {s['rounds']} rounds on {s['workers']} workers, gcc_mpi "
              f"{a.get('version')}, mpi {a.get('mpi')}, created {a.get('created')}")
        print("# time from send to the result's arrival on rank 0 (f on real inputs, no "
              "injected delay)")
        print(format_probe(s))
    if not s["complete"]:
        log.warning("note: %s is incomplete (the probe was stopped)", path, extra=PLAIN)
    return 0
