"""``python -m gcc_mpi plan``: recommend the scheme, N and S (or the deadline) for a job from
simulations on a measured trace (a probe of the cluster, see gcc_mpi.files.traces).

Every candidate is the job with stragglers.model = "trace" on that file, simulated by the
simulator's own functions (``simulate.Block``, ``simulate.scheme_block``) on the same trials:
per N, one PointSetup holds every scheme and each block of BLOCK trials (inputs and replayed
delays) is drawn once; each (scheme, wait policy) then decodes that block under its own WaitPolicy
and adds it to its statistics (``statistics.SchemeStats``: memory does not grow with --trials). So
candidates differ only in what they decide, and the comparison is paired. The candidate set is
small on purpose (a few N from K to the largest, a few S from 0 to N - K, two deadlines at the
trace's pooled p90 and p99, exact schemes stopping as soon as they can decode), so that the
default job is planned in well under a minute on a laptop.

A candidate *meets* the target when the upper end of the 95 % confidence interval of its mse
(dB) is at most the target: the MPI run replays other trials and sees another arrival order, so
a candidate that only just meets it in the simulator would miss it half of the time. The
recommendation is the one that meets it with the lowest latency p50; candidates within 5 % of
that p50 count as equally fast; of those, one that waits for a count of results beats a deadline
(a deadline's accuracy holds only while the cluster is as fast as when it was probed), then the
lowest p99 wins (again within 5 %), then the one with the fewest workers.
"""

import json
import math
import logging
import os
import time
from pathlib import Path

import numpy as np

from ..errors import JobError
from ..files.outputs import job_inputs, refuse
from ..job.paths import is_shipped
from ..logs import PLAIN
from .tables import P99, aligned, tail_text, too_few_note

log = logging.getLogger(__name__)

DEFAULT_TRIALS = 40
N_VALUES = 5      # N from K to the largest, geometrically
S_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)   # of N - K
DEADLINE_QUANTILES = (90, 99)                # of the trace's pooled times
TIE = 0.05        # latencies within 5 % count as equal (then p99, then the fewest workers)
BLOCK = 256       # trials simulated at a time
PATH_KEYS = ("data.path", "target.model", "target.path")


def candidate_ns(K, most, count=N_VALUES):
    """A few N from K to ``most`` (both included), spaced geometrically."""
    return sorted({int(round(x)) for x in np.geomspace(K, most, count)} | {K, most})


def policies(code, N, K, deadlines):
    """(wait, S, deadline) to try for one code: exact codes stop once they can decode; the
    others wait for the fastest N - S (a few S in 0..N-K) or a deadline."""
    if code.exact:
        return [("fastest", 0, None)]
    s = sorted({int(round(f * (N - K))) for f in S_FRACTIONS})
    return [("fastest", S, None) for S in s] + [("deadline", 0, d) for d in deadlines]


def _label(c):
    if c["wait"] == "deadline":
        return f"deadline {1e3 * c['deadline']:.3g} ms"
    return "until decodable" if c["exact"] else f"fastest N-{c['S']}"


def trusted_schemes(base, N, schemes, A, left_out):
    """The ``schemes`` to try at N: uncoded only at N = K, lcc only where it can decode, and
    against the job's adversaries only those that tolerate them (job.rules.untolerated, the
    approximate codes' rule applied per wait policy in ``evaluate``); why the others are left
    out goes into ``left_out`` ({scheme: {reason: [N, ...]}})."""
    from ..job.rules import untolerated

    names = [s for s in schemes if s != "uncoded" or N == base.data.batch]
    names = [s for s in names if s != "lcc" or _lcc_fits(base, N)]
    kept = []
    for name in names:
        why = untolerated(base, name, N, N, A)  # with every result: the scheme's own limit
        if why is None:
            kept.append(name)
        else:
            left_out.setdefault(name, {}).setdefault(why, []).append(N)
    return kept


