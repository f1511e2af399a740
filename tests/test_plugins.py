"""A scheme of your own as a plug-in: the shipped example (examples/systematic_berrut.py) in the
simulator and over MPI with the same nmse, as a module and as an installed entry point, with
its own options set and swept; and every kind of broken plug-in refused before any work, in
one line with exit code 2, in one process and under mpiexec at a real job's 16 ranks.
"""

import json
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from jobfiles import small_job
from mpirun import needs_mpiexec, ours
from mpirun import run as launch

from gcc_mpi.cli.main import main
from gcc_mpi.codes import make_code
from gcc_mpi.job.parse import load_job
from gcc_mpi.errors import JobError
from gcc_mpi.files.reader import read_results

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "systematic_berrut.py:SystematicBerrut"


@pytest.fixture
def example(tmp_path):
    """The example's scheme and job, copied as a user would: side by side in their folder."""
    for name in ("systematic_berrut.py", "systematic-berrut.toml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    return tmp_path / "systematic-berrut.toml"


def nmse(path):
    """{(point index, scheme): per-trial nmse} of a results file."""
    return {(p.index, s): d["nmse"] for p in read_results(path).points
            for s, d in p.schemes.items()}


def test_the_example_is_berrut_with_its_inputs_on_workers(example):
    code = make_code(EXAMPLE, 8, 4, base_dir=example.parent)
    X = np.random.default_rng(0).standard_normal((4, 3))
    X_coded, _ = code.encode(X)
    systematic = np.round(np.linspace(0, 7, 4)).astype(int)
    np.testing.assert_array_equal(X_coded[systematic], X)  # those workers get x_k itself
    received = np.array([0, 1, 2, 4, 5, 7, 3])  # every systematic worker, out of order
    Y_hat, _ = code.decode(received, X_coded[received] ** 2)
    np.testing.assert_allclose(Y_hat, X ** 2, rtol=1e-12)  # their results used as they are


def test_the_example_without_its_systematic_points_is_bacc(example, capsys):
    """systematic = false gives BACC's points: the plug-in path (import, options, check) then
    reproduces the built-in bacc trial for trial, bit for bit."""
    out = example.parent / "plain.h5"
    assert main(["simulate", str(example), "-o", str(out), "-q", "--set", "job.trials=20",
                 "--set", f'code."{EXAMPLE}".systematic=false']) == 0
    got = nmse(out)
    for point in range(3):
        assert np.array_equal(got[point, EXAMPLE], got[point, "bacc"])
    with_it = example.parent / "systematic.h5"
    assert main(["simulate", str(example), "-o", str(with_it), "-q", "--set", "job.trials=200",
                 "--set", "stragglers.count=1"]) == 0
    # one straggler: a parity worker (half the trials: decoded exactly) or one systematic
    # worker, whose input alone is interpolated; measured 5.58 dB better than bacc
    assert main(["analyze", str(with_it), "--json"]) == 0
    rows = {r["scheme"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == ["bacc", EXAMPLE, "gcc"]
    assert rows[EXAMPLE]["mse_db"] - rows["bacc"]["mse_db"] == pytest.approx(-5.58, abs=1.0)
    exact = read_results(with_it).points[0].schemes[EXAMPLE]["nmse"] < 1e-25
    assert 0.3 < exact.mean() < 0.7  # the straggler among the 4 parity workers of 8


@needs_mpiexec
def test_the_example_runs_over_mpi_with_the_simulators_nmse(example):
    # 1 s delays make the received sets unambiguous on a loaded machine; a STOP cuts them short
    sets = ["--set", "job.trials=3", "--set", "stragglers.delay=1.0"]
    code, _, err = launch(["simulate", example.name, "-o", "sim.h5", "-q", *sets],
                          example.parent)
    assert code == 0, err
    code, _, err = launch(["run", example.name, "-o", "run.h5", "-q", *sets], example.parent, 9)
    assert code == 0, err
    run, sim = read_results(example.parent / "run.h5"), read_results(example.parent / "sim.h5")
    assert run.attrs["mpi"] != "simulate" and sim.attrs["mpi"] == "simulate"
    for p_run, p_sim in zip(run.points, sim.points, strict=True):
        assert list(p_run.schemes) == ["bacc", EXAMPLE, "gcc"]
        for name, r in p_run.schemes.items():
            s = p_sim.schemes[name]
            assert np.array_equal(r["used"], s["used"]) and not r["failed"].any()
            # exact decodes (the straggler a parity worker) agree at round-off, ~1e-32
            np.testing.assert_allclose(r["nmse"], s["nmse"], rtol=1e-9, atol=1e-25, err_msg=name)


def test_a_plugin_from_a_module_and_from_an_entry_point(example, monkeypatch):
    """"module:Class" imports like any module; an installed package declares the class in the
    entry-point group gcc_mpi.schemes and a job names it by the entry point's name. Either way
    it is the example's code: the same nmse as the file beside the job."""
    site = example.parent / "site"
    (site / "my_codes").mkdir(parents=True)
    shutil.copy(example.parent / "systematic_berrut.py", site / "my_codes" / "berrut.py")
    (site / "my_codes" / "__init__.py").write_text("")
    dist = site / "my_codes-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-codes\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[gcc_mpi.schemes]\nsys-berrut = my_codes.berrut:SystematicBerrut\n")
    monkeypatch.syspath_prepend(str(site))
    import gcc_mpi

    assert "sys-berrut" in gcc_mpi.schemes()
    job = example.parent / "swept.toml"
    job.write_text(SWEPT.partition("[sweep]")[0])
    names = [EXAMPLE, "my_codes.berrut:SystematicBerrut", "sys-berrut"]
    out = example.parent / "three.h5"
    assert main(["simulate", str(job), "-o", str(out), "-q",
                 "--set", f"code.schemes={json.dumps(names)}"]) == 0
    got = nmse(out)
    assert np.array_equal(got[0, names[1]], got[0, names[0]])
    assert np.array_equal(got[0, names[2]], got[0, names[0]])
    with pytest.raises(JobError, match='unknown scheme "sys-berrutt"; did you mean '
                                       '"sys-berrut"'):
        load_job(job, [("code.schemes", ["sys-berrutt"])])


SWEPT = small_job("swept", ["bacc", EXAMPLE], 4, "[stragglers]\ncount = 1\n") + \
    f"[sweep]\n'code.\"{EXAMPLE}\".systematic' = [true, false]\n"


def test_a_plugins_option_is_swept_like_any_key(example, capsys):
    job = example.parent / "swept.toml"
    job.write_text(SWEPT)
    out = example.parent / "swept.h5"
    assert main(["simulate", str(job), "-o", str(out), "-q"]) == 0
    res = read_results(out)
    key = f'code."{EXAMPLE}".systematic'
    assert [p.params for p in res.points] == [{key: True}, {key: False}]
    plain = res.points[1].schemes
    assert np.array_equal(plain[EXAMPLE]["nmse"], plain["bacc"]["nmse"])
    assert main(["validate", str(job), "--set", f"{key}=false"]) == 0  # replaces the sweep
    assert "systematic = false" in capsys.readouterr().out


# -- broken plug-ins: each one line naming the problem, exit code 2 -----------------------------
GOOD = '''
import numpy as np
from gcc_mpi import LinearCode


class Plain(LinearCode):
    def __init__(self, N, K, scale=1.0):
        super().__init__(N, K)
        self.E = scale * np.ones((N, K)) / K + np.eye(N, K)

    def decode_matrix(self, received):
        return np.linalg.pinv(self.E[received]), {}
'''
BROKEN = {
    "NoDecode": ("class NoDecode:\n    def __init__(self, N, K):\n        self.N, self.K = N, K",
                 "lacks active, exact, trial_alpha, encode, decode, decodable"),
    "WideEncode": ("class WideEncode(Plain):\n    def encode(self, X):\n"
                   "        return np.ones((self.N, X.shape[1] + 1)), {}",
                   "encode returned shape (6, 4); expected (6, 3): one row per active worker"),
    "TallDecode": ("class TallDecode(Plain):\n    def decode(self, received, Y, alpha=None):\n"
                   "        return np.zeros((self.K + 1, Y.shape[1])), {}",
                   "decode returned shape (4, 3); expected (3, 3): one row per input (K = 3)"),
    "Raises": ("class Raises(Plain):\n    def decode_matrix(self, received):\n"
               "        raise ZeroDivisionError('oops')",
               "decode raised ZeroDivisionError: oops"),
    "BadInit": ("class BadInit(Plain):\n    def __init__(self, N, K):\n"
                "        raise RuntimeError('no GPU')",
                "BadInit(N=6, K=3) raised RuntimeError: no GPU"),
    "FalseExact": ("class FalseExact(Plain):\n    exact = True\n"
                   "    def decode_matrix(self, received):\n"
                   "        return np.full((self.K, len(received)), 1 / len(received)), {}",
                   "exact is True, but decoding a linear f from every active worker is off by"),
    "NeverDecodable": ("class NeverDecodable(Plain):\n    exact = True\n"
                       "    def decodable(self, mask):\n        return False",
                       "decodable is False with the results of every active worker"),
    "Flickers": ("class Flickers(Plain):\n    exact = True\n    def decodable(self, mask):\n"
                 "        return bool(mask.sum() >= 3 and mask.sum() != 4)",
                 "decodable turned False when worker"),
    "NumpyAnswer": ("class NumpyAnswer(Plain):\n    exact = True\n"
                    "    def decodable(self, mask):\n        return mask",
                    "decodable must return True or False, got array("),
    "OwnNmse": ("class OwnNmse(Plain):\n    def decode(self, received, Y, alpha=None):\n"
                "        Y_hat, _ = super().decode(received, Y, alpha)\n"
                "        return Y_hat, {'nmse': 0.0}",
                "decode's facts may not use the name 'nmse'"),
    "OrderMatters": ("class OrderMatters(Plain):\n    def decode(self, received, Y, alpha=None):\n"
                     "        return np.linalg.pinv(self.E[np.sort(received)]) @ Y, {}",
                     "decode gave different results for the same results in another order"),
    "NoAlpha": ("class NoAlpha(Plain):\n    trial_alpha = True",
                'trial_alpha is True but encode reported no "alpha"'),
}
JOB = small_job("broken", ["bacc", "codes.py:{name}"], 2)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_plugin_is_one_line_and_exit_2(tmp_path, capsys, name):
    source, problem = BROKEN[name]
    (tmp_path / "codes.py").write_text(GOOD + "\n\n" + textwrap.dedent(source) + "\n")
    (tmp_path / "job.toml").write_text(JOB.format(name=name))
    out = tmp_path / "out.h5"
    for command in (["validate"], ["simulate", "-o", str(out)]):
        assert main([*command, str(tmp_path / "job.toml")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f'gcc_mpi: error: code.schemes: "codes.py:{name}": '), err
        assert problem in err, err
        assert not out.exists()


DUCK = '''
import numpy as np


class Duck:
    """The interface without LinearCode: only the members check_code requires."""
    exact, trial_alpha = False, False

    def __init__(self, N, K):
        self.N, self.K, self.active = N, K, np.arange(N)
        self.E = np.ones((N, K)) / K + np.eye(N, K)

    def encode(self, X):
        return self.E @ X, {}

    def decode(self, received, Y, alpha=None):
        return np.linalg.pinv(self.E[received]) @ Y, {}

    def decodable(self, mask):
        return True
'''


def test_a_plugin_that_does_not_subclass_linearcode_runs(tmp_path):
    """Members the interface calls optional (``uses_inputs``) are not required of a plug-in."""
    (tmp_path / "codes.py").write_text(DUCK)
    (tmp_path / "job.toml").write_text(JOB.format(name="Duck"))
    assert main(["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out.h5")]) == 0
    duck = read_results(tmp_path / "out.h5").points[0].schemes["codes.py:Duck"]
    assert np.isfinite(duck["nmse"]).all() and not duck["failed"].any()


TAIL = '''
import numpy as np

from gcc_mpi.codes import LinearCode


class Tail(LinearCode):
    """An exact linear code whose first worker gets nothing: ``active`` is workers 1..N-1, so
    row i of the coded inputs is worker i + 1's. f(x) = 2 x is linear: any K results of the
    active workers give back f(X) exactly, a result of another worker's row would not."""
    exact = True

    def __init__(self, N, K):
        super().__init__(N, K)
        self.active = np.arange(1, N)
        self.E = np.vander(np.linspace(-1, 1, N), K, increasing=True)

    def encode(self, X):
        return self.E[self.active] @ X, {}

    def decode(self, received, Y, alpha=None):
        return np.linalg.lstsq(self.E[received], Y, rcond=None)[0], {}

    def decodable(self, mask):
        return mask[self.active].sum() >= self.K
'''


def test_a_plugin_whose_active_workers_are_not_the_first_ones(tmp_path):
    """``active`` may name any workers (row i of the coded inputs is worker active[i]'s): the
    simulator computes each used worker's own row, so an exact code of a linear f decodes
    exactly, erasures included (a worker whose f raises), as the MPI master does."""
    (tmp_path / "codes.py").write_text(TAIL)
    (tmp_path / "f.py").write_text("import numpy as np\n\n\ndef f(X):\n"
                                   "    if np.any(X[:, 2] > 1.2):\n"
                                   "        raise ValueError('an erasure')\n"
                                   "    return 2 * X\n")
    job = small_job("tail", ["codes.py:Tail"], 40).replace(
        'kind = "polynomial"\ndegree = 2\noutputs = 2', 'kind = "python"\nfunction = "f.py:f"')
    (tmp_path / "job.toml").write_text(job + "[stragglers]\nmodel = \"none\"\n")
    assert main(["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out.h5"),
                 "-q"]) == 0
    d = read_results(tmp_path / "out.h5").points[0].schemes["codes.py:Tail"]
    ok = ~d["failed"]
    assert ok.sum() >= 30 and (d["nmse"][ok] < 1e-20).all(), d["nmse"]
    assert not d["used"][:, 0].any() and d["error"][:, 0].max() == 0  # worker 0: no task
    erased = d["error"].any(axis=1)
    assert erased.any() and all(t.startswith("worker") for t in d["error_text"][erased])


def test_plugin_mistakes_in_the_job_file_name_the_key(tmp_path, capsys):
    (tmp_path / "codes.py").write_text(GOOD)
    job = tmp_path / "job.toml"
    cases = {
        '["codes.py:Plain"]\n[code."codes.py:Plain"]\nscael = 2':
            "gcc_mpi: error: code.\"codes.py:Plain\": Plain(N=6, K=3, scael=2) raised "
            "TypeError",
        '["codes.py:Missing"]': "gcc_mpi: error: code.schemes: 'codes.py' has no attribute "
                                "'Missing'",
        '["nope.py:Plain"]': "gcc_mpi: error: code.schemes: file not found",
        '["plugins/codes.py:Plain"]': "which cannot hold a folder",
        '["codes.py:np"]': 'gcc_mpi: error: code.schemes: "codes.py:np" is a module, not a class',
        '["bacc"]\n[code."codes.py:Plain"]\nscale = 2':
            "gcc_mpi: error: code.\"codes.py:Plain\": holds the options of a scheme that "
            "code.schemes does not list",
        '["codes.py:Plain"]\n"codes.py:Plain" = 3':
            "gcc_mpi: error: code.\"codes.py:Plain\": must be a table of the scheme's options, "
            "got 3",
    }
    for schemes, expected in cases.items():
        job.write_text(JOB.replace('["bacc", "codes.py:{name}"]', schemes))
        assert main(["validate", str(job)]) == 2, schemes
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expected in err, (schemes, err)
    job.write_text(JOB.replace('["bacc", "codes.py:{name}"]', '["codes.py:Plain"]\n'
                               '[code."codes.py:Plain"]\nscale = 2'))
    assert main(["validate", str(job)]) == 0
    assert '[code."codes.py:Plain"]\nscale = 2' in capsys.readouterr().out


@needs_mpiexec
def test_a_broken_plugin_under_mpiexec_is_one_line_from_rank_0(tmp_path, ranks=16):
    """Only rank 0 imports the plug-in (the workers compute f): it refuses the job before any
    trial and tells every worker, so all ranks end with exit code 2 and one line."""
    source, problem = BROKEN["TallDecode"]
    (tmp_path / "codes.py").write_text(GOOD + "\n\n" + textwrap.dedent(source) + "\n")
    (tmp_path / "job.toml").write_text(JOB.format(name="TallDecode").replace(
        "workers = 6", f"workers = {ranks - 1}"))
    code, out, err = launch(["run", "job.toml", "-o", "out.h5"], tmp_path, ranks)
    lines = [line for line in ours(err).splitlines() if line.strip()]
    assert code == 2 and out == "", err
    assert len(lines) == 1 and lines[0].startswith(
        'gcc_mpi: error: code.schemes: "codes.py:TallDecode": decode returned shape (4, 3)'), err
    assert not (tmp_path / "out.h5").exists()


def test_open_mpis_teardown_notices_are_not_our_stderr():
    """What Open MPI prints when ranks leave together (a framed notice, libevent's and PMIx's
    teardown races) is left out of the test above's one line; a line of ours amid it is kept."""
    ompi = ("-" * 74 + "\nprterun detected that one or more processes exited with non-zero "
            "status\ngcc_mpi: amid theirs\n" + "-" * 74 + "\n"
            "[warn] Epoll MOD(1) on fd 46 failed. Old events were 6; Bad file descriptor\n"
            "[gcc-host1:4242] PMIX ERROR: PMIX_ERR_UNREACH in file server/pmix_server.c at "
            "line 3214\n")
    assert ours("gcc_mpi: error: one\n" + ompi) == "gcc_mpi: error: one\ngcc_mpi: amid theirs\n"
    other = "[gcc-host1:4242] PMIX ERROR: PMIX_ERR_UNREACH in file client/pmix_client.c\n"
    assert ours(other) == other  # only the server's teardown notice is known harmless


def test_the_docs_page_shows_the_example_as_shipped():
    page = (ROOT / "docs" / "own-scheme.md").read_text()
    code = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    toml = re.findall(r"^```toml\n(.*?)^```", page, re.S | re.M)
    assert code[0] == (ROOT / "examples" / "systematic_berrut.py").read_text()
    assert toml[0] == (ROOT / "examples" / "systematic-berrut.toml").read_text()
    shown = re.search(r"^gcc_mpi: error: code.schemes: \"codes.py:TallDecode\": .*$", page, re.M)
    assert shown and BROKEN["TallDecode"][1] in shown.group(0)


def test_a_plugins_options_round_trip_through_the_resolved_job(example):
    from gcc_mpi.job.parse import parse_job

    key = f'code."{EXAMPLE}".systematic'
    for given in (f"{key}=false", f"code.{EXAMPLE}.systematic=false"):  # quoted or not
        job = load_job(example, [given])
        assert [p.config.code.options(EXAMPLE) for p in job.points] == [{"systematic": False}] * 3
        again = parse_job(job.to_toml(), base_dir=example.parent)
        assert again == job and f'[code."{EXAMPLE}"]\nsystematic = false' in job.to_toml()
    with pytest.raises(JobError, match=r"code.schemes: .*\"my/codes.py:X\": a plug-in's name is "
                                       "its group in the results file"):
        load_job(example, [("code.schemes", ["my/codes.py:X"])])


def test_plan_considers_a_plugin_scheme(example, capsys):
    np.save(example.parent / "trace.npy", np.full((20, 5), 0.01))
    assert main(["plan", str(example), "--trace", str(example.parent / "trace.npy"),
                 "--target-nmse", "-10", "--trials", "2", "--max-workers", "5",
                 "--schemes", EXAMPLE, "--set", "sweep.stragglers.count=[1]"]) == 0
    assert f"recommended: {EXAMPLE}, N = 5" in capsys.readouterr().out


NEIGHBOURLY = '''
from neighbour_weights import weights
from gcc_mpi.codes.berrut import BACC


class Neighbourly(BACC):
    """Berrut with the neighbour's module imported at the top of the plug-in."""
    assert weights() == 1
'''


def test_a_plugin_imports_its_neighbours_from_any_folder(tmp_path, monkeypatch, capsys):
    codes = tmp_path / "codes"
    codes.mkdir()
    (codes / "neighbour_weights.py").write_text("def weights():\n    return 1\n")
    (codes / "neighbourly.py").write_text(NEIGHBOURLY)
    (codes / "job.toml").write_text(small_job("near", ["neighbourly.py:Neighbourly"], 2))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)   # not the plug-in's folder
    before = list(__import__("sys").path)
    assert main(["validate", str(codes / "job.toml")]) == 0, capsys.readouterr().err
    assert main(["simulate", str(codes / "job.toml"), "-o", "o.h5", "-q"]) == 0
    assert __import__("sys").path == before   # the folder was on the path only while loading


