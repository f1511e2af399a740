"""Tail percentiles are shown with their distribution-free 95 % intervals wherever they are
shown (analyze's table and HTML, the probe's table and JSON, plan's front), checked against the
binomial order-statistic closed form; a p99 whose upper end too few trials cannot bound is
marked; ``analyze A B`` marks a p99 difference only when the two intervals are disjoint."""

import json
import math

import numpy as np
import pytest

from gcc_mpi.cli.main import main
from gcc_mpi.files.traces import write_probe
from gcc_mpi.files.writer import ResultWriter
from gcc_mpi.reports.comparison import apart
from gcc_mpi.reports.plan import format_plan
from gcc_mpi.reports.statistics import fewest_trials_for_upper, quantile_ci95, summarize
from gcc_mpi.reports.tables import TOO_FEW, with_interval


def binomial_cdf(k, n, q):
    """P(Binomial(n, q) <= k), exactly (fractions of integers, then a float)."""
    return sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(0, k + 1))


def closed_form_ranks(n, q):
    """The 1-based ranks (l, u) of the interval: l the least k with P(B <= k) >= 0.025 and
    u = (the least k with P(B <= k) >= 0.975) + 1, for B ~ Binomial(n, q)."""
    low = next(k for k in range(n + 1) if binomial_cdf(k, n, q) >= 0.025)
    high = next(k for k in range(n + 1) if binomial_cdf(k, n, q) >= 0.975) + 1
    return low, high


@pytest.mark.parametrize("n", [2, 5, 20, 50, 200, 400])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_the_interval_is_the_binomial_order_statistics(n, q):
    """On the sample 1..n the interval's ends are their own ranks: the closed form's, None where
    the rank falls outside the sample; and it covers the true quantile with probability
    P(l <= B < u) >= 95 % whenever both ends exist."""
    low, high = closed_form_ranks(n, q)
    lo, hi = quantile_ci95(np.arange(1.0, n + 1), q)
    assert lo == (low if 1 <= low <= n else None)
    assert hi == (high if high <= n else None)
    if lo is not None and hi is not None:
        # x_(l) <= ξ < x_(u) iff l <= B < u, B the count of values below ξ
        assert binomial_cdf(high - 1, n, q) - binomial_cdf(low - 1, n, q) >= 0.95


def test_the_fewest_trials_that_bound_a_percentile_from_above():
    for q, n in ((0.99, 368), (0.9, 36), (0.5, 6)):
        assert fewest_trials_for_upper(q) == n
        assert closed_form_ranks(n, q)[1] <= n < closed_form_ranks(n - 1, q)[1] + 1


def test_the_p99_interval_covers_the_true_p99_in_1000_samples_of_500():
    """Issue 37's bar: at n = 500, at least 93 % of 1000 draws cover the true p99 (ln 100 for
    the unit exponential; exactly, P(l <= B < u) = 95.6 % here)."""
    rng = np.random.default_rng(37)
    hits = 0
    for _ in range(1000):
        lo, hi = quantile_ci95(rng.exponential(size=500), 0.99)
        hits += lo <= math.log(100) <= hi
    assert hits >= 930


def test_with_interval_marks_an_end_it_cannot_bound():
    assert with_interval(0.10321, 0.1019, 0.1045) == "103.2 [101.9, 104.5]"
    assert with_interval(0.0201, 0.02003, None) == f"20.10 [20.03, {TOO_FEW}]"
    assert with_interval(None, None, None) == "-"
    assert with_interval(0.0004567, None, None) == f"0.457 [{TOO_FEW}, {TOO_FEW}]"


def write(path, latency):
    """A results file whose scheme "bacc" has the per-trial ``latency``."""
    n = len(latency)
    with ResultWriter(path, config_toml='[job]\nname = "t"\n', command="test",
                      mpi="simulate") as w:
        w.add_point(0, {})
        w.append(0, "bacc", {"trial": np.arange(n), "failed": np.zeros(n, bool),
                             "reason": [""] * n, "nmse": np.full(n, 0.01),
                             "mse": np.full(n, 0.01), "latency": np.asarray(latency)})
    return str(path)


