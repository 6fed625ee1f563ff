"""Kernel evaluation: linear, polynomial and Gaussian RBF kernels with a fused Rust core.

The parameter names and defaults follow :func:`sklearn.metrics.pairwise_kernels`:

============  ===============================  ================================================
``kernel``    ``K(x, v)``                      ``R_phi**2`` on the ball ``||z|| <= radius``
============  ===============================  ================================================
``"linear"``  ``<x, v>``                       ``radius**2``
``"poly"``    ``(gamma <x, v> + coef0)**degree``  ``(gamma radius**2 + coef0)**degree`` (coef0 >= 0)
``"rbf"``     ``exp(-gamma ||x - v||**2)``     ``1``
============  ===============================  ================================================

``gamma=None`` means ``1.0`` (``"auto"``: ``1 / n_features``); ``degree`` is a positive integer (default 3); ``coef0``
is finite (default 1). ``"polynomial"`` is accepted as an alias of ``"poly"``.

:func:`kernel_predict` computes ``K(Z, X) @ mu`` without ever building the ``m x n`` kernel
matrix: the Rust core evaluates it block by block (64 query rows x 512 support points, one GEMM
per block, the kernel map and the product with ``mu`` applied while the block is in cache), in
parallel over blocks with rayon. Its extra memory is ``O(m + n)`` plus a few MiB of block
buffers, whatever ``m`` and ``n`` (see ``benches/bench_kernels.py`` for measurements); results do
not depend on the number of threads (``RAYON_NUM_THREADS``).

On Dask
-------
:func:`kernel_predict` also takes the query rows ``Z`` as a Dask array or DataFrame and returns a lazy Dask array:
each row block is evaluated by the same Rust engine on a worker, with the support points and weights sent to each
worker once, and the result is bit-for-bit the in-memory one (``docs/scaling.md``). The engine evaluates at most
:data:`DIRECT_MAX_ROWS` query rows by direct dot products and more by GEMM (the two differ in the last bits), so a
block that small of a larger ``Z`` is evaluated padded to ``DIRECT_MAX_ROWS + 1`` rows (:func:`fused_predict`).
"""

from __future__ import annotations

import math
import numbers
from typing import Optional, overload

import numpy as np

from dpcore import _core
from dpcore._internal.dask import refuse_dask
from dpcore._internal.validation import check_array, check_positive, check_rows, check_vector, map_rows
from dpcore._internal.types import ArrayLike, DaskArray, DaskArrayLike, NDArray

__all__ = ["kernel_matrix", "kernel_predict", "feature_map_radius", "KERNELS"]

#: Accepted kernel names (``"polynomial"`` is an alias of ``"poly"``).
KERNELS = ("linear", "poly", "polynomial", "rbf")

#: ``_core.kernel_predict`` computes the inner products of at most this many query rows by direct dot products and
#: of more by GEMM (``DIRECT_MAX_ROWS`` in ``src/kernels/evaluation.rs``); the two paths differ in the last bits.
DIRECT_MAX_ROWS = 4


#: ``gamma`` of the rbf and poly kernels when none is given: 1.0, for rows in the unit ball (squared distances in
#: [0, 4], so ``exp(-gamma·||x − x'||²)`` spans [e⁻⁴, 1]); data-independent.
DEFAULT_GAMMA = 1.0


