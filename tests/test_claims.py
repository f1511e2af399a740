"""The claims page's jobs (jobs/claims/, docs/claims.md) run at a small size through
benchmarks/claims.py --small, and each keeps its direction: who beats whom, and the sign and
rough size of each rate. The margins are wide (10 trials, three points of a sweep): what they
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
                      "manifold-polynomial", "letcc-bacc", "approxifer"}


@pytest.mark.parametrize("scheme, lo, hi", [
    ("bacc", -5.0, -1.5), ("letcc", -12.0, -4.0), ("gcc", -25.0, -6.0),
    ("gcc-manifold", -25.0, -6.0)])
def test_rate_in_n_falls_at_least_like_n_cubed_for_the_kernel_codes(lines, scheme, lo, hi):
    """N = 20, 40, 80 with 2 adversarial stragglers (measured at --small: bacc -2.9, letcc -7.6,
    gcc -13, gcc-manifold -12)."""
    assert lo <= slope(lines, "rate-n", scheme) <= hi


@pytest.mark.parametrize("scheme, lo, hi", [
    ("bacc", 0.5, 4.0), ("letcc", 1.0, 8.0), ("gcc", 1.0, 12.0), ("gcc-manifold", 1.0, 12.0)])
def test_error_grows_with_the_stragglers(lines, scheme, lo, hi):
    """S = 2, 8, 32 adversarial stragglers of N = 160: every error grows with S."""
    assert lo <= slope(lines, "rate-s", scheme) <= hi


@pytest.mark.parametrize("scheme", ["bacc", "letcc", "gcc", "gcc-manifold"])
def test_probabilistic_rates_fall(lines, scheme):
    """p = 0.3: every scheme's error falls with N, and no slower than its bound."""
    r = lines["rate-probabilistic", scheme]
    assert r["values"]["rate"] < -1.0
    assert r["holds"], r["figure"]


@pytest.mark.parametrize("claim, pair", [
    ("manifold-network", "gcc-manifold - gcc"), ("manifold-polynomial", "gcc-manifold - gcc"),
    ("letcc-bacc", "letcc - bacc")])
def test_who_beats_whom(lines, claim, pair):
    """The first beats the second by the mean at every point of the small sweep."""
    assert all(d < 0 for d in lines[claim, pair]["values"]["differences"]), lines[claim, pair]


def test_approxifer_setting(lines):
    """N = K + 1, one straggler: bacc near its published 0.87; gcc and gcc-manifold above it."""
    acc = {s: lines["approxifer", s]["values"] for s in ("bacc", "gcc", "gcc-manifold")}
    for K in ("8", "10", "12"):
        assert 0.7 <= acc["bacc"][K][0] <= 0.95
        assert acc["gcc-manifold"][K][0] > acc["bacc"][K][0]
