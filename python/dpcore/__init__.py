"""dpcore — differentially private learning with kernels, with a Rust core.

The tree says what is where: layers first, then one subpackage per model family.

=======================  ============================================================================
subpackage / module      what
=======================  ============================================================================
:mod:`dpcore.mechanisms`  exact noise samplers on grids (Laplace, Gaussian, discrete), multinomial
                          sampling, the exponential mechanism over an ε-net
:mod:`dpcore.accounting`  noise calibration (:mod:`~dpcore.accounting.calibrate`) and the budget ledger
                          (:class:`BudgetAccountant`)
:mod:`dpcore.audit`       empirical lower bounds on ε (Clopper–Pearson) for any mechanism
:mod:`dpcore.preprocessing`  private preprocessing of raw columns: DP quantiles/bounds, private
                          standard/min-max scaling, row-norm clipping, one-hot encoding of declared
                          categories, one budget for a whole pipeline (:func:`make_private_pipeline`)
:mod:`dpcore.kernels`     the kernel engine (:func:`kernel_matrix`, :func:`kernel_predict`) and
                          :class:`RandomFourierFeatures`
:mod:`dpcore.kernel_learning`  Jain & Thakurta 2013 (:class:`KernelSVM`, :class:`PINP`, :class:`TDDL`,
                          :class:`TDIL`, :class:`KernelRelease`) and the GP mechanism
                          (:class:`GPService`, :class:`PrivateGridSearch`)
:mod:`dpcore.glm`         Jain & Thakurta 2014 (:class:`OutputPerturbation`,
                          :class:`ObjectivePerturbation`, :class:`SimplexERM`, :class:`PrivateFTRL`)
:mod:`dpcore.private_svm` Rubinstein et al. (:class:`PrivateSVM`)
:mod:`dpcore.ldp`         non-interactive local DP (Zheng, Mou & Wang 2017): clients and servers
:mod:`dpcore.datasets`    bundled real data (UCI Adult, Shuttle, Letter) with public pre-processing
:mod:`dpcore.exceptions`  every exception and warning class, one hierarchy
:mod:`dpcore.demo`        the end-to-end story (``python -m dpcore.demo``); not part of the library API
=======================  ============================================================================

Every public class and function below is importable from the top level (``dpcore.TDDL``).
"""

from dpcore._core import __version__
from dpcore import exceptions
from dpcore.exceptions import (
    BudgetError,
    BudgetExceededError,
    RestoredAccountantError,
    ConvergenceError,
    DpcoreError,
    FTRLHorizonExceeded,
    PINPBudgetExhausted,
    SimplexCertificationError,
    StateRollbackError,
)
from dpcore import mechanisms, accounting, audit, kernels, preprocessing
from dpcore.mechanisms import check_random_state, gaussian_mechanism, laplace_mechanism, private_class_weights
from dpcore.accounting import BudgetAccountant
from dpcore.kernels import RandomFourierFeatures, feature_map_radius, kernel_matrix, kernel_predict
from dpcore import kernel_learning, glm, private_svm, ldp, datasets
from dpcore.kernel_learning import (
    PINP,
    TDDL,
    TDIL,
    GPService,
    KernelLogisticRegression,
    KernelRelease,
    KernelSVM,
    PrivateGridSearch,
)
from dpcore.kernel_learning import MulticlassKernelLogisticRegression, MulticlassTDDL
from dpcore.kernel_learning import MulticlassGPService, multiclass_auto_lam
from dpcore.glm import ObjectivePerturbation, OutputPerturbation, PrivateFTRL, SimplexERM
from dpcore.glm import MulticlassOutputPerturbation
from dpcore.private_svm import PrivateSVM

__all__ = [
    "__version__",
    # subpackages
    "mechanisms", "accounting", "audit", "preprocessing", "kernels", "kernel_learning", "glm", "private_svm", "ldp", "datasets",
    "exceptions",
    # functions
    "kernel_matrix", "kernel_predict", "feature_map_radius", "laplace_mechanism", "gaussian_mechanism",
    "check_random_state", "private_class_weights",
    # estimators, services, releases
    "BudgetAccountant", "KernelSVM", "KernelLogisticRegression", "PINP", "TDDL", "TDIL", "KernelRelease",
    "GPService", "PrivateGridSearch", "OutputPerturbation", "ObjectivePerturbation", "SimplexERM",
    "PrivateFTRL", "RandomFourierFeatures", "PrivateSVM", "MulticlassKernelLogisticRegression", "MulticlassTDDL",
    "MulticlassGPService", "multiclass_auto_lam", "MulticlassOutputPerturbation",
    # exceptions
    "DpcoreError", "BudgetError", "BudgetExceededError", "RestoredAccountantError", "PINPBudgetExhausted", "FTRLHorizonExceeded", "StateRollbackError",
    "ConvergenceError", "SimplexCertificationError",
]
