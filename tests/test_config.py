"""Job file -> config: defaults, every kind of bad input, sweeps, overrides, round trip."""

import dataclasses
import math

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcc_mpi.job import access, schema
from gcc_mpi.job.config import Config, Job, parse_override, replace
from gcc_mpi.job.access import get
from gcc_mpi.job.default_job import load_default_job
from gcc_mpi.job.parse import load_job, parse_job
from gcc_mpi.job.rules import resolved_lcc_degree, resolved_stragglers
from gcc_mpi.errors import JobError


def nest(flat):
    """{"code.gcc.kernel": v} -> {"code": {"gcc": {"kernel": v}}} (a "sweep" entry is kept as
    is)."""
    doc = {}
    for k, v in flat.items():
        if k == "sweep":
            doc["sweep"] = v
            continue
        *tables, name = k.split(".")
        node = doc
        for t in tables:
            node = node.setdefault(t, {})
        node[name] = v
    return doc


def job(**flat) -> Job:
    """parse_job of a file holding the given keys; use __ for '.' and _h_ for '-' in names."""
    return parse_job(tomli_w.dumps(nest({k.replace("__", ".").replace("_h_", "-"): v
                                         for k, v in flat.items()})))


def error(text_or_flat, **kw) -> JobError:
    with pytest.raises(JobError) as info:
        parse_job(text_or_flat, **kw) if isinstance(text_or_flat, str) \
            else parse_job(tomli_w.dumps(nest(text_or_flat)), **kw)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{info.value.key}: ")
    return info.value


# --- defaults and access -------------------------------------------------------------------------

def test_defaults_resolve():
    j = parse_job("")
    c = j.config
    assert c == Config() and len(j.points) == 1 and j.points[0].params == {} and j.sweep == {}
    assert (c.job.name, c.job.seed, c.job.trials) == ("job", 0, 100)
    assert (c.data.source, c.data.batch, c.data.dim, c.data.noise, c.data.path) == \
        ("digits", 10, 50, 0.0, None)
    assert (c.target.kind, c.target.degree, c.target.outputs, c.target.model) == ("mlp", 3, 4, None)
    assert c.code.workers == 40 and c.code.schemes == ("bacc", "letcc", "gcc")
    assert c.stragglers.model == "fixed" and c.stragglers.delay == 0.1
    assert c.decode == schema.DecodeSection("fastest", "auto", None)
    assert resolved_stragglers(c) == 0 and j.explicit_keys == frozenset()


def test_get_options_and_frozen():
    c = job(code__gcc_h_manifold__neighbors=5, code__gcc__kernel="matern52").config
    assert get(c, "code.gcc-manifold.neighbors") == 5 == c.code.gcc_manifold.neighbors
    assert get(c, "code.gcc-manifold.kernel") == "matern52"       # same keys as code.gcc
    assert c.code.options("gcc") == {"robust": "auto", "kernel": "matern52",
                                     "lengthscale": "auto", "lambda_enc": "auto",
                                     "lambda_dec": "auto", "decoder": "auto"}
    assert c.code.options("bacc") == {"robust": "auto"}
    assert c.code.options("uncoded") == {} and \
        c.code.options("gcc-manifold")["ordering"] == "geodesic"
    with pytest.raises(TypeError):
        c.code.options("gcc")["kernel"] = "gaussian"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.code.workers = 3
    with pytest.raises(JobError, match="did you mean 'stragglers.count'"):
        get(c, "stragglers.cout")
    assert set(access.to_dict(c)) == set(schema.KEYS) and len(schema.schema()) == len(schema.KEYS)


def test_ints_accepted_as_floats_not_the_reverse():
    c = job(stragglers__delay=1, code__gcc__lambda_enc=0).config
    assert c.stragglers.delay == 1.0 and isinstance(c.stragglers.delay, float)
    assert c.code.gcc.lambda_enc == 0.0 and isinstance(c.code.gcc.lambda_enc, float)
    assert error({"code.workers": 12.0}).key == "code.workers"


