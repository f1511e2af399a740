"""What f costs per call against what encoding and decoding cost per trial, on one core.

    python benchmarks/heavy_workload.py [--seconds 2] [--trials 20] [--blocks 64 256 1024]

f per call: the shipped ONNX models and the digits MLP on one input row, as a worker computes
it (onnxruntime with one intra-op thread, as gcc_mpi's onnx target always runs; BLAS pinned to
one thread by benchmarks/common.py): the median wall time of a call and the mean CPU time of
this process per call (the steadier figure on a shared machine), over about ``--seconds``.

Encoding and decoding: per trial of each scheme of ``jobs/digits-heavy.toml`` (K = 4, N = 8,
S = 2), the median of the records' t_encode + t_decode (wall) over ``--trials`` simulated
trials, and the ratio of f's median wall time per call to it: above 1, a worker's f takes
longer than rank 0's coding work, the regime where coding can pay on time.

``--blocks``: the same for the digits CNN at a batch of b images per input (``target.shape =
[b, 1, 8, 8]``: one row of the data is b digits drawn at random, f of it is their 10 b class
scores), on the same job's K, N and S: f grows with b, and so do the decoders, which fit every
one of the 10 b outputs.

Prints the machine's load average: timings mean little above a load of about the core count.
"""

import argparse
import os
import tempfile
import time

from common import point_setup  # first: it keeps BLAS single-threaded before numpy loads

import numpy as np

from gcc_mpi.core.simulate import block_columns
from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.targets import make_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = os.path.join(ROOT, "gcc_mpi", "_data", "digits_heavy.onnx")
CNN = os.path.join(ROOT, "gcc_mpi", "_data", "digits_cnn.onnx")


def targets():
    """(label, target) of each shipped f, for 64-pixel rows."""
    return [("digits_heavy.onnx (random-feature CNN, 32x32)",
             make_target("onnx", input_dim=64, path=HEAVY)),
            ("digits_cnn.onnx (LeNet-style CNN, 8x8)", make_target("onnx", input_dim=64)),
            ("digits_mlp.npz (numpy MLP)", make_target("mlp", input_dim=64))]


def per_call(fn, seconds):
    """(median wall seconds, mean CPU seconds) of one call of ``fn`` over about ``seconds``."""
    fn()   # warm-up: onnxruntime plans its kernels on the first run
    walls, c0, t0 = [], time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < seconds or len(walls) < 5:
        s = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - s)
    return float(np.median(walls)), (time.process_time() - c0) / len(walls)


def coding_cost(overrides, trials):
    """{scheme: median seconds of t_encode + t_decode per trial} at point 0 of digits-heavy."""
    setup, index = point_setup("digits-heavy", overrides)
    block_columns(setup, index, [trials], list(setup.codes))   # warm-up: builds the decoders
    columns = block_columns(setup, index, list(range(trials)), list(setup.codes))
    return {name: float(np.median(c["t_encode"] + c["t_decode"])) for name, c in columns.items()}


def report(f_wall, costs):
    print(f"{'scheme':14} {'ms (median)':>12} {'f / it':>8}")
    for name, seconds in costs.items():
        print(f"{name:14} {1e3 * seconds:12.3f} {f_wall / seconds:8.2f}")


def cnn_blocks(b, folder, args):
    """(f's median wall s, f's CPU s, coding costs) of the digits CNN on blocks of b digits."""
    digits = load_dataset("digits").X
    path = os.path.join(folder, f"blocks{b}.npy")
    rng = np.random.default_rng(b)
    np.save(path, digits[rng.choice(len(digits), (16, b))].reshape(16, -1))
    sets = ['data.source="file"', f'data.path="{path}"', f'target.path="{CNN}"',
            f"target.shape=[{b}, 1, 8, 8]"]
    f = make_target("onnx", input_dim=64 * b, path=CNN, input_shape=[b, 1, 8, 8])
    row = np.load(path)[:1]
    wall, cpu = per_call(lambda: f(row), args.seconds)
    return wall, cpu, coding_cost(sets, args.trials)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--blocks", type=int, nargs="*", default=[64, 256, 1024])
    args = ap.parse_args()
    print(f"# load average at start: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    row = load_dataset("digits").X[:1]
    walls = {}
    print(f"{'f, one input row':48} {'wall ms (median)':>17} {'CPU ms (mean)':>14}")
    for label, f in targets():
        wall, cpu = per_call(lambda f=f: f(row), args.seconds)
        walls[label] = wall
        print(f"{label:48} {1e3 * wall:17.3f} {1e3 * cpu:14.3f}")
    heavy = next(iter(walls.values()))
    print(f"\nencode + decode per trial, jobs/digits-heavy.toml, {args.trials} trials; "
          "f = the heavy network")
    report(heavy, coding_cost([], args.trials))
    with tempfile.TemporaryDirectory() as folder:
        for b in args.blocks:
            wall, cpu, costs = cnn_blocks(b, folder, args)
            print(f"\nthe digits CNN on blocks of {b} digits per input: f {1e3 * wall:.3f} ms "
                  f"wall (median), {1e3 * cpu:.3f} ms CPU (mean); encode + decode per trial as "
                  "above")
            report(wall, costs)
    print(f"# heavy f per call: {1e3 * heavy:.2f} ms wall (median); load average at end: "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