def test_a_20_trial_p99_is_marked_and_a_2000_trial_one_is_closed(tmp_path, capsys):
    rng = np.random.default_rng(0)
    few = write(tmp_path / "few.h5", 0.01 + rng.exponential(0.001, 20))
    many = write(tmp_path / "many.h5", 0.01 + rng.exponential(0.001, 2000))
    assert main(["analyze", few]) == 0
    out = capsys.readouterr().out
    assert f", {TOO_FEW}]" in out and "too few trials to bound p99 from above" in out
    assert "368" in out
    assert main(["analyze", many]) == 0
    out = capsys.readouterr().out
    assert TOO_FEW not in out and "too few" not in out
    row = json.loads(_json(many, capsys))[0]
    assert f"[{1e3 * row['latency_p99_lo']:.2f}, {1e3 * row['latency_p99_hi']:.2f}]" in out


def _json(path, capsys):
    assert main(["analyze", path, "--json"]) == 0
    return capsys.readouterr().out


def test_a_p99_difference_is_marked_only_when_the_intervals_are_apart(tmp_path, capsys):
    rng = np.random.default_rng(1)
    base = 0.01 + rng.exponential(0.001, 1000)
    a = write(tmp_path / "a.h5", base)
    same = write(tmp_path / "same.h5", 0.01 + rng.exponential(0.001, 1000))
    slow = write(tmp_path / "slow.h5", base + 0.005)
    short = write(tmp_path / "short.h5", 0.01 + rng.exponential(0.001, 20))
    assert main(["analyze", a, same, slow, short, "--json"]) == 0
    diffs = {d["file"]: d for d in json.loads(capsys.readouterr().out)["differences"]}
    assert diffs["same"]["latency_p99_differs"] is False
    assert diffs["slow"]["latency_p99_differs"] is True
    assert diffs["slow"]["latency_p99"] == pytest.approx(0.005, rel=1e-6)
    assert diffs["short"]["latency_p99_differs"] is None  # 20 trials: no upper end to compare
    assert main(["analyze", a, slow]) == 0
    out = capsys.readouterr().out
    assert "+5.000 *" in out and "p99 intervals are disjoint" in out
    # a short run whose lower end already clears the long run's upper end is apart
    assert apart({"p_lo": 1.0, "p_hi": 2.0}, {"p_lo": 3.0, "p_hi": None}, "p") is True
    assert apart({"p_lo": 1.0, "p_hi": 2.0}, {"p_lo": 1.5, "p_hi": None}, "p") is None


