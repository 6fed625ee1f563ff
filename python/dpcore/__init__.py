"""dpcore — differentially private learning with kernels, with a Rust core.

Public building blocks (foundation):

* :func:`kernel_matrix`, :func:`kernel_predict` — fused, tiled, parallel kernel evaluation.
* :mod:`dpcore.noise` — floating-point-safe Laplace / Gaussian mechanisms on power-of-two grids,
  secure-by-default randomness (:func:`dpcore.noise.check_random_state`).
* :mod:`dpcore.calibrate` — Laplace, classic / analytic Gaussian, zCDP and composition calibration.
* :class:`BudgetAccountant` — thread-safe privacy budget ledger; over-spending raises
  :class:`BudgetExceededError` before any computation.
* :mod:`dpcore.audit` — empirical lower bounds on ε (Clopper–Pearson) for any mechanism.
* :mod:`dpcore.datasets` — bundled real data (UCI Adult) with public pre-processing.

Private kernel learning (Jain & Thakurta 2013): :class:`KernelSVM` / :class:`KernelLogisticRegression`
(certified non-private ERM), :class:`PINP` (interactive), :class:`TDDL` (semi-interactive release over
public points), :class:`TDIL` (non-interactive release via the exponential mechanism over an ε-net);
releases are :class:`KernelRelease` objects.
"""

from ._core import __version__
from .kernels import kernel_matrix, kernel_predict, feature_map_radius
from .noise import laplace_mechanism, gaussian_mechanism, check_random_state
from .accountant import BudgetAccountant, BudgetExceededError
from .pinp import PINP, PINPBudgetExhausted
from .erm import KernelSVM, KernelLogisticRegression
from .release import KernelRelease
from .tddl import TDDL
from .tdil import TDIL
from . import audit, calibrate, datasets, noise

__all__ = [
    "__version__",
    "kernel_matrix",
    "kernel_predict",
    "feature_map_radius",
    "laplace_mechanism",
    "gaussian_mechanism",
    "check_random_state",
    "BudgetAccountant",
    "BudgetExceededError",
    "PINP",
    "PINPBudgetExhausted",
    "KernelSVM",
    "KernelLogisticRegression",
    "KernelRelease",
    "TDDL",
    "TDIL",
    "audit",
    "calibrate",
    "datasets",
    "noise",
]