FLAKY = GOOD + '''

class Flaky(Plain):
    """Decodes like Plain, but raises on every third trial: a plug-in's bug that shows only
    mid-run (the check before the run decodes batches of 3 columns, the job's f gives 2)."""
    calls = 0

    def decode(self, received, Y, alpha=None):
        if Y.shape[1] == 2:
            Flaky.calls += 1
            if Flaky.calls % 3 == 0:
                raise RuntimeError(f"flaky call {Flaky.calls}")
        return super().decode(received, Y, alpha)
'''


def failed_counts(path):
    """{scheme: (trials, failed, reasons)} of point 0 of a results file."""
    out = {}
    for p in read_results(path).points:
        for s, d in p.schemes.items():
            reasons = {r.split(" call ")[0] for r in d["reason"] if r}
            out[s] = (len(d["failed"]), int(np.sum(d["failed"])), reasons)
    return out


@needs_mpiexec
def test_a_plugin_that_raises_mid_run_is_that_schemes_failure_in_both_engines(tmp_path):
    """decode raising at trial 2, 5, 8, ... over 12 trials: that scheme's trials recorded as
    failed with the message, bacc's all done, exit 0 - in simulate and under mpiexec alike."""
    (tmp_path / "codes.py").write_text(FLAKY)
    (tmp_path / "job.toml").write_text(small_job("flaky", ["bacc", "codes.py:Flaky"], 12))
    seen = []
    for argv, ranks in ((["simulate"], None), (["run"], 7)):
        out = f"{argv[0]}.h5"
        code, _, err = launch([*argv, "job.toml", "-o", out, "-q"], tmp_path, ranks=ranks)
        assert code == 0 and "Traceback" not in err, err
        seen.append(failed_counts(tmp_path / out))
    for counts in seen:
        assert counts["bacc"][:2] == (12, 0), counts
        assert counts["codes.py:Flaky"] == (12, 4, {"decode raised RuntimeError: flaky"}), counts
    assert seen[0] == seen[1]


