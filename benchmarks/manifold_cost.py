"""What the manifold step costs per trial: gcc-manifold's encode against gcc's, K = 16, digits.

    python benchmarks/manifold_cost.py
"""


from common import per_call, point_setup


def main():
    setup, i = point_setup("digits-mlp", ["data.batch=16", "code.workers=64", "stragglers.count=10",
                                          'code.schemes=["gcc", "gcc-manifold"]'])
    X = setup.inputs(i, 0)[0]
    gcc = per_call(lambda: setup.codes["gcc"].encode(X))
    man = per_call(lambda: setup.codes["gcc-manifold"].encode(X))
    print(f"K = 16, N = 64, digits: gcc encode {1e3 * gcc:.3f} ms, gcc-manifold encode "
          f"{1e3 * man:.3f} ms: the manifold step adds {1e3 * (man - gcc):.3f} ms per trial")
    for k in [8, 32, 64]:
        s, i = point_setup("digits-mlp", [f"data.batch={k}", f"code.workers={4 * k}",
                                          "stragglers.count=0", 'code.schemes=["gcc-manifold"]'])
        X = s.inputs(i, 0)[0]
        print(f"  K = {k:2d}: gcc-manifold encode "
              f"{1e3 * per_call(lambda: s.codes['gcc-manifold'].encode(X), 0.5):.3f} ms")


if __name__ == "__main__":
    main()
