"""Random multivariate polynomial targets of exact total degree, and the linear special case."""

import numpy as np

from .base import Target, positive_int, seed_sequence

# SeedSequence stream ids: the dataset embedding uses 1, so the functions never share draws.
POLYNOMIAL_STREAM = 2
LINEAR_STREAM = 3


class PolynomialTarget(Target):
    """f_j(x) = sum_r c_jr prod_l (a_jrl . x + b_jrl), j = 1..m, r = 1..terms, l = 1..degree.

    A sum of products of affine forms is cheap to store and evaluate (one matmul and a product)
    yet is a generic polynomial of exact total degree ``degree`` (its top homogeneous part
    sum_r c_jr prod_l a_jrl . x is nonzero with probability one).

    Scaling: a ~ N(0, I/2), b ~ N(0, 1/2) give each affine factor unit variance at a unit-norm x,
    and c ~ N(0, 1/terms) keeps the sum at unit variance, so outputs are O(1) on the unit sphere
    whatever d, m and the degree.  Inputs of norm rho give outputs ~ rho^degree.
    """

    name = "polynomial"

    def __init__(self, input_dim, degree=3, outputs=4, seed=0, terms=8):
        d = self.input_dim = positive_int(input_dim, "data.dim", "the input dimension")
        p = self.degree = positive_int(degree, "target.degree", "the polynomial degree")
        m = self.output_dim = positive_int(outputs, "target.outputs", "the number of outputs")
        rng = np.random.default_rng(seed_sequence(seed, POLYNOMIAL_STREAM))
        # Rows of A are the affine forms, ordered (j, r, l) so a reshape recovers the product axes.
        self.A = rng.normal(0.0, np.sqrt(0.5), size=(m * terms * p, d))
        self.b = rng.normal(0.0, np.sqrt(0.5), size=m * terms * p)
        self.c = rng.normal(0.0, 1 / np.sqrt(terms), size=(m, terms))
        self._shape = (m, terms, p)

    def __call__(self, X):
        X = np.asarray(X, dtype=np.float64)
        Z = X @ self.A.T + self.b                        # (n, m*terms*p) affine forms
        Z = Z.reshape((len(X),) + self._shape).prod(axis=3)  # (n, m, terms)
        return np.einsum("nmr,mr->nm", Z, self.c)


class LinearTarget(Target):
    """f(x) = A x with A (m x d) ~ N(0, 1): outputs have unit variance at a unit-norm x."""

    name = "linear"
    degree = 1

    def __init__(self, input_dim, outputs=4, seed=0):
        d = self.input_dim = positive_int(input_dim, "data.dim", "the input dimension")
        m = self.output_dim = positive_int(outputs, "target.outputs", "the number of outputs")
        self.A = np.random.default_rng(seed_sequence(seed, LINEAR_STREAM)).standard_normal((m, d))
        self._AT = np.ascontiguousarray(self.A.T)

    def __call__(self, X):
        return np.asarray(X, dtype=np.float64) @ self._AT
