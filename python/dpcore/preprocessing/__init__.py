r"""Private preprocessing for raw, unbounded data: from raw columns into the ball dpcore's models require.

One layer above :mod:`dpcore.mechanisms` / :mod:`dpcore.accounting`, below the model families. Every step
is a scikit-learn transformer; the private ones take ``epsilon`` (``delta`` with Gaussian noise),
``accountant=`` and ``random_state``, validate every public parameter before they charge, and expose
``dp_event_``.

==============================  =====================================================================
step                            privacy
==============================  =====================================================================
:class:`PrivateQuantiles`       ε-DP per-feature quantiles over a declared range (exponential
                                mechanism on a public grid, Smith 2011); ``transform`` clips to them
:class:`StandardScaler`         noisy mean and variance (exact Laplace / Gaussian) with declared or
                                privately estimated bounds; clips to them
:class:`MinMaxScaler`           declared bounds: free; privately estimated bounds: ε-DP
:class:`RowNormClipper`         free (stateless): clips each row to the declared radius = the model's
                                ``data_norm``
:class:`OneHotEncoder`          free: declared categories, unknown → all-zero or an "other" column
:func:`make_private_pipeline`   one total (ε, δ) split over the private steps, one accountant;
                                ``dp_event_`` is the composition of the steps' events
==============================  =====================================================================

Proof sketches: the docstrings of :mod:`dpcore.preprocessing.quantiles` and
:mod:`dpcore.preprocessing.scalers`, and docs/privacy.md ("Private preprocessing").
"""

from dpcore.preprocessing.quantiles import PrivateQuantiles
from dpcore.preprocessing.scalers import MinMaxScaler, StandardScaler
from dpcore.preprocessing.encoders import OneHotEncoder, RowNormClipper
from dpcore.preprocessing.pipeline import PrivatePipeline, make_private_pipeline, pipeline_dp_event

__all__ = ["PrivateQuantiles", "StandardScaler", "MinMaxScaler", "RowNormClipper", "OneHotEncoder",
           "PrivatePipeline", "make_private_pipeline", "pipeline_dp_event"]