def test_the_probe_shows_each_workers_p99_with_its_interval(tmp_path, capsys):
    rng = np.random.default_rng(2)
    arrival = 0.005 + rng.exponential(0.002, (100, 4))
    path = tmp_path / "p.h5"
    write_probe(path, arrival, arrival / 2, ["a"] * 4, range(1, 5), complete=True, config="",
                command="test", mpi="test", master_host="a")
    assert main(["analyze", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    for w, row in enumerate(s["per_worker"]):
        lo, hi = quantile_ci95(arrival[:, w], 0.99)
        assert row["arrival_p99_lo"] == lo and row["arrival_p99_hi"] is hi is None  # 100 rounds
    lo, hi = quantile_ci95(arrival.ravel(), 0.99)  # 400 values: both ends
    assert (s["pooled"]["p99_lo"], s["pooled"]["p99_hi"]) == (lo, hi) and hi is not None
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert with_interval(s["pooled"]["p99"], lo, hi) in out
    assert f", {TOO_FEW}]" in out and "too few rounds" in out


def test_plans_front_shows_p99_with_its_interval():
    c = {"scheme": "bacc", "N": 8, "wait": "fastest", "S": 2, "deadline": None,
         "exact": False, "mse_db": -20.0, "mse_db_ci95": 0.5, "relacc": None,
         "trials_failed": 0, "latency_p50": 0.01, "latency_p99": 0.02,
         "latency_p99_lo": 0.019, "latency_p99_hi": None}
    text = format_plan([c], c, -10.0)
    assert "p99 [ms] [95% CI]" in text and f"20.00 [19.00, {TOO_FEW}]" in text
    assert "too few trials" in text


# -- coding against replication and uncoded at equal cost ------------------------------------
EQUAL = ('[job]\nname = "t"\n[code]\nworkers = 6\nschemes = ["uncoded", "replication", "bacc"]\n'
         '[data]\nbatch = 3\n[sweep]\n"stragglers.count" = [0, 1]\n')


def write_schemes(path, latencies, n):
    """A file of EQUAL whose points hold the schemes of ``latencies`` ({scheme: per-trial
    latency at point 1}); point 0 holds bacc alone (no baseline: no equal-cost rows)."""
    def rows(latency):
        return {"trial": np.arange(n), "failed": np.zeros(n, bool), "reason": [""] * n,
                "nmse": np.full(n, 0.01), "mse": np.full(n, 0.01), "latency": latency}

    with ResultWriter(path, config_toml=EQUAL, command="test", mpi="simulate") as w:
        w.add_point(0, {"stragglers.count": 0})
        w.append(0, "bacc", rows(np.full(n, 0.01)))
        w.add_point(1, {"stragglers.count": 1})
        for scheme, latency in latencies.items():
            w.append(1, scheme, rows(latency))
    return str(path)


def test_equal_cost_groups_a_point_and_marks_ratios_the_intervals_support(tmp_path, capsys):
    from gcc_mpi.reports.equal_cost import equal_cost

    rng = np.random.default_rng(3)
    n = 1000
    path = write_schemes(tmp_path / "e.h5", {
        "uncoded": 0.01 + rng.exponential(0.01, n),       # the tail of waiting for all
        "replication": 0.01 + rng.exponential(0.002, n),
        "bacc": 0.01 + rng.exponential(0.002, n)}, n)     # replication's distribution
    rows = summarize(path)
    entries = equal_cost(rows, EQUAL)
    assert [e["scheme"] for e in entries] == ["uncoded", "replication", "bacc"]  # point 1 only
    by = {e["scheme"]: e for e in entries}
    row = {r["scheme"]: r for r in rows if r["point"] == {"stragglers.count": 1}}
    bacc = by["bacc"]
    assert (bacc["N"], bacc["K"], bacc["workers_per_input"]) == (6, 3, 2.0)
    assert bacc["cpu_s_per_batch"] == pytest.approx(7 * row["bacc"]["latency_mean"])
    assert bacc["p99_over_uncoded"] == pytest.approx(
        row["bacc"]["latency_p99"] / row["uncoded"]["latency_p99"])
    assert bacc["p99_over_uncoded_apart"] is True       # far below uncoded's tail
    assert bacc["p99_over_replication_apart"] is False  # the same distribution
    assert by["replication"]["p99_over_replication_apart"] is None  # itself
    assert main(["analyze", path]) == 0
    out = capsys.readouterr().out
    table = out[out.index("# at equal cost"):].splitlines()
    assert "p99 ÷ replication" in table[1] and "CPU-s/batch" in table[1]
    line = next(t for t in table if " bacc " in t)
    assert "6/3 = 2" in line and f"{bacc['p99_over_uncoded']:.3g} *" in line


def test_equal_cost_with_few_trials_leaves_the_ratio_open(tmp_path, capsys):
    rng = np.random.default_rng(4)
    path = write_schemes(tmp_path / "f.h5", {"replication": 0.01 + rng.exponential(0.002, 20),
                                             "bacc": 0.02 + rng.exponential(0.002, 20)}, 20)
    from gcc_mpi.reports.equal_cost import equal_cost

    bacc = next(e for e in equal_cost(summarize(path), EQUAL) if e["scheme"] == "bacc")
    assert bacc["p99_over_replication_apart"] is None and "p99_over_uncoded" not in bacc
    assert main(["analyze", path]) == 0
    out = capsys.readouterr().out
    line = next(t for t in out[out.index("# at equal cost"):].splitlines() if " bacc " in t)
    assert f"{bacc['p99_over_replication']:.3g} {TOO_FEW}" in line


def test_equal_cost_in_json_and_html_are_the_tables_entries(tmp_path, capsys):
    """``analyze --json`` gives each row of an equal-cost point what its entry adds (N, K,
    the cost, the ratios; null elsewhere), and the HTML report lays out the text table's
    cells: all three read ``equal_cost``'s entries."""
    from gcc_mpi.reports.analyze import Analysis
    from gcc_mpi.reports.equal_cost import equal_cost
    from gcc_mpi.reports.html import build

    rng = np.random.default_rng(5)
    n = 400
    path = write_schemes(tmp_path / "j.h5", {
        "uncoded": 0.01 + rng.exponential(0.01, n),
        "replication": 0.01 + rng.exponential(0.002, n),
        "bacc": 0.01 + rng.exponential(0.002, n)}, n)
    capsys.readouterr()
    assert main(["analyze", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["equal_cost"] for r in rows if r["point"] == {"stragglers.count": 0}] == [None]
    entries = {e["scheme"]: e for e in equal_cost(summarize(path), EQUAL)}
    for r in rows[1:]:
        e = entries[r["scheme"]]
        assert r["equal_cost"] == {k: e[k] for k in r["equal_cost"]}  # the entry's own values
        assert {"N", "K", "workers_per_input", "cpu_s_per_batch", "p99_over_replication",
                "p99_over_uncoded_apart"} <= set(r["equal_cost"])
        assert "latency_p99" not in r["equal_cost"]  # the row holds it: one place in the JSON
    assert rows[-1]["equal_cost"]["p99_over_uncoded_apart"] is True
    page = build(Analysis(path), made=("t", []))
    section = page[page.index('<section id="equal-cost">'):]
    section = section[:section.index("</section>")]
    assert "p99 ÷ replication" in section and "CPU-s/batch" in section
    bacc_ratio = f"{entries['bacc']['p99_over_uncoded']:.3g} *"
    assert f'<td class="num differs">{bacc_ratio}</td>' in section  # set off as apart
    assert section.count("<tr>") == 4  # the head and the three schemes of point 1


def test_plans_equal_cost_table_takes_each_schemes_fastest_tail_that_meets_the_target():
    from gcc_mpi.reports.plan import equal_cost_table

    def cand(scheme, N, S, db, p99, lo, hi):
        return {"scheme": scheme, "N": N, "wait": "fastest", "S": S, "deadline": None,
                "exact": scheme == "replication", "mse_db": db, "mse_db_ci95": 0.1,
                "relacc": None, "trials_failed": 0, "latency_p50": p99 / 2,
                "latency_mean": p99 / 2, "latency_p99": p99, "latency_p99_lo": lo,
                "latency_p99_hi": hi}

    cands = [cand("replication", 6, 0, -300.0, 0.040, 0.035, 0.045),
             cand("bacc", 6, 1, -20.0, 0.030, 0.028, 0.032),   # meets, slower tail
             cand("bacc", 6, 2, -18.0, 0.010, 0.009, 0.011),   # meets, fastest tail: chosen
             cand("bacc", 6, 3, -5.0, 0.005, 0.004, 0.006),    # misses the target
             cand("bacc", 9, 2, -18.0, 0.010, 0.009, 0.011)]   # no baseline at N = 9
    text = equal_cost_table(cands, 3, -15.0)
    rows = [t for t in text.splitlines() if " = " in t and not t.startswith("#")]
    assert len(rows) == 2 and all("6/3 = 2" in t for t in rows)  # N = 9 has no baseline
    bacc = next(t for t in rows if " bacc " in t)
    assert "fastest N-2" in bacc and "0.25 *" in bacc and "CPU-s/batch" in text
    assert equal_cost_table(cands, 3, -400.0) == ""
