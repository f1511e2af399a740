"""Test-only process for tests/test_kills.py: a ResultWriter that appends known rows.

    python writer_child.py OUT.h5 [--pause-in-commit | --slow-in-place]

Appends trials 0..TRIALS-1 of two schemes at each of POINTS points to OUT.h5 (``--resume``
semantics: a file left by an earlier kill is continued), blocks of random size, committing every
COMMIT_SECONDS; prints "committed T" after each commit that made the disk hold trial T - 1 of the
current point, and "done" at the end. ``--pause-in-commit``: the first commit with pages to write
in place writes one of them, prints "in commit" and sleeps, so that a kill lands inside the
window a journal protects. ``--slow-in-place``: every commit with pages to write in place writes
half of them, prints "in place" and sleeps IN_PLACE_SECONDS before the rest, so that a kill at a
random moment of that sleep tears a commit. ``rows(t0, n)`` is what trial t holds; the test
checks the files against it.
"""

import sys
import time

import numpy as np

N, POINTS, TRIALS, SCHEMES = 12, 2, 60000, ("a", "b")  # more than 6 kills take (under load too)
COMMIT_SECONDS = 0.005
IN_PLACE_SECONDS = 0.01


def rows(t0, n):
    t = np.arange(t0, t0 + n)
    grid = t[:, None] + np.arange(N)
    return {"trial": t, "nmse": t * 0.5, "failed": t % 11 == 0,
            "reason": np.array([f"r{x}" if x % 7 == 0 else "" for x in t], dtype=object),
            "delay": grid * 1.0, "used": grid % 3 == 0, "error": (grid % 5).astype(np.int8)}


def main(path, pause, slow):
    import gcc_mpi.files.journal as journal
    import gcc_mpi.files.writer as results

    results.COMMIT_SECONDS = COMMIT_SECONDS
    if pause or slow:
        apply = journal._apply

        def slow_apply(fd, length, pages):
            if len(pages) > 1:  # a commit with pages in place (not the file's creation)
                apply(fd, length, pages[:1] if pause else pages[:len(pages) // 2])
                print("in commit" if pause else "in place", flush=True)
                time.sleep(60 if pause else IN_PLACE_SECONDS)
            apply(fd, length, pages)

        journal._apply = slow_apply
    w = results.ResultWriter(path, config_toml="x = 1\n", command="t", mpi="simulate",
                             resume=True)
    for p in range(POINTS):
        w.add_point(p, {"p": p})
        t = w.align(p, list(SCHEMES))
        rng = np.random.default_rng(1000 * p + t)
        while t < TRIALS:
            n = min(int(rng.integers(1, 80)), TRIALS - t)
            for s in SCHEMES:
                w.append(p, s, rows(t, n))
            t += n
            if w.due():
                w.flush()
                print(f"committed {p} {t}", flush=True)
    w.close(complete=True)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], "--pause-in-commit" in sys.argv, "--slow-in-place" in sys.argv)
