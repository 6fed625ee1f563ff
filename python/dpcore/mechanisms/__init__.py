"""Privacy mechanisms: exact noise samplers on grids, the multinomial sampler, the exponential mechanism.

=================  ===================================================================================
module             what
=================  ===================================================================================
``noise``          Laplace / Gaussian (classic, analytic, discrete) mechanisms released on power-of-two
                   grids, secure ChaCha randomness (:func:`check_random_state`), private proportions
``multinomial``    exact multinomial sampling from certified weights (used by SimplexERM)
``exponential``    the exponential mechanism over an ε-net of a ball for linear scores (used by TDIL;
                   Rust: ``src/mechanisms/expmech/``)
``class_weights``  ε-DP balanced class weights from class counts with exact discrete Laplace noise
                   (:func:`private_class_weights`; public weights for ``class_weight=``)
=================  ===================================================================================
"""

from dpcore.mechanisms.noise import (
    ChaChaRng,
    check_random_state,
    discrete_gaussian,
    discrete_laplace,
    gaussian_mechanism,
    laplace_mechanism,
    private_proportion,
)
from dpcore.mechanisms.multinomial import multinomial_counts, multinomial_draws
from dpcore.mechanisms.exponential import LinearBallEM
from dpcore.mechanisms.class_weights import PublicClassWeights, private_class_weights

__all__ = ["ChaChaRng", "check_random_state", "discrete_gaussian", "discrete_laplace", "gaussian_mechanism",
           "laplace_mechanism", "private_proportion", "multinomial_counts", "multinomial_draws", "LinearBallEM",
           "private_class_weights", "PublicClassWeights"]