# --- bad values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, expected", [
    ("code.workers", -3, "code.workers: must be an integer >= 1, got -3"),
    ("code.workers", True, "code.workers: must be an integer >= 1, got true"),
    ("code.workers", "8", 'code.workers: must be an integer >= 1, got "8"'),
    ("code.workers", 2.5, "got 2.5"),
    ("code.workers", {"n": 3}, "got a table"),
    ("code.workers", [40], "got [40]"),
    ("job.seed", -1, "must be an integer >= 0"),
    ("job.trials", 0, "must be an integer >= 1"),
    ("job.name", "my job", "letters, digits"),
    ("data.source", "mnist", 'must be one of "digits", "sphere"'),
    ("data.source", 3, "got 3"),
    ("data.noise", -0.1, "must be a number >= 0, got -0.1"),
    ("data.path", "", "must be a non-empty string"),
    ("target.kind", "polynomal", 'did you mean "polynomial"?'),
    ("target.function", "module.f", '"module:function" or "file.py:function"'),
    ("target.kind", "onx", 'did you mean "onnx"?'),
    ("target.path", "", "target.path: must be a non-empty string"),
    ("target.input", 3, "target.input: must be a non-empty string, got 3"),
    ("target.shape", [], "target.shape: must be a non-empty list of integers >= 1 "
                         "(one input's shape, e.g. [1, 8, 8]), got []"),
    ("target.shape", [1, 0, 8], "got [1, 0, 8]"),
    ("target.shape", [1.0, 8, 8], "got [1.0, 8, 8]"),
    ("target.shape", "1, 8, 8", 'got "1, 8, 8"'),
    ("target.classifier", "yes", 'target.classifier: must be "auto" or true or false, got "yes"'),
    ("target.classifier", 1, "got 1"),
    ("target.degree", False, "got false"),
    ("code.schemes", [], "non-empty list of distinct scheme names"),
    ("code.schemes", "gcc", 'got "gcc"'),
    ("code.schemes", [1, 2], "got [1, 2]"),
    ("code.schemes", ["gcc", "gcc"], '"gcc" is listed twice'),
    ("code.schemes", ["bac"], 'unknown scheme "bac"; did you mean "bacc"?'),
    ("code.lcc.degree", 0, 'must be "auto" or an integer >= 1, got 0'),
    ("code.letcc.lambda_enc", -1, 'must be "auto", "gcv", "loo" or a number >= 0, got -1'),
    ("code.gcc.lambda_dec", "gvc", 'did you mean "gcv"?'),
    ("code.gcc.lengthscale", 0, 'code.gcc.lengthscale: must be "auto" or a number > 0, got 0'),
    ("code.gcc.lengthscale", -1, "got -1"),
    ("code.gcc.lengthscale", "fast", 'got "fast"'),
    ("code.gcc-manifold.lengthscale", 0,
     'code.gcc-manifold.lengthscale: must be "auto" or a number > 0'),
    ("code.gcc-manifold.lengthscale", "fast", 'got "fast"'),
    ("code.gcc.kernel", "rbf", 'one of "sobolev2", "matern32", "matern52", "gaussian"'),
    ("code.gcc-manifold.neighbors", 0, "code.gcc-manifold.neighbors: must be an integer >= 1"),
    ("code.gcc-manifold.ordering", "random", '"fiedler", "geodesic", "none"'),
    ("stragglers.model", "paretto", 'did you mean "pareto"?'),
    ("stragglers.p", 1.5, "must be a number in [0, 1], got 1.5"),
    ("stragglers.rate", 0, "must be a number > 0"),
    ("stragglers.delay", "fast", 'got "fast"'),
    ("stragglers.delay", math.inf, "got inf"),
    ("stragglers.delay", math.nan, "got nan"),
    ("stragglers.count", 2**70, "an integer >= 0"),
    ("decode.stragglers", "none", 'must be "auto" or an integer >= 0, got "none"'),
    ("decode.wait", "first", "fastest"),
    ("decode.deadline", 0, "must be a number > 0"),
])
def test_bad_values(key, value, expected):
    e = error({key: value})
    assert e.key == key and expected in str(e)


def test_unknown_keys_and_tables():
    assert str(error({"stragglers.modle": "fixed"})) == \
        "stragglers.modle: unknown key; did you mean 'stragglers.model'?"
    assert "did you mean 'stragglers'" in str(error({"stragglrs.count": 3}))
    assert str(error({"code.gcc.kernl": "gaussian"})).endswith("did you mean 'code.gcc.kernel'?")
    assert "did you mean 'code.workers'" in str(error("workers = 5"))
    e = error({"stragglers.zzz": 1})
    assert e.key == "stragglers.zzz" and "allowed: model, count" in str(e)
    e = error("[output]\nfile = 'x.h5'")
    assert e.key == "output" and str(e).startswith("output: unknown table") \
        and "[stragglers]" in str(e)
    assert str(error("code = 5")) == "code: must be a table [code], got 5"
    assert "must be a table [code.gcc]" in str(error("[code]\ngcc = 'fast'"))
    assert error('["a\\nb"]\nx = 1').key == '"a\\nb"'     # a strange key is quoted, still one line