def check_kernel_params(kernel, gamma, degree, coef0, n_features: Optional[int]):
    """Validate scikit-learn style kernel arguments; return ``(name, gamma, degree, coef0)``.

    Every explicitly given parameter is validated, whether or not the kernel uses it.
    ``gamma=None`` resolves to :data:`DEFAULT_GAMMA` (``1.0``: data-independent, and sensible for rows in
    the unit ball, whose squared distances lie in ``[0, 4]``); ``gamma="auto"`` to ``1 / n_features``
    (scikit-learn's old ``"auto"``; a public count, never the data's variance as ``"scale"`` would be).
    """
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    name = "poly" if kernel == "polynomial" else kernel
    if gamma is None:
        gamma = DEFAULT_GAMMA
    elif isinstance(gamma, str):
        if gamma == "scale":
            raise ValueError('gamma="scale" reads the variance of the data (not data-independent): pass a float '
                             '> 0 (default 1.0, for rows in the unit ball) or "auto" (1 / n_features)')
        if gamma != "auto":
            raise TypeError(f'gamma must be a real number > 0 or "auto" (1 / n_features), got {gamma!r}')
        if n_features is not None:
            gamma = 1.0 / n_features
        elif name == "linear":
            gamma = DEFAULT_GAMMA  # a placeholder: the linear kernel does not use gamma
        else:
            raise ValueError('gamma="auto" means 1 / n_features: pass gamma explicitly or give n_features')
    else:
        gamma = check_positive(gamma, "gamma")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Real):
        raise TypeError(f"degree must be a positive integer, got {type(degree).__name__}")
    if not isinstance(degree, numbers.Integral):
        if not (math.isfinite(degree) and float(degree).is_integer()):
            raise ValueError(f"degree must be a positive integer, got {degree!r}")
    degree = int(degree)
    if not 1 <= degree <= 2**32 - 1:
        raise ValueError(f"degree must be a positive integer (at most 2**32 - 1), got {degree!r}")
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real):
        raise TypeError(f"coef0 must be a real number, got {type(coef0).__name__}")
    coef0 = float(coef0)
    if not math.isfinite(coef0):
        raise ValueError(f"coef0 must be finite, got {coef0!r}")
    return name, gamma, degree, coef0


#: Largest accepted ``intercept_scaling`` b (so that the shift ``b**2`` is a finite float; Rust mirrors it).
MAX_INTERCEPT_SCALING = 1e100


def check_intercept_scaling(intercept_scaling) -> float:
    """Validate a public ``intercept_scaling`` b: a real number with ``0 <= b <= 1e100``; return ``float(b)``.

    The kernel then is ``K(x, x') + b**2`` (the augmented feature map ``(phi(x), b)``); ``b = 0`` is no intercept.
    """
    if isinstance(intercept_scaling, bool) or not isinstance(intercept_scaling, numbers.Real):
        raise TypeError(f"intercept_scaling must be a real number, got {type(intercept_scaling).__name__}")
    b = float(intercept_scaling)
    if not (math.isfinite(b) and 0.0 <= b <= MAX_INTERCEPT_SCALING):
        raise ValueError(f"intercept_scaling must be finite with 0 <= intercept_scaling <= "
                         f"{MAX_INTERCEPT_SCALING:g}, got {intercept_scaling!r}")
    return b


def kernel_args(kernel: dict) -> tuple:
    """``(kernel, gamma, degree, coef0, intercept_scaling)`` of a resolved kernel dict, as every ``_core`` kernel
    function and class takes them (the one place that unpacks a kernel dict for the Rust core).

    A dict without ``"intercept_scaling"`` (a model or file from before issue 23) means ``0.0``: no shift.
    """
    return (kernel["kernel"], kernel["gamma"], kernel["degree"], kernel["coef0"],
            float(kernel.get("intercept_scaling", 0.0)))


def _check_representable(values: np.ndarray, name: str, inputs: str) -> np.ndarray:
    """Refuse a kernel result that is not finite: never return ±inf/NaN silently.

    Finite, validated inputs give non-finite kernel values only by float64 overflow: the
    polynomial kernel ``(gamma <x, v> + coef0)**degree`` with a large ``degree``/``gamma`` or
    large entries, or squared norms / inner products of entries near ``1e154`` and beyond.
    """
    if np.isfinite(values).all():
        return values
    if name == "poly":
        raise ValueError(
            "degree: the polynomial kernel (gamma <x, v> + coef0)**degree overflows float64 for these "
            f"inputs; use a smaller degree, gamma or coef0, or rescale {inputs}"
        )
    raise ValueError(
        f"{inputs}: kernel values overflow float64 (entries too large in magnitude); rescale the inputs"
    )


