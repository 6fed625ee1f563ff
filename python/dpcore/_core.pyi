"""Type stubs of the compiled extension module ``dpcore._core`` (Rust core, PyO3 bindings).

Private API: the public, validated entry points live in the pure-Python modules of ``dpcore``.
Every function here takes float64 arrays (any memory layout, not copied), validates shapes and
finiteness cheaply, releases the GIL while computing, and raises ``ValueError`` whose message
starts with the offending argument's name.

Ctrl-C: every call whose work grows like ``m·n`` (``kernel_matrix``, ``kernel_predict``, ``erm_certificate``,
``PinpSession.answer``/``sample_sessions``, ``gp_forward_substitution``, ``grid_release``,
``analytic_release``, ``discrete_samples``, ``rff_transform``, ``rff_linear_svm_dcd``) runs on the
Rust thread pool while the calling (main) thread runs Python's signal handlers every 20 ms; an
exception from one (``KeyboardInterrupt``) stops the core at its next block of work and is re-raised,
with no partial result. An interrupted ``PinpSession.answer`` leaves the session's update points,
weights and ``n_answered`` as they were (its generator is not rewound). ``erm_fit`` and the
``em_sample_*`` scans poll signals through their progress hook (below).
"""

from typing import Callable, Optional, Sequence, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "memory_limit_bytes",
    "fp_constants",
    "erm_fit",
    "erm_fit_path",
    "erm_certificate",
    "multiclass_fit",
    "multiclass_certificate",
    "net_info",
    "net_count",
    "net_points",
    "net_snap",
    "em_sample_linear",
    "em_sample_kernel",
    "em_sample_many_linear",
    "em_sample_many_kernel",
    "em_key_error_bound",
    "gp_forward_substitution",
    "kernel_matrix",
    "kernel_predict",
    "kernel_predict_many",
    "kernel_diag",
    "feature_map_radius_sq",
    "rff_linear_svm_dcd",
    "multinomial_counts",
    "multinomial_draws",
    "multinomial_error_bound",
    "multinomial_quantized",
    "ChaChaRng",
    "grid_release",
    "discrete_samples",
    "analytic_release",
    "gamma_norm_vector",
    "gamma_norm_vector_coupled",
    "normal_vector_coupled",
    "gumbel",
    "exponential",
    "PinpSession",
    "rff_sample_weights",
    "rff_transform",
]

__version__: str

# ---- kernels ----
# kernel: "linear" | "poly" | "polynomial" | "rbf"; gamma already resolved (> 0; ignored by
# "linear"); degree >= 1 and coef0 finite (used by "poly" only); intercept_scaling b finite, 0 <= b <= 1e100:
# the kernel is K + b**2 (regularised intercept; b = 0 is the plain kernel, bit-for-bit).

def kernel_matrix(
    a: npt.NDArray[np.float64],
    b: Optional[npt.NDArray[np.float64]],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
) -> npt.NDArray[np.float64]:
    """``K(a, b)`` of shape (len(a), len(b)); ``b=None`` gives ``K(a, a)`` with an exact RBF diagonal."""

def kernel_predict(
    z: npt.NDArray[np.float64],
    x: npt.NDArray[np.float64],
    mu: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
) -> npt.NDArray[np.float64]:
    """``K(z, x) @ mu`` of shape (len(z),), without materialising ``K(z, x)``."""

def kernel_predict_many(
    z: npt.NDArray[np.float64],
    x: npt.NDArray[np.float64],
    mus: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
) -> npt.NDArray[np.float64]:
    """``K(z, x) @ mus[k]`` for every row of ``mus`` (shape (k, len(x))), as shape (k, len(z)); one kernel pass."""

def kernel_diag(
    z: npt.NDArray[np.float64], kernel: str, gamma: float, degree: int, coef0: float, intercept_scaling: float
) -> npt.NDArray[np.float64]:
    """``K(z_i, z_i)`` for every row of ``z``."""

def feature_map_radius_sq(
    data_norm: float, kernel: str, gamma: float, degree: int, coef0: float, intercept_scaling: float
) -> float:
    """``R_phi**2 = max K(z, z)`` over the ball ``||z|| <= data_norm`` (poly requires coef0 >= 0)."""

