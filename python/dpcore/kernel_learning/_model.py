"""Shared plumbing for mechanisms that release information about a fitted kernel ERM model.

Used by PINP, TDDL and TDIL: access to the model's public/private parts, certified sensitivity
bounds (solver certificate and floating-point slack), domain checks, state/release files.

Floating-point error of predictions (``prediction_fp_bound``)
-------------------------------------------------------------
A mechanism computes ``f(z) = Σ_i μ_i K(z, x_i)`` in float64. For the sensitivity argument we
need ``|fl(f_G(z)) − fl(f_G'(z))| ≤ |f_G(z) − f_G'(z)| + 2·e`` with ``e`` a bound on the float
error that holds for *every* dataset, so it must depend on public quantities only:

* kernel values: absolute error ``e_K`` per evaluation (``kernel_eval_error``; dot products of
  length d, the RBF distance expansion and ``exp`` within 2 ulp, the polynomial power by repeated
  multiplication), for points in the declared ball;
* the weighted sum (blocked/recursive summation): ``≤ γ_n Σ|μ_i||K̂_i|`` with ``γ_n ≤ 1.01·n·u``;
* ``Σ|μ_i| ≤ L/λ`` for the dual solutions of the Lipschitz losses (``|μ_i| ≤ L/(λn)``; with class
  weights ``|μ_i| ≤ w_{y_i}/(λn)`` and ``L = max_k w_k``), checked.

so ``e = (L/λ)·(1.01·n·u·(R_φ² + e_K) + e_K)`` with ``u = 2^-53``. These are worst-case bounds;
the real errors are far smaller, and for n = 30,000 the slack is ~1e-7 of the sensitivity.
"""

from __future__ import annotations

import base64
import json
import math
import numbers

import numpy as np

from dpcore.kernels.evaluation import check_intercept_scaling, check_kernel_params
from dpcore.mechanisms.noise import check_random_state
from dpcore._internal.validation import check_array
from dpcore.exceptions import NotFittedError

from dpcore._internal.fp import KERNEL_EXP_ULPS, KERNEL_SUM_REL_ERROR, RADIUS_TOL, SLACK, UNIT_ROUNDOFF  # noqa: F401  (used by tddl/tdil/pinp)
from dpcore._internal.fp import auto_tol, kernel_gap_floor, shifted_kernel_error
from dpcore.kernel_learning.svm import KernelERM
from dpcore._internal.class_weight import check_public_weights


# ----------------------------------------------------------------------------------------------
# model access and fingerprint
# ----------------------------------------------------------------------------------------------
_REQUIRED = ("mu_", "X_fit_", "n_samples_fit_", "lam", "lipschitz_", "w_error_bound_", "kernel_params_")


#: What each binary kernel release refuses a K-class model for, and where it sends the user (its Notes say more).
_BINARY_ONLY_WHY = {
    "PINP": "its Laplace answers, their sensitivity and the multiplicative-weights update argument are for one "
            "scalar decision function <w*, φ(z)>",
    "TDIL": "its exponential-mechanism score |<φ(z), w_t − w*>|, the Laplace check and the interpolation argument "
            "are for one scalar decision function",
    "TDDL": "its GP noise is calibrated for one function w* in H",
    "GPService": "its GP noise is calibrated for one function w* in H",
}


def check_binary_model(model, who: str) -> None:
    """Refuse a K-class model (``K > 2`` declared ``classes_``, or a ``mu_`` with one column per class) in a
    binary-only kernel release, naming ``classes`` and the multi-class alternatives. Public: the declared label
    set and the shape of ``mu_`` do not depend on the records."""
    classes = getattr(model, "classes_", None)
    mu = getattr(model, "mu_", None)
    K = None
    if classes is not None and np.ndim(classes) == 1 and len(classes) > 2:
        K = len(classes)
    elif mu is not None and np.ndim(mu) == 2 and min(np.shape(mu)) > 1:
        K = min(np.shape(mu))
    if K is None:
        return
    shown = "" if classes is None else f"={np.asarray(classes).tolist()!r}"
    why = _BINARY_ONLY_WHY.get(who, "it releases one scalar decision function")
    raise ValueError(
        f"{who} is binary only: the model ({type(model).__name__}) declares K = {K} classes (classes{shown}), and "
        f"{why}. For K-class kernel models use MulticlassTDDL (one joint release of all K functions) or "
        f"MulticlassGPService (interactive K-class score queries); for a linear model MulticlassOutputPerturbation"
    )


