"""The check that two engines' records agree (tests/test_engines.py, tests/test_adversaries.py)."""

import numpy as np


def assert_same(a, b):
    """Two engines' records ({scheme: {field: column}}) agree: exactly, but for rounding in the
    computed numbers (an exact scheme's error at round-off, ~1e-31, differs between f row by row
    and on the batch)."""
    assert a.keys() == b.keys()
    for s in a:
        assert a[s].keys() == b[s].keys(), s
        for k, u in a[s].items():
            v = b[s][k]
            if u.dtype.kind == "f":
                assert np.allclose(u, v, rtol=1e-9, atol=1e-20, equal_nan=True), (s, k, u, v)
            else:
                assert np.array_equal(u, v), (s, k, u, v)