def check_kernel_domain(A: np.ndarray, name: str, kernel: str, gamma: float, degree: int, coef0: float,
                        *, B: np.ndarray = None, n_terms: int = 1, intercept_scaling: float = 0.0) -> None:
    """Refuse inputs whose kernel values (or sums of ``n_terms`` of them) cannot be represented.

    A priori and from the inputs' largest row norms only (Cauchy–Schwarz: ``|<a, b>| ≤ ||a|| ||b||``):
    squared norms must be finite (the rbf distance ``||a||² + ||b||² − 2<a, b>`` is formed from
    them) and, for ``"linear"``/``"poly"``, ``n_terms · (gamma ||a|| ||b|| + |coef0|)**degree``
    (``gamma = 1``, ``coef0 = 0``, ``degree = 1`` for linear) must stay below the float range.
    The error names ``name`` (or ``degree`` when it is the polynomial degree that overflows).
    """
    def max_sq_norm(M):
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.max(np.einsum("ij,ij->i", M, M))) if M.size else 0.0

    ra2 = max_sq_norm(A)
    rb2 = ra2 if B is None else max_sq_norm(B)
    if not (math.isfinite(ra2) and math.isfinite(rb2)):
        raise ValueError(f"{name}: squared row norms overflow float64 (entries too large in magnitude); "
                         f"rescale {name}")
    shift = float(intercept_scaling) ** 2
    if shift > 0.0 and math.log(1.0 + shift) + math.log(max(n_terms, 1)) > 700.0:
        raise ValueError(f"intercept_scaling: the kernel shift intercept_scaling**2 = {shift:.3g} summed over "
                         f"{n_terms} terms can overflow float64; use a smaller intercept_scaling")
    if kernel == "rbf":
        return
    g, p, c = (1.0, 1, 0.0) if kernel == "linear" else (float(gamma), int(degree), float(coef0))
    base = g * math.sqrt(ra2) * math.sqrt(rb2) + abs(c)
    if base > 0.0 and p * math.log(base) + math.log(max(n_terms, 1)) > 700.0:  # e^700 ≈ 1e304
        if kernel == "poly" and (base <= 1e10 or p > 30):
            raise ValueError(f"degree: the polynomial kernel (gamma <x, v> + coef0)**degree can overflow "
                             f"float64 for {name} (bound {base:.3g}**{p}); use a smaller degree or gamma, "
                             f"or rescale {name}")
        raise ValueError(f"{name}: kernel values can overflow float64 (|K| up to {base:.3g}**{p}); "
                         f"rescale {name}")


def as_f64(arr: np.ndarray) -> np.ndarray:
    # float64 input (any memory layout) is passed through without a copy; float32 is converted once.
    return arr if arr.dtype == np.float64 else arr.astype(np.float64)


