"""The heavy workload of issue 37: the shipped network whose f costs milliseconds per input
(gcc_mpi/_data/digits_heavy.onnx, data/train_digits_heavy.py), its job jobs/digits-heavy.toml in
simulate and over MPI (its straggler model: tests/test_stragglers.py). Its cost per
call is measured by benchmarks/heavy_workload.py, never asserted here (no wall-clock asserts)."""

import sys
from pathlib import Path

import numpy as np
from mpirun import needs_mpiexec
from mpirun import run as launch
from test_runtime import check_contract

from gcc_mpi.cli.main import main
from gcc_mpi.core.point import PointSetup
from gcc_mpi.files.reader import read_results
from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.job.parse import load_job
from gcc_mpi.targets import make_target

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "gcc_mpi" / "_data" / "digits_heavy.onnx"
JOB = ROOT / "jobs" / "digits-heavy.toml"
SCHEMES = ["uncoded", "replication", "bacc", "letcc", "gcc", "gcc-manifold"]
FEW = ["--set", "job.trials=3", "-q"]


def test_the_heavy_network_is_small_and_classifies_the_digits():
    assert MODEL.stat().st_size < 3 << 20   # package data: under 3 MiB (measured 2.2 MB)
    digits = load_dataset("digits")
    f = make_target("onnx", input_dim=64, path=MODEL)
    assert (f.input_shape, f.output_dim, f.classifier) == ((1, 8, 8), 10, True)
    rows = np.random.default_rng(0).choice(len(digits.X), 200, replace=False)
    Y = f(digits.X[rows])
    assert Y.shape == (200, 10)
    # measured: 0.983 on all 1797 digits, 0.971 on the 25 % held out in training
    assert np.mean(Y.argmax(1) == digits.labels[rows]) >= 0.97
    np.testing.assert_allclose(f(digits.X[rows[:1]]), Y[:1], rtol=1e-4, atol=1e-4)


def test_the_heavy_job_builds_with_its_model_and_stragglers():
    j = load_job(JOB)
    c = j.config
    assert list(c.code.schemes) == SCHEMES and (c.code.workers, c.data.batch) == (8, 4)
    assert c.stragglers.model == "shifted-exponential-slow" and c.decode.stragglers == 2
    setup = PointSetup.build(j.points[0].config, j.base_dir)
    assert setup.target.source.endswith("digits_heavy.onnx")


def test_the_heavy_job_simulates(tmp_path, monkeypatch, capsys):
    out = tmp_path / "heavy.h5"
    assert main(["simulate", str(JOB), "-o", str(out), *FEW]) == 0
    r = read_results(out)
    assert r.complete and list(r.points[0].schemes) == SCHEMES
    for name, d in r.points[0].schemes.items():
        assert not d["failed"].any() and len(d["trial"]) == 3, name
        assert np.all(d["relacc"] >= 0.5), name
    # benchmarks/headline.py's table of the file: 3 trials bound no p99 from above
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import headline

    monkeypatch.setattr(sys, "argv", ["headline.py", str(out)])
    capsys.readouterr()
    headline.main()
    text = capsys.readouterr().out
    assert all(f"\n{name} " in text for name in SCHEMES), text
    assert "p99" in text and "x replication's (not resolved" in text and "x uncoded's (" in text


def test_the_headlines_replay_runs_the_heavy_job_on_its_probe(tmp_path, monkeypatch, capsys):
    """headline.py --replay probes the 9 ranks with the heavy f and runs the heavy job on that
    trace: its run's settings make a valid job with a probe where the probe writes it (the
    MPI runs themselves are the benchmark's, not a test's), and a file's header names it."""
    from gcc_mpi.files.traces import write_probe

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import headline

    probe, run, out = headline.replay_commands(tmp_path, 400, 300)
    assert probe[:2] == ["probe", str(JOB)] and run[:2] == ["run", str(JOB)]
    trace = Path(probe[probe.index("-o") + 1])
    assert trace.is_absolute() and out.parent == trace.parent == tmp_path.resolve()
    times = 0.02 + np.random.default_rng(0).exponential(0.01, (20, 8))
    write_probe(trace, times, times / 2, ["a"] * 8, range(1, 9), complete=True, config="",
                command="test", mpi="test", master_host="a")
    capsys.readouterr()
    assert main(["validate", str(JOB), *run[run.index("--set"):]]) == 0
    resolved = capsys.readouterr().out
    assert headline.stragglers(resolved) == f"trace replay of {trace}"
    assert headline.stragglers(JOB.read_text()) == "model shifted-exponential-slow"


@needs_mpiexec
def test_the_heavy_job_runs_over_mpi(tmp_path):
    code, _, err = launch(["run", str(JOB), "-o", "heavy.h5", *FEW], tmp_path, 9)
    assert code == 0, err
    r = read_results(tmp_path / "heavy.h5")
    check_contract(r, 8, 3)
    for name, d in r.points[0].schemes.items():
        assert not d["failed"].any() and not d["error"].any(), name
        assert np.all(d["relacc"] >= 0.5), name
    exact = r.points[0].schemes
    assert np.all(exact["uncoded"]["nmse"] < 1e-10) and np.all(exact["replication"]["relacc"] == 1)
