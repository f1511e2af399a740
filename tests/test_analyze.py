"""Summaries of a results file against hand-computed values (gcc_mpi.reports.analyze)."""

import csv
import json
import math

import numpy as np
import pytest

from gcc_mpi.reports.analyze import format_table, main_analyze, to_json, write_csv

from gcc_mpi.reports.statistics import summarize
from gcc_mpi.errors import JobError
from gcc_mpi.files.writer import ResultWriter

NAN = float("nan")


def rows4():
    """4 trials, 2 workers; trial 3 failed (its huge values must not count)."""
    return {
        "trial": np.arange(4), "failed": np.array([False, False, False, True]),
        "reason": ["", "", "", "timeout"],
        "mse": np.array([1.0, 2.0, 3.0, 1e9]), "nmse": np.array([0.01, 0.02, 0.03, 1e9]),
        "relacc": np.full(4, NAN),
        "t_encode": np.zeros(4), "t_scatter": np.full(4, 0.001),
        "t_wait": np.array([0.010, 0.020, 0.030, 9.0]), "t_decode": np.full(4, 0.002),
        "latency": np.array([0.1, 0.2, 0.4, 9.0]),
        "lambda_enc": np.full(4, NAN), "lambda_dec": np.full(4, NAN),
        "delay": np.zeros((4, 2)),
        # last used arrival per trial: 0.010, 0.020, 0.025 (trial 2: worker 1 not used)
        "arrival": np.array([[0.005, 0.010], [0.020, 0.001], [0.025, NAN], [NAN, NAN]]),
        "used": np.array([[True, True], [True, True], [True, False], [False, False]]),
    }


@pytest.fixture
def h5(tmp_path):
    path = tmp_path / "out.h5"
    with ResultWriter(path, config_toml="", command="test", mpi="simulate") as w:
        w.add_point(0, {"stragglers.count": 2})
        w.append(0, "gcc", rows4())
        cls = rows4()
        cls["relacc"] = np.array([1.0, 0.5, 0.0, 1.0])
        cls["nmse"] = np.zeros(4)
        w.append(0, "bacc", cls)
        w.add_point(1, {"stragglers.count": 5})
        all_failed = {k: v[3:] for k, v in rows4().items()}
        w.append(1, "gcc", all_failed)
    return path


def test_summarize_by_hand(h5):
    rows = summarize(h5)
    assert [(r["point"], r["scheme"]) for r in rows] == [
        ({"stragglers.count": 2}, "gcc"), ({"stragglers.count": 2}, "bacc"),
        ({"stragglers.count": 5}, "gcc")]
    gcc, bacc, dead = rows
    assert set(gcc) == {"point", "scheme", "trials", "trials_failed", "mse", "nmse", "mse_db",
                        "mse_db_ci95", "relacc", "relacc_ci95", "latency_p50", "latency_p99",
                        "latency_mean", "latency_mean_ci95", "latency_p99_lo", "latency_p99_hi",
                        "overhead_p50", "lengthscale_enc_median", "lengthscale_dec_median",
                        "erasures", "workers_lost"}
    assert gcc["erasures"] == {"raised": 0, "nonfinite": 0, "shape": 0, "lost": 0, "hung": 0}
    assert gcc["trials"] == 4 and gcc["trials_failed"] == 1
    assert gcc["mse"] == pytest.approx(2.0) and gcc["nmse"] == pytest.approx(0.02)
    assert gcc["mse_db"] == pytest.approx(10 * math.log10(0.02))
    # delta method: 1.96 * 10/ln10 * (std 0.01 / sqrt 3) / 0.02
    assert gcc["mse_db_ci95"] == pytest.approx(
        1.96 * 10 / math.log(10) * 0.01 / math.sqrt(3) / 0.02)
    assert gcc["relacc"] is None  # not a classifier
    assert gcc["latency_p50"] == pytest.approx(0.2)
    assert gcc["latency_p99"] == pytest.approx(0.2 + 0.98 * 0.2)  # numpy linear interpolation
    assert gcc["latency_mean"] == pytest.approx(0.7 / 3)
    assert gcc["latency_mean_ci95"] == pytest.approx(1.96 * np.std([0.1, 0.2, 0.4], ddof=1)
                                                     / math.sqrt(3))
    # p99 of 3 trials: P(Binomial(3, 0.99) <= 1) = 3e-4 < 0.025 <= P(<= 2) = 0.0297, so the
    # lower end is the 2nd smallest; the upper end (rank 4 of 3) is not bounded
    assert gcc["latency_p99_lo"] == pytest.approx(0.2) and gcc["latency_p99_hi"] is None
    assert gcc["relacc_ci95"] is None  # not a classifier
    # overhead = 0.001 + t_wait + 0.002 - last used arrival = 0.003, 0.003, 0.008
    assert gcc["overhead_p50"] == pytest.approx(0.003)
    assert bacc["relacc"] == pytest.approx(0.5)
    assert bacc["relacc_ci95"] == pytest.approx(1.96 * 0.5 / math.sqrt(3))  # std of 1, .5, 0
    assert bacc["nmse"] == 0 and bacc["mse_db"] is None and bacc["mse_db_ci95"] is None
    assert dead["trials"] == 1 and dead["trials_failed"] == 1
    assert all(dead[k] is None for k in ("mse", "nmse", "mse_db", "latency_p50", "overhead_p50"))


