r"""One total budget for a pipeline of private steps: :func:`make_private_pipeline`, :func:`pipeline_dp_event`.

A pipeline fitted on the same records runs its steps one after the other, each step seeing the output
of the earlier (released or public) steps: *adaptive sequential composition*. Its mechanism is the
composition of its steps' mechanisms (dp_accounting ``ComposedDpEvent``), and under basic
composition its guarantee is ``(Σ ε_i, Σ δ_i)``. Steps that map each row on its own with public
parameters (:class:`RowNormClipper`, :class:`OneHotEncoder`, a scikit-learn ``FunctionTransformer``
with a fixed function) contribute ``NoOpDpEvent``. Steps inside a ``ColumnTransformer`` or a
``FeatureUnion`` read the same records (other columns of the same people), so they compose
sequentially too — never in parallel.

:func:`make_private_pipeline` splits a total ``(ε, δ)`` over the private steps (by ``weights``, equal by
default; δ only over the steps that use one), points every step at one :class:`~dpcore.BudgetAccountant`
and checks before the first step runs that the whole pipeline fits in it. A plain scikit-learn
``Pipeline`` of dpcore steps works as well (each step spends the budget it was given, to the accountant it
was given); :func:`pipeline_dp_event` gives its composed event after ``fit``.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from dp_accounting import dp_event as _dpe
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.compose import ColumnTransformer

from dpcore._internal.exact import float_down
from dpcore._internal.validation import check_delta, check_epsilon
from dpcore.accounting.accountant import BudgetAccountant
from dpcore.accounting.events import compose_events
from dpcore.preprocessing._common import check_accountant

__all__ = ["PrivatePipeline", "make_private_pipeline", "pipeline_dp_event"]

logger = logging.getLogger(__name__)


def _children(est: Any, fitted: bool) -> Optional[List[Tuple[str, Any]]]:
    if isinstance(est, Pipeline):
        return [(name, step) for name, step in est.steps]
    if isinstance(est, ColumnTransformer):
        items = est.transformers_ if fitted and hasattr(est, "transformers_") else est.transformers
        return [(name, t) for name, t, _ in items]
    if isinstance(est, FeatureUnion):
        return [(name, t) for name, t in est.transformer_list]
    return None


def _walk(est: Any, prefix: str = "", fitted: bool = False) -> Iterator[Tuple[str, Any]]:
    """(parameter path, leaf estimator) of every leaf, in the order the pipeline fits them."""
    kids = _children(est, fitted)
    if kids is None:
        yield prefix, est
        return
    for name, child in kids:
        if child is None or isinstance(child, str):  # "drop", "passthrough"
            continue
        yield from _walk(child, f"{prefix}__{name}" if prefix else name, fitted)


def _is_private(est: Any) -> bool:
    spends = getattr(est, "_spends_budget", None)
    if callable(spends):
        return bool(spends())
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    return "epsilon" in params and "accountant" in params


def _needs_delta(est: Any) -> bool:
    needs = getattr(est, "_needs_delta", None)
    if callable(needs):
        return bool(needs())
    params = est.get_params(deep=False)
    return "delta" in params and params.get("noise", "gaussian") != "gamma" if "noise" in params else "delta" in params


def pipeline_dp_event(estimator: Any) -> _dpe.DpEvent:
    """The composed ``DpEvent`` of a fitted pipeline (``Pipeline``, ``ColumnTransformer``, ``FeatureUnion``, nested).

    Every fitted leaf with a ``dp_event_`` contributes it, in fitting order (adaptive sequential
    composition: the steps read the same records). Leaves without one must be public, row-by-row maps
    (a ``FunctionTransformer`` with a fixed function): their event is taken as ``NoOpDpEvent``; a
    fitted leaf that *learns* from the data without declaring a ``dp_event_`` (scikit-learn's own
    ``StandardScaler``, say) is refused, since its release is not covered by any proof.

    Parameters
    ----------
    estimator : fitted Pipeline, ColumnTransformer, FeatureUnion or estimator

    Returns
    -------
    dp_accounting.DpEvent
        ``ComposedDpEvent`` of the steps' events (one event as is; ``NoOpDpEvent`` if none).

    Raises
    ------
    ValueError
        For a step that learns from the data with no ``dp_event_`` (a non-private step).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import Pipeline
    >>> from dpcore.preprocessing import RowNormClipper, StandardScaler, pipeline_dp_event
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> pipe = Pipeline([("scale", StandardScaler(epsilon=0.5, bounds=(-4, 4), estimate_bounds=False,
    ...                                           random_state=0)),
    ...                  ("clip", RowNormClipper(1.0))]).fit(X)
    >>> pipeline_dp_event(pipe)
    ComposedDpEvent(events=[EpsilonDeltaDpEvent(epsilon=0.5, delta=0.0), NoOpDpEvent()])
    """
    from sklearn.preprocessing import FunctionTransformer

    events = []
    for path, leaf in _walk(estimator, fitted=True):
        ev = getattr(leaf, "dp_event_", None)
        if ev is None:
            if isinstance(leaf, FunctionTransformer) or not _fitted_attrs(leaf):
                ev = _dpe.NoOpDpEvent()
            else:
                raise ValueError(f"step {path or type(leaf).__name__!r} ({type(leaf).__name__}) was fitted on the data "
                                 "but has no dp_event_: it is not a private step and its release is not covered")
        events.append(ev)
    return compose_events(*events) if events else _dpe.NoOpDpEvent()


def _fitted_attrs(est: Any) -> bool:
    return any(k.endswith("_") and not k.startswith("_") and k not in ("n_features_in_", "feature_names_in_")
               for k in vars(est))


class PrivatePipeline(Pipeline):
    r"""A scikit-learn ``Pipeline`` whose private steps share one total ``(epsilon, delta)`` and one accountant.

    Built by :func:`make_private_pipeline` (see there). At ``fit``: the private leaves (every step
    with ``epsilon`` and ``accountant`` parameters that spends budget, nested ``ColumnTransformer``/
    ``FeatureUnion``/``Pipeline`` included) get their share of ``epsilon`` (``weights``; equal by
    default) and of ``delta`` (equally, among the steps that use one), all point at the same
    accountant — ``accountant``, else the default one, else a fresh ``BudgetAccountant(epsilon,
    delta)`` exposed as ``accountant_`` — and the whole ``(epsilon, delta)`` is checked against it
    before the first step reads the data. ``dp_event_`` is the composition of the steps' events.

    Parameters
    ----------
    steps : list of (str, estimator)
        As in :class:`sklearn.pipeline.Pipeline`.
    epsilon : float, default=1.0
        Total ε of the pipeline.
    delta : float, default=0.0
        Total δ (needed when a step uses Gaussian noise).
    weights : sequence of float, optional
        Relative share of ε of each private leaf, in fitting order (default: equal shares).
    accountant : BudgetAccountant, optional
        Charged by every private step.
    memory, verbose :
        As in :class:`sklearn.pipeline.Pipeline`.

    Attributes
    ----------
    dp_event_ : dp_accounting.DpEvent
        ``ComposedDpEvent`` of the steps' events.
    accountant_ : BudgetAccountant
        The accountant every step charged.
    budget_split_ : list of (str, float, float)
        ``(parameter path, ε, δ)`` of every private leaf.

    Examples
    --------
    >>> import numpy as np
    >>> import dpcore
    >>> from dpcore.preprocessing import RowNormClipper, StandardScaler, make_private_pipeline
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(3.0, 5.0, size=(2000, 4)); y = (X.sum(axis=1) > 12).astype(int)
    >>> pipe = make_private_pipeline(
    ...     StandardScaler(bounds=(-30, 30), random_state=0), RowNormClipper(1.0, scale=0.5),
    ...     dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=0),
    ...     epsilon=1.0, delta=1e-6, weights=(1, 3))
    >>> _ = pipe.fit(X, y)
    >>> [(name, eps, float(f"{delta:.6g}")) for name, eps, delta in pipe.budget_split_]   # δ on the budget grid
    [('standardscaler', 0.25, 0.0), ('objectiveperturbation', 0.75, 1e-06)]
    >>> [round(v, 12) for v in pipe.accountant_.remaining()], bool(pipe.score(X, y) > 0.9)
    ([0.0, 0.0], True)
    """

    def __init__(self, steps: List[Tuple[str, Any]], *, epsilon: float = 1.0, delta: float = 0.0,
                 weights: Optional[Sequence[float]] = None, accountant: Any = None, memory: Any = None,
                 verbose: bool = False) -> None:
        super().__init__(steps, memory=memory, verbose=verbose)
        self.epsilon = epsilon
        self.delta = delta
        self.weights = weights
        self.accountant = accountant

    def _split(self) -> List[Tuple[str, float, float]]:
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        check_accountant(self.accountant)
        leaves = [(path, leaf) for path, leaf in _walk(self) if _is_private(leaf)]
        if not leaves:
            raise ValueError("the pipeline has no private step to give the budget to")
        if self.weights is None:
            w = [Fraction(1)] * len(leaves)
        else:
            try:
                w = [Fraction(float(v)) for v in self.weights]
            except (TypeError, ValueError):
                raise TypeError(f"weights must be a sequence of positive numbers, got {self.weights!r}") from None
            if len(w) != len(leaves):
                raise ValueError(f"weights has {len(w)} entries but the pipeline has {len(leaves)} private steps "
                                 f"({', '.join(p for p, _ in leaves)})")
            if not all(v > 0 for v in w):
                raise ValueError(f"weights must be positive, got {self.weights!r}")
        total = sum(w)
        need_delta = [_needs_delta(leaf) for _, leaf in leaves]
        n_delta = sum(need_delta)
        if n_delta and delta == 0.0:
            names = [p for (p, _), nd in zip(leaves, need_delta) if nd]
            raise ValueError(f"delta must be > 0: the steps {names} use a δ")
        out = []
        for (path, _), wi, nd in zip(leaves, w, need_delta):
            # round every share down: the shares never add up to more than the total
            eps_i = float_down(Fraction(epsilon) * wi / total)
            delta_i = float_down(Fraction(delta) / n_delta) if nd else 0.0
            out.append((path, eps_i, delta_i))
        return out

    def _distribute(self) -> List[Tuple[str, float, float]]:
        split = self._split()
        params = {}
        for path, eps_i, delta_i in split:
            params[f"{path}__epsilon"] = eps_i
            if delta_i > 0.0:
                params[f"{path}__delta"] = delta_i
        self.set_params(**params)
        return split

    def fit(self, X: Any, y: Any = None, **params: Any) -> "PrivatePipeline":
        """Split the budget, check it fits the accountant, then fit the steps in order.

        Parameters
        ----------
        X, y, **params :
            As in :meth:`sklearn.pipeline.Pipeline.fit`.

        Returns
        -------
        self
        """
        split = self._distribute()
        acc = self.accountant if self.accountant is not None else BudgetAccountant.default()
        if acc is None:
            acc = BudgetAccountant(check_epsilon(self.epsilon), check_delta(self.delta))
        eps_sum = float(sum(Fraction(e) for _, e, _ in split))
        delta_sum = float(sum(Fraction(d) for _, _, d in split))
        acc.check(eps_sum, delta_sum, label="PrivatePipeline")  # refuses before any step reads the data
        self.set_params(**{f"{path}__accountant": acc for path, _, _ in split})
        logger.info("PrivatePipeline: budget split %s", split)
        super().fit(X, y, **params)
        self.accountant_ = acc
        self.budget_split_ = split
        self.dp_event_ = pipeline_dp_event(self)
        return self

    def fit_transform(self, X: Any, y: Any = None, **params: Any) -> Any:
        """``fit(X, y).transform(X)`` (the pipeline must end with a transformer).

        Parameters
        ----------
        X, y, **params :
            As in :meth:`sklearn.pipeline.Pipeline.fit_transform`.

        Returns
        -------
        ndarray
        """
        return self.fit(X, y, **params).transform(X)


def make_private_pipeline(*steps: Any, epsilon: float, delta: float = 0.0, weights: Optional[Sequence[float]] = None,
                          accountant: Any = None, memory: Any = None, verbose: bool = False) -> PrivatePipeline:
    r"""A :class:`PrivatePipeline` of ``steps`` (named as by :func:`sklearn.pipeline.make_pipeline`) under one budget.

    The private steps receive their share of ``(epsilon, delta)`` (``weights``: relative ε shares in
    fitting order, equal by default; δ is split equally among the steps that use one), all charge one
    accountant, and ``dp_event_`` is the composition of the steps' events (module docstring).

    Parameters
    ----------
    *steps : estimators
        Transformers then a final estimator (dpcore's private steps, public row-by-row maps).
    epsilon : float
        Total ε > 0.
    delta : float, default=0.0
        Total δ in [0, 1).
    weights : sequence of float, optional
        Relative ε shares of the private steps, in fitting order.
    accountant : BudgetAccountant, optional
        Charged by every step (default: the default accountant, else a fresh one with the total budget).
    memory, verbose :
        As in :func:`sklearn.pipeline.make_pipeline`.

    Returns
    -------
    PrivatePipeline

    Examples
    --------
    >>> import numpy as np
    >>> import dpcore
    >>> from dpcore.preprocessing import RowNormClipper, StandardScaler, make_private_pipeline
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(3.0, 5.0, size=(2000, 4)); y = (X.sum(axis=1) > 12).astype(int)
    >>> acc = dpcore.BudgetAccountant(epsilon=1.0, delta=1e-6)
    >>> pipe = make_private_pipeline(
    ...     StandardScaler(bounds=(-30, 30), random_state=0), RowNormClipper(1.0, scale=0.5),
    ...     dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=0),
    ...     epsilon=1.0, delta=1e-6, accountant=acc).fit(X, y)
    >>> type(pipe.dp_event_).__name__, len(pipe.dp_event_.events), [round(v, 12) for v in acc.remaining()]
    ('ComposedDpEvent', 3, [0.0, 0.0])
    """
    base = make_pipeline(*steps, memory=memory, verbose=verbose)
    return PrivatePipeline(base.steps, epsilon=epsilon, delta=delta, weights=weights, accountant=accountant,
                           memory=memory, verbose=verbose)