def model_info(model, who: str = "PINP") -> dict:
    check_binary_model(model, who)  # public (declared classes / shape), before anything is charged
    # class weights read off the data ("balanced") are not covered by any proof: refused before any charge
    check_public_weights(model, who)
    missing = [a for a in _REQUIRED if not hasattr(model, a)]
    if missing and callable(getattr(model, "fit", None)):  # an estimator that was never fitted
        raise NotFittedError(f"{who}: the model ({type(model).__name__}) is not fitted yet; call model.fit(X, y) "
                             "first")
    if "w_error_bound_" in missing:
        raise ValueError(
            f"model has no w_error_bound_: {who} needs a certified bound on the solver error "
            "||w - w*|| (e.g. sqrt(2*duality_gap/lam)) to account for it in the sensitivity; "
            "refusing to release predictions of an uncertified model"
        )
    if missing:
        raise TypeError(f"model must be a fitted kernel ERM exposing {', '.join(_REQUIRED)}; missing {missing}")
    w_err = model.w_error_bound_
    if w_err is None or not isinstance(w_err, numbers.Real) or not math.isfinite(float(w_err)) or w_err < 0:
        raise ValueError(
            f"model.w_error_bound_ = {w_err!r} is not a finite certificate >= 0: refusing to release "
            "predictions of a model whose optimisation error is not certified"
        )
    X = np.ascontiguousarray(check_array(model.X_fit_, "model.X_fit_"), dtype=np.float64)
    mu = np.ascontiguousarray(np.asarray(model.mu_, dtype=np.float64).ravel())
    if mu.shape[0] != X.shape[0] or not np.isfinite(mu).all():
        raise ValueError(f"model.mu_ must be finite with length {X.shape[0]} (rows of X_fit_), got {mu.shape}")
    kp = dict(model.kernel_params_)
    name, gamma, degree, coef0 = check_kernel_params(
        kp.get("kernel", "rbf"), kp.get("gamma"), kp.get("degree", 3), kp.get("coef0", 1.0), X.shape[1]
    )
    b = check_intercept_scaling(kp.get("intercept_scaling", 0.0))  # regularised intercept: kernel K + b²
    w_norm = getattr(model, "w_norm_", None)
    return dict(
        X=X, mu=mu, n=int(model.n_samples_fit_), lam=float(fitted_lam(model)), L=float(model.lipschitz_),
        w_err=float(w_err), w_norm=None if w_norm is None else float(w_norm),
        kernel=dict(kernel=name, gamma=float(gamma), degree=int(degree), coef0=float(coef0), intercept_scaling=b),
    )


def fingerprint_material(info: dict) -> bytes:
    """The bytes a state's model fingerprint is computed from (kernel, sizes, λ, L, certificate, μ, X).

    Never hashed without a key: an unkeyed hash of the training data would let anyone test a candidate
    dataset against it. The services key it (:func:`dpcore._internal.sealing.keyed_digest`).
    """
    meta = dict(kernel=info["kernel"], n=info["n"], lam=repr(info["lam"]), L=repr(info["L"]),
                w_err=repr(info["w_err"]), shape=list(info["X"].shape))
    return (b"dpcore.kernel_learning.model/2" + json.dumps(meta, sort_keys=True).encode()
            + info["mu"].astype("<f8").tobytes() + info["X"].astype("<f8").tobytes())


def b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode("ascii")


def unb64(s: str, name: str = "array") -> np.ndarray:
    """Decode :func:`b64`; a malformed field is a ``ValueError`` naming it."""
    try:
        raw = base64.b64decode(s.encode("ascii"), validate=True)
        return np.frombuffer(raw, dtype="<f8").astype(np.float64)
    except (AttributeError, UnicodeEncodeError, ValueError, TypeError):
        raise ValueError(f"stored field {name!r} is not a base64 array of float64") from None




def seed_from(random_state):
    """``(seed or None, seeded?)`` for the session's Rust ChaCha20 generator.

    Secure generators (``None`` or an OS-seeded :class:`ChaChaRng`) give ``None``: the session then
    keys its own ChaCha20 from the OS with full 256-bit entropy, instead of a 64-bit seed drawn from
    the caller's generator. Seeded generators (research/tests) give a reproducible 64-bit seed.
    """
    rng = check_random_state(random_state)  # validates ints and rejects other types
    if isinstance(random_state, numbers.Integral):
        return int(random_state), True  # the session is keyed by this very seed
    if not rng.seeded:
        return None, False
    return int(rng.next_u64()), True