# ---- end kernels ----

# ---- noise ----
# Exact discrete noise and exactly rounded continuous Gaussians on power-of-two grids;
# calibration lives in dpcore.mechanisms.noise.

@final
class ChaChaRng:
    """ChaCha20 generator: OS-seeded when ``seed`` is None (secure), reproducible otherwise."""

    def __new__(cls, seed: Optional[int] = None) -> "ChaChaRng": ...
    @property
    def seeded(self) -> bool: ...
    def next_u64(self) -> int: ...

def grid_release(
    values: npt.NDArray[np.float64],
    grid_exponent: int,
    noise: str,
    num: int,
    den: int,
    rng: ChaChaRng,
    n_samples: Optional[int] = None,
) -> npt.NDArray[np.float64]:
    """``(round(values / 2**k) + Y) * 2**k`` with exact discrete ``noise`` ("laplace": scale num/den;
    "gaussian": sigma² num/den, in grid units). With ``n_samples``: that many independent rows."""

def analytic_release(
    values: npt.NDArray[np.float64],
    sigma: float,
    grid_exponent: int,
    rng: ChaChaRng,
    n_samples: Optional[int] = None,
) -> npt.NDArray[np.float64]:
    """``j * 2**k`` per coordinate with ``j = round((values + sigma * Z) / 2**k)``, ``Z ~ N(0, 1)``
    sampled exactly (Karney 2016) and the grid cell decided exactly (``P[j]`` is exactly the
    Φ-difference). Requires ``2**-32 <= sigma / 2**k <= 2**64`` and ``|values| / 2**k <= 2**100``.
    With ``n_samples``: that many independent rows."""

def discrete_samples(noise: str, num: int, den: int, n: int, rng: ChaChaRng) -> npt.NDArray[np.int64]:
    """``n`` exact discrete Laplace (scale num/den) or discrete Gaussian (sigma² num/den) integers."""