def kernel_matrix(A: ArrayLike, B: ArrayLike | None = None, *, kernel: str = "rbf", gamma: float | None = None,
                  degree: int = 3, coef0: float = 1.0, intercept_scaling: float = 0.0) -> NDArray[np.float64]:
    """Kernel matrix ``K(A, B) + intercept_scaling**2`` between the rows of ``A`` and ``B``.

    Parameters
    ----------
    A : array-like of shape (n_samples_A, n_features)
        First set of points (float64 or float32, any memory layout; finite, non-empty).
    B : array-like of shape (n_samples_B, n_features), optional
        Second set of points. ``None`` computes the Gram matrix ``K(A, A)`` (for ``"rbf"`` its
        diagonal is exactly 1, as in scikit-learn).
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        Kernel name (``"polynomial"`` is an alias of ``"poly"``).
    gamma : float, optional
        ``gamma > 0`` of ``"rbf"`` and ``"poly"``; ``None`` means ``1.0`` (for rows in the unit ball), ``"auto"``
        ``1 / n_features``.
    degree : int, default=3
        Degree of ``"poly"`` (a positive integer).
    coef0 : float, default=1.0
        Constant term of ``"poly"``.
    intercept_scaling : float, default=0.0
        Public ``b >= 0`` of the regularised intercept: the kernel is shifted to ``K(x, v) + b**2``, the kernel of
        the augmented feature map ``(phi(x), b)`` (what KernelSVM and KernelLogisticRegression evaluate with their
        ``intercept_scaling``). ``0`` is the plain kernel (bit-for-bit).

    Returns
    -------
    K : ndarray of shape (n_samples_A, n_samples_B), float64
        The kernel values; agrees with ``sklearn.metrics.pairwise_kernels(A, B, metric=kernel,
        gamma=gamma, degree=degree, coef0=coef0)``.

    Raises
    ------
    ValueError
        For NaN/inf or empty input, wrong number of dimensions, different feature counts, an
        unknown kernel or invalid ``gamma``/``degree``/``coef0``, or kernel values that overflow
        float64 (e.g. ``degree=10**9``); the message names the argument.
    MemoryError
        If the ``n_samples_A x n_samples_B`` output cannot be allocated (message names ``A``).
    TypeError
        For non-numeric or scipy.sparse input.

    See Also
    --------
    kernel_predict : ``K(Z, X) @ mu`` without building the matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import kernel_matrix
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> kernel_matrix(X, kernel="linear")
    array([[0., 0.],
           [0., 1.]])
    >>> np.round(kernel_matrix(X, kernel="rbf", gamma=1.0), 4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    >>> kernel_matrix(X, kernel="linear", intercept_scaling=0.5)
    array([[0.25, 0.25],
           [0.25, 1.25]])
    """
    A = check_array(A, "A")
    if B is not None:
        B = check_array(B, "B", n_features=A.shape[1])
    name, gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, A.shape[1])
    b = check_intercept_scaling(intercept_scaling)
    K = _core.kernel_matrix(
        as_f64(A), None if B is None else as_f64(B), name, gamma, degree, coef0, b
    )
    return _check_representable(K, name, "A and B")


def fused_predict(Z: np.ndarray, X: np.ndarray, mu: np.ndarray, kernel: dict, *,
                  n_rows_total: Optional[int] = None) -> np.ndarray:
    """``K(Z, X) @ mu`` by the Rust engine on validated inputs, as rows of a call on ``n_rows_total`` query rows.

    ``kernel`` holds the resolved ``kernel``, ``gamma``, ``degree``, ``coef0`` (and ``intercept_scaling``, default 0). ``Z`` may be a block of
    ``n_rows_total`` rows (default: ``Z`` is all of them): the engine takes its direct dot-product path for at most
    :data:`DIRECT_MAX_ROWS` rows and GEMM beyond, so a block that small of a larger call is padded (its last row
    repeated) to ``DIRECT_MAX_ROWS + 1`` rows, and every row gets exactly the bits the whole call gives it (each
    row's value depends only on that row and the code path). No new values enter: overflow checks are unaffected.
    """
    m = Z.shape[0]
    n_total = m if n_rows_total is None else int(n_rows_total)
    if m <= DIRECT_MAX_ROWS < n_total:
        Z = np.concatenate([Z, np.repeat(Z[-1:], DIRECT_MAX_ROWS + 1 - m, axis=0)])
    f = _core.kernel_predict(as_f64(Z), as_f64(X), as_f64(mu), *kernel_args(kernel))
    return f[:m] if f.shape[0] != m else f


def _predict_checked(Z: np.ndarray, X: np.ndarray, mu: np.ndarray, kernel: dict, n_rows_total: int) -> np.ndarray:
    """:func:`kernel_predict` on validated inputs (one block of a Dask ``Z``, or all of an in-memory one)."""
    return _check_representable(fused_predict(Z, X, mu, kernel, n_rows_total=n_rows_total), kernel["kernel"],
                                 "Z, X and mu")


@overload
def kernel_predict(Z: DaskArrayLike, X: ArrayLike, mu: ArrayLike, *, kernel: str = ..., gamma: float | None = ...,
                   degree: int = ..., coef0: float = ..., intercept_scaling: float = ...) -> DaskArray: ...
