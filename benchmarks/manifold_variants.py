"""Manifold-aware GCC: every ordering x placement (x pool, x Laplacian) against standard GCC.

    python benchmarks/manifold_variants.py [--trials 100]

Paired trials on the shipped accuracy jobs; prints mse [dB] per variant and its gain over gcc.
"""

import argparse
import itertools

from common import mse_db, point_setup

CASES = [("digits-mlp", ["stragglers.count=10"]), ("sphere-poly", []),
         ("sphere-poly", ["data.source=gaussian"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="orderings x placements only")
    args = ap.parse_args()
    variants = [dict(ordering=o, placement=p) for o, p in
                itertools.product(["none", "fiedler", "geodesic"], ["chebyshev", "arclength"])]
    if not args.quick:
        variants += [dict(ordering="geodesic", placement="arclength", pool=200),
                     dict(ordering="fiedler", placement="arclength", pool=200),
                     dict(ordering="geodesic", placement="arclength", laplacian=0.1),
                     dict(ordering="geodesic", placement="arclength", neighbors=4)]
    for job, sets in CASES:
        base = [*sets, 'code.schemes=["gcc", "gcc-manifold"]']
        setup, i = point_setup(job, base)
        gcc, _ = mse_db(setup, i, "gcc", args.trials)
        print(f"\n{job} {' '.join(sets)}: gcc {gcc:.1f} dB ({args.trials} paired trials)")
        for v in variants:
            opts = [f'code.gcc-manifold.{k}={v!r}'.replace("'", '"') for k, v in v.items()]
            s, i = point_setup(job, [*base, *opts])
            m, _ = mse_db(s, i, "gcc-manifold", args.trials)
            label = " ".join(f"{k}={v}" for k, v in v.items())
            print(f"  {label:55s} {m:6.1f} dB   gain over gcc {gcc - m:+5.1f} dB")


if __name__ == "__main__":
    main()