def test_toml_syntax_error():
    e = error("[job]\nname = \n")
    assert e.key == "job file" and str(e).startswith("job file: invalid TOML at line 2")
    assert error("[job]\nseed = 1\nseed = 2\n").key == "job file"
    assert error("x = [1,").key == "job file"


# --- consistency ---------------------------------------------------------------------------------

def test_batch_larger_than_workers():
    e = error({"data.batch": 10, "code.workers": 8})
    assert str(e) == "code.workers: must be >= data.batch = 10 (every scheme needs N >= K), got 8"
    assert job(data__batch=10, code__workers=10,
               code__schemes=["uncoded", "replication"]).config.code.workers == 10


def test_lcc_degree_auto_and_threshold():
    poly = dict(target__kind="polynomial", target__degree=3, data__batch=10, code__schemes=["lcc"])
    assert resolved_lcc_degree(job(**poly, code__workers=28).config) == 3
    e = error({"target.kind": "polynomial", "target.degree": 3, "data.batch": 10,
               "code.schemes": ["lcc"], "code.workers": 27})
    assert str(e) == ("code.workers: lcc needs >= (K-1)*degree+1 = 28 workers "
                      "(K = 10, degree = 3), got 27")
    assert resolved_lcc_degree(job(target__kind="linear", code__schemes=["lcc"]).config) == 1
    assert resolved_lcc_degree(job(code__lcc__degree=2, code__schemes=["lcc"]).config) == 2
    e = error({"code.schemes": ["lcc", "gcc"]})
    assert str(e) == ('code.lcc.degree: must be set when target.kind is "mlp" '
                      "(lcc is exact only for polynomials)")
    c = parse_job("").config                          # lcc not used: fine until asked
    with pytest.raises(JobError, match="code.lcc.degree"):
        resolved_lcc_degree(c)


def test_stragglers_and_decode():
    assert resolved_stragglers(job(stragglers__count=7).config) == 7
    assert resolved_stragglers(job(stragglers__model="adversarial",
                                   stragglers__count=3).config) == 3
    assert resolved_stragglers(job(stragglers__model="bernoulli", stragglers__p=0.25,
                                   code__workers=10).config) == 3
    assert resolved_stragglers(job(stragglers__model="pareto", stragglers__count=7).config) == 0
    assert resolved_stragglers(job(decode__stragglers=4).config) == 4
    assert error({"stragglers.count": 41}).key == "stragglers.count"
    e = error({"stragglers.count": 40})
    assert e.key == "decode.stragglers" and "<= code.workers - 1 = 39" in str(e) \
        and "got 40 (auto" in str(e)
    assert error({"decode.stragglers": 40}).key == "decode.stragglers"
    assert job(decode__stragglers=40, decode__wait="all").config.decode.wait == "all"   # S unused
    assert str(error({"decode.wait": "deadline"})).startswith(
        'decode.deadline: required when decode.wait = "deadline"')
    assert job(decode__wait="deadline", decode__deadline=1).config.decode.deadline == 1.0


def test_onnx_target_keys():
    c = job(target__kind="onnx").config.target
    assert (c.kind, c.path, c.input, c.output, c.shape, c.classifier) == \
        ("onnx", None, None, None, None, "auto")
    c = job(target__kind="onnx", target__path="m.onnx", target__input="x", target__output="logits",
            target__shape=[1, 28, 28], target__classifier=False).config.target
    assert (c.path, c.input, c.output, c.shape, c.classifier) == \
        ("m.onnx", "x", "logits", (1, 28, 28), False)
    j = job(target__kind="onnx", sweep={"target.shape": [[64], [1, 8, 8]]})
    assert [p.config.target.shape for p in j.points] == [(64,), (1, 8, 8)]
    assert parse_job(j.to_toml()) == j
    assert parse_job("", overrides=["target.shape=[1, 8, 8]"]).config.target.shape == (1, 8, 8)
    e = error({"target.kind": "onnx", "target.model": "cnn.ONNX"})
    assert str(e) == ('target.model: is an ONNX file: set target.kind = "onnx" and the file as '
                      "target.path (target.model is for .npz MLP weights)")
    assert error({"target.model": "cnn.onnx"}).key == "target.model"          # kind = "mlp" too