@overload
def kernel_predict(Z: ArrayLike, X: ArrayLike, mu: ArrayLike, *, kernel: str = ..., gamma: float | None = ...,
                   degree: int = ..., coef0: float = ..., intercept_scaling: float = ...) -> NDArray[np.float64]: ...
def kernel_predict(Z: ArrayLike | DaskArrayLike, X: ArrayLike, mu: ArrayLike, *, kernel: str = "rbf",
                   gamma: float | None = None, degree: int = 3, coef0: float = 1.0,
                   intercept_scaling: float = 0.0) -> NDArray[np.float64] | DaskArray:
    """Kernel expansion ``f(Z) = K(Z, X) @ mu``, i.e. ``f(z) = sum_i mu_i K(z, x_i)`` (``+ b**2 sum_i mu_i``).

    The ``m x n`` kernel matrix is never materialised: the Rust core computes it block by block
    (one GEMM per 64 x 512 block, the kernel map and the product with ``mu`` fused while the block
    is in cache), in parallel over blocks. Extra memory is ``O(m + n)`` plus a few MiB of block
    buffers, and the result is bit-for-bit independent of the number of threads. The linear
    kernel is computed as ``Z @ (X.T @ mu)``.

    Parameters
    ----------
    Z : array-like, Dask array or Dask DataFrame of shape (m, n_features)
        Query points (float64 or float32, any memory layout; finite, non-empty). A Dask ``Z`` gives a lazy
        result (see Notes).
    X : array-like of shape (n, n_features)
        Support points (e.g. the training points of a kernel machine); in memory.
    mu : array-like of shape (n,)
        Weights of the support points (``w = sum_i mu_i phi(x_i)``); in memory.
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        Kernel name (``"polynomial"`` is an alias of ``"poly"``).
    gamma : float, optional
        ``gamma > 0`` of ``"rbf"`` and ``"poly"``; ``None`` means ``1.0`` (for rows in the unit ball), ``"auto"``
        ``1 / n_features``.
    degree : int, default=3
        Degree of ``"poly"`` (a positive integer).
    coef0 : float, default=1.0
        Constant term of ``"poly"``.
    intercept_scaling : float, default=0.0
        Public ``b >= 0`` of the regularised intercept: the kernel is shifted to ``K(x, v) + b**2``, the kernel of
        the augmented feature map ``(phi(x), b)`` (what KernelSVM and KernelLogisticRegression evaluate with their
        ``intercept_scaling``). ``0`` is the plain kernel (bit-for-bit).

    Returns
    -------
    f : ndarray of shape (m,), float64, or a Dask array if ``Z`` is one
        Agrees with ``sklearn.metrics.pairwise_kernels(Z, X, metric=kernel, ...) @ mu`` up to
        rounding (about 1e-13 relative to ``|K| @ |mu|`` on well-scaled data).

    Raises
    ------
    ValueError
        For NaN/inf or empty input, wrong number of dimensions, different feature counts,
        ``len(mu) != len(X)``, an unknown kernel or invalid ``gamma``/``degree``/``coef0``; the
        message names the argument.
    TypeError
        For a Dask ``X`` or ``mu`` (only the query points may be a Dask collection).

    Notes
    -----
    With a Dask ``Z`` (array, or DataFrame of numeric columns, whose partition lengths are counted), the result is
    a lazy Dask array with ``Z``'s row chunks; computing it evaluates every block of rows with the Rust engine on a
    worker, ``X`` and ``mu`` being sent to each worker once. Each block's values are bit-for-bit those of the
    in-memory call on all of ``Z``. Everything about ``X``, ``mu``, the kernel parameters and ``Z``'s shape is
    checked when this function is called; ``Z``'s values (NaN/inf) and the overflow check of the results are
    checked block by block when the result is computed, where the same ``ValueError`` is raised.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore import kernel_predict
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> kernel_predict(X, X, np.array([1.0, -1.0]), kernel="linear")
    array([ 0., -1.])

    On a Dask array (lazy; computed here with the synchronous scheduler):

    >>> import dask.array as da
    >>> Z, mu = np.random.default_rng(0).normal(size=(1000, 2)), np.array([1.0, -1.0])
    >>> f = kernel_predict(da.from_array(Z, chunks=300), X, mu, gamma=0.5)
    >>> f.chunks
    ((300, 300, 300, 100),)
    >>> bool(np.array_equal(f.compute(scheduler="synchronous"), kernel_predict(Z, X, mu, gamma=0.5)))
    True
    """
    why = "the support points and weights are sent to every worker in memory (only Z may be a Dask collection)"
    refuse_dask(X, "X", why)
    refuse_dask(mu, "mu", why)
    Z = check_rows(Z, "Z")
    X = check_array(X, "X", n_features=Z.shape[1])
    mu = check_vector(mu, "mu", length=X.shape[0])
    name, gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, Z.shape[1])
    b = check_intercept_scaling(intercept_scaling)
    params = dict(kernel=name, gamma=gamma, degree=degree, coef0=coef0, intercept_scaling=b)
    return map_rows(_predict_checked, Z, as_f64(X), as_f64(mu), params, Z.shape[0], name="Z")


