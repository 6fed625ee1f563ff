"""Type stubs of the compiled extension module ``dpcore._core`` (Rust core, PyO3 bindings).

Private API: the public, validated entry points live in the pure-Python modules of ``dpcore``.
Every function here takes float64 arrays (any memory layout, not copied), validates shapes and
finiteness cheaply, releases the GIL while computing, and raises ``ValueError`` whose message
starts with the offending argument's name.
"""

from typing import Optional

import numpy as np
import numpy.typing as npt

__version__: str

# ---- kernels ----
# kernel: "linear" | "poly" | "polynomial" | "rbf"; gamma already resolved (> 0; ignored by
# "linear"); degree >= 1 and coef0 finite (used by "poly" only).

def kernel_matrix(
    a: npt.NDArray[np.float64],
    b: Optional[npt.NDArray[np.float64]],
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
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
) -> npt.NDArray[np.float64]:
    """``K(z, x) @ mu`` of shape (len(z),), without materialising ``K(z, x)``."""

def kernel_diag(
    z: npt.NDArray[np.float64], kernel: str, gamma: float, degree: int, coef0: float
) -> npt.NDArray[np.float64]:
    """``K(z_i, z_i)`` for every row of ``z``."""

def feature_map_radius_sq(radius: float, kernel: str, gamma: float, degree: int, coef0: float) -> float:
    """``R_phi**2 = max K(z, z)`` over the ball ``||z|| <= radius`` (poly requires coef0 >= 0)."""

# ---- end kernels ----

# ---- noise ----
# Exact discrete noise on power-of-two grids; calibration lives in dpcore.noise.

class ChaChaRng:
    """ChaCha20 generator: OS-seeded when ``seed`` is None (secure), reproducible otherwise."""

    def __init__(self, seed: Optional[int] = None) -> None: ...
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

def discrete_samples(noise: str, num: int, den: int, n: int, rng: ChaChaRng) -> npt.NDArray[np.int64]:
    """``n`` exact discrete Laplace (scale num/den) or discrete Gaussian (sigma² num/den) integers."""

def gamma_norm_vector(dim: int, scale: float, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Density ∝ exp(-||b||/scale) on R^dim (floating-point; not for direct release)."""

def gumbel(n: int, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Standard Gumbel variates."""

def exponential(n: int, rng: ChaChaRng) -> npt.NDArray[np.float64]:
    """Standard exponential variates."""

# ---- end noise ----

# ---- pinp ----
class PinpSession:
    """Mutable core of one PINP session (update buffer, counters, ChaCha20 generator)."""
    def __init__(
        self, dim: int, kernel: str, gamma: float, degree: int, coef0: float, grid_exponent: int,
        num: int, den: int, sigma: float, eta: float, max_updates: int, max_queries: int,
        seed: Optional[int] = None,
    ) -> None: ...
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
# Certified kernel ERM (src/erm.rs): (1/n) sum loss(y_i f(x_i)) + lam/2 ||w||^2, no bias,
# y in {-1, +1}; loss: "hinge" | "logistic". The public API is dpcore.KernelSVM /
# dpcore.KernelLogisticRegression.

from typing import Callable

def erm_fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    loss: str,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    lam: float,
    tol: float,
    max_iter: int,
    cache_bytes: int,
    shrinking: bool,
    progress: Optional[Callable[[int, float, bool, int], object]] = None,
) -> dict:
    """Fit without the GIL; about every 0.1 s and at every exact gap check, pending signal
    handlers run (Ctrl-C raises ``KeyboardInterrupt``) and ``progress(iter, gap, exact, active)``
    is called; an exception from either abandons the solve and is re-raised. Returns ``{"a", "mu", "decision", "primal", "dual", "gap", "w_norm", "n_iter",
    "converged", "stop_reason", "history", "full_gram"}`` (``a = alpha / C in [0, 1]``,
    ``mu = y * C * a``, ``gap`` certified from ``a`` alone)."""

def erm_certificate(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    a: npt.NDArray[np.float64],
    loss: str,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    lam: float,
) -> dict:
    """Certificate of the dual point ``a in [0, 1]^n``: ``{"mu", "decision", "primal", "dual",
    "gap", "w_norm"}``."""

# ---- end erm ----
