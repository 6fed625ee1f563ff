"""Private kernel learning: Jain & Thakurta 2013 and the RKHS Gaussian-process mechanism.

=================  ==================================================================================
module             what (proof sketch in each module's docstring and in docs/privacy.md)
=================  ==================================================================================
``svm``            :class:`KernelSVM`, :class:`KernelLogisticRegression` — certified non-private
                   kernel ERM (Rust: ``src/kernel_learning/erm.rs``), the model every private release perturbs
``pinp``           :class:`PINP` — interactive private predictions (2013, Alg. 1; sparse vector)
``tddl``           :class:`TDDL` — release over public points (2013, Alg. 2; GP noise by default)
``tdil``           :class:`TDIL` — non-interactive release via the exponential mechanism (2013, Alg. 3)
``release``        :class:`KernelRelease` — a released kernel model (public points + coefficients)
``gp``             the GP mechanism (Hall, Rinaldo & Wasserman 2013): certified jitter, exact noise,
                   :func:`auto_lam` (data-independent λ)
``gp_service``     :class:`GPService` — interactive, unlimited queries on one lazily sampled GP path
``selection``      :class:`PrivateGridSearch` — private selection of C / kernel parameters
``multiclass``     :class:`MulticlassKernelLogisticRegression` — certified K-class kernel model in ``H^K``;
                   ``multiclass_release``: :class:`MulticlassTDDL`, the joint K-class GP release;
                   ``multiclass_service``: :class:`MulticlassGPService`, unlimited K-class queries
``_model``         shared certified-model plumbing (public error bounds, persistence)
=================  ==================================================================================
"""

from dpcore.kernel_learning.svm import KernelLogisticRegression, KernelSVM
from dpcore.kernel_learning.release import KernelRelease
from dpcore.kernel_learning.pinp import PINP, PINPCalibration
from dpcore.kernel_learning.tddl import TDDL, TDDLCalibration
from dpcore.kernel_learning.tdil import TDIL, TDILCalibration
from dpcore.kernel_learning.gp import auto_lam
from dpcore.kernel_learning.gp_service import GPService, GPServiceCalibration
from dpcore.kernel_learning.selection import PrivateGridSearch, SelectionPrivacy
from dpcore.kernel_learning.multiclass import MulticlassKernelLogisticRegression
from dpcore.kernel_learning.multiclass_release import MulticlassCalibration, MulticlassTDDL, multiclass_auto_lam, multiclass_min_tol
from dpcore.kernel_learning.multiclass_service import MulticlassGPService, MulticlassGPServiceCalibration

__all__ = ["KernelSVM", "KernelLogisticRegression", "KernelRelease", "PINP", "PINPCalibration", "TDDL",
           "TDDLCalibration", "TDIL", "TDILCalibration", "auto_lam", "GPService", "GPServiceCalibration",
           "PrivateGridSearch", "SelectionPrivacy", "MulticlassKernelLogisticRegression", "MulticlassTDDL",
           "MulticlassCalibration", "multiclass_auto_lam", "multiclass_min_tol", "MulticlassGPService", "MulticlassGPServiceCalibration"]