def evaluate(base, trace_path, ns, schemes, trials, resample_above, trace, base_dir,
             adversaries=None, left_out=None):
    """Every candidate's statistics (list of dicts), simulated on ``trials`` trials, drawn and
    decoded BLOCK trials at a time (every candidate of one N on the same block) so that memory
    does not grow with ``trials``. ``adversaries``: A liars in every trial instead of the
    job's [adversaries]; schemes and wait policies that do not tolerate the liars are not
    tried (``trusted_schemes``; why, in ``left_out``)."""
    from .statistics import SchemeStats
    from ..job.config import replace
    from ..job.rules import untolerated
    from ..core.simulate import Block, scheme_block
    from ..core.trial import WaitPolicy
    from ..core.point import PointSetup

    deadlines = [float(np.percentile(trace.times, q)) for q in DEADLINE_QUANTILES]
    found, left_out = [], {} if left_out is None else left_out
    for N in ns:
        A = plan_errors(base, adversaries, N)
        names = trusted_schemes(base, N, schemes, A, left_out)
        if not names:
            continue
        liars = {} if adversaries is None else {"adversaries.count": A, "adversaries.p": 0.0}
        config = replace(base, {"code.workers": N, "code.schemes": names,
                                "stragglers.model": "trace", "stragglers.path": trace_path,
                                "stragglers.resample": N > resample_above or
                                base.stragglers.resample,
                                "decode.wait": "fastest", "decode.stragglers": 0,
                                "decode.deadline": None, "job.trials": trials, **liars})
        setup = PointSetup.build(config, base_dir)
        runs = [(name, WaitPolicy(setup.codes[name], wait, S, deadline),
                 {"scheme": name, "N": N, "wait": wait, "S": S, "deadline": deadline,
                  "exact": bool(setup.codes[name].exact),
                  "resample": config.stragglers.resample}, SchemeStats())
                for name in names
                for wait, S, deadline in policies(setup.codes[name], N, base.data.batch,
                                                  deadlines)
                if untolerated(base, name, N, N - S, A) is None]
        for start in range(0, trials, BLOCK):
            block = Block.draw(setup, 0, range(start, min(trials, start + BLOCK)))
            for name, rule, _, stats in runs:
                setup.policies[name] = rule
                stats.add(scheme_block(setup, name, block).columns)
        found += [{**c, **stats.row()} for _, _, c, stats in runs]
    return found


def _lcc_fits(base, N):
    from ..job.rules import resolved_lcc_degree

    try:
        return N >= (base.data.batch - 1) * resolved_lcc_degree(base) + 1
    except JobError:
        return False


def meets(c, target):
    if c["mse_db"] is None or c["trials_failed"]:
        return False
    return c["mse_db"] + (c["mse_db_ci95"] or 0.0) <= target


def pareto(cands):
    """The candidates no other beats in both latency p50 and mse, by latency; a candidate with
    failed trials (too few results by its deadline to decode) is left out."""
    ok = [c for c in cands if c["latency_p50"] is not None and c["mse_db"] is not None
          and not c["trials_failed"]]
    ok.sort(key=lambda c: (c["latency_p50"], c["mse_db"]))
    front, best = [], math.inf
    for c in ok:
        if c["mse_db"] < best:
            front.append(c)
            best = c["mse_db"]
    return front


def recommend(cands, target):
    """The fastest candidate that meets the target: lowest latency p50 — but p50s within TIE of
    the lowest count as equal (no real difference over a few dozen trials), and among those a
    policy that waits for a count of results beats a deadline (its accuracy does not depend on
    the cluster being as fast as when it was probed), then the lowest p99 wins, again within
    TIE, then the fewest workers."""
    good = [c for c in cands if meets(c, target) and c["latency_p50"] is not None]
    if not good:
        return None

    def close(cs, key):
        best = min(key(c) for c in cs)
        return [c for c in cs if key(c) <= best * (1 + TIE)]

    fast = close(good, lambda c: c["latency_p50"])
    fast = [c for c in fast if c["wait"] != "deadline"] or fast
    fast = close(fast, lambda c: c["latency_p99"] if c["latency_p99"] is not None else math.inf)
    return min(fast, key=lambda c: (c["N"], c["latency_p50"]))