# ----------------------------------------------------------------------------------------------
# certified sensitivity: solver certificate and floating-point slack
# ----------------------------------------------------------------------------------------------
def fitted_lam(model):
    """The λ a fitted model was solved with: ``model.lam_`` (from ``lam``, ``C`` or the default) when the model
    records it, else ``model.lam``."""
    lam = getattr(model, "lam_", None)
    return getattr(model, "lam", None) if lam is None else lam


def fitted_tol(model):
    """The public tolerance a fitted model was solved to: ``model.tol_`` (the resolved value of ``tol="auto"``, a
    function of public parameters only) when the model records it, else ``model.tol``."""
    tol = getattr(model, "tol_", None)
    return getattr(model, "tol", None) if tol is None else tol


def public_error_bound(model, lam: float, who: str, *, r_phi_sq: float, lipschitz: float = 1.0) -> float:
    """Public bound on ``||w − w*||`` from the model's *declared* tolerance, checked against its certificate.

    The solver stops once its certified duality gap is ``≤ tol`` (``model.tol_``, the fitted value of the public
    hyper-parameter), and λ-strong convexity turns that into ``||w − w*|| ≤ sqrt(2 tol/λ)``.
    Calibrating with this bound — not with the model's own ``w_error_bound_``, which depends on
    the data — keeps the noise level a function of public quantities. A model whose certificate
    exceeds the bound did not reach its tolerance and is refused.

    Two refusals, in this order:

    1. **Public** (the same for every dataset): ``tol`` below ``2×`` the worst-case float floor of
       the Rust solver's certificate over the declared domain, ``KERNEL_SUM_REL_ERROR·R_φ²·L²/λ``
       (``src/kernel_learning/erm.rs`` adds ``KERNEL_SUM_REL_ERROR·mean_i s_i sqrt(K_ii)·Σ_j sqrt(K_jj)|μ_j|`` to
       the gap, with class weights ``s_i ≤ L``, and ``K_jj ≤ R_φ²``, ``Σ|μ_j| ≤ L/λ``; ``L = 1`` unweighted).
       Below it, whether the gap certifies depended on the data.
    2. The model's certificate exceeds the bound: it did not reach ``tol``. Named assumption: with
       ``tol`` above the public floor, dpcore's dual coordinate descent reaches it on *every*
       dataset within ``max_iter`` (its default, ``max(10⁷, 100 n)`` updates, is generous: DCD for
       this box QP converges linearly, Wang & Lin 2014); this refusal is outside the proof and has
       not been observed in the neighbour-pair tests. Choose ``max_iter`` generously.
    """
    tol = fitted_tol(model)
    if tol is None or isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (
        math.isfinite(float(tol)) and tol > 0
    ):
        raise ValueError(
            f"model.tol = {tol!r}: {who} needs the solver's public duality-gap tolerance to bound "
            "||w - w*|| independently of the data"
        )
    floor = kernel_gap_floor(lam, r_phi_sq, lipschitz)

    if isinstance(model, KernelERM) and not float(tol) >= auto_tol(floor):
        raise ValueError(
            f"model.tol_ = {tol!r} is below what the certified kernel solver can certify for the declared "
            f"domain (float floor {floor:.3g} = KERNEL_SUM_REL_ERROR·R_phi²·L²/lam); {who} refuses before "
            f"anything is charged: refit the model with tol >= {auto_tol(floor):.3g} (tol=\"auto\" fits the unit "
            "ball; a larger declared data_norm needs a larger tol)")
    bound = math.sqrt(2.0 * float(tol) / lam) * (1.0 + SLACK)
    cert = float(model.w_error_bound_)
    if cert > bound:
        raise ValueError(
            f"model.w_error_bound_ = {cert:.3e} exceeds sqrt(2*tol/lam) = {bound:.3e}: the solver "
            f"did not reach its declared tolerance tol={tol:g}; {who} refuses to release (refit "
            "with a larger max_iter or a tolerance it can certify)"
        )
    return bound


