"""Server-side solvers shared by the LDP regressions: PSD projection and the ℓ1-ball QP."""

from __future__ import annotations

import numpy as np
from scipy import linalg

__all__ = ["project_psd", "project_l1_ball", "l1_ball_qp", "debiased_gram"]


def project_psd(S: np.ndarray) -> np.ndarray:
    """Frobenius projection onto the PSD cone (drop negative eigenvalues; scipy ``eigh``)."""
    S = (S + S.T) / 2.0
    w, U = linalg.eigh(S)
    w = np.clip(w, 0.0, None)
    return (U * w) @ U.T


def gram_stat(acc, start: int, arrays) -> None:
    """Leaf statistic of Algorithms 3–4: ``[Z v]ᵀ[Z v]`` (one ``syrk`` on the augmented leaf), i.e. ``ZᵀZ``,
    ``Zᵀv`` and ``vᵀv`` together (see :mod:`dpcore.ldp._stats`)."""
    Z, v = arrays
    if not (np.isfinite(Z).all() and np.isfinite(v).all()):
        raise ValueError("Z_reports or v_reports contains NaN or infinite values")
    W = np.empty((Z.shape[0], Z.shape[1] + 1))
    W[:, :-1] = Z
    W[:, -1] = v
    acc["gram"].add(W.T @ W)


def debiased_gram_from(ZtZ: np.ndarray, n: int, sigma: float) -> np.ndarray:
    """``Proj_PSD(ZᵀZ − n σ² I)`` from the (exactly summed) ``ZᵀZ``."""
    return project_psd(ZtZ - n * sigma**2 * np.eye(ZtZ.shape[0]))


def debiased_gram(Z: np.ndarray, sigma: float) -> np.ndarray:
    """``Proj_PSD(ZᵀZ − n σ² I)``: unbiased for ``Σ x̃ x̃ᵀ`` (noise ``N(0, σ² I)``), then made convex."""
    n, m = Z.shape
    return project_psd(Z.T @ Z - n * sigma**2 * np.eye(m))


def project_l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """Exact Euclidean projection onto ``{w : ||w||_1 ≤ radius}`` (Duchi et al. 2008, sort-based)."""
    if np.abs(v).sum() <= radius:
        return v.copy()
    u = np.sort(np.abs(v))[::-1]
    css = np.cumsum(u)
    k = np.arange(1, u.size + 1)
    rho = np.nonzero(u * k > (css - radius))[0][-1]
    theta = (css[rho] - radius) / (rho + 1.0)
    return np.sign(v) * np.clip(np.abs(v) - theta, 0.0, None)


def l1_ball_qp(H: np.ndarray, b: np.ndarray, radius: float, *, tol: float = 1e-9, max_iter: int = 20000, bar=None):
    """Minimise ``½ wᵀHw − bᵀw`` over ``||w||_1 ≤ radius`` (H PSD) by FISTA with exact projection.

    Certified by the Frank–Wolfe gap ``g(w) = ∇f(w)ᵀw + radius·||∇f(w)||_∞ ≥ f(w) − f*``; stops when
    ``g ≤ tol``. Returns ``(w, gap, n_iter)``. ``bar``: optional progress bar, advanced every 10 iterations."""
    d = b.size
    L = float(linalg.eigh(H, eigvals_only=True, subset_by_index=[d - 1, d - 1])[0]) if d > 1 else float(H[0, 0])
    L = max(L, 1e-12)
    w = np.zeros(d)
    yv, t = w.copy(), 1.0
    gap = np.inf
    for it in range(1, max_iter + 1):
        w_new = project_l1_ball(yv - (H @ yv - b) / L, radius)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        yv = w_new + ((t - 1.0) / t_new) * (w_new - w)
        w, t = w_new, t_new
        if it % 10 == 0:
            if bar is not None:
                bar.update(10)
            g = H @ w - b
            gap = float(g @ w + radius * np.abs(g).max())
            if gap <= tol:
                return w, gap, it
    g = H @ w - b
    return w, float(g @ w + radius * np.abs(g).max()), max_iter