WIDE = '''
from gcc_mpi.codes.berrut import BACC


class Wide(BACC):
    """BACC with one more option: its class is all that declares it."""

    def __init__(self, N, K, spread: float = 1.0, **options):
        super().__init__(N, K, **options)
        self.spread = spread
'''


def test_a_new_option_is_read_from_its_class(tmp_path, capsys):
    """Adding an option to a scheme touches only its class: a subclass with a new keyword is
    set from the job file, normalised by its annotation, and a wrong type is the usual one
    line naming the key."""
    (tmp_path / "wide.py").write_text(WIDE)
    job = tmp_path / "job.toml"
    job.write_text(small_job("wide", ["wide.py:Wide"], 2) + '[code."wide.py:Wide"]\nspread = 2\n')
    assert main(["validate", str(job)]) == 0
    assert '[code."wide.py:Wide"]\nspread = 2' in capsys.readouterr().out
    code = make_code("wide.py:Wide", 6, 3, base_dir=tmp_path, spread=2)
    assert code.spread == 2.0 and isinstance(code.spread, float)
    job.write_text(job.read_text().replace("spread = 2", 'spread = "wide"'))
    assert main(["validate", str(job)]) == 2
    assert capsys.readouterr().err == ('gcc_mpi: error: code."wide.py:Wide".spread: must be a '
                                       'number, got "wide"\n')