def kernel_eval_error(kernel: dict, radius: float, d: int) -> float:
    """Worst-case absolute float64 error of one evaluation ``K(z, x)`` for ``||z||, ||x|| ≤ radius``.

    See the module docstring; ``u = 2^-53`` and a 1% margin for second-order terms.
    """
    u, r2 = UNIT_ROUNDOFF, radius * radius
    name, gamma, p, c = kernel["kernel"], kernel["gamma"], int(kernel["degree"]), kernel["coef0"]
    shift = float(kernel.get("intercept_scaling", 0.0)) ** 2
    if name == "linear":
        e, k_max = 1.01 * (d + 2) * u * r2, r2
    elif name == "rbf":
        # ||z||² + ||x||² − 2<z,x> with absolute error ≤ (d+3)·u·4r²; exp within KERNEL_EXP_ULPS = 2 ulp (≤ 4u); K ≤ 1.
        e, k_max = 1.01 * ((d + 3) * 4.0 * gamma * r2 + 2.0 * KERNEL_EXP_ULPS) * u, 1.0
    else:
        # poly: base = γ<z,x> + c with |error| ≤ (d+2)·u·s, s = γr² + |c|; base^p by multiplication.
        s = gamma * r2 + abs(c)
        e, k_max = 1.01 * u * s**p * (p * (d + 2) + p + 1), s**p
    # the intercept's shift K + b²: one more rounding, |fl(k + s) − (k + s)| ≤ u·(|k| + s) (fp.shifted_kernel_error)
    return shifted_kernel_error(e, k_max, shift)


def prediction_fp_bound(*, n: int, mu_l1_bound: float, r_phi_sq: float, kernel: dict, radius: float, d: int) -> float:
    """Worst-case float error of ``Σ_i μ_i K(z, x_i)`` over ``n`` terms with ``Σ|μ_i| ≤ mu_l1_bound``."""
    e_k = kernel_eval_error(kernel, radius, d)
    return mu_l1_bound * (1.01 * (n + 2) * UNIT_ROUNDOFF * (r_phi_sq + e_k) + e_k)


def check_mu_l1(mu: np.ndarray, bound: float, who: str) -> None:
    """Refuse models whose dual weights violate ``Σ|μ_i| ≤ L/λ`` (used by the float-error bound)."""
    l1 = float(np.abs(mu).sum())
    if not l1 <= bound * (1.0 + 1e-9):
        raise ValueError(
            f"model.mu_ has sum |mu_i| = {l1:.6g} > L/lam = {bound:.6g}: not the dual solution of a "
            f"L-Lipschitz loss with |mu_i| <= L/(lam n); {who} cannot bound its float error"
        )


def feature_map_lipschitz(kernel: dict, radius: float) -> float:
    """Lipschitz constant ``L_φ`` of the feature map on the ball ``||z|| ≤ radius``.

    ``||φ(z) − φ(z')|| ≤ sup_x ||Dφ(x)||·||z − z'||`` (the ball is convex) and
    ``||Dφ(x)||² = λ_max(∇_x∇_y K(x, y)|_{y=x})``: linear 1; RBF ``2γ``; polynomial
    ``p γ s^{p−1} + p(p−1) γ² r² s^{p−2}`` with ``s = γ r² + c`` (c ≥ 0).
    """
    name, gamma, p, c = kernel["kernel"], kernel["gamma"], int(kernel["degree"]), kernel["coef0"]
    if name == "linear":
        return 1.0
    if name == "rbf":
        return math.sqrt(2.0 * gamma)
    if c < 0:
        raise ValueError("feature_map_lipschitz: polynomial kernels need coef0 >= 0")
    r2 = radius * radius
    s = gamma * r2 + c
    val = p * gamma * s ** (p - 1) + (p * (p - 1) * gamma**2 * r2 * s ** (p - 2) if p >= 2 else 0.0)
    return math.sqrt(val) * (1.0 + SLACK)


def check_in_domain(Z: np.ndarray, radius: float, name: str, *, clip: bool, what: str = "point(s)") -> np.ndarray:
    """Return ``Z`` (float64, C-contiguous) after checking ``||z|| ≤ radius`` row-wise.

    Rows outside the ball raise ``ValueError`` naming ``name``, or are projected onto the ball when
    ``clip=True`` (the user asked for it). A relative tolerance ``RADIUS_TOL`` is allowed; callers
    compute ``R_φ`` for the inflated radius.
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    norms = np.linalg.norm(Z, axis=1)
    bad = norms > radius * (1.0 + RADIUS_TOL)
    if bad.any():
        if not clip:
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}: {int(bad.sum())} {what} lie outside the declared domain ||z|| <= "
                f"data_norm = {radius} (e.g. row {i}, norm {float(norms[i])!r}); pass clip=True to "
                "project them onto the ball"
            )
        Z = Z.copy()
        Z[bad] *= (radius / norms[bad])[:, None]
    return Z