def test_json_is_strict(h5):
    rows = summarize(h5)
    rows[0]["mse"] = float("inf")

    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    parsed = json.loads(to_json(rows), parse_constant=refuse)
    assert parsed[0]["mse"] is None and parsed[0]["relacc"] is None
    assert parsed[0]["point"] == {"stragglers.count": 2} and parsed[1]["relacc"] == 0.5


def test_table_and_csv(h5, tmp_path):
    rows = summarize(h5)
    table = format_table(rows).splitlines()
    assert table[0].split()[:2] == ["stragglers.count", "scheme"]
    assert len(table) == 2 + len(rows) and len({len(line) for line in table[:2]}) == 1
    assert "4 (1)" in table[2] and "-16.99 ±" in table[2] and "200" in table[2]  # p50 200 ms
    out = tmp_path / "csv" / "s.csv"
    write_csv(rows, out)
    with open(out, newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0] == ["stragglers.count", "scheme", "trials", "trials_failed", "mse", "nmse",
                        "mse_db", "mse_db_ci95", "relacc", "relacc_ci95", "latency_p50",
                        "latency_p99", "latency_mean", "latency_mean_ci95", "latency_p99_lo",
                        "latency_p99_hi", "overhead_p50", "lengthscale_enc_median",
                        "lengthscale_dec_median", "erasures_raised", "erasures_nonfinite",
                        "erasures_shape", "erasures_lost", "erasures_hung", "workers_lost"]
    assert lines[1][:4] == ["2", "gcc", "4", "1"] and lines[1][8] == ""


def test_main_analyze(h5, tmp_path, capsys):
    assert main_analyze(h5, json=True) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    assert main_analyze(h5) == 0 and "scheme" in capsys.readouterr().out
    with pytest.raises(JobError, match="no such file"):
        main_analyze(tmp_path / "nope.h5")


def test_fit_rates_recovers_a_power_law_and_names_bad_keys():
    from gcc_mpi.reports.analyze import fit_rates
    from gcc_mpi.errors import JobError

    rows = [{"point": {"code.workers": n}, "scheme": s, "nmse": c * n ** -p}
            for n in [20, 40, 80, 160] for s, c, p in [("gcc", 5.0, 3.5), ("bacc", 0.3, 1.0)]]
    rows.append({"point": {"code.workers": 320}, "scheme": "gcc", "nmse": None})  # all failed
    rates = fit_rates(rows, "code.workers")
    assert rates["gcc"][0] == pytest.approx(-3.5) and rates["gcc"][1] == 4
    assert rates["bacc"][0] == pytest.approx(-1.0)
    with pytest.raises(JobError, match="'data.batch' is not swept"):
        fit_rates(rows, "data.batch")


def test_erasures_by_kind_and_lost_workers(tmp_path):
    rows = rows4()
    # worker 1 died; worker 0 did not answer once (a hung worker: code 5)
    rows["error"] = np.array([[0, 1], [2, 4], [3, 4], [5, 4]], dtype=np.int8)
    path = tmp_path / "e.h5"
    with ResultWriter(path, config_toml="", command="test", mpi="simulate") as w:
        w.add_point(0, {})
        w.append(0, "gcc", rows)
        clean = rows4()
        clean["error"] = np.zeros((4, 2), np.int8)
        w.append(0, "bacc", clean)
    gcc, bacc = summarize(path)
    assert gcc["erasures"] == {"raised": 1, "nonfinite": 1, "shape": 1, "lost": 3, "hung": 1}
    assert gcc["workers_lost"] == 1 and bacc["workers_lost"] == 0
    table = format_table([gcc, bacc]).splitlines()
    assert table[0].split()[-1] == "erasures"
    assert table[2].endswith("1 raised, 1 nonfinite, 1 shape, 3 lost, 1 hung, 1 worker lost")
    assert table[3].endswith("-")
    assert "erasures" not in format_table([bacc])  # no column when nothing was erased
    parsed = json.loads(to_json([gcc]))[0]
    assert parsed["erasures"]["lost"] == 3 and parsed["workers_lost"] == 1


