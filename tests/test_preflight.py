"""What validate, run and simulate check before any work (gcc_mpi.core.preflight,
gcc_mpi.core.resources): each problem is one line naming its key and exit code 2, each warning
one line, printed once."""

import numpy as np
import pytest

from gcc_mpi.core import resources
from gcc_mpi.cli.main import main
from gcc_mpi.job.parse import parse_job
from gcc_mpi.errors import JobError

FUNCTIONS = '''import numpy as np

def f(X):
    return X[:, :2] ** 2

def labels(X):
    return (X[:, :1] > 0.5).astype(np.int64)
'''


def job_file(tmp_path, data='path = "x.npy"', function='"f.py:f"', extra=""):
    rng = np.random.default_rng(0)
    x = rng.random((40, 4))
    np.save(tmp_path / "x.npy", x)
    x[7, 2] = np.nan
    np.save(tmp_path / "nan.npy", x)
    (tmp_path / "f.py").write_text(FUNCTIONS)
    (tmp_path / "j.toml").write_text(
        f'[job]\ntrials = 2\n[data]\nsource = "file"\n{data}\nbatch = 3\n'
        f'[target]\nkind = "python"\nfunction = {function}\n'
        f'[code]\nworkers = 8\nschemes = ["bacc", "gcc"]\n[stragglers]\ncount = 1\n{extra}')
    return tmp_path / "j.toml"


def one_line_error(capsys, argv, key, *words):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"gcc_mpi: error: {key}: ") and "Traceback" not in err
    for w in words:
        assert w in lines[0]
    return lines[0]


@pytest.mark.parametrize("case, key, words", [
    (dict(data='path = "missing.npy"'), "data.path", ["file not found", "missing.npy"]),
    (dict(data='path = "nan.npy"'), "data.path", ["NaN", "row 7"]),
    (dict(function='"nofile.py:f"'), "target.function", ["nofile.py"]),
    (dict(function='"f.py:nofunc"'), "target.function", ["nofunc"]),
    (dict(function='"no_such_module_xyz:f"'), "target.function", ["no_such_module_xyz"]),
])
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_bad_data_or_target_is_one_line_before_any_output(tmp_path, capsys, monkeypatch, case,
                                                          key, words, command):
    monkeypatch.chdir(tmp_path)
    path = job_file(tmp_path, **case)
    argv = [command, str(path)] + (["-o", "out.h5", "-q"] if command == "simulate" else [])
    one_line_error(capsys, argv, key, *words)
    assert not (tmp_path / "out.h5").exists() and not (tmp_path / "results").exists()


def test_a_good_job_validates_and_integer_outputs_warn_once(tmp_path, capsys):
    assert main(["validate", str(job_file(tmp_path))]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and err.strip().endswith("valid")
    assert main(["validate", str(job_file(tmp_path, function='"f.py:labels"'))]) == 0
    warnings = [w for w in capsys.readouterr().err.splitlines() if "warning" in w]
    assert len(warnings) == 1 and "target.function: f returns integers" in warnings[0]
    assert "not smooth" in warnings[0]


def test_onnx_model_with_ambiguous_output_is_refused(tmp_path, capsys):
    from onnx import TensorProto, helper  # the [test] extra installs it: missing is a failure

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 4]) for n in ("a", "b")]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["a"]),
                               helper.make_node("Relu", ["x"], ["b"])], "two", [x], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    path = job_file(tmp_path)
    path.write_text(path.read_text().replace('kind = "python"\nfunction = "f.py:f"',
                                             'kind = "onnx"\npath = "m.onnx"'))
    one_line_error(capsys, ["validate", str(path)], "target.output", "'a'", "'b'")


def test_fewer_results_than_inputs_warns_once_naming_the_keys(tmp_path, capsys):
    path = job_file(tmp_path)
    path.write_text(path.read_text().replace("[stragglers]\ncount = 1\n",
                                             '[sweep]\n"stragglers.count" = [1, 6, 7]\n'))
    assert main(["validate", str(path)]) == 0
    warnings = [w for w in capsys.readouterr().err.splitlines() if "warning" in w]
    assert len(warnings) == 1, warnings
    w = warnings[0]
    assert "code.workers, stragglers.count, data.batch: N - S = 8 - 6 = 2 results for K = 3" in w
    assert "at 2 of 3 sweep points" in w and "code.workers >= 9" in w and "data.batch <= 2" in w


def test_memory_estimate_refuses_what_does_not_fit(tmp_path, capsys):
    job = parse_job('[code]\nworkers = 200000\nschemes = ["gcc"]\n')
    with pytest.raises(JobError, match=r"^code.workers: N = 200000 workers need about 1.5 TiB"):
        resources.check(job, job.points, {0: (64, 10)}, limit=2**40)
    # 1 TiB fits N = 2000 easily; 100 MiB does not (5 n^2 floats for a global decoder: 153 MiB)
    small = parse_job('[code]\nworkers = 2000\nschemes = ["gcc"]\n')
    assert resources.check(small, small.points, {0: (64, 10)}, limit=2**40) == []
    with pytest.raises(JobError, match="decoders"):
        resources.check(small, small.points, {0: (64, 10)}, limit=100 * 2**20)
    # many ranks on one node add up
    mid = parse_job('[code]\nworkers = 40\n')
    with pytest.raises(JobError, match="rank 0 and 40 other ranks on this node"):
        resources.check(mid, mid.points, {0: (64, 10)}, ranks=41, simulate=False,
                        limit=2 * 2**30)


def test_estimate_follows_the_codes_and_imports_no_scipy():
    import subprocess
    import sys

    from gcc_mpi.codes.base import LinearCode

    assert all(resources.cache_size(n) == LinearCode(n, 1).cache_size for n in (1, 30, 64, 5000))
    code = ("import sys, gcc_mpi.core.preflight; "
            "sys.exit(any(m.startswith(('scipy', 'gcc_mpi.codes')) for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("trace, words", [
    ("missing.npy", "missing.npy: no such file"),
    ("negative.npy", "delays must be >= 0 seconds, got -0.02"),
    ("three.npy", "has 3 workers, fewer than code.workers = 8"),
])
def test_validate_refuses_the_trace_files_that_simulate_refuses(tmp_path, capsys, trace, words):
    """validate runs simulate's own check before work (gcc_mpi.api.check): a straggler trace
    that is missing, has a negative time or fewer workers than N is one line and exit code 2
    from both, the same line (validate said "valid" before)."""
    delays = np.full((5, 8), 0.01)
    delays[2, 3] = -0.02
    np.save(tmp_path / "negative.npy", delays)
    np.save(tmp_path / "three.npy", np.full((5, 3), 0.01))
    job = job_file(tmp_path, extra=f'model = "trace"\npath = "{trace}"\n')
    lines = [one_line_error(capsys, argv, "stragglers.path", words) for argv in (
        ["validate", str(job)], ["simulate", str(job), "-o", str(tmp_path / "o.h5")])]
    assert lines[0] == lines[1] and not (tmp_path / "o.h5").exists()