def gamma_norm_vector(dim: int, scale: float, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Density ∝ exp(-||b||/scale) on R^dim (floating-point; not for direct release)."""

def gamma_norm_vector_coupled(dim: int, scale: float, rng: ChaChaRng) -> tuple[npt.NDArray[np.float64], float]:
    """``(b, err)``: float Gamma-norm vector with ``||b - b_exact|| <= err`` for an exact one."""

def normal_vector_coupled(dim: int, sigma: float, rng: ChaChaRng) -> tuple[npt.NDArray[np.float64], float]:
    """``(b, err)``: float N(0, sigma² I) vector with ``||b - b_exact|| <= err`` for an exact one."""

def gumbel(n: int, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Standard Gumbel variates."""

def exponential(n: int, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Standard exponential variates."""

# ---- end noise ----

# ---- pinp ----
@final
class PinpSession:
    """Mutable core of one PINP session (update buffer, counters, ChaCha20 generator)."""
    def __new__(
        cls, dim: int, kernel: str, gamma: float, degree: int, coef0: float, intercept_scaling: float, grid_exponent: int,
        num: int, den: int, sigma: float, eta: float, max_updates: int, max_queries: int,
        seed: Optional[int] = None,
    ) -> "PinpSession": ...
    def restore(self, points: npt.NDArray[np.float64], alphas: npt.NDArray[np.float64], n_answered: int) -> None: ...
    def answer(
        self, z: npt.NDArray[np.float64], x: npt.NDArray[np.float64], mu: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int8], str]:
        """Answer ``z`` in order: ``(answers, noise draws, update signs, stop reason)``; stop is
        "completed", "updates" (B reached) or "queries" (T reached)."""
    @property
    def n_answered(self) -> int: ...
    @property
    def n_updates(self) -> int: ...
    def snapshot(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]: ...
    def sample_sessions(
        self, exact: npt.NDArray[np.float64], gram: npt.NDArray[np.float64], seeds: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.float64]:
        """Audit helper: one fresh session per seed with this calibration, same queries (NaN = refused)."""

# ---- end pinp ----

# ---- erm ----
# Certified kernel ERM (src/kernel_learning/erm.rs): (1/n) sum loss(y_i f(x_i)) + lam/2 ||w||^2, no bias,
# y in {-1, +1}; loss: "hinge" | "logistic". The public API is dpcore.KernelSVM /
# dpcore.KernelLogisticRegression.


def erm_fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    loss: str,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    lam: float,
    tol: float,
    max_iter: int,
    cache_bytes: int,
    shrinking: bool,
    progress: Optional[Callable[[int, float, bool, int], object]] = None,
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
) -> dict:
    """Fit ``(1/n) sum_i s_i loss_i + lam/2 ||w||^2`` (``s = sample_weight``, finite > 0, ones by
    default, bit-for-bit the unweighted fit) without the GIL; about every 0.1 s and at every exact gap check, pending signal
    handlers run (Ctrl-C raises ``KeyboardInterrupt``) and ``progress(iter, gap, exact, active)``
    is called; an exception from either abandons the solve and is re-raised. Returns ``{"a", "mu", "decision", "primal", "dual", "gap", "w_norm", "n_iter",
    "converged", "stop_reason", "history", "full_gram"}`` (``a = alpha / C in [0, s]``,
    ``mu = y * C * a``, ``gap`` certified from ``a`` alone)."""

def erm_fit_path(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    lams: Sequence[float],
    tols: Sequence[float],
    max_iter: int,
    cache_bytes: int,
    progress: Optional[Callable[[int, float, bool, int], object]] = None,
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
) -> list[dict]:
    """The weighted kernel logistic regression for every ``lams[k]`` (to ``tols[k]``) in one call (a
    regularisation path): the Gram matrix, the preconditioner's pivoted Cholesky factor and the exact checks (one
    fused pass for all the certificates) are shared, and each ``lam``'s Nyström warm start is solved from the optimum
    of the next larger ``lam``. Returns one dict per ``lam``, as ``erm_fit``'s, each certified to its ``tol`` from its
    own ``a``. Interruptible and with progress as ``erm_fit``."""

def erm_certificate(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    a: npt.NDArray[np.float64],
    loss: str,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    lam: float,
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
) -> dict:
    """Certificate of the dual point ``a in [0, s]`` (``s = sample_weight``, ones by default): ``{"mu", "decision", "primal", "dual",
    "gap", "w_norm"}``."""

# ---- end erm ----

# ---- multiclass (issue 24) ----
# Certified multinomial kernel logistic regression F in H^K (src/kernel_learning/multiclass.rs).

def multiclass_fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.int64],
    n_classes: int,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    lam: float,
    tol: float,
    max_iter: int,
    cache_bytes: int,
    progress: Optional[Callable[[int, float, bool, int], object]] = None,
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
) -> dict:
    """Fit ``(1/n) sum_i s_i [lse(z_i) - z_i,y_i] + lam/2 sum_k ||f_k||^2`` (``y`` class indices in
    ``[0, n_classes)``) by Newton-CG without the GIL; ``progress(kernel_products, gap, exact, n)`` after every
    kernel product (Ctrl-C abandons the solve). Returns ``{"p", "mu", "decision", "primal", "dual", "gap",
    "slack", "f_norm", "n_iter", "n_matvec", "converged", "stop_reason", "history", "full_gram"}`` (``p`` the
    dual point, rows in the simplex; ``mu`` (n, K) the coefficients; ``gap`` certified from ``p`` alone)."""

def multiclass_certificate(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.int64],
    p: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    lam: float,
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
) -> dict:
    """Certificate of the dual point ``p`` (n, K): ``{"mu", "decision", "primal", "dual", "gap", "slack",
    "f_norm"}``."""

# ---- end multiclass ----

# ---- expmech ----
# Exponential mechanism over the nu-net of the ball {||z|| <= radius} in R^d (src/mechanisms/expmech/),
# streamed with floating-point-safe Gumbel-max; the building block of TDIL (Jain & Thakurta 2013,
# Algorithm 3). The net is (d, nu, radius): cubic grid of spacing h = (2 nu / sqrt(d))(1 - 2^-32),
# integer vectors i with ||i||^2 <= T ("threshold"), net point = projection of i*h onto the ball;
# every point of the ball is within nu of a net point. Canonical order: lexicographic in i (the
# row order of ``net_points``). Errors are ValueErrors starting with the parameter's name (d, nu,
# radius, u, points, coef, kernel, gamma, degree, kappa, exponent_bound, max_points, max_rows).
#
# Sampling draws P(z) ∝ exp(kappa * |score(z)|) with score(z) = <z, u> (linear) or
# sum_j coef_j K(z, points_j) (kernel). ``exponent_bound`` is the caller's public bound on
# kappa*|score| over the net (<= 1e12): a computed value above it is refused, never clamped.
# The float sampler is within a factor exp(+-2 eta) of the exact mechanism, eta =
# em_key_error_bound(exponent_bound), i.e. (eps_em + 4 eta)-DP when the exact one is eps_em-DP
# (plus delta < 2^-936). Each call takes 256 bits from ``rng``. The scan runs without the GIL; every
# ~0.1 s pending signal handlers run (Ctrl-C -> KeyboardInterrupt) and ``progress(n_scored,
# n_chunks)`` is called (also once at the end); an exception from either abandons the scan.
# ``_skip_trick`` (tests only): False disables the exact skip test (same output, much slower).

def net_info(d: int, nu: float, radius: float) -> dict:
    """``{"h", "half", "threshold", "box_size", "count_estimate", "rows_estimate"}``: spacing, the
    bound on every |i_j|, T, (2 half + 1)^d, and volume estimates of the points and rows (cheap)."""

def net_count(d: int, nu: float, radius: float, max_rows: int) -> int:
    """Exact number of net points (sums the row ranges, O(rows), parallel); ValueError ``max_rows``
    once more than ``max_rows`` rows were walked."""

def net_points(
    d: int, nu: float, radius: float, max_points: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """``(coords, points)``, both (n, d), in canonical order (small nets; ValueError
    ``max_points`` above ``max_points`` points)."""

def net_snap(
    d: int, nu: float, radius: float, z: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The net point of ``z``: ``(coords (d,), point (d,))`` with ``coords = round(z / h)``,
    projected into the ball exactly as the net's points are (ValueError ``z``)."""

def em_sample_linear(
    d: int,
    nu: float,
    radius: float,
    u: npt.NDArray[np.float64],
    kappa: float,
    exponent_bound: float,
    rng: ChaChaRng,
    progress: Optional[Callable[[int, int], object]] = None,
    _skip_trick: bool = True,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], float, int]:
    """One sample with score ``<z, u>`` (u of length d): ``(coords, point, score, n_scored)`` with
    ``n_scored`` = number of net points (all are scored)."""