def format_plan(front, best, target):
    """The candidates ``front`` as a table; ``best`` is starred, the others meeting the target
    marked ok."""
    head = ["", "scheme", "N", "waits for", "mse [dB] ± ci95", "relacc", "p50 [ms]",
            P99]
    body = []
    for c in front:
        db = f"{c['mse_db']:.2f}" + (f" ± {c['mse_db_ci95']:.2f}" if c["mse_db_ci95"] else "")
        body.append(["*" if c is best else ("ok" if meets(c, target) else ""), c["scheme"],
                     str(c["N"]), _label(c), db,
                     "-" if c["relacc"] is None else f"{c['relacc']:.3f}",
                     f"{1e3 * c['latency_p50']:.3f}",
                     tail_text(c, "latency_p99")])
    note = too_few_note([b[-1] for b in body])
    return aligned(head, body, left={0, 1, 3}) + (f"\n{note}" if note else "")


def equal_cost_table(cands, K, target):
    """For each N: the candidate of each scheme that meets ``target`` with the lowest p99
    (then p50), against replication's (and uncoded's, at N = K) on the same N workers
    (``equal_cost``); "" when no N has a baseline and another scheme meeting the target."""
    from .equal_cost import compared, format_equal_cost

    entries = []
    for N in sorted({c["N"] for c in cands}):
        chosen = {}
        for c in cands:
            if c["N"] == N and meets(c, target) and c["latency_p99"] is not None:
                old = chosen.get(c["scheme"])
                if old is None or (c["latency_p99"], c["latency_p50"]) < \
                        (old["latency_p99"], old["latency_p50"]):
                    chosen[c["scheme"]] = c
        entries += compared([{**c, "point": {"waits for": _label(c)}}
                             for c in chosen.values()], N, K)
    if not entries:
        return ""
    return ("\n# each scheme's fastest tail (lowest p99) that meets the target, by N\n"
            + format_equal_cost(entries))


def best_job(job, base, best, trace_abs, where):
    """The recommended configuration as a Job whose relative paths hold from folder ``where``."""
    from ..job.config import Job, Point, replace

    def moved(p):
        if p is None or is_shipped(p) or Path(p).expanduser().is_absolute():
            return p
        return os.path.relpath(job.base_dir / p, where)

    updates = {k: moved(getattr(getattr(base, k.split(".")[0]), k.split(".")[1]))
               for k in PATH_KEYS}
    fn = base.target.function
    if fn and fn.rpartition(":")[0].endswith(".py"):
        file, _, name = fn.rpartition(":")
        updates["target.function"] = f"{moved(file)}:{name}"
    updates.update({"code.workers": best["N"], "code.schemes": [best["scheme"]],
                    "stragglers.model": "trace",
                    "stragglers.path": os.path.relpath(trace_abs, where),
                    "stragglers.resample": best["resample"], "decode.wait": best["wait"],
                    "decode.stragglers": best["S"], "decode.deadline": best["deadline"]})
    config = replace(base, updates)
    return Job(config, {}, [Point(0, {}, config)], None, Path(where))


def write_job(path, job, header, overwrite):
    from ..job.parse import parse_job
    from ..files.traces import load_trace

    refuse(path, "--write", overwrite=overwrite, example="best.toml")
    text = header + job.to_toml()
    checked = parse_job(text, base_dir=job.base_dir)   # what we write must validate
    load_trace(checked.config, job.base_dir)
    Path(path).write_text(text, encoding="utf-8")


def plan_figure(outdir, name):
    """The file ``plot_plan`` writes."""
    return os.path.join(outdir, f"{name}-plan.png")


