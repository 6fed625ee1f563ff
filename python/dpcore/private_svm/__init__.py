"""PrivateSVM (Rubinstein, Bartlett, Huang & Taft 2009/2012): a linear SVM on a public feature map.

=============  ======================================================================================
module         what (proof sketch in the module docstring and in docs/privacy.md)
=============  ======================================================================================
``estimator``  :class:`PrivateSVM` — hinge / Huber SVM on the identity map or on random Fourier
               features (:class:`dpcore.kernels.RandomFourierFeatures`), exact Laplace output noise
=============  ======================================================================================
"""

from dpcore.private_svm.estimator import PrivateSVM, PrivateSVMPrivacy

__all__ = ["PrivateSVM", "PrivateSVMPrivacy"]