def test_rate_leaves_out_the_round_off_floor_and_gives_stderr():
    from scipy.stats import linregress

    from gcc_mpi.reports.analyze import FLOOR_DB, fit_rate_details, format_rates, rates_json

    ns = [20, 40, 80, 160, 320]
    noisy = [3e-2 * n ** -3 * f for n, f in zip(ns, [1.3, 0.8, 1.1, 0.9, 1.2])]
    floor = 10 ** (FLOOR_DB / 10)
    gcc = [1e-3 * n ** -2.0 for n in ns[:3]] + [0.5 * floor, 0.4 * floor]  # flattens at rounding
    rows = [{"point": {"code.workers": n}, "scheme": s, "nmse": y}
            for s, ys in [("bacc", noisy), ("gcc", gcc), ("uncoded", [1e-31] * 5)]
            for n, y in zip(ns, ys)]
    rates = fit_rate_details(rows, "code.workers")
    ref = linregress(np.log10(ns), np.log10(noisy))
    assert rates["bacc"].slope == pytest.approx(ref.slope)
    assert rates["bacc"].stderr == pytest.approx(ref.stderr) and rates["bacc"].excluded == []
    assert rates["gcc"].slope == pytest.approx(-2.0) and rates["gcc"].used == [20, 40, 80]
    assert rates["gcc"].excluded == [160, 320] and rates["gcc"].stderr == pytest.approx(0, abs=1e-9)
    assert rates["uncoded"].slope is None and rates["uncoded"].excluded == ns  # exact: no rate
    text = format_rates(rates, "code.workers")
    assert f"{ref.slope:+.2f} ± {ref.stderr:.2f}" in text and "below the floor: 160, 320" in text
    js = json.loads(json.dumps(rates_json(rates, "code.workers")))
    assert js["rate"] == "code.workers" and js["slopes"]["gcc"] == pytest.approx(-2.0)
    assert js["stderr"]["bacc"] == pytest.approx(ref.stderr) and js["excluded"]["gcc"] == [160, 320]


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_analyze_output_mistakes_are_one_line(h5, tmp_path, capsys, option):
    from gcc_mpi.cli.main import main

    folder, file = tmp_path / "folder", tmp_path / "file.txt"
    folder.mkdir()
    file.write_text("keep")
    bad = folder if option == "--csv" else file
    assert main(["analyze", str(h5), option, str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"error: {option}: {bad}" in err
    assert file.read_text() == "keep" and list(folder.iterdir()) == []


PLAIN = '''
import numpy as np
from gcc_mpi import LinearCode


class Plain(LinearCode):
    def __init__(self, N, K, scale=1.0):
        super().__init__(N, K)
        self.E = scale * np.ones((N, K)) / K + np.eye(N, K)

    def decode_matrix(self, received):
        return np.linalg.pinv(self.E[received]), {}
'''


def test_a_quoted_plugin_key_is_read_like_any_key(tmp_path):
    """One lookup of a dotted key for the job file, the comparison and the figures: a plug-in's
    option, 'code."codes.py:Plain".scale', whose quoted part holds a dot, is found in a results
    file's job (the figures' reader split the key on every dot and found nothing), and a sweep
    over it is plotted against it."""
    pytest.importorskip("matplotlib")
    from jobfiles import small_job

    from gcc_mpi.api import run_simulation
    from gcc_mpi.job.parse import load_job
    from gcc_mpi.reports import plots
    from gcc_mpi.reports.job_words import JobWords

    key = 'code."codes.py:Plain".scale'
    (tmp_path / "codes.py").write_text(PLAIN)
    job = tmp_path / "job.toml"
    job.write_text(small_job("quoted", ["bacc", "codes.py:Plain"], 2)
                   + '[code."codes.py:Plain"]\nscale = 2.0\n'
                   + '[sweep]\n"stragglers.count" = [0, 1]\n')
    res = run_simulation(load_job(job))
    assert JobWords(res).get(key) == 2.0
    job.write_text(small_job("quoted", ["bacc", "codes.py:Plain"], 2)
                   + f"[sweep]\n'{key}' = [0.5, 2.0]\n")
    res = run_simulation(load_job(job))
    kinds = [kind for kind, _ in plots.figures(res, summarize(res))[1]]
    assert 'mse-vs-code."codes.py:Plain".scale' in kinds