def test_required_and_dependent_keys():
    assert error({"target.kind": "python"}).key == "target.function"
    assert job(target__kind="python", target__function="f.py:g").config.target.function == "f.py:g"
    assert error({"data.source": "file"}).key == "data.path"
    assert job(data__source="file", data__path="x.npy", data__key="X").config.data.key == "X"
    assert job(data__path="ignored.npy").config.data.path == "ignored.npy"      # lenient
    assert str(error({"data.source": "torus", "data.dim": 2})) == \
        'data.dim: must be >= 3 for data.source = "torus", got 2'
    assert job(data__source="gaussian", data__dim=1).config.data.dim == 1


# --- sweeps --------------------------------------------------------------------------------------

def test_sweep_cartesian_order():
    j = job(sweep={"stragglers.count": [0, 5], "code.workers": [20, 30], "stragglers.delay": [1]})
    assert [p.index for p in j.points] == [0, 1, 2, 3]
    assert [p.params for p in j.points] == [
        {"stragglers.count": c, "code.workers": n, "stragglers.delay": 1.0}
        for c in (0, 5) for n in (20, 30)]
    assert [(p.config.stragglers.count, p.config.code.workers) for p in j.points] == \
        [(0, 20), (0, 30), (5, 20), (5, 30)]
    assert j.config == j.points[0].config and j.sweep["stragglers.delay"] == [1.0]
    assert {"stragglers.count", "code.workers"} <= j.explicit_keys


def test_sweep_nested_keys_and_schemes():
    j = parse_job('[sweep]\nstragglers.count = [1, 2]\n'
                  '"code.schemes" = [["gcc"], ["bacc", "gcc"]]\n')
    assert list(j.sweep) == ["stragglers.count", "code.schemes"]
    assert j.points[3].params == {"stragglers.count": 2, "code.schemes": ("bacc", "gcc")}


def test_sweep_errors():
    e = error({"data.batch": 10, "sweep": {"code.workers": [12, 8]}})
    assert str(e) == ("code.workers: must be >= data.batch = 10 (every scheme needs N >= K), got 8 "
                      "at sweep point 1 (code.workers=8)")
    e = error({"sweep": {"stragglers.count": [0, -1]}})
    assert str(e) == "stragglers.count: must be an integer >= 0, got -1 in [sweep]"
    assert str(error({"sweep": {"stragglers.modle": [1]}})) == \
        "sweep.\"stragglers.modle\": unknown key; did you mean 'stragglers.model'?"
    assert "cannot be swept" in str(error({"sweep": {"job.seed": [1, 2]}}))
    assert "non-empty list" in str(error({"sweep": {"stragglers.count": []}}))
    assert "non-empty list" in str(error({"sweep": {"stragglers.count": 3}}))
    assert "is a table" in str(error({"sweep": {"code.gcc": [1]}}))
    assert str(error("sweep = 3")).startswith("sweep: must be a table")
    assert "both set in [stragglers] and swept" in str(
        error({"stragglers.count": 1, "sweep": {"stragglers.count": [1]}}))
    assert "at most" in str(error({"sweep": {k: list(range(1, 20)) for k in (
        "job.trials", "data.dim", "code.workers", "stragglers.delay")}}))


# --- overrides -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("stragglers.count=8", ("stragglers.count", 8)),
    ("stragglers.model=pareto", ("stragglers.model", "pareto")),
    (" stragglers.model = pareto ", ("stragglers.model", "pareto")),
    ("code.schemes=gcc-manifold", ("code.schemes", "gcc-manifold")),
    ('code.schemes=["gcc", "bacc"]', ("code.schemes", ["gcc", "bacc"])),
    ("code.gcc.lambda_enc=1e-8", ("code.gcc.lambda_enc", 1e-8)),
    ("decode.wait=\"all\"", ("decode.wait", "all")),
    ("job.name=a=b", ("job.name", "a=b")),
    ("data.path=", ("data.path", "")),
    ("x=1\ny = 2", ("x", "1\ny = 2")),
])
def test_parse_override(text, expected):
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["stragglers.count", "=5", ""])
def test_parse_override_malformed(text):
    with pytest.raises(JobError) as info:
        parse_override(text)
    assert info.value.key == "--set"


