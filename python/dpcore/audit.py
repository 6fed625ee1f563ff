"""Empirical privacy auditing: statistically sound *lower* bounds on ε.

If a mechanism ``M`` is (ε, δ)-DP then for every pair of neighbouring inputs ``D, D'`` and every
event ``E``

    P[M(D) ∈ E] ≤ e^ε · P[M(D') ∈ E] + δ      ⇒      ε ≥ ln((P[M(D) ∈ E] − δ) / P[M(D') ∈ E]).

An audit draws ``n`` independent outputs of ``M`` on each input, bounds the two probabilities with
exact one-sided Clopper–Pearson intervals (lower for the numerator, upper for the denominator) and
reports the resulting lower bound on ε.  With probability ≥ 1 − α the reported bound is ≤ the true
ε of the mechanism, so a bound **above** the claimed ε proves (at confidence 1 − α) that the claim
is false — e.g. that the noise is too small or the sensitivity wrong.  A bound below the claim
proves nothing about privacy (it only shows the audit could not find a violation), which is why a
good audit is also shown to *catch* deliberately broken copies of the mechanism.

Validity of the confidence level requires that the events be chosen **independently of the
samples** they are evaluated on: either fixed before sampling (``selection="fixed"``, with a
Bonferroni correction over all candidate tests) or chosen on a separate split of the samples
(``selection="split"``).

Typical use::

    import numpy as np
    from dpcore import audit
    from dpcore.mechanisms import noise
    def sampler(value, n, seed):
        return noise.sample_laplace_mechanism(value, 1.0, 1.0, n, random_state=seed)

    res = audit.audit(sampler, 0.0, 1.0, n_samples=10**6,
                      thresholds=np.linspace(-1, 6, 29), random_state=0)
    res.assert_private(1.0)
"""

from __future__ import annotations

import logging
import numbers
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union, Literal

import numpy as np
from scipy import stats

from dpcore._internal.validation import check_delta, check_probability
from dpcore._internal.progress import check_verbose, progress_bar

logger = logging.getLogger(__name__)

__all__ = ["clopper_pearson", "epsilon_lower_bound", "audit", "AuditResult"]