def plot_plan(cands, front, best, target, outdir, name):
    from .canvas import figure, require_matplotlib, save

    require_matplotlib()
    os.makedirs(outdir, exist_ok=True)
    fig, ax = figure()
    pts = [c for c in cands if c["latency_p50"] is not None and c["mse_db"] is not None]
    for scheme in dict.fromkeys(c["scheme"] for c in pts):
        xs = [1e3 * c["latency_p50"] for c in pts if c["scheme"] == scheme]
        ys = [c["mse_db"] for c in pts if c["scheme"] == scheme]
        ax.scatter(xs, ys, s=14, label=scheme, alpha=0.7)
    ax.plot([1e3 * c["latency_p50"] for c in front], [c["mse_db"] for c in front], "k-", lw=1,
            label="Pareto front")
    ax.axhline(target, color="grey", ls="--", lw=1, label=f"target {target:g} dB")
    if best is not None:
        ax.scatter([1e3 * best["latency_p50"]], [best["mse_db"]], s=120, facecolors="none",
                   edgecolors="red", label="recommended")
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")
    for axis in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        axis(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("latency p50 [ms] (simulated on the trace)")
    ax.set_ylabel("mse [dB]")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"plan: {len(pts)} configurations", fontsize=10)
    return save(fig, plan_figure(outdir, name))


def main_plan(job, trace, target_nmse, *, max_workers=None, schemes=None, trials=None,
              write=None, overwrite=False, json_out=False, plot=None, command=None,
              adversaries=None):
    """``python -m gcc_mpi plan``: simulate ``job`` (its first sweep point) on the measured
    delays of ``trace`` for every candidate scheme and N, print the Pareto front and the fastest
    configuration whose mse meets ``target_nmse`` dB (JSON: every candidate), and ``write`` it
    as a job file; exit code 0, or 1 when no configuration meets the target. ``adversaries``:
    A liars per trial, simulated, only what tolerates them tried (job.rules.untolerated)."""
    from ..files.traces import read_trace
    from ..job.adversaries import declared

    t0 = time.perf_counter()
    base = job.points[0].config
    trace_abs = Path(trace).expanduser().resolve()
    measured = read_trace(trace_abs, "--trace")
    ns, schemes, trials = _request(base, measured, max_workers, schemes, trials, adversaries)
    inputs = [*job_inputs(job), trace_abs]
    if write:
        refuse(write, "--write", overwrite=overwrite, example="best.toml", inputs=inputs)
    if plot:
        from .canvas import require_matplotlib

        require_matplotlib()
        refuse(plan_figure(plot, job.config.job.name), "--plot", overwrite=overwrite,
               inputs=inputs)
    left_out = {}
    cands = evaluate(base, str(trace_abs), ns, schemes, trials, measured.workers, measured,
                     job.base_dir, adversaries, left_out)
    front = pareto(cands)
    best = recommend(cands, target_nmse)
    liars = adversaries is not None or declared(base.adversaries)  # say what was done of them
    if json_out:
        extra = {"adversaries": adversaries, "left_out": left_out} if liars else {}
        print(json.dumps({"target_nmse_db": target_nmse, "candidates": cands,
                          "recommended": best, **extra}, indent=2, default=str))
    else:
        print(f"# plan for {job.source or 'the default job'} on trace {trace} "
              f"({measured.times.shape[0]} rounds x {measured.workers} workers): {len(cands)} "
              f"configurations ({len(schemes)} schemes, N in {ns}), {trials} simulated trials "
              f"each, {time.perf_counter() - t0:.1f} s"
              + (f"\n{_adversaries_text(base, adversaries, left_out)}" if liars else ""))
        print(_table(cands, front, best, target_nmse))
        at_equal_cost = equal_cost_table(cands, base.data.batch, target_nmse)
        if at_equal_cost:
            print(at_equal_cost)
    if plot:
        drawn = plot_plan(cands, front, best, target_nmse, plot, job.config.job.name)
        log.info("wrote %s", drawn, extra=PLAIN)
    if best is None:
        return _none_meets(cands, target_nmse)
    what = (f"{best['scheme']}, N = {best['N']}, {_label(best)}: {best['mse_db']:.2f} dB, "
            f"latency p50 {1e3 * best['latency_p50']:.3f} ms, p99 "
            f"{tail_text(best, 'latency_p99')} ms (simulated; [95% CI])")
    if not json_out:  # --json's output is one JSON document ("recommended" is in it)
        print(f"recommended: {what}")
    if write:
        facts = (f"the fastest of {len(cands)} configurations whose mse meets "
                 f"{target_nmse:g} dB on that trace:\n# {what}")
        _write_best(write, job, base, best, trace_abs, facts, command, overwrite, adversaries)
    return 0


