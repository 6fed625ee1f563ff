"""The K-class worst-case neighbouring pair shared by the audits of MulticlassTDDL (test_multiclass_release.py) and
MulticlassGPService (test_multiclass_part2.py)."""

from __future__ import annotations

import math

import numpy as np


class PairModel:
    """A K-class model at the sensitivity bound: n copies of the point ``z``; the last record's coefficient row
    is ``c (e_a − e_b)`` (its dual point all on the wrong class, ‖·‖ = √2 c, c = 1/(λn)), the others zero.
    Relabelling that record swaps a and b, so ``‖F_A − F_B‖_{H^K} = 2√2 c R_φ = Δ`` exactly (rbf, R_φ = 1, b = 0)."""

    _multiclass_stand_in = True
    tol = 1e-11  # public gap tolerance (the pair is exact: w_error_bound_ = 0)

    def __init__(self, sign, n=40, lam=2.0, K=3, z=0.5):
        self.X_fit_ = np.full((n, 1), z)
        self.n_samples_fit_, self.lam, self.lipschitz_ = n, lam, math.sqrt(2.0)
        c = 1.0 / (lam * n)
        self.mu_ = np.zeros((n, K))
        self.mu_[-1, 0], self.mu_[-1, 1] = sign * c, -sign * c
        self.kernel_params_ = dict(kernel="rbf", gamma=1.0, degree=3, coef0=1.0, intercept_scaling=0.0)
        self.classes_ = np.arange(K)
        self.w_error_bound_ = 0.0