def em_sample_kernel(
    d: int,
    nu: float,
    radius: float,
    points: npt.NDArray[np.float64],
    coef: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    kappa: float,
    exponent_bound: float,
    rng: ChaChaRng,
    progress: Optional[Callable[[int, int], object]] = None,
    _skip_trick: bool = True,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], float, int]:
    """One sample with score ``sum_j coef_j K(z, points_j)`` (points (n, d), coef (n,), n may be 0;
    kernel parameters as in ``kernel_predict``): ``(coords, point, score, n_scored)``."""

def em_sample_many_linear(
    d: int,
    nu: float,
    radius: float,
    u: npt.NDArray[np.float64],
    kappa: float,
    exponent_bound: float,
    n_samples: int,
    rng: ChaChaRng,
    _skip_trick: bool = True,
) -> npt.NDArray[np.int64]:
    """``n_samples`` independent samples as canonical indices (rows of ``net_points``); small nets
    only (<= 2^22 points, else ValueError ``nu``). For privacy audits and tests."""

def em_sample_many_kernel(
    d: int,
    nu: float,
    radius: float,
    points: npt.NDArray[np.float64],
    coef: npt.NDArray[np.float64],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    intercept_scaling: float,
    kappa: float,
    exponent_bound: float,
    n_samples: int,
    rng: ChaChaRng,
    _skip_trick: bool = True,
) -> npt.NDArray[np.int64]:
    """Kernel-sum version of ``em_sample_many_linear``."""

