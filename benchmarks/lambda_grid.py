"""Automatic lambda against a grid of fixed values, on the shipped accuracy jobs.

    python benchmarks/lambda_grid.py [--trials 100]

For letcc, gcc and gcc-manifold it prints mse [dB] with the decoder's lambda from the grid, "gcv",
"loo" and "auto" (encoder interpolating), then the encoder's lambda on a grid with the decoder on
auto. The figure of merit is "auto minus the best grid value": how much automatic choice costs.
"""

import argparse

from common import mse_db, point_setup

CASES = [("digits-mlp", ["stragglers.count=10"]), ("digits-mlp", ["stragglers.count=5"]),
         ("sphere-poly", []), ("rate-vs-n", ["code.workers=80"]),
         ("rate-probabilistic", ["code.workers=40"])]
SCHEMES = ["letcc", "gcc", "gcc-manifold"]
GRID = [1e-10, 1e-8, 1e-6, 1e-4, 1e-2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100)
    args = ap.parse_args()
    for job, sets in CASES:
        base = [*sets, 'code.schemes=["bacc", "letcc", "gcc", "gcc-manifold"]']
        setup, i = point_setup(job, base)
        bacc, _ = mse_db(setup, i, "bacc", args.trials)
        print(f"\n{job} {' '.join(sets)}  ({args.trials} paired trials; bacc {bacc:.1f} dB)")
        for scheme in SCHEMES:
            row, grid = {}, []
            for lam in [*GRID, "gcv", "loo", "auto"]:
                s, i = point_setup(job, [*base,
                                         f"code.{scheme}.lambda_dec={lam!r}".replace("'", '"')])
                row[lam] = mse_db(s, i, scheme, args.trials)[0]
                if lam in GRID:
                    grid.append(row[lam])
            cells = "  ".join(f"{k}:{v:6.1f}" for k, v in row.items())
            print(f"  {scheme:12s} lambda_dec  {cells}   "
                  f"auto - best grid = {row['auto'] - min(grid):+.1f} dB")
            row = {}
            for lam in [0.0, 1e-8, 1e-6, 1e-4, 1e-2, "gcv", "auto"]:
                s, i = point_setup(job, [*base,
                                         f"code.{scheme}.lambda_enc={lam!r}".replace("'", '"')])
                row[lam] = mse_db(s, i, scheme, args.trials)[0]
            cells = "  ".join(f"{k}:{v:6.1f}" for k, v in row.items())
            print(f"  {scheme:12s} lambda_enc  {cells}")


if __name__ == "__main__":
    main()
