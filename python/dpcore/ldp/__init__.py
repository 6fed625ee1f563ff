"""Non-interactive local differential privacy (Zheng, Mou & Wang 2017, ICML).

Client/server shape: a *client* function privatises ONE user's record and returns exactly what that
user sends (numpy arrays; usable on its own on a device); a *server* estimator (sklearn-style) fits
from the reports only. The public parameters shared by both sides (σ, budget split, projection seed,
groups, τ, Chebyshev coefficients, number of copies) live in a frozen protocol dataclass whose
``budget()`` composes exactly what one user sends and whose construction raises if that exceeds the
declared (ε, δ).

======================  =================================  =========================  ==============================
Algorithm               protocol                           client                     server
======================  =================================  =========================  ==============================
1 Basic private vector  :func:`gaussian_channel`           :func:`privatize_vector`   (averaging)
2 ℓ1 mean estimation    :class:`MeanEstimationProtocol`    :func:`mean_report`        :class:`LDPMeanEstimator`
3 sparse regression     :class:`SparseRegressionProtocol`  :func:`regression_report`  :class:`LDPSparseRegression`
4 kernel ridge (RFF)    :class:`KernelRidgeProtocol`       :func:`kernel_report`      :class:`LDPKernelRidge`
5–6 logistic (Cheb.)    :class:`LogisticProtocol`          :func:`logistic_report`    :class:`LDPLogisticRegression`
======================  =================================  =========================  ==============================

:func:`simulate` runs all clients of a protocol — or, given a :class:`GaussianChannel`, Algorithm 1 on
every row — on a dataset (experiments/tests only). :func:`simulate` with ``chunks=`` (or a Dask ``X``) generates the reports partition by partition, each
from its own ChaCha stream derived from ``(random_state, partition)``. Every server also accepts Dask
arrays (map-reduce of exact sufficient statistics) and has ``partial_fit``; the results are bit-identical
to the in-memory fit (``docs/scaling.md``; dask is the optional extra ``dpcore[dask]``).
:class:`RecoveryRadiusWarning`: Algorithm 2's
estimate is identically zero because the recovery radius τ is at least ``||u||_1``.
"""

from dpcore.exceptions import ProtocolBudgetError
from dpcore.ldp._protocol import LDPBudget, ReleaseSpec
from dpcore.ldp.kernel import KernelRidgeProtocol, LDPKernelRidge, kernel_report
from dpcore.ldp.logistic import LDPLogisticRegression, LogisticProtocol, LogisticReports, chebyshev_coefficients, logistic_report
from dpcore.ldp.mean import LDPMeanEstimator, MeanEstimationProtocol, RecoveryRadiusWarning, l1_recovery, mean_report
from dpcore.ldp.regression import LDPSparseRegression, SparseRegressionProtocol, regression_report
from dpcore.ldp.simulation import simulate
from dpcore.ldp.vectors import GaussianChannel, gaussian_channel, privatize_vector, sample_privatize_vector

__all__ = [
    "ProtocolBudgetError", "LDPBudget", "ReleaseSpec", "GaussianChannel", "gaussian_channel", "privatize_vector",
    "sample_privatize_vector", "MeanEstimationProtocol", "mean_report", "LDPMeanEstimator", "l1_recovery",
    "RecoveryRadiusWarning",
    "SparseRegressionProtocol", "regression_report", "LDPSparseRegression", "KernelRidgeProtocol",
    "kernel_report", "LDPKernelRidge", "LogisticProtocol", "LogisticReports", "logistic_report",
    "LDPLogisticRegression", "chebyshev_coefficients", "simulate",
]
