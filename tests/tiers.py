"""The tiers of the suite that need what pip does not bring (a browser, SLURM, the three-host
bed). Each tier's tests carry its mark and take its fixture, which skips them, with the reason
and how to run them, where that is absent; under GCC_MPI_TEST_<TIER>=required (.ci/run sets
all three, after installing or starting what they need) it fails them instead.
tests/conftest.py ends the report with one line per tier that was left out.
"""

import os

import pytest

# mark -> (the fixture that skips without it, what its tests need, how to run them)
TIERS = {
    "browser": ("chromium", "Debian's chromium and chromium-driver",
                "apt-get install chromium chromium-driver, then GCC_MPI_TEST_BROWSER=required"),
    "slurm": ("slurm", "a live SLURM",
              ".ci/slurm-up.sh (as root), then GCC_MPI_TEST_SLURM=required"),
    "hosts": ("bed", "the three hosts of .ci/hosts-up.sh",
              "run as root (the tests bring the hosts up themselves), with "
              "GCC_MPI_TEST_HOSTS=required"),
}


def required(tier):
    """The environment variable that turns ``tier``'s skips into failures."""
    return f"GCC_MPI_TEST_{tier.upper()}"


def unavailable(tier, reason):
    """``tier`` cannot run here, for ``reason``: skip (with how to run it), or fail under
    GCC_MPI_TEST_<TIER>=required."""
    var = required(tier)
    if os.environ.get(var) == "required":
        pytest.fail(f"{var}=required, but {reason}")
    pytest.skip(f"{reason}; to run these tests: {TIERS[tier][2]}")
