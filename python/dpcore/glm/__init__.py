"""Dimension-independent private GLMs and learning over the simplex (Jain & Thakurta 2014).

=================  ==================================================================================
module             what (proof sketch in each module's docstring and in docs/privacy.md)
=================  ==================================================================================
``perturbation``   :class:`OutputPerturbation`, :class:`ObjectivePerturbation` (Gamma / Gaussian
                   noise, certified solvers, exact releases)
``simplex``        :class:`SimplexERM` — entropy-regularised ERM over the simplex released by sampling
``ftrl``           :class:`PrivateFTRL` — private follow-the-regularised-leader with linear costs
``multiclass``     :class:`MulticlassOutputPerturbation` — K-class multinomial / joint one-vs-rest logistic
                   regression, Gaussian output perturbation of the K × p weight matrix
``_losses``        the GLM losses and their constants
``_solver``        certified smooth / hinge solvers shared by the GLMs and PrivateSVM
=================  ==================================================================================
"""

from dpcore.glm.perturbation import GLMPrivacy, ObjectivePerturbation, OutputPerturbation
from dpcore.glm.simplex import SimplexCalibration, SimplexERM
from dpcore.glm.ftrl import FTRLCalibration, PrivateFTRL
from dpcore.glm.multiclass import MulticlassGLMPrivacy, MulticlassOutputPerturbation

__all__ = ["GLMPrivacy", "ObjectivePerturbation", "OutputPerturbation", "SimplexCalibration", "SimplexERM",
           "FTRLCalibration", "PrivateFTRL", "MulticlassOutputPerturbation", "MulticlassGLMPrivacy"]