def test_overrides_apply_before_validation():
    j = parse_job("[code]\nworkers = 5\n", overrides=["code.workers=20", "stragglers.model=pareto"])
    assert j.config.code.workers == 20 and j.config.stragglers.model == "pareto"
    assert {"code.workers", "stragglers.model"} <= j.explicit_keys
    assert parse_job("", overrides={"code.workers": 12}).config.code.workers == 12
    assert parse_job("", overrides=[("code.workers", 13)]).config.code.workers == 13
    assert error("", overrides=["code.workers=5"]).key == "code.workers"      # validated
    assert str(error("", overrides=["stragglers.modle=x"])) == \
        "stragglers.modle: unknown key; did you mean 'stragglers.model'?"


def test_override_replaces_sweep_and_sets_sweep():
    text = tomli_w.dumps({"sweep": {"stragglers.count": [0, 5, 10], "code.workers": [20, 30]}})
    j = parse_job(text, overrides=["stragglers.count=3"])
    assert j.sweep == {"code.workers": [20, 30]} \
        and [p.config.stragglers.count for p in j.points] == [3, 3]
    j = parse_job("[stragglers]\ncount = 2\n", overrides=["sweep.stragglers.count=[1, 4]"])
    assert j.sweep == {"stragglers.count": [1, 4]} and len(j.points) == 2


def test_runtime_defaults_for_unwritten_keys():
    # the MPI runtime: N = ranks - 1 unless the job says otherwise, applied before validation
    assert parse_job("[data]\nbatch = 50\n",
                     defaults={"code.workers": 63}).config.code.workers == 63
    j = parse_job("[code]\nworkers = 12\n", defaults={"code.workers": 63})
    assert j.config.code.workers == 12 and "code.workers" in j.explicit_keys
    assert parse_job("", overrides=["code.workers=11"],
                     defaults={"code.workers": 63}).config.code.workers == 11
    j = parse_job(tomli_w.dumps({"sweep": {"code.workers": [10, 20]}}),
                  defaults={"code.workers": 63})
    assert [p.config.code.workers for p in j.points] == [10, 20]
    j = load_default_job(defaults={"code.workers": 15})     # the default job follows the ranks
    assert j.config.code.workers == 15 and "code.workers" not in j.explicit_keys
    assert load_default_job(["code.workers=12"],
                            defaults={"code.workers": 7}).config.code.workers == 12
    with pytest.raises(JobError, match="code.workers: must be >= data.batch"):
        load_default_job(["data.batch=10"], defaults={"code.workers": 3})
    assert error("", defaults={"code.wrkers": 3}).key == "code.wrkers"


def test_job_with_overrides_and_config_replace():
    j = job(data__batch=10, code__workers=12, sweep={"stragglers.count": [0, 2]})
    j2 = j.with_overrides({"code.workers": 20})
    assert [p.config.code.workers for p in j2.points] == [20, 20] and j2.sweep == j.sweep
    assert j.with_overrides(["stragglers.count=1"]).sweep == {}
    c = j.config
    assert c.with_workers(16).code.workers == 16 \
        and replace(c, {"stragglers.delay": 2}).stragglers.delay == 2.0
    with pytest.raises(JobError, match="code.workers: must be >= data.batch = 10"):
        c.with_workers(5)
    with pytest.raises(JobError, match="must be an integer >= 1"):
        replace(c, {"code.workers": True})


# --- round trip, files, the default job ----------------------------------------------------------

def test_to_toml_round_trip():
    j = job(job__name="rt", job__trials=3, target__kind="polynomial", data__batch=4,
            code__schemes=["lcc", "gcc-manifold"], code__gcc_h_manifold__lambda_enc=1e-8,
            decode__wait="deadline", decode__deadline=0.5,
            sweep={"stragglers.count": [0, 2], "code.workers": [10, 12]})
    text = j.to_toml()
    assert parse_job(text) == j and parse_job(parse_job(text).to_toml()) == j
    assert "[sweep]" in text and "count" not in text.split("[stragglers]")[1].split("[")[0]
    assert parse_job(parse_job("").to_toml()) == parse_job("")


