"""Subprocess helper for tests/kernel_learning/test_pinp.py: a PINP session that answers queries until killed.

Usage: python _pinp_worker.py STATE_PATH {create|resume} SEED [BACKEND [FAULT_STAGE FAULT_AT]]

After every batch that ``predict`` *returned*, prints ``n_answered n_updates remaining_updates seq``
(flushed), so the parent knows a lower bound on what must survive a SIGKILL. With ``FAULT_STAGE``
(a stage of :data:`dpcore._internal.state.FAULT_HOOK`, e.g. ``tmp_synced``) the worker SIGKILLs itself the
``FAULT_AT``-th time a write reaches that stage — a kill *during* the write.
"""

from __future__ import annotations

import sys

import numpy as np


class StandInModel:
    """Exact hinge-loss kernel SVM when λ > max K'(x, x) (all margins < 1): μ = y / (λ n).

    ``K' = K + b²`` with ``b = intercept_scaling`` (the regularised intercept, feature map ``(φ(x), b)``;
    0: none). With every margin y_i f(x_i) < 1 under K' the hinge is differentiable at the optimum and
    stationarity gives w* = Σ y_i φ'(x_i) / (λ n) exactly, so the duality gap is 0 (a certified exact
    solution); the assertion below checks the margins (λ must exceed K'(x, x), e.g. λ > 1 + b² for rbf).
    """

    def __init__(self, X, y, lam, gamma, *, kernel="rbf", intercept_scaling=0.0):
        import dpcore

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        self.X_fit_, self.n_samples_fit_, self.lam, self.lipschitz_ = X, n, float(lam), 1.0
        self.mu_ = y / (lam * n)
        self.kernel_params_ = dict(kernel=kernel, gamma=float(gamma), degree=3, coef0=1.0)
        if intercept_scaling:
            self.kernel_params_["intercept_scaling"] = float(intercept_scaling)
        f = dpcore.kernel_predict(X, X, self.mu_, **self.kernel_params_)
        assert np.all(y * f < 1.0), "closed form is not the optimum (a margin is >= 1)"
        self.duality_gap_ = 0.0
        self.w_error_bound_ = 0.0
        self.tol = 1e-300  # declared (public) gap tolerance of the exact closed form
        self.w_norm_ = float(np.sqrt(self.mu_ @ f))

    def decision_function(self, Z):
        import dpcore

        return dpcore.kernel_predict(Z, self.X_fit_, self.mu_, **self.kernel_params_)


class ExactModel(StandInModel):
    """Closed-form exact SVM optimum (gap 0) with a public tolerance, as TDDL / GPService require."""

    tol = 1e-300
    _loss = "hinge"
    classes_ = np.array([-1.0, 1.0])


def worst_pair(n=40, lam=2.0, z=0.5, *, kernel="rbf", intercept_scaling=0.0):
    """Neighbouring training sets that differ in the label of one point (all points equal to ``z``):
    every release's mean moves by exactly its sensitivity on public points equal to ``z``.

    With ``intercept_scaling = b`` the models use ``K' = K + b²``: ``w_A − w_B = 2 φ'(z)/(λ n)`` has norm
    ``2 R_φ'/(λ n)`` (the sensitivity) whenever ``K(z, z) = R_φ²`` (rbf: always; linear: ``|z|`` = data_norm)."""
    X = np.full((n, 1), z)
    y = np.ones(n)
    y2 = y.copy()
    y2[-1] = -1.0
    kw = dict(kernel=kernel, intercept_scaling=intercept_scaling)
    return ExactModel(X, y, lam, 1.0, **kw), ExactModel(X, y2, lam, 1.0, **kw)


def unit_ball(rng, m, d):
    Z = rng.normal(size=(m, d))
    return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]


def build_model(n=40, d=3, lam=1.25, gamma=0.5, seed=0):
    rng = np.random.default_rng(seed)
    X = unit_ball(rng, n, d)
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    return StandInModel(X, y, lam, gamma)


#: Session parameters shared by the worker and the test (ε large so that updates happen).
SESSION = dict(epsilon=1e8, delta=1e-6, beta=0.1, n_queries=10**6, data_norm=1.0)


def _install_fault(stage: str, at: int) -> None:
    import os
    import signal

    from dpcore._internal import state as _state
    seen = {"n": 0}

    def hook(name: str) -> None:
        if name == stage:
            seen["n"] += 1
            if seen["n"] >= at:
                os.kill(os.getpid(), signal.SIGKILL)

    _state.FAULT_HOOK = hook


def main_gp(path: str, mode: str, seed: int, backend: str) -> None:
    """GPService worker: after every returned batch prints ``n_distinct seq | queries | answers``."""
    from dpcore import GPService

    model = build_model()
    if mode == "gp-create":
        svc = GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=5000, state_path=path, state_backend=backend,
                        random_state=seed)
    else:
        svc = GPService.load(path, model, state_backend=backend, random_state=seed)
    rng = np.random.default_rng(seed)
    print("READY", flush=True)
    while True:
        Z = unit_ball(rng, 3, 3)
        a = svc.decision_function(Z)
        print(f"{svc.n_distinct} {svc.state_seq} | " + " ".join(repr(float(v)) for v in Z.ravel()) + " | "
              + " ".join(repr(float(v)) for v in a), flush=True)


def main() -> None:
    from dpcore import PINP, PINPBudgetExhausted

    path, mode, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    backend = sys.argv[4] if len(sys.argv) > 4 else "auto"
    if len(sys.argv) > 6:
        _install_fault(sys.argv[5], int(sys.argv[6]))
    if mode.startswith("gp-"):
        return main_gp(path, mode, seed, backend)
    model = build_model()
    if mode == "create":
        pinp = PINP(model, **SESSION, state_path=path, state_backend=backend, random_state=seed)
    else:
        pinp = PINP.load(path, model, state_backend=backend, random_state=seed)
    rng = np.random.default_rng(seed)
    print("READY", flush=True)
    while True:
        Z = unit_ball(rng, 5, 3)
        try:
            pinp.predict(Z)
        except PINPBudgetExhausted:
            print(f"{pinp.n_answered} {pinp.n_updates} {pinp.remaining_updates} {pinp.state_seq}", flush=True)
            print("DONE", flush=True)
            return
        print(f"{pinp.n_answered} {pinp.n_updates} {pinp.remaining_updates} {pinp.state_seq}", flush=True)


if __name__ == "__main__":
    main()
