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

Dimension-independent private GLMs (Jain & Thakurta 2014): :class:`OutputPerturbation` and
:class:`ObjectivePerturbation` (Gamma or Gaussian noise, certified solvers, exact releases),
:class:`SimplexERM` (entropy-regularised ERM over the simplex released by sampling, with the exact
Rust multinomial sampler of :mod:`dpcore.multinomial`) and :class:`PrivateFTRL` (online learning
with linear costs over the simplex).

PrivateSVM (Rubinstein et al. 2009): :class:`RandomFourierFeatures` (Rust transformer) and
:class:`PrivateSVM` (linear feature map or random Fourier features, exact Laplace output noise).
Local DP, non-interactive (Zheng, Mou & Wang 2017): :mod:`dpcore.ldp` (client functions that
privatise one user's record, server estimators that see only reports).
"""

from ._core import __version__
from .kernels import kernel_matrix, kernel_predict, feature_map_radius
from .noise import laplace_mechanism, gaussian_mechanism, check_random_state
from .accountant import BudgetAccountant, BudgetExceededError
from .pinp import PINP, PINPBudgetExhausted, StateRollbackError
from .gp_service import GPService
from .selection import PrivateGridSearch
from .erm import KernelSVM, KernelLogisticRegression
from .release import KernelRelease
from .tddl import TDDL
from .tdil import TDIL
from .glm import ConvergenceError, ObjectivePerturbation, OutputPerturbation
from .simplex import SimplexCertificationError, SimplexERM
from .ftrl import FTRLHorizonExceeded, PrivateFTRL
from .rff import RandomFourierFeatures
from .private_svm import PrivateSVM
from . import audit, calibrate, datasets, ftrl, glm, ldp, multinomial, noise, private_svm, rff, simplex

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
    "GPService",
    "PrivateGridSearch",
    "PINPBudgetExhausted",
    "StateRollbackError",
    "KernelSVM",
    "KernelLogisticRegression",
    "KernelRelease",
    "TDDL",
    "TDIL",
    "OutputPerturbation",
    "ObjectivePerturbation",
    "ConvergenceError",
    "SimplexERM",
    "SimplexCertificationError",
    "PrivateFTRL",
    "FTRLHorizonExceeded",
    "RandomFourierFeatures",
    "PrivateSVM",
    "audit",
    "calibrate",
    "datasets",
    "ftrl",
    "glm",
    "ldp",
    "multinomial",
    "noise",
    "private_svm",
    "rff",
    "simplex",
]