def feature_map_radius(data_norm: float, *, kernel: str = "rbf", gamma: Optional[float] = None, degree: int = 3,
                       coef0: float = 1.0, n_features: Optional[int] = None, intercept_scaling: float = 0.0) -> float:
    """Feature-map radius ``R_phi = max_{||z|| <= data_norm} ||phi(z)||`` of a kernel.

    ``R_phi**2 = max K(z, z)`` over the ball is ``data_norm**2`` (linear),
    ``(gamma data_norm**2 + coef0)**degree`` (poly) and ``1`` (rbf). ``R_phi`` enters the
    sensitivity of every kernel mechanism, ``S = 2 L R_phi**2 / (lambda n)``; ``data_norm`` is a
    public bound the user declares on the norm of every training and query point, never derived
    from the data.

    Parameters
    ----------
    data_norm : float
        Radius ``r > 0`` of the input domain ``{z : ||z|| <= r}``.
    kernel : {"rbf", "poly", "linear"}, default="rbf"
        Kernel name (``"polynomial"`` is an alias of ``"poly"``).
    gamma : float or "auto", optional
        ``gamma > 0``; ``None`` means ``1.0``, ``"auto"`` ``1 / n_features`` (then ``n_features`` is required
        for ``"poly"``).
    degree : int, default=3
        Degree of ``"poly"``.
    coef0 : float, default=1.0
        Constant term of ``"poly"``; must be ``>= 0`` here, otherwise ``K(z, z)`` is not
        maximised on the sphere (and the kernel is not positive semi-definite), so no valid
        bound exists.
    n_features : int, optional
        Number of features, used to resolve ``gamma="auto"``.
    intercept_scaling : float, default=0.0
        Public ``b >= 0`` of the regularised intercept: the kernel ``K + b**2`` has ``R_phi'**2 = R_phi**2 + b**2``
        (rounded up).

    Returns
    -------
    R_phi : float

    Raises
    ------
    ValueError
        ``data_norm`` not finite or ``<= 0``, ``coef0 < 0`` for ``"poly"``, ``gamma="auto"`` without
        ``n_features`` for ``"poly"``, invalid kernel parameters, or an overflowing bound.

    Examples
    --------
    >>> from dpcore import feature_map_radius
    >>> feature_map_radius(2.0, kernel="poly", gamma=0.5, degree=2, coef0=0.0)
    2.0
    >>> round(feature_map_radius(1.0, kernel="rbf", intercept_scaling=1.0), 6)  # sqrt(1 + 1)
    1.414214
    """
    data_norm = check_positive(data_norm, "data_norm")
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
        n_features = int(n_features)
    name, gamma, degree, coef0 = check_kernel_params(kernel, gamma, degree, coef0, n_features)
    b = check_intercept_scaling(intercept_scaling)
    return math.sqrt(_core.feature_map_radius_sq(data_norm, name, gamma, degree, coef0, b))
