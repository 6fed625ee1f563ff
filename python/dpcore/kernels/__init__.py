"""Kernels: the fused, tiled, parallel kernel engine and random Fourier features (Rust: ``src/kernels/evaluation.rs``, ``src/kernels/random_features.rs``).

=====================  ==============================================================================
module                 what
=====================  ==============================================================================
``evaluation``         :func:`kernel_matrix`, :func:`kernel_predict` (never an m×n matrix),
                       :func:`feature_map_radius`
``random_features``    :class:`RandomFourierFeatures` (Rahimi & Recht), scikit-learn transformer
=====================  ==============================================================================
"""

from dpcore.kernels.evaluation import KERNELS, feature_map_radius, kernel_matrix, kernel_predict
from dpcore.kernels.random_features import RandomFourierFeatures

__all__ = ["KERNELS", "feature_map_radius", "kernel_matrix", "kernel_predict", "RandomFourierFeatures"]