def test_load_job(tmp_path):
    (tmp_path / "j.toml").write_text('[data]\nsource = "file"\npath = "x.npy"\n')
    j = load_job(tmp_path / "j.toml", overrides=["data.batch=3"])
    assert j.source == tmp_path / "j.toml" and j.base_dir == tmp_path.resolve()
    assert j.resolve_path(j.config.data.path) == tmp_path.resolve() / "x.npy" \
        and j.config.data.batch == 3
    for bad in (tmp_path / "missing.toml", tmp_path):
        with pytest.raises(JobError) as info:
            load_job(bad)
        assert info.value.key == "job file" and "\n" not in str(info.value)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[")
    with pytest.raises(JobError, match="job file"):
        load_job(tmp_path / "bin.toml")


def test_default_job():
    j = load_default_job()
    c = j.config
    assert (c.data.source, c.data.batch, c.code.workers, c.target.kind) == ("digits", 3, 7, "mlp")
    assert j.explicit_keys == frozenset()          # so the MPI runtime may set N = ranks - 1
    assert load_default_job(["code.workers=12"]).explicit_keys == {"code.workers"}
    assert parse_job(j.to_toml()) == j


def test_default_job_fits_any_allocation():
    from gcc_mpi.job.default_job import fit_default_job

    for n in range(1, 200):  # N - S >= 2K from 5 workers (4: K = 1), S >= 1 from 2, K <= 10
        K, S = fit_default_job(n)
        assert 1 <= K <= 10 and 0 <= S <= n - 1 and n - S >= K and (S >= 1 or n == 1)
        assert n - S >= 2 * K or n < 5
    assert [fit_default_job(n) for n in (3, 7, 15, 31, 63)] == [(1, 1), (3, 1), (6, 3), (10, 7),
                                                                 (10, 15)]
    j = load_default_job(defaults={"code.workers": 15})
    c = j.config
    assert (c.data.batch, c.stragglers.count) == (6, 3) and "\n" not in j.note
    assert j.note.startswith("default job for 16 ranks: N = 15 workers, K = 6 inputs per batch")
    assert "data.batch" in j.note and "stragglers.count" in j.note
    j = load_default_job(["data.batch=2", "stragglers.count=1"], defaults={"code.workers": 15})
    assert (j.config.data.batch, j.config.stragglers.count, j.note) == (2, 1, "")
    assert "data.batch, as set" in load_default_job(["data.batch=2"]).note
    assert j.explicit_keys == {"data.batch", "stragglers.count"}
    assert "data.batch" not in load_default_job().explicit_keys  # chosen, not written


# --- property: any TOML gives a Job or a JobError ------------------------------------------------

_names = st.sampled_from([k.rpartition(".")[2] for k in schema.KEYS]
                         + ["lcc", "letcc", "gcc", "gcc-manifold", "sweep"]) | st.text(max_size=8)
_tops = st.sampled_from(["job", "data", "target", "code", "stragglers", "decode", "sweep"]) \
    | st.text(max_size=6)
_scalars = (st.sampled_from([0, 1, 2, 3, 5, 10, 40, -1, 0.5, 1e-8, True, "auto", "gcv", "fixed",
                             "bernoulli", "deadline", "polynomial", "linear", "python", "file",
                             "sphere", "lcc", "gcc", "uncoded", "x.npy", "m:f"])
            | st.integers() | st.floats() | st.text(max_size=10) | st.booleans()
            | st.datetimes(timezones=st.none() | st.just(__import__("datetime").timezone.utc))
            | st.dates())
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_names, inner, max_size=3), max_leaves=8)
_sweeps = st.dictionaries(st.sampled_from(list(schema.KEYS)) | st.text(max_size=12),
                          st.lists(_scalars, max_size=3) | _scalars, max_size=3)
_good = {"stragglers.count": [0, 1, 3, 12], "code.workers": [10, 20, 2],
         "stragglers.delay": [0, 0.5, -1], "code.gcc.kernel": ["gaussian", "matern52"],
         "code.schemes": [["gcc"], ["lcc"], ["bacc", "uncoded"]],
         "target.kind": ["polynomial", "linear", "mlp"],
         "decode.wait": ["all", "deadline", "fastest"]}
_good_sweeps = st.lists(st.sampled_from(list(_good)), unique=True, max_size=3).flatmap(
    lambda ks: st.fixed_dictionaries({k: st.lists(st.sampled_from(_good[k]), min_size=1, max_size=3)
                                      for k in ks}))
_docs = st.dictionaries(_tops, st.dictionaries(_names, _values, max_size=6), max_size=6) \
    | st.fixed_dictionaries({"sweep": _sweeps | _good_sweeps},
                            optional={"code": st.dictionaries(_names, _values, max_size=3)})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_docs, st.lists(st.text(max_size=20), max_size=2))
def test_any_toml_gives_job_or_job_error(doc, overrides):
    text = tomli_w.dumps(doc)
    try:
        j = parse_job(text)
    except JobError as e:
        assert "\n" not in str(e)
    else:
        assert isinstance(j, Job) and j.points and parse_job(j.to_toml()) == j
    try:
        parse_job(text, overrides=overrides)
    except JobError as e:
        assert "\n" not in str(e)