def em_key_error_bound(exponent_bound: float) -> float:
    """``eta = 2^-48 + 2^-51 exponent_bound + 2^-50 746``: bound on the error of every Gumbel key
    (with the platform ``ln`` within ``LIBM_LN_ULPS = 2`` ulp)."""

# ---- end expmech ----

# ---- multinomial ----
# Exact multinomial sampling (src/mechanisms/multinomial.rs): index j is drawn with probability exactly
# q_j / T, q_j = floor(p_j * 2**100) from the bits of p_j, T = sum q_j. p: 1-D float64 (a strided
# view is copied once); entries finite and >= 0 with |T * 2**-100 - 1| <= sum_tol in [0, 1);
# ValueError "p: p[i] = nan: ..." names the first offending entry. Each sampling call takes 256
# bits of `rng`; results are identical for any number of threads.

def multinomial_counts(
    p: npt.NDArray[np.float64], m: int, rng: ChaChaRng, sum_tol: float = ...  # 1e-9 in the binding
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``m`` i.i.d. draws as ``(distinct indices ascending, counts)``; counts sum to ``m``."""

def multinomial_draws(
    p: npt.NDArray[np.float64], m: int, rng: ChaChaRng, shuffle: bool = False, sum_tol: float = ...  # 1e-9 in the binding
) -> npt.NDArray[np.int64]:
    """The ``m`` drawn indices, ascending (the sorted multiset), or uniformly shuffled
    (exact Fisher–Yates) with ``shuffle=True``."""

def multinomial_error_bound(p: npt.NDArray[np.float64]) -> float:
    """``1.01 (2^-100/p_min + D + 2 D^2)``, ``D = P 2^-100 / sum(p)``: bound on
    ``|(q_j/T)/(p_j/S) - 1|`` over ``p_j > 0``; ``inf`` if some ``0 < p_j < 2^-100`` or ``D >= 1/2``."""

def multinomial_quantized(p: npt.NDArray[np.float64], sum_tol: float = ...) -> tuple[list[int], int]:  # sum_tol 1e-9
    """The exact weights ``(q, T)`` as Python ints, after the samplers' validation (small p)."""

# ---- end multinomial ----

# ---- rff ----
# Random Fourier features (src/kernels/random_features.rs). Weights: n_features x n_components, columns i.i.d. from the
# kernel's Fourier measure (rbf: N(0, 2 gamma I); laplacian: Cauchy(0, gamma) coordinates), drawn from a
# child ChaCha stream of `rng`. Transform: (n, 2 n_components) = n_components^{-1/2} [cos XW, sin XW],
# rayon over fixed 128-row tiles (bit-identical for any thread count; rows independent). ValueError
# messages start with the argument's name.

def rff_sample_weights(
    n_features: int, n_components: int, kernel: str, gamma: float, rng: ChaChaRng
) -> npt.NDArray[np.float64]:
    """The public random frequencies ``W`` (``n_features × n_components``)."""

def rff_transform(x: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``φ̂(X)`` of shape ``(n, 2·n_components)``; zero-copy on float64 input of any layout."""

def rff_linear_svm_dcd(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    upper: float,
    beta0: npt.NDArray[np.float64],
    eps: float,
    max_epochs: int,
    seed: int,
) -> tuple[npt.NDArray[np.float64], int]:
    """Dual coordinate descent (LIBLINEAR L1-loss SVM, no bias) for ``½||w||² + upper·Σ hinge``:
    ``(beta in [0, upper]^n, epochs)``; ``w = Σ beta_i y_i x_i``. Not certified (callers certify)."""

# ---- end rff ----

# ---- gp ----
def gp_forward_substitution(
    buffer: npt.NDArray[np.float64], t: int, rhs: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``L⁻¹ rhs`` for the leading ``t × t`` lower-triangular block ``L`` of ``buffer`` (C order, no copy)."""

# ---- process-wide ----
def memory_limit_bytes() -> Optional[int]:
    """Memory available now (``MemAvailable``), lowered by ``DPCORE_MAX_MEMORY_BYTES`` (bytes; None where
    unknown): larger outputs are a MemoryError; an invalid cap is a ValueError naming the variable."""

def fp_constants() -> dict[str, float]:
    """The named floating-point assumptions of the Rust core (``src/fp.rs``)."""
