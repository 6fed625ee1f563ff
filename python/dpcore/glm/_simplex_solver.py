"""The certified solver of :class:`dpcore.glm.SimplexERM`: the entropy-regularised problem over the simplex
(:class:`EntropicSimplexProblem`) and its certified solution. The certificate is derived in :mod:`dpcore.glm.simplex`."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.special import expit, logsumexp

from dpcore._internal.fp import UNIT_ROUNDOFF, gamma_k
from dpcore._internal.fp import NUMPY_EXP_ULPS as FP_EXP_ULPS
from dpcore.exceptions import SimplexCertificationError


from dpcore.glm._simplex_calibration import loss_constants
from dpcore._internal.progress import progress_bar
from dpcore._internal.types import ArrayLike

logger = logging.getLogger(__name__)

__all__ = ["SimplexSolution", "EntropicSimplexProblem", "softmax", "normalise_log"]

# ------------------------------------------------------------------------------------------------
# the (non-private) problem and its certified solver
# ------------------------------------------------------------------------------------------------
@dataclass
class SimplexSolution:
    """Result of :meth:`EntropicSimplexProblem.solve` — **not private** (data-dependent).

    ``log_theta`` is the certified iterate ``log θ_k`` (normalised), ``log_release`` is
    ``log T(θ_k)`` computed from the same gradient (the distribution a mechanism releases),
    ``b = fl(−g(θ_k)/λ)`` the exponents behind it. ``l1_error`` bounds ``||θ° − θ̂||₁`` for the
    exact normalisation ``θ°`` of the iterate; ``tau`` bounds ``|log T(θ_k)_j − log θ̂_j|`` for all
    ``j`` (floating-point terms included); ``kl`` is the computed ``KL(θ_k||T(θ_k))`` and
    ``gap = λ·kl``.
    """

    log_theta: np.ndarray
    b: np.ndarray
    kl: float
    gap: float
    osc: float
    l1_error: float
    tau: float
    objective: float
    n_iter: int
    converged: bool
    grad_fp_error: float

    @property
    def theta(self) -> np.ndarray:
        return np.exp(self.log_theta)

    @property
    def log_release(self) -> np.ndarray:
        return self.b - logsumexp(self.b)

    @property
    def release(self) -> np.ndarray:
        return softmax(self.b)


def softmax(b: np.ndarray) -> np.ndarray:
    e = np.exp(b - np.max(b))
    return e / e.sum()


def normalise_log(u: np.ndarray) -> np.ndarray:
    return u - logsumexp(u)


class EntropicSimplexProblem:
    r"""``min_{θ ∈ Δ_P} (1/n) Σ ℓ(<x_i, θ>; y_i) + λ Σ θ_j log θ_j`` — the non-private problem.

    A building block of :class:`SimplexERM`, exposed for diagnostics and tests. **Nothing computed
    here is private.**

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, p)
        Features (not copied; CSR is used as is). Entries must satisfy ``|x_ij| ≤ data_norm_inf``.
    y : ndarray of shape (n,)
        Targets: real values (``squared``) or ``±1`` labels (classification losses).
    loss : {"squared", "logistic", "huber_svm"}
    lam : float
    data_norm_inf : float
        ``R∞`` (used for the certificate's constants ``L``, ``L_g R²``).
    label_bound : float, optional
        ``B`` for the squared loss.
    huber_width : float, default 0.5
    scale : float, default 1.0
        ℓ1 radius ``s``.
    signed : bool, default True
        Doubling ``x ↦ s[x, −x]`` (weights of both signs).
    """

    def __init__(self, X: ArrayLike, y: ArrayLike, *, loss: str, lam: float, data_norm_inf: float,
                 label_bound: Optional[float] = None, huber_width: float = 0.5, scale: float = 1.0,
                 signed: bool = True) -> None:
        self.X = X
        self.XT = X.T
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.p = X.shape
        self.loss = loss
        self.lam = float(lam)
        self.scale = float(scale)
        self.signed = bool(signed)
        self.h = float(huber_width)
        self.P = 2 * self.p if self.signed else self.p
        self.r_eff = self.scale * float(data_norm_inf)
        B = 1.0 if label_bound is None else float(label_bound)
        self.L, self.Lg = loss_constants(loss, self.r_eff, label_bound=B, huber_width=self.h)
        self.M = self.Lg * self.r_eff * self.r_eff  # ||g(θ) − g(θ')||_∞ ≤ M ||θ − θ'||₁

    # -- basic maps -------------------------------------------------------------------------------
    def weights(self, theta: np.ndarray) -> np.ndarray:
        """``w = s(θ₊ − θ₋)`` (signed) or ``w = sθ``."""
        theta = np.asarray(theta, dtype=np.float64)
        if self.signed:
            return self.scale * (theta[: self.p] - theta[self.p:])
        return self.scale * theta

    def _loss_and_derivative(self, z: np.ndarray):
        y = self.y
        if self.loss == "squared":
            r = z - y
            return 0.5 * float(r @ r), r
        u = y * z
        if self.loss == "logistic":
            return float(np.sum(np.logaddexp(0.0, -u))), -y * expit(-u)
        h = self.h
        t = 1.0 + h - u
        mid = (t > 0.0) & (t < 2.0 * h)
        val = np.where(t >= 2.0 * h, 1.0 - u, np.where(mid, t * t / (4.0 * h), 0.0))
        du = np.where(t >= 2.0 * h, -1.0, np.where(mid, -t / (2.0 * h), 0.0))
        return float(val.sum()), y * du

    def _evaluate(self, theta: np.ndarray):
        """``(w, Xw, f(θ), g_P(θ))`` with ``g_P`` the gradient w.r.t. the ``P`` simplex coordinates."""
        w = self.weights(theta)
        z = np.asarray(self.X @ w).ravel()
        fsum, d = self._loss_and_derivative(z)
        g = np.asarray(self.XT @ (d / self.n)).ravel()
        gs = self.scale * g
        G = np.concatenate([gs, -gs]) if self.signed else gs
        return w, z, fsum / self.n, G

    def _eval(self, theta: np.ndarray):
        """``(f(θ), g_P(θ))``."""
        _, _, f, G = self._evaluate(theta)
        return f, G

    def loss_value(self, theta: ArrayLike) -> float:
        """``f(θ) = (1/n) Σ ℓ(<x_i, w(θ)>; y_i)``."""
        return self._eval(np.asarray(theta, dtype=np.float64))[0]

    def gradient(self, theta: ArrayLike) -> np.ndarray:
        """``∇f(θ)`` over the ``P`` simplex coordinates."""
        return self._eval(np.asarray(theta, dtype=np.float64))[1]

    def objective(self, theta: ArrayLike) -> float:
        """``F(θ) = f(θ) + λ Σ θ log θ`` (``0 log 0 = 0``)."""
        theta = np.asarray(theta, dtype=np.float64)
        pos = theta > 0
        return self.loss_value(theta) + self.lam * float(np.sum(theta[pos] * np.log(theta[pos])))

    def fixed_point_map(self, theta: ArrayLike) -> np.ndarray:
        """``T(θ) = softmax(−∇f(θ)/λ)`` (``θ̂ = T(θ̂)``)."""
        return softmax(-self.gradient(theta) / self.lam)

    def gap(self, theta: ArrayLike) -> float:
        """``λ·KL(θ || T(θ)) ≥ F(θ) − F(θ̂)`` for interior ``θ`` (see the module docstring)."""
        theta = np.asarray(theta, dtype=np.float64)
        b = -self.gradient(theta) / self.lam
        v = b - logsumexp(b)
        return self.lam * float(np.sum(theta * (np.log(theta) - v)))

    # -- certificate ------------------------------------------------------------------------------
    def _grad_fp_error(self, theta_l1_err: float) -> float:
        """Bound on ``||ĝ − g(θ°)||_∞`` (float gradient at the float iterate vs exact gradient at
        its exact normalisation), from ``γ_k`` bounds; see the module docstring."""
        u = UNIT_ROUNDOFF
        R, L, Lg = self.r_eff, self.L, self.Lg
        # w: one subtraction and one multiplication per entry
        w_err = self.scale * (theta_l1_err + 3.0 * u * (1.0 + theta_l1_err))
        # z_i = <x_i, w>: ≤ p terms; |z| ≤ R(1 + …)
        z_err = (self.r_eff / self.scale) * w_err + gamma_k(self.p + 2) * R * (1.0 + w_err / self.scale)
        # ℓ'(z): Lipschitz part, rounding of the argument (e.g. 1 + h − yz for the Huber loss, where a
        # branch may flip but ℓ' is continuous) and evaluation (≤ FP_EXP_ULPS + 4 ulps of L)
        B = max(L - R, 1.0)
        d_err = Lg * (z_err + 4.0 * u * (2.0 + R + self.h + B)) + (FP_EXP_ULPS + 4.0) * u * L
        # g_j = Σ_i x_ij d_i / n: ≤ n terms, each ≤ (R/s)(L + d_err)/n
        g_err = (R / self.scale) * (d_err + gamma_k(self.n + 2) * (L + d_err))
        return 1.01 * (self.scale * g_err + 2.0 * u * R * L)

    def public_tau_floor(self) -> float:
        """The floating-point floor of the certified ``τ`` at the exact optimum, from public quantities.

        :meth:`_certificate` evaluated where every optimisation term vanishes (``KL = 0``, no
        oscillation, ``d = 0``) and every magnitude takes its public worst case: ``|b_j| ≤ L R/λ``
        (``|g_j| ≤ L R``), so the log-probabilities satisfy ``|u_j| ≤ 2LR/λ + log P``. Uses only
        ``n``, ``P``, the declared bounds, λ, the loss constants and ``M = L_g R²`` — never ``X``.
        No iterate can certify a ``τ`` below this value (up to second-order terms).
        """
        ur = UNIT_ROUNDOFF
        lam = self.lam
        max_b = self.L * self.r_eff / lam * (1.0 + 1e-9)
        log_p = math.log(self.P + 1.0)
        max_u = 2.0 * max_b + log_p
        delta0 = 1.01 * (gamma_k(self.P + 2) + ur * (2.0 * FP_EXP_ULPS + 6.0 + 2.0 * max_b
                                                     + FP_EXP_ULPS * log_p + 4.0 * max_u))
        theta_err = math.expm1(delta0 + 1.01 * FP_EXP_ULPS * ur)
        e_b = 1.01 * (self._grad_fp_error(theta_err) / lam + ur * max_b)
        scale_terms = 1.0 + max_u + max_b + max_b + log_p
        e_kl = 2.0 * (4.0 * gamma_k(self.P + 2) + 16.0 * ur) * scale_terms
        e_osc = 8.0 * ur * (max_u + max_b)
        kl_exact = e_kl + (math.sqrt(2.0 * e_kl) + e_b) * e_b
        l1 = min(math.sqrt(2.0 * kl_exact), 0.5 * (e_osc + 2.0 * e_b))
        return (2.0 * self.M / lam * l1 + 2.0 * e_b) * (1.0 + 1e-9)

    def public_iteration_bound(self, tau_tol: float) -> int:
        """Iterations after which the un-accelerated step certifies ``tau_tol`` on every data set.

        The mirror-descent step with ``M = L_g R²`` contracts ``KL(θ̂ || θ_k)`` by ``M/(M + λ)`` per
        iteration (relative smoothness and λ-relative strong convexity; Lu, Freund & Nesterov 2018,
        Thm 3.1); the certified ``τ`` is at most ``(2M/λ)·sqrt(2 KL)`` plus the float floor, and from the
        uniform start ``KL ≤ log P + 2LR/λ``. So ``K = ⌈2κ·ln(τ_0/(tol/2))⌉ + 1`` with ``κ = (M + λ)/λ``
        and ``τ_0 = (2M/λ)·sqrt(2(log P + 2LR/λ))`` — public quantities only. (Backtracking on ``M``
        and Anderson steps are only kept when they do better, so they never slow this bound down.)
        """
        lam = self.lam
        kappa = (self.M + lam) / lam
        tau0 = 2.0 * self.M / lam * math.sqrt(2.0 * (math.log(self.P + 1.0) + 2.0 * self.L * self.r_eff / lam))
        if not tau0 > 0.5 * tau_tol:
            return 1
        return int(math.ceil(2.0 * kappa * math.log(tau0 / (0.5 * tau_tol)))) + 1

    def _certificate(self, u_log: np.ndarray, theta: np.ndarray, G: np.ndarray):
        """Certified ``(kl, osc, l1_error, tau, grad_fp_error, b)`` at the float iterate."""
        ur = UNIT_ROUNDOFF
        lam = self.lam
        b = -G / lam
        lse_b = logsumexp(b)
        v = b - lse_b
        d = u_log - v
        kl = float(np.sum(theta * d))
        osc = float(np.max(u_log - b) - np.min(u_log - b))
        max_u = float(np.max(np.abs(u_log)))
        max_b = float(np.max(np.abs(b)))
        max_d = float(np.max(np.abs(d)))
        # ||θ_f − θ°||₁: the stored log vector is normalised up to δ0; θ_f = exp(u) within FP_EXP_ULPS
        osc_u = float(np.max(u_log) - np.min(u_log))
        delta0 = 1.01 * (gamma_k(self.P + 2) + ur * (2.0 * FP_EXP_ULPS + 6.0 + osc_u
                                                     + FP_EXP_ULPS * math.log(self.P + 1.0) + 4.0 * max_u))
        theta_err = math.expm1(delta0 + 1.01 * FP_EXP_ULPS * ur)
        e_g = self._grad_fp_error(theta_err)
        e_b = 1.01 * (e_g / lam + ur * max_b)
        scale_terms = 1.0 + max_d + max_u + max_b + abs(lse_b)
        e_kl = 2.0 * (theta_err * max_d + (4.0 * gamma_k(self.P + 2) + 16.0 * ur) * scale_terms)
        e_osc = 8.0 * ur * (max_u + max_b + osc)
        k1 = max(kl, 0.0) + e_kl
        kl_exact = k1 + (math.sqrt(2.0 * k1) + e_b) * e_b
        l1_kl = math.sqrt(2.0 * kl_exact)
        l1_osc = 0.5 * (osc + e_osc + 2.0 * e_b)
        l1 = min(l1_kl, l1_osc) * (1.0 + 1e-9)
        tau = (2.0 * self.M / lam * l1 + 2.0 * e_b) * (1.0 + 1e-9)
        return kl, osc, l1, tau, e_g, b

    # -- solver -----------------------------------------------------------------------------------
    def _state(self, u_log: np.ndarray) -> dict:
        """Everything at the (normalised) log iterate ``u_log``: gradient, certificate, residual."""
        theta = np.exp(u_log)
        w, z, f, G = self._evaluate(theta)
        kl, osc, l1, tau, e_g, b = self._certificate(u_log, theta, G)
        resid = (b - logsumexp(b)) - u_log  # log T(θ) − log θ
        return dict(u=u_log, theta=theta, w=w, z=z, f=f, G=G, b=b, r=resid, kl=kl, osc=osc, l1=l1,
                    tau=tau, e_g=e_g)

    def solve(self, *, tau_tol: float, max_iter: int = 100_000, anderson: int = 5, verbose: bool | int = False,
              require: bool = False, desc: str = "SimplexERM solve") -> SimplexSolution:
        """Run the certified solver until the certified ``τ ≤ tau_tol`` (or ``max_iter``).

        Each iteration either accepts a safeguarded Anderson step (kept only if it shrinks the
        certified ``||θ − θ̂||₁`` bound by 5%) or takes an entropic proximal-gradient step
        ``log θ₊ = log θ + α(log T(θ) − log θ) + const``, ``α = λ/(M + λ)``, with backtracking on
        ``M`` by the exact sufficient-decrease test ``(L_g/2n)||X(w₊ − w)||² ≤ M·KL(θ₊||θ)``
        (a majorisation of ``f``; true at ``M = L_g R²``), so ``F`` decreases on these steps.

        Parameters
        ----------
        tau_tol : float
            Target for ``τ``, the certified bound on ``|log T(θ_k)_j − log θ̂_j|``.
        max_iter : int
            Maximum number of iterations.
        anderson : int
            Anderson-acceleration memory (0 disables it).
        verbose : bool or int
            Show a tqdm progress bar (iterations out of ``max_iter``, current τ); curator only.
        require : bool
            Raise :class:`SimplexCertificationError` instead of returning an uncertified solution.

        Returns
        -------
        SimplexSolution
            Not private.
        """
        lam = self.lam
        P = self.P
        Mmax = self.M * (1.0 + 1e-6) + 1e-300
        st = self._state(np.full(P, -math.log(P)))
        Mk = Mmax / 4.0
        alpha = lam / (Mk + lam)
        hist_u: list = [st["u"]]
        hist_r: list = [st["r"]]
        bar = progress_bar(verbose, total=max_iter, desc=desc, unit="it")
        best = st
        since_best = 0
        it = 0
        try:
            while True:
                if st["tau"] < best["tau"]:
                    if st["tau"] < 0.99 * best["tau"]:
                        since_best = 0
                    best = st
                else:
                    since_best += 1
                bar.update(1)
                bar.set_postfix_str(f"tau {st['tau']:.2e} (tol {tau_tol:.1e})", refresh=False)
                if best["tau"] <= tau_tol or it >= max_iter or since_best >= 500:
                    break
                it += 1
                nxt = None
                # --- safeguarded Anderson step on the log-space fixed-point residual
                if anderson > 0 and len(hist_u) >= 2:
                    cand = self._anderson(hist_u, hist_r, alpha)
                    if cand is not None:
                        sc = self._state(cand)
                        if sc["l1"] <= 0.95 * st["l1"]:
                            nxt = sc
                        else:
                            hist_u, hist_r = hist_u[-1:], hist_r[-1:]
                # --- entropic proximal-gradient step with backtracking on M
                if nxt is None:
                    Mk = max(Mk / 2.0, Mmax * 1e-12)
                    while True:
                        alpha = lam / (Mk + lam)
                        u_new = normalise_log(st["u"] + alpha * st["r"])
                        th_new = np.exp(u_new)
                        dz = np.asarray(self.X @ (self.weights(th_new) - st["w"])).ravel()
                        curv = 0.5 * self.Lg * float(dz @ dz) / self.n
                        kl_step = float(np.sum(th_new * (u_new - st["u"])))
                        if Mk >= Mmax or curv <= Mk * max(kl_step, 0.0):
                            break
                        Mk = min(2.0 * Mk, Mmax)
                    nxt = self._state(u_new)
                hist_u.append(nxt["u"])
                hist_r.append(nxt["r"])
                if len(hist_u) > anderson + 1:
                    hist_u.pop(0)
                    hist_r.pop(0)
                st = nxt
        finally:
            bar.close()
        pos = best["theta"] > 0
        F_best = best["f"] + lam * float(np.sum(best["theta"][pos] * best["u"][pos]))
        sol = SimplexSolution(
            log_theta=best["u"], b=best["b"], kl=best["kl"], gap=lam * best["kl"], osc=best["osc"],
            l1_error=best["l1"], tau=best["tau"], objective=F_best, n_iter=it,
            converged=bool(best["tau"] <= tau_tol), grad_fp_error=best["e_g"],
        )
        logger.info("%s: %d iterations, certified tau %.3g (tol %.3g), %s", desc, it, sol.tau, tau_tol,
                    "certified" if sol.converged else "not certified")
        if require and not sol.converged:
            why = (f"max_iter={max_iter} reached" if it >= max_iter
                   else "the certificate stopped improving (floating-point floor)")
            raise SimplexCertificationError(
                f"SimplexCertificationError: could not certify tau <= tol={tau_tol:.3g} ({why}; best certified "
                f"tau = {sol.tau:.3g}). Nothing was charged or released. Increase max_iter, or tol "
                "(each draw then costs 2*tol more)."
            )
        return sol

    @staticmethod
    def _anderson(hist_u, hist_r, beta: float) -> Optional[np.ndarray]:
        """Type-II Anderson extrapolation ``x̄ + β r̄`` of the log-space fixed-point iteration."""
        R = np.stack(hist_r, axis=1)
        U = np.stack(hist_u, axis=1)
        dR = np.diff(R, axis=1)
        dU = np.diff(U, axis=1)
        try:
            gamma, *_ = np.linalg.lstsq(dR, R[:, -1], rcond=1e-12)
        except np.linalg.LinAlgError:  # pragma: no cover
            return None
        x_bar = U[:, -1] - dU @ gamma
        r_bar = R[:, -1] - dR @ gamma
        cand = x_bar + beta * r_bar
        if not np.isfinite(cand).all():
            return None
        return normalise_log(cand)


