"""The claims page's jobs (jobs/claims/, docs/claims.md) run at a small size through
benchmarks/claims.py --small, and each keeps its direction: who beats whom, and the sign and
rough size of each rate, at the figures measured at that size. The margins are wide (10 trials,
three points of a sweep; 40 trials of ApproxIFER's setting): what they
catch is a claim whose job no longer runs, a scheme decoded by another's decoder, or a rate that
turns around, not a tenth of a dB."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLAIMS = Path(__file__).resolve().parent.parent / "benchmarks" / "claims.py"


@pytest.fixture(scope="module")
def lines():
    out = subprocess.run([sys.executable, str(CLAIMS), "--small", "--json"], check=True,
                         capture_output=True, text=True, timeout=900)
    rows = json.loads(out.stdout)
    return {(r["claim"], r["scheme"]): r for r in rows}


def slope(lines, claim, scheme):
    return lines[claim, scheme]["values"]["slope"]


def test_every_claim_has_its_lines(lines):
    claims = {c for c, _ in lines}
    assert claims == {"rate-n", "rate-s", "rate-probabilistic", "manifold-network",
                      "manifold-polynomial", "letcc-bacc", "approxifer", "lcc-correction",
                      "adversarial-rate"}
    assert {r["decoder"] for r in lines.values()} == {"beta"}  # the schemes as published


# Measured at --small (python benchmarks/claims.py --small; the jobs are seeded, so the figures
# repeat exactly): rate-n bacc -4.26, letcc -5.71, gcc -7.08, gcc-manifold -11.27; rate-s +4.43,
# +6.72, +9.84, +10.34. The ranges keep each scheme apart from bacc's, so a kernel code decoded
# by another's decoder, or a rate that flattens or turns, crosses them.
@pytest.mark.parametrize("scheme, lo, hi", [
    ("bacc", -5.5, -3.0), ("letcc", -7.0, -4.5), ("gcc", -10.0, -5.0),
    ("gcc-manifold", -15.0, -8.0)])
def test_rate_in_n_at_fixed_s(lines, scheme, lo, hi):
    """N = 16, 24, 40 with 2 adversarial stragglers: every error falls at least like N^-3."""
    assert lo <= slope(lines, "rate-n", scheme) <= hi
    assert lines["rate-n", scheme]["holds"]


@pytest.mark.parametrize("scheme, lo, hi", [
    ("bacc", 3.0, 6.0), ("letcc", 5.0, 8.5), ("gcc", 7.5, 12.5), ("gcc-manifold", 8.0, 13.0)])
def test_growth_in_s_at_fixed_n(lines, scheme, lo, hi):
    """S = 8, 16, 32 adversarial stragglers of N = 160: every error grows, the kernel codes'
    faster than S^3 (the page's "does not hold")."""
    assert lo <= slope(lines, "rate-s", scheme) <= hi
    assert lines["rate-s", scheme]["holds"] == (scheme == "bacc")


@pytest.mark.parametrize("scheme, lo, hi", [
    ("bacc", -3.0, -1.8), ("letcc", -4.5, -2.5), ("gcc", -5.0, -2.5),
    ("gcc-manifold", -9.0, -5.0)])
def test_probabilistic_rates_fall(lines, scheme, lo, hi):
    """p = 0.3, N = 20, 40, 80: every scheme's error falls with N (measured: -2.37, -3.43, -3.58,
    -6.97), and no slower than its bound's shape."""
    r = lines["rate-probabilistic", scheme]
    assert lo <= r["values"]["rate"] <= hi
    assert r["holds"], r["figure"]


@pytest.mark.parametrize("claim, pair, most", [
    ("manifold-network", "gcc-manifold - gcc", -1.0),
    ("manifold-polynomial", "gcc-manifold - gcc", -7.0),
    ("letcc-bacc", "letcc - bacc", -4.0)])
def test_who_beats_whom(lines, claim, pair, most):
    """The first beats the second at S = 0 and 10 by at least ``most`` dB (measured: -5.6 / -2.5,
    -15.2 / -13.1, -10.2 / -6.0)."""
    r = lines[claim, pair]
    assert all(d <= most for d in r["values"]["differences"]), r["figure"]
    assert r["holds"]


def test_approxifer_setting(lines):
    """N = K + 1, one straggler, 40 trials (measured: bacc 0.797 / 0.845 / 0.810, letcc 0.800 /
    0.802 / 0.748, gcc 0.812 / 0.812 / 0.752, gcc-manifold 0.925 / 0.943 / 0.950): bacc near the
    published 0.87; letcc and gcc as published no better than bacc; gcc-manifold well above."""
    acc = {s: lines["approxifer", s]["values"] for s in ("bacc", "letcc", "gcc", "gcc-manifold")}
    for K in ("8", "10", "12"):
        bacc = acc["bacc"][K][0]
        assert 0.75 <= bacc <= 0.92
        assert acc["letcc"][K][0] <= bacc + 0.03 and acc["gcc"][K][0] <= bacc + 0.03
        assert acc["gcc-manifold"][K][0] >= bacc + 0.08


@pytest.mark.parametrize("A, within, beyond", [(1, 196, 4), (2, 194, 6), (3, 197, 3)])
def test_lcc_corrects_a_errors_at_its_threshold_and_refuses_more(lines, A, within, beyond):
    """N = D + 1 + 2A (D = 6), 200 trials at the full size (the figures of docs/claims.md,
    which the seeded liars repeat exactly): every trial with at most A liars at the round-off
    floor, every trial with more refused."""
    r = lines["lcc-correction", f"lcc A={A}"]["values"]
    assert (r["within"], r["exact"], r["beyond"], r["refused"]) == (within, within, beyond,
                                                                    beyond)
    assert r["worst_db"] <= -200  # measured -303, -293, -275
    assert lines["lcc-correction", f"lcc A={A}"]["holds"]


def test_lcc_below_its_threshold_is_refused_before_any_trial():
    """The "fails beyond" of N: one worker fewer than D + 1 + 2A is refused by the job's checks,
    one line naming code.workers."""
    from gcc_mpi.errors import JobError
    from gcc_mpi.job.parse import load_job

    job = CLAIMS.parent.parent / "jobs" / "claims" / "lcc-correction.toml"
    with pytest.raises(JobError, match=r"code.workers.*\(K-1\)\*degree\+1\+2A = 11"):
        load_job(job, ["code.workers=10"])
def test_adversarial_rate(lines):
    """round(sqrt(N)) sign-flip liars side by side, letcc's adversarial spline (robust =
    "spline"), N = 16, 36, 64, 10 trials (measured: slope -0.40 ± 0.03): the error falls with N,
    more slowly than the paper's N^-0.6 here, as at the full size (-0.52 ± 0.01, docs/claims.md)."""
    r = lines["adversarial-rate", "letcc"]
    assert -0.55 <= r["values"]["slope"] <= -0.25, r["figure"]
    assert not r["holds"]