def _write_best(write, job, base, best, trace_abs, facts, command, overwrite, adversaries):
    """The recommended job written to ``write``; planned with --adversaries, it keeps them
    (its figures are the plan's, and only declared adversaries set the decoders' A)."""
    from ..job.config import replace

    header = (f"# Written by `{command or 'python -m gcc_mpi plan'}`:\n# {facts}.\n# Run it "
              f"with `mpiexec -n {best['N'] + 1} python -m gcc_mpi run {write}`.\n")
    if adversaries is not None:
        header += (f"# It injects the {adversaries} wrong results it was planned against "
                   "([adversaries]), as the plan simulated. Against real\n# faults instead: "
                   "drop that table and set code.<scheme>.robust = true, which decodes "
                   "against\n# one wrong result (no key yet sets A without injecting "
                   "liars).\n")
        base = replace(base, {"adversaries.count": adversaries, "adversaries.p": 0.0,
                              "code.workers": best["N"], "code.schemes": [best["scheme"]]})
    where = Path(write).resolve().parent
    write_job(write, best_job(job, base, best, trace_abs, where), header + "\n", overwrite)
    log.info("wrote %s", write, extra=PLAIN)


def plan_errors(base, adversaries, N):
    """A at N workers: ``adversaries`` (plan --adversaries), or the job's own (adversaries.count,
    or 2pN rounded up); 0 without any."""
    from ..job.adversaries import errors

    return adversaries if adversaries is not None else errors(base.adversaries, N)


def _adversaries_text(base, adversaries, left_out):
    """What the plan did about adversaries: A, their kind, what it left out and why."""
    a = base.adversaries
    A = adversaries if adversaries is not None else (a.count or f"2pN (p = {a.p:g})")
    text = (f"# adversaries: A = {A} results wrong in every trial ({a.kind}, size {a.size:g}), "
            "decoded robustly; only schemes that tolerate A are tried (approximate ones where "
            "they wait for K+2A results or more)")
    for scheme, reasons in left_out.items():
        for why, ns in reasons.items():
            text += f"\n#   not {scheme} at N = {', '.join(map(str, ns))}: {why}"
    return text


def _request(base, trace, max_workers, schemes, trials, adversaries=None):
    """(candidate Ns, schemes, trials) of a plan, checked: JobError naming the option."""
    from ..job.schema import check_schemes

    if adversaries is not None and adversaries < 0:
        raise JobError("--adversaries", f"must be an integer >= 0, got {adversaries}")

    K = base.data.batch
    most = max_workers or trace.workers
    if most < K:
        raise JobError("--max-workers", f"must be >= data.batch = {K} (N >= K), got {most}")
    schemes = check_schemes(schemes, "--schemes") if schemes else list(base.code.schemes)
    trials = trials or DEFAULT_TRIALS
    if trials < 2:
        raise JobError("--trials", f"must be an integer >= 2, got {trials}")
    return candidate_ns(K, most), list(schemes), trials


def _table(cands, front, best, target_nmse):
    """The Pareto front (and the recommended configuration) as the plan prints it."""
    lines = ["# Pareto front (latency p50 against mse); * = recommended, ok = meets the "
             f"target {target_nmse:g} dB (upper end of the 95% interval)"]
    shown = front + [best] if best is not None and best not in front else front
    lines.append(format_plan(sorted(shown, key=lambda c: c["latency_p50"]), best, target_nmse))
    failing = sum(1 for c in cands if c["trials_failed"])
    if failing:
        lines.append(f"# {failing} configurations left out: some of their trials failed (too "
                     "few results by the deadline to decode)")
    return "\n".join(lines)


def _none_meets(cands, target_nmse):
    closest = min((c for c in cands if c["mse_db"] is not None), key=lambda c: c["mse_db"],
                  default=None)
    hint = "" if closest is None else (f"; the most accurate is {closest['scheme']} at N = "
                                       f"{closest['N']}, {closest['mse_db']:.2f} dB")
    log.info("plan: no configuration meets %g dB%s", target_nmse, hint)
    return 1
