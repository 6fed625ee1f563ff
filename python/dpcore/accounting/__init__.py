"""Privacy accounting: noise calibration, dp_accounting events and the budget ledger.

==============  ==========================================================================================
module          what
==============  ==========================================================================================
``calibrate``   Laplace scale, classic / analytic Gaussian σ, zCDP, basic and advanced composition
``events``      dp_accounting ``DpEvent`` builders for dpcore's mechanisms (replace-one convention)
``accountant``  :class:`BudgetAccountant`: thread-safe ledger (PLD / RDP / basic), refuses before computing
==============  ==========================================================================================
"""

from dpcore.accounting.accountant import BudgetAccountant, BudgetRecord
from dpcore.accounting.calibrate import (
    compose_advanced,
    compose_basic,
    gaussian_delta,
    gaussian_sigma,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
)

__all__ = ["BudgetAccountant", "BudgetRecord", "compose_advanced", "compose_basic", "gaussian_delta",
           "gaussian_sigma", "gaussian_sigma_analytic", "gaussian_sigma_classic", "laplace_scale"]