# ----------------------------------------------------------------------------------------------
# confidence bounds
# ----------------------------------------------------------------------------------------------
def _check_count(k, n, k_name: str, n_name: str) -> Tuple[int, int]:
    for v, name in ((k, k_name), (n, n_name)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    k, n = int(k), int(n)
    if n < 1:
        raise ValueError(f"{n_name} must be >= 1, got {n}")
    if not 0 <= k <= n:
        raise ValueError(f"{k_name} must lie in [0, {n_name}] = [0, {n}], got {k}")
    return k, n


def _cp_lower(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(all="ignore"):
        lo = stats.beta.ppf(alpha, np.maximum(k, 1.0), n - k + 1.0)
    return np.where(k <= 0, 0.0, lo)


def _cp_upper(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(all="ignore"):
        hi = stats.beta.isf(alpha, k + 1.0, np.maximum(n - k, 1.0))
    return np.where(k >= n, 1.0, hi)


def clopper_pearson(k: int, n: int, alpha: float) -> Tuple[float, float]:
    """Exact one-sided Clopper–Pearson bounds for a binomial proportion.

    For ``k ~ Binomial(n, p)``: ``P[p ≥ lo] ≥ 1 − α`` and ``P[p ≤ hi] ≥ 1 − α`` (each bound
    separately; the two-sided interval [lo, hi] has coverage ≥ 1 − 2α).

        lo = Beta⁻¹(α; k, n − k + 1)          (0 when k = 0)
        hi = Beta⁻¹(1 − α; k + 1, n − k)      (1 when k = n)

    Parameters
    ----------
    k : int
        Number of successes, 0 ≤ k ≤ n.
    n : int
        Number of trials, n ≥ 1.
    alpha : float
        Error probability of each one-sided bound, 0 < α < 1.

    Returns
    -------
    (float, float)
        ``(lo, hi)``.

    Examples
    --------
    >>> from dpcore.audit import clopper_pearson
    >>> lo, hi = clopper_pearson(50, 100, 0.05)
    >>> round(lo, 3), round(hi, 3)
    (0.414, 0.586)
    """
    k, n = _check_count(k, n, "k", "n")
    alpha = check_probability(alpha, "alpha")
    return float(_cp_lower(k, n, alpha)), float(_cp_upper(k, n, alpha))


def _eps_lb_vec(k_a, n_a, k_b, n_b, delta: float, alpha: float) -> np.ndarray:
    """Vectorised :func:`epsilon_lower_bound` (``alpha`` is the total for each test)."""
    p_a = _cp_lower(k_a, n_a, alpha / 2.0)
    p_b = _cp_upper(k_b, n_b, alpha / 2.0)
    num = p_a - delta
    with np.errstate(all="ignore"):
        val = np.log(num / p_b)
    val = np.where((num > 0) & (p_b > 0), val, 0.0)
    return np.maximum(val, 0.0)


def epsilon_lower_bound(k_a: int, n_a: int, k_b: int, n_b: int, *, delta: float = 0.0, alpha: float = 1e-6) -> float:
    """Lower confidence bound on ε from event counts on two neighbouring inputs.

    With ``p_a = P[M(D) ∈ E]`` estimated by ``k_a / n_a`` and ``p_b = P[M(D') ∈ E]`` by
    ``k_b / n_b``, (ε, δ)-DP implies ``ε ≥ ln((p_a − δ) / p_b)``.  Replacing ``p_a`` by its
    Clopper–Pearson lower bound and ``p_b`` by its upper bound, each at level α/2, gives a bound
    that holds with probability ≥ 1 − α.

    Parameters
    ----------
    k_a, n_a : int
        Occurrences of ``E`` among ``n_a`` independent outputs of ``M(D)``.
    k_b, n_b : int
        Occurrences of ``E`` among ``n_b`` independent outputs of ``M(D')``.
    delta : float, default 0.0
        The δ of the claim being audited, in [0, 1).
    alpha : float, default 1e-6
        Total error probability, 0 < α < 1.

    Returns
    -------
    float
        The lower bound on ε (0.0 when the bound is vacuous).

    Examples
    --------
    An event seen 600 times out of 1000 on one input and 400 times on its neighbour:

    >>> from dpcore.audit import epsilon_lower_bound
    >>> round(epsilon_lower_bound(600, 1000, 400, 1000, alpha=0.05), 3)
    0.277
    """
    k_a, n_a = _check_count(k_a, n_a, "k_a", "n_a")
    k_b, n_b = _check_count(k_b, n_b, "k_b", "n_b")
    delta = check_delta(delta, "delta")
    alpha = check_probability(alpha, "alpha")
    return float(_eps_lb_vec(k_a, n_a, k_b, n_b, delta, alpha))


# ----------------------------------------------------------------------------------------------
# audit driver
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability ≥ 1 − ``alpha``, the true ε of the mechanism (at the given δ) is at least
        this value.
    event : str
        The event and ordering that produced the bound, e.g.
        ``"P[s > 1.5 | input_b] vs P[s > 1.5 | input_a]"`` (numerator first).
    count_num, count_den : int
        Occurrences of the event in the numerator / denominator samples used for the bound.
    n : int
        Number of samples per input used for the bound (half of ``n_samples`` with
        ``selection="split"``).
    n_samples : int
        Number of samples drawn per input.
    alpha : float
        Overall error probability of the audit.
    delta : float
        δ of the audited claim.
    selection : str
        ``"fixed"`` or ``"split"``.
    n_tests : int
        Number of (event, ordering) tests the Bonferroni correction covered.
    p_num_lower, p_den_upper : float
        The Clopper–Pearson bounds behind the reported value.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcore.audit import audit
    >>> from dpcore.mechanisms import noise
    >>> def sampler(value, n_samples, seed):
    ...     return noise.sample_laplace_mechanism(value, 1.0, 1.0, n_samples, random_state=seed)
    >>> res = audit(sampler, 0.0, 1.0, n_samples=20_000, thresholds=[0.5, 1.0], alpha=1e-3,
    ...             random_state=0)
    >>> res.check(1.0)  # the lower bound does not exceed the claimed ε
    True
    >>> res.assert_private(1.0)
    """

    epsilon_lower_bound: float
    event: str
    count_num: int
    count_den: int
    n: int
    n_samples: int
    alpha: float
    delta: float
    selection: str
    n_tests: int
    p_num_lower: float
    p_den_upper: float

    @property
    def counts(self) -> Tuple[int, int]:
        """``(count_num, count_den)``."""
        return self.count_num, self.count_den

    def check(self, claimed_epsilon: float) -> bool:
        """True iff the lower bound does not contradict the claim (``lower bound ≤ claimed ε``).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore.audit import audit
        >>> from dpcore.mechanisms import noise
        >>> def sampler(value, n_samples, seed):
        ...     return noise.sample_laplace_mechanism(value, 1.0, 1.0, n_samples, random_state=seed)
        >>> res = audit(sampler, 0.0, 1.0, n_samples=20_000, thresholds=[0.5, 1.0], alpha=1e-3,
        ...             random_state=0)
        >>> res.check(1.0), res.check(0.01)   # consistent with ε = 1; ε = 0.01 is refuted
        (True, False)
        """
        claimed = float(claimed_epsilon)
        if not claimed >= 0.0:
            raise ValueError(f"claimed_epsilon must be >= 0, got {claimed_epsilon!r}")
        return self.epsilon_lower_bound <= claimed

    def assert_private(self, claimed_epsilon: float) -> None:
        """Raise ``AssertionError`` if the audit refutes the claimed ε (at confidence 1 − α).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcore.audit import audit
        >>> from dpcore.mechanisms import noise
        >>> def sampler(value, n_samples, seed):
        ...     return noise.sample_laplace_mechanism(value, 1.0, 1.0, n_samples, random_state=seed)
        >>> res = audit(sampler, 0.0, 1.0, n_samples=20_000, thresholds=[0.5, 1.0], alpha=1e-3,
        ...             random_state=0)
        >>> res.assert_private(1.0)          # silent: the claim is not refuted
        >>> try:
        ...     res.assert_private(0.01)
        ... except AssertionError:
        ...     print("refuted")
        refuted
        """
        if not self.check(claimed_epsilon):
            raise AssertionError(
                f"privacy claim refuted: claimed epsilon={float(claimed_epsilon):g} "
                f"(delta={self.delta:g}) but with confidence 1 - {self.alpha:g} the mechanism's "
                f"epsilon is >= {self.epsilon_lower_bound:.4f} (event {self.event}: "
                f"{self.count_num}/{self.n} vs {self.count_den}/{self.n}, "
                f"p_num >= {self.p_num_lower:.4g}, p_den <= {self.p_den_upper:.4g}; "
                f"{self.n_tests} tests, selection={self.selection!r})"
            )

    def __str__(self) -> str:
        return (
            f"AuditResult(epsilon >= {self.epsilon_lower_bound:.4f} at confidence 1 - {self.alpha:g}, "
            f"delta={self.delta:g}, event {self.event}, counts {self.count_num}/{self.n} vs "
            f"{self.count_den}/{self.n}, {self.n_tests} tests, selection={self.selection!r})"
        )


def _seed_ints(random_state) -> Tuple[int, int]:
    """Two independent non-negative 63-bit integer seeds derived via SeedSequence.spawn."""
    if isinstance(random_state, np.random.SeedSequence):
        ss = random_state
    elif random_state is None:
        ss = np.random.SeedSequence()
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        ss = np.random.SeedSequence(int(random_state))
    else:
        raise TypeError(
            "random_state must be None, a non-negative int or a numpy SeedSequence, "
            f"got {type(random_state).__name__}"
        )
    child_a, child_b = ss.spawn(2)
    return tuple(int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in (child_a, child_b))


def _draw(sampler, value, n_samples: int, seed: int, name: str) -> np.ndarray:
    out = np.asarray(sampler(value, n_samples, seed))
    if out.ndim == 0 or out.shape[0] != n_samples:
        raise ValueError(
            f"sampler must return an array with n_samples={n_samples} rows for {name}, "
            f"got shape {out.shape}"
        )
    return out


def _statistic(out: np.ndarray, statistic, direction, name: str) -> np.ndarray:
    if statistic is not None:
        s = np.asarray(statistic(out), dtype=np.float64)
    elif direction is not None:
        if out.ndim != 2 or out.shape[1] != direction.shape[0]:
            raise ValueError(
                f"direction has length {direction.shape[0]} but the sampler output for {name} has "
                f"shape {out.shape}; expected (n_samples, {direction.shape[0]})"
            )
        s = out.astype(np.float64, copy=False) @ direction
    else:
        if out.ndim == 2 and out.shape[1] == 1:
            out = out[:, 0]
        if out.ndim != 1:
            raise ValueError(
                f"the sampler output for {name} has shape {out.shape}; vector outputs need a "
                "scalar statistic= (callable) or a projection direction="
            )
        s = out.astype(np.float64, copy=False)
    if s.shape != (out.shape[0],):
        raise ValueError(
            f"statistic must map the {out.shape[0]} outputs to {out.shape[0]} scalars, "
            f"got shape {s.shape}"
        )
    if np.isnan(s).any():
        raise ValueError(f"statistic produced NaN values for {name}")
    return s


def _event_mask(event, out: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(event(out))
    if m.dtype != np.bool_ or m.shape != (out.shape[0],):
        raise ValueError(
            f"each event must return a boolean mask of shape ({out.shape[0]},) for {name}, "
            f"got dtype {m.dtype} and shape {m.shape}"
        )
    return m


class _Counts:
    """Event counts for one slice of the samples of both inputs."""

    def __init__(self, names: List[str], k_a: np.ndarray, k_b: np.ndarray, n: int):
        self.names = names
        self.k_a = k_a
        self.k_b = k_b
        self.n = n

    def tests(self):
        """Expand each event E into 4 (numerator, denominator) tests: E and Eᶜ, both orderings."""
        n = self.n
        ka, kb = self.k_a, self.k_b
        k_num = np.concatenate([ka, kb, n - ka, n - kb])
        k_den = np.concatenate([kb, ka, n - kb, n - ka])
        desc = (
            [f"P[{e} | input_a] vs P[{e} | input_b]" for e in self.names]
            + [f"P[{e} | input_b] vs P[{e} | input_a]" for e in self.names]
            + [f"P[not ({e}) | input_a] vs P[not ({e}) | input_b]" for e in self.names]
            + [f"P[not ({e}) | input_b] vs P[not ({e}) | input_a]" for e in self.names]
        )
        return k_num, k_den, desc


def _count(sa, sb, oa, ob, thresholds, events, event_names) -> _Counts:
    names: List[str] = []
    ka: List[np.ndarray] = []
    kb: List[np.ndarray] = []
    n = oa.shape[0]
    if thresholds is not None:
        sa_sorted = np.sort(sa)
        sb_sorted = np.sort(sb)
        ka.append(n - np.searchsorted(sa_sorted, thresholds, side="right"))
        kb.append(n - np.searchsorted(sb_sorted, thresholds, side="right"))
        names += [f"s > {t:.6g}" for t in thresholds]
    for ev, nm in zip(events, event_names):
        ka.append(np.array([np.count_nonzero(_event_mask(ev, oa, "input_a"))]))
        kb.append(np.array([np.count_nonzero(_event_mask(ev, ob, "input_b"))]))
        names.append(nm)
    return _Counts(names, np.concatenate(ka).astype(np.int64), np.concatenate(kb).astype(np.int64), n)


def audit(
    sampler: Callable[[Any, int, int], np.ndarray],
    input_a: Any,
    input_b: Any,
    *,
    n_samples: int,
    thresholds: Optional[Sequence[float]] = None,
    events: Optional[Union[Sequence[Callable], dict]] = None,
    statistic: Optional[Callable[[np.ndarray], np.ndarray]] = None,
    direction: Optional[Sequence[float]] = None,
    delta: float = 0.0,
    alpha: float = 1e-6,
    selection: Literal["fixed", "split"] = "fixed",
    random_state: Union[None, int, np.random.SeedSequence] = None,
    verbose: bool | int = False,
) -> AuditResult:
    """Audit a mechanism on a pair of neighbouring inputs and return a lower bound on its ε.

    Parameters
    ----------
    sampler : callable
        ``sampler(input, n_samples, seed) -> ndarray`` returning ``n_samples`` *independent*
        outputs of the mechanism on ``input`` (shape ``(n,)`` or ``(n, k)``).  ``seed`` is a
        non-negative int; the two inputs get independent seeds derived from ``random_state`` with
        :meth:`numpy.random.SeedSequence.spawn`.
    input_a, input_b : object
        The neighbouring inputs (passed to ``sampler`` unchanged).
    n_samples : int
        Number of outputs drawn per input.
    thresholds : sequence of float, optional
        Threshold events ``E_t = {statistic(output) > t}``.  They must be fixed **before** the
        samples are seen (e.g. from the claimed mechanism's analytic distribution).
    events : sequence of callables or dict {name: callable}, optional
        Extra events: ``event(outputs) -> bool mask`` of shape ``(n,)`` on the raw sampler output.
    statistic : callable, optional
        Maps the ``(n, ...)`` output array to ``n`` scalars.  Default: identity for 1-D outputs;
        for vector outputs give ``statistic`` or ``direction``.
    direction : sequence of float, optional
        For ``(n, k)`` outputs: the statistic is the projection ``output @ direction``.
    delta : float, default 0.0
        δ of the audited (ε, δ) claim, in [0, 1).
    alpha : float, default 1e-6
        Overall probability that the reported lower bound exceeds the true ε.
    selection : {"fixed", "split"}
        ``"fixed"``: every event E is tested as E and its complement, each in both orderings
        (input_a vs input_b and swapped) — ``4 × #events`` tests — and the best bound is reported
        with a Bonferroni correction (each test at level α / #tests).  ``"split"``: the first half
        of the samples of each input selects the best test (by its lower bound at level α), the
        second half — independent of the choice — evaluates it at level α.
    random_state : None, int or numpy.random.SeedSequence
        Seed material for the sampler seeds (None: OS entropy).
    verbose : bool or int, default=False
        Show tqdm progress bars (stderr) during long calls; ``False``/``0`` shows nothing. Progress and the
        :mod:`logging` messages are for the curator only and never part of a release.
        The bar counts the ``2·n_samples`` samples (one ``sampler`` call per input: it advances after each).

    Returns
    -------
    AuditResult

    Examples
    --------
    Audit the exact Laplace mechanism (sensitivity 1, ε = 1) on the neighbouring inputs 0 and 1:

    >>> import numpy as np
    >>> from dpcore.audit import audit
    >>> from dpcore.mechanisms import noise
    >>> def sampler(value, n_samples, seed):
    ...     return noise.sample_laplace_mechanism(value, 1.0, 1.0, n_samples, random_state=seed)
    >>> res = audit(sampler, 0.0, 1.0, n_samples=20_000, thresholds=np.linspace(-1, 3, 9),
    ...             alpha=1e-3, random_state=0)
    >>> bool(res.epsilon_lower_bound <= 1.0)
    True
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    n_samples = int(n_samples)
    delta = check_delta(delta, "delta")
    alpha = check_probability(alpha, "alpha")
    if selection not in ("fixed", "split"):
        raise ValueError(f"selection must be 'fixed' or 'split', got {selection!r}")
    if selection == "split" and n_samples < 2:
        raise ValueError("n_samples must be >= 2 with selection='split'")

    if thresholds is not None:
        thresholds = np.asarray(thresholds, dtype=np.float64).ravel()
        if thresholds.size == 0:
            raise ValueError("thresholds must not be empty")
        if not np.isfinite(thresholds).all():
            raise ValueError("thresholds must be finite")
    if events is None:
        event_list, event_names = [], []
    elif isinstance(events, dict):
        event_names = [str(k) for k in events]
        event_list = list(events.values())
    else:
        event_list = list(events)
        event_names = [getattr(ev, "__name__", f"event[{i}]") for i, ev in enumerate(event_list)]
        event_names = [
            f"event[{i}]" if nm == "<lambda>" else nm for i, nm in enumerate(event_names)
        ]
    for i, ev in enumerate(event_list):
        if not callable(ev):
            raise TypeError(f"events[{i}] must be callable, got {type(ev).__name__}")
    if thresholds is None and not event_list:
        raise ValueError("give thresholds= and/or events= (fixed before sampling)")
    if direction is not None:
        if statistic is not None:
            raise ValueError("give either statistic= or direction=, not both")
        direction = np.asarray(direction, dtype=np.float64)
        if direction.ndim != 1 or direction.size == 0 or not np.isfinite(direction).all():
            raise ValueError("direction must be a non-empty finite 1-D array")
    if statistic is not None and not callable(statistic):
        raise TypeError("statistic must be callable")

    check_verbose(verbose)
    seed_a, seed_b = _seed_ints(random_state)
    with progress_bar(verbose, total=2 * n_samples, desc="audit samples", unit="sample", unit_scale=True) as bar:
        out_a = _draw(sampler, input_a, n_samples, seed_a, "input_a")
        bar.update(n_samples)
        out_b = _draw(sampler, input_b, n_samples, seed_b, "input_b")
        bar.update(n_samples)
    logger.debug("audit: drew %d samples per input", n_samples)
    if thresholds is not None:
        s_a = _statistic(out_a, statistic, direction, "input_a")
        s_b = _statistic(out_b, statistic, direction, "input_b")
    else:
        s_a = s_b = None

    def counts_for(sl: slice) -> _Counts:
        return _count(
            None if s_a is None else s_a[sl],
            None if s_b is None else s_b[sl],
            out_a[sl],
            out_b[sl],
            thresholds,
            event_list,
            event_names,
        )

    if selection == "fixed":
        c = counts_for(slice(None))
        k_num, k_den, desc = c.tests()
        n_tests = len(desc)
        level = alpha / n_tests
        bounds = _eps_lb_vec(k_num, c.n, k_den, c.n, delta, level)
        i = int(np.argmax(bounds))
        lb = float(bounds[i])
        n_used = c.n
    else:
        half = n_samples // 2
        c1 = counts_for(slice(0, half))
        k_num1, k_den1, desc = c1.tests()
        score = _eps_lb_vec(k_num1, c1.n, k_den1, c1.n, delta, alpha)
        # tie-break vacuous first-half bounds by the point estimate (add-one smoothed)
        with np.errstate(all="ignore"):
            point = np.log((k_num1 + 1.0) / (c1.n + 2.0) - delta) - np.log((k_den1 + 1.0) / (c1.n + 2.0))
        point = np.nan_to_num(point, nan=-np.inf)
        i = int(np.lexsort((-point, -score))[0])
        c = counts_for(slice(half, None))
        k_num, k_den, desc = c.tests()
        n_tests = 1
        level = alpha
        lb = float(_eps_lb_vec(k_num[i], c.n, k_den[i], c.n, delta, level))
        n_used = c.n

    logger.info("audit: epsilon lower bound %.4g (event %s, %d test(s), alpha=%.3g)", lb, desc[i], n_tests, alpha)
    return AuditResult(
        epsilon_lower_bound=lb,
        event=desc[i],
        count_num=int(k_num[i]),
        count_den=int(k_den[i]),
        n=int(n_used),
        n_samples=n_samples,
        alpha=alpha,
        delta=delta,
        selection=selection,
        n_tests=int(n_tests),
        p_num_lower=float(_cp_lower(k_num[i], n_used, level / 2.0)),
        p_den_upper=float(_cp_upper(k_den[i], n_used, level / 2.0)),
    )
