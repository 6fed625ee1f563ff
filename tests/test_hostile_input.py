"""Hostile input never aborts the interpreter or answers silently wrong (issue 12, part 3).

A property-based sweep (hypothesis, derandomised) over dpcore's public functions and estimators
with hostile arrays (NaN, ±inf, huge and subnormal magnitudes, empty, wrong rank, object/string
dtypes, None, sparse matrices) and hostile parameters (0, negatives, NaN, inf, 1e308, huge ints,
bools, strings, None). The only outcomes allowed are

* a result whose numbers are all finite, or
* ``ValueError`` / ``TypeError`` / ``MemoryError`` whose message names one of the call's arguments.

A Rust panic surfaces as ``pyo3_runtime.PanicException`` (a ``BaseException``) and fails the test;
allocations that used to abort the process (``memory allocation of … bytes failed``) run in a
subprocess whose exit status is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import dpcore
from dpcore import (KernelSVM, PrivateSVM, RandomFourierFeatures, SimplexERM, gaussian_mechanism,
                    kernel_matrix, kernel_predict, laplace_mechanism)
from dpcore.glm.perturbation import ObjectivePerturbation, OutputPerturbation

_rng = np.random.default_rng(0)
_GOOD_X = _rng.normal(size=(12, 3))
_GOOD_X /= np.linalg.norm(_GOOD_X, axis=1, keepdims=True)
_GOOD_Y = np.where(_GOOD_X[:, 0] > 0, 1, -1)
_GOOD_Y[:2] = [1, -1]

# -- hostile arrays (each builder gets the intended shape (n, d)) ------------------------------
_ARRAYS = {
    "nan": lambda n, d: np.where(np.eye(n, d) > 0, np.nan, 0.5),
    "inf": lambda n, d: np.full((n, d), np.inf),
    "-inf": lambda n, d: np.full((n, d), -np.inf),
    "huge": lambda n, d: np.full((n, d), 1e308),
    "big": lambda n, d: np.full((n, d), 1e200),
    "subnormal": lambda n, d: np.full((n, d), 5e-324),
    "zeros": lambda n, d: np.zeros((n, d)),
    "empty_rows": lambda n, d: np.zeros((0, d)),
    "empty_cols": lambda n, d: np.zeros((n, 0)),
    "1d": lambda n, d: np.zeros(d),
    "3d": lambda n, d: np.zeros((n, d, 2)),
    "scalar": lambda n, d: np.float64(1.0),
    "wrong_d": lambda n, d: np.zeros((n, d + 1)),
    "object_none": lambda n, d: np.array([[None] * d] * n, dtype=object),
    "strings": lambda n, d: np.array([["a"] * d] * n),
    "bools": lambda n, d: np.ones((n, d), dtype=bool),
    "big_ints": lambda n, d: np.array([[2**70] * d] * n, dtype=object),
    "sparse": lambda n, d: sparse.random(n, d, density=0.5, format="csr", random_state=0),
    "sparse_nan": lambda n, d: sparse.csr_matrix(np.where(np.eye(n, d) > 0, np.nan, 0.0)),
    "list_mixed": lambda n, d: [[1.0, "x", None][: d]] * n,
}
_PARAMS = [0, -1, 0.0, -0.5, float("nan"), float("inf"), -float("inf"), 1e308, 1e-308, 5e-324, 2**64, 10**30,
           True, False, "a", None, [1.0], 1.0, 3]

_ALLOWED = (ValueError, TypeError, MemoryError)


def _check_outcome(call, names):
    try:
        out = call()
    except _ALLOWED as e:
        msg = str(e)
        assert msg, f"empty {type(e).__name__}"
        assert any(nm in msg for nm in names), f"{type(e).__name__} does not name any of {names}: {msg}"
        assert len(msg) < 2000, f"message too long ({len(msg)} chars): {msg[:200]}..."
        return
    vals = out.values() if isinstance(out, dict) else list(out) if isinstance(out, tuple) else [out]
    for v in vals:
        arr = np.asarray(v)
        if arr.dtype.kind in "fc":
            assert np.isfinite(arr).all(), f"non-finite result {arr!r}"


arrays = st.sampled_from(sorted(_ARRAYS))
params = st.sampled_from(range(len(_PARAMS)))
SETTINGS = settings(max_examples=60, derandomize=True, deadline=None, database=None)


@SETTINGS
@given(a=arrays, p=params, q=params)
def test_kernel_functions(a, p, q):
    A = _ARRAYS[a](5, 3)
    gp, dq = _PARAMS[p], _PARAMS[q]
    names = ("A", "B", "Z", "X", "mu", "gamma", "degree", "coef0", "kernel")
    _check_outcome(lambda: kernel_matrix(A, kernel="poly", gamma=gp, degree=dq), names)
    _check_outcome(lambda: kernel_matrix(_GOOD_X, A, kernel="rbf", gamma=gp), names)
    _check_outcome(lambda: kernel_predict(A, _GOOD_X, np.ones(12), kernel="linear"), names)
    _check_outcome(lambda: kernel_predict(_GOOD_X, _GOOD_X, np.full(12, gp) if isinstance(gp, float) else gp,
                                          kernel="poly", degree=dq if isinstance(dq, int) else 2), names)


@SETTINGS
@given(a=arrays, p=params, q=params, r=params)
def test_noise_mechanisms(a, p, q, r):
    value = _ARRAYS[a](2, 2)
    s, e, dl = _PARAMS[p], _PARAMS[q], _PARAMS[r]
    names = ("value", "sensitivity", "epsilon", "delta", "random_state")
    _check_outcome(lambda: laplace_mechanism(value, s, e, random_state=0), names)
    _check_outcome(lambda: laplace_mechanism(1.0, s, e, random_state=0), names)
    _check_outcome(lambda: gaussian_mechanism(value, 1.0, 1.0, dl, random_state=0), names)
    _check_outcome(lambda: gaussian_mechanism(1.0, s, e, 1e-5, random_state=0), names)


@SETTINGS
@given(a=arrays, p=params, q=params)
def test_random_fourier_features(a, p, q):
    X = _ARRAYS[a](4, 3)
    nc, g = _PARAMS[p], _PARAMS[q]
    names = ("X", "n_components", "gamma", "kernel")
    if isinstance(nc, int) and not isinstance(nc, bool) and nc > 10**6:
        return  # huge sizes: see test_huge_allocations_are_memory_errors (subprocess)
    _check_outcome(lambda: RandomFourierFeatures(n_components=nc, gamma=g, random_state=0).fit(X).transform(X),
                   names)
    rff = RandomFourierFeatures(n_components=4, random_state=0).fit(_GOOD_X)
    _check_outcome(lambda: rff.transform(X), names)


def _estimators(p):
    return {
        "KernelSVM": (lambda: KernelSVM(lam=p, gamma=1.0), ("X", "Z", "y", "lam")),
        "OutputPerturbation": (lambda: OutputPerturbation(epsilon=p, delta=1e-5, data_norm=1.0, random_state=0),
                               ("X", "y", "epsilon")),
        "ObjectivePerturbation": (lambda: ObjectivePerturbation(epsilon=1.0, delta=1e-5, lam=p, data_norm=1.0,
                                                                random_state=0), ("X", "y", "lam")),
        "PrivateSVM": (lambda: PrivateSVM(C=p, epsilon=1.0, kernel="linear", data_norm=1.0, random_state=0),
                       ("X", "y", "C")),
        "PrivateSVM-rff": (lambda: PrivateSVM(C=1.0, epsilon=p, n_components=4, random_state=0),
                           ("X", "y", "epsilon")),
        "SimplexERM": (lambda: SimplexERM(epsilon=1.0, lam=p, data_norm_inf=1.0, loss="logistic", max_draws=50,
                                          random_state=0), ("X", "y", "lam")),
    }


@SETTINGS
@given(a=arrays, p=params, which=st.sampled_from(sorted(_estimators(1.0))))
def test_estimators_fit_and_predict(a, p, which):
    X = _ARRAYS[a](12, 3)
    make, names = _estimators(_PARAMS[p])[which]
    _check_outcome(lambda: make().fit(X, _GOOD_Y), names)
    # hostile parameter on good data
    _check_outcome(lambda: make().fit(_GOOD_X, _GOOD_Y).decision_function(_GOOD_X), names)
    # a fitted model never answers a hostile query with numbers
    good = _estimators(1.0 if which != "OutputPerturbation" else 1.0)[which][0]
    est = good().fit(_GOOD_X, _GOOD_Y)
    _check_outcome(lambda: est.predict(X), ("X", "Z"))
    _check_outcome(lambda: est.decision_function(X), ("X", "Z"))


@SETTINGS
@given(y=st.sampled_from(["nan", "none", "strings", "three", "2d", "short", "inf"]),
       which=st.sampled_from(sorted(_estimators(1.0))))
def test_hostile_labels(y, which):
    Y = {
        "nan": np.where(_GOOD_Y > 0, np.nan, 1.0),
        "none": np.array([None] * 12, dtype=object),
        "strings": np.array(["a"] * 12),
        "three": np.arange(12) % 3,
        "2d": np.ones((12, 2)),
        "short": _GOOD_Y[:-1],
        "inf": np.full(12, np.inf),
    }[y]
    make, names = _estimators(1.0)[which]
    _check_outcome(lambda: make().fit(_GOOD_X, Y), ("y",))


def test_predict_refuses_nan_rows_everywhere():
    """The concrete bug: GLM / SimplexERM predict returned labels for rows with NaN."""
    Q = _GOOD_X.copy()
    Q[3, 1] = np.nan
    for make, _ in _estimators(1.0).values():
        est = make().fit(_GOOD_X, _GOOD_Y)
        with pytest.raises(ValueError, match="^(X|Z) contains NaN"):
            est.predict(Q)
    rel = dpcore.TDDL(KernelSVM(lam=0.1, gamma=1.0).fit(_GOOD_X, _GOOD_Y), 5.0, 1e-5, data_norm=1.0,
                      random_state=0).fit(_GOOD_X)
    with pytest.raises(ValueError, match="contains NaN"):
        rel.predict(Q)


def test_kernel_overflow_is_an_error_naming_the_parameter():
    X = _GOOD_X * 0.9
    with pytest.raises(ValueError, match="^degree"):
        kernel_matrix(X + 2.0, kernel="poly", degree=10**9)
    with pytest.raises(ValueError, match="^degree"):
        kernel_predict(X + 2.0, X + 2.0, np.ones(12), kernel="poly", degree=10**6)
    with pytest.raises(ValueError, match="^A and B"):
        kernel_matrix(np.full((2, 2), 1e200), kernel="linear")
    assert np.isfinite(kernel_matrix(X, kernel="rbf", gamma=1e300)).all()  # exp underflow to 0 is fine


def test_messages_name_the_user_parameter_and_stay_short():
    with pytest.raises(ValueError) as e:
        laplace_mechanism(1e308, 1, 1)
    assert str(e.value).startswith("value:") and len(str(e.value)) < 200, str(e.value)
    with pytest.raises(ValueError, match="^sensitivity=1e-300"):
        laplace_mechanism(1.0, 1e-300, 1.0)
    with pytest.raises(ValueError, match="^sensitivity"):
        gaussian_mechanism(1.0, 1e-300, 1.0, 1e-5)
    with pytest.raises(TypeError, match="sparse"):
        kernel_matrix(sparse.csr_matrix(_GOOD_X))
    with pytest.raises(TypeError, match="sparse"):
        KernelSVM().fit(sparse.csr_matrix(_GOOD_X), _GOOD_Y)
    with pytest.raises(ValueError, match="^y contains"):
        KernelSVM().fit(_GOOD_X, np.array([None, 1] * 6, dtype=object))


_SUBPROCESS = textwrap.dedent("""
    import numpy as np, dpcore
    cases = {
        "kernel_matrix": lambda: dpcore.kernel_matrix(np.zeros((200_000, 2)), np.zeros((200_000, 2))),
        "rff_fit": lambda: dpcore.RandomFourierFeatures(n_components=10**12).fit(np.zeros((3, 4))),
        "rff_overflow": lambda: dpcore.RandomFourierFeatures(n_components=2**62).fit(np.zeros((3, 4))),
        "rff_transform": lambda: dpcore.RandomFourierFeatures(n_components=10**6, random_state=0)
                                       .fit(np.zeros((1, 1))).transform(np.zeros((10**6, 1))),
    }
    for name, call in cases.items():
        try:
            call()
            print(name, "OK")
        except MemoryError as e:
            print(name, "MemoryError", str(e).split(":")[0])
""")


def test_huge_allocations_are_memory_errors_not_aborts():
    """Sizes that need terabytes (or overflow) used to abort the interpreter (exit 134)."""
    res = subprocess.run([sys.executable, "-c", _SUBPROCESS], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    lines = dict(line.split(" ", 1) for line in res.stdout.strip().splitlines())
    assert lines == {
        "kernel_matrix": "MemoryError A",
        "rff_fit": "MemoryError n_components",
        "rff_overflow": "MemoryError n_components",
        "rff_transform": "MemoryError X",
    }, res.stdout


def _within(seconds, call):
    """Run ``call`` and fail (instead of hanging the suite) if it takes longer than ``seconds``."""
    import signal

    def _alarm(*_):
        raise TimeoutError(f"call did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        return call()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("args", [
    (1.0, 1.0, 1e-308, 1e-5),      # used to loop forever halving an infinite sigma
    (1.0, 1e308, 1.0, 1e-5),
    (1.0, 3, 5e-324, 1e-5),
    (1.0, 1e-308, 5e-324, 1e-5),   # used to raise a bare "math domain error"
])
def test_extreme_calibrations_refuse_quickly_and_name_the_parameter(args):
    with pytest.raises(ValueError, match="^(sensitivity=|value:)"):
        _within(10, lambda: gaussian_mechanism(*args, random_state=0))


def test_calibration_results_are_finite_or_refused():
    from dpcore.accounting import calibrate
    for call, name in [(lambda: calibrate.laplace_scale(1.0, 5e-324), "sensitivity="),
                       (lambda: calibrate.gaussian_sigma_classic(1.0, 1e-308, 1e-308), "sensitivity="),
                       (lambda: calibrate.compose_advanced(1e308, 0.0, 3, 1e-308), "epsilon="),
                       (lambda: calibrate.advanced_per_step_epsilon(5e-324, 3, 1e-308), "epsilon="),
                       (lambda: calibrate.zcdp_epsilon(1e308, 1e-308), "rho=")]:
        with pytest.raises(ValueError, match=f"^{name}"):
            _within(10, call)
    assert calibrate.gaussian_delta(1.0, 1.0, 1e308) == 0.0  # was NaN


def test_counts_that_cannot_fit_in_memory_are_memory_errors_naming_the_parameter():
    from dpcore.mechanisms import noise
    with pytest.raises(MemoryError, match="^size="):
        noise.exponential(10**30)
    with pytest.raises(MemoryError, match="^size="):
        noise.gumbel(2**64)
    with pytest.raises(MemoryError, match="^dim="):
        noise.gamma_norm_vector(10**30, 1.0)
    with pytest.raises(MemoryError, match="^n_samples="):
        noise.sample_laplace_mechanism(np.zeros(10), 1.0, 1.0, 2**61)


@pytest.mark.parametrize("lam", [5e-324, 1e-308, 1e308])
def test_scale_parameters_whose_constants_overflow_are_refused(lam):
    for make in (lambda: KernelSVM(lam=lam, gamma=1.0),
                 lambda: SimplexERM(epsilon=1.0, lam=lam, data_norm_inf=1.0, loss="logistic", random_state=0),
                 lambda: ObjectivePerturbation(epsilon=1.0, delta=1e-5, lam=lam, data_norm=1.0, random_state=0)):
        with pytest.raises(ValueError, match="^lam must lie in"):
            make().fit(_GOOD_X, _GOOD_Y)
    with pytest.raises(ValueError, match="^C must lie in"):
        PrivateSVM(C=lam, epsilon=1.0, kernel="linear", data_norm=1.0, random_state=0).fit(_GOOD_X, _GOOD_Y)


def test_ldp_client_and_simulation_share_one_radius_rule():
    """ldp.simulate used to reject a row of norm 1.0000000000000002 that ldp.logistic_report accepted."""
    from dpcore import ldp

    proto = ldp.LogisticProtocol(dim=2, epsilon=2.0, delta=1e-6, n_users=4)
    x = np.array([1.0000000000000002, 0.0])
    X = np.vstack([x, x])
    y = np.array([1.0, -1.0])
    ldp.logistic_report(x, 1.0, proto, random_state=0)
    ldp.simulate(X, y, proto, random_state=0)
    far = np.array([1.0 + 1e-9, 0.0])
    with pytest.raises(ValueError, match="^x has L2 norm"):
        ldp.logistic_report(far, 1.0, proto, random_state=0)
    with pytest.raises(ValueError, match="^X row 0 has L2 norm"):
        ldp.simulate(np.vstack([far, far]), y, proto, random_state=0)


# -- the remaining entry points: kernel releases, services, online learning, local DP -------------
def _more_entry_points():
    from dpcore import ldp

    svm = KernelSVM(lam=0.1, gamma=1.0, tol=1e-8).fit(_GOOD_X, _GOOD_Y)
    tddl = dpcore.TDDL(svm, 5.0, 1e-5, data_norm=1.0, random_state=0).fit(_GOOD_X)
    pinp = dpcore.PINP(svm, 1e4, 1e-5, beta=0.1, n_queries=10**6, data_norm=1.0, random_state=0)
    mp = ldp.MeanEstimationProtocol(dim=3, epsilon=2.0, delta=1e-6, n_users=12)
    lp = ldp.LogisticProtocol(dim=3, epsilon=2.0, delta=1e-6, n_users=12)

    def row(A):
        if sparse.issparse(A):
            return A
        return A[0] if np.ndim(A) == 2 and len(A) else A

    return {
        "TDDL.fit": (lambda A, p: dpcore.TDDL(svm, 5.0, 1e-5, data_norm=1.0, random_state=0).fit(A), ("Z", "X")),
        "TDDL(epsilon)": (lambda A, p: dpcore.TDDL(svm, p, 1e-5, data_norm=1.0, random_state=0).fit(_GOOD_X), ("epsilon",)),
        "KernelRelease.predict": (lambda A, p: tddl.predict(A), ("X",)),
        "PINP.predict": (lambda A, p: pinp.predict(A), ("X",)),
        "PINP(delta)": (lambda A, p: dpcore.PINP(svm, 1e4, p, beta=0.1, n_queries=100, data_norm=1.0, random_state=0), ("delta",)),
        "KernelLogisticRegression.fit": (lambda A, p: dpcore.KernelLogisticRegression(lam=0.1).fit(A, _GOOD_Y), ("X",)),
        "KernelLogisticRegression(lam)": (lambda A, p: dpcore.KernelLogisticRegression(lam=p).fit(_GOOD_X, _GOOD_Y),
                                          ("lam",)),
        "PrivateFTRL.partial_fit": (lambda A, p: dpcore.PrivateFTRL(horizon=20, epsilon=1.0, data_norm_inf=1.0,
                                                                    random_state=0).partial_fit(A), ("X",)),
        "PrivateFTRL(epsilon)": (lambda A, p: dpcore.PrivateFTRL(horizon=20, epsilon=p, data_norm_inf=1.0,
                                                                 random_state=0).partial_fit(_GOOD_X), ("epsilon",)),
        "ldp.privatize_vector": (lambda A, p: ldp.privatize_vector(row(A), 1.0, 1e-6, random_state=0), ("x",)),
        "ldp.privatize_vector(epsilon)": (lambda A, p: ldp.privatize_vector(_GOOD_X[0], p, 1e-6, random_state=0),
                                          ("epsilon",)),
        "ldp.mean_report": (lambda A, p: ldp.mean_report(row(A), mp, random_state=0), ("x",)),
        "ldp.simulate": (lambda A, p: ldp.simulate(A, _GOOD_Y, lp, random_state=0), ("X", "y")),
        "ldp.MeanEstimationProtocol(epsilon)": (
            lambda A, p: ldp.MeanEstimationProtocol(dim=3, epsilon=p, delta=1e-6, n_users=12),
            ("epsilon", "l1_radius")),
        "ldp.LogisticProtocol(n_users)": (lambda A, p: ldp.LogisticProtocol(dim=3, epsilon=2.0, delta=1e-6, n_users=p),
                                          ("n_users",)),
    }


_MORE = _more_entry_points()


@SETTINGS
@given(a=arrays, p=params, which=st.sampled_from(sorted(_MORE)))
def test_releases_services_online_and_local_dp(a, p, which):
    call, names = _MORE[which]
    A = _ARRAYS[a](12, 3)
    _check_outcome(lambda: call(A, _PARAMS[p]), names)


def test_every_calibration_and_noise_function_on_every_hostile_number():
    """Exhaustive over the numeric hostile parameters (no hypothesis needed): every public function of
    dpcore.accounting.calibrate and dpcore.mechanisms.noise returns finite numbers or refuses naming an argument, quickly."""
    import inspect
    import itertools

    from dpcore.accounting import calibrate

    from dpcore.mechanisms import noise
    numbers = [v for v in _PARAMS if isinstance(v, (int, float))]
    funcs = [f for mod in (calibrate, noise) for name, f in vars(mod).items()
             if inspect.isfunction(f) and not name.startswith("_") and f.__module__ == mod.__name__]
    n_calls = 0
    for f in funcs:
        req = [q for q in inspect.signature(f).parameters.values()
               if q.default is inspect.Parameter.empty and q.kind == q.POSITIONAL_OR_KEYWORD]
        if not 1 <= len(req) <= 4:
            continue
        names = tuple(q.name for q in req) + ("random_state",)
        for args in itertools.product(numbers, repeat=len(req)):
            n_calls += 1
            _within(5, lambda: _check_outcome(lambda: f(*args), names))
    assert n_calls > 10_000


# ---------------------------------------------------------------------------------------------- issue 22, item 6
_CAPPED = textwrap.dedent("""
    import os, numpy as np, dpcore
    from dpcore._internal.validation import memory_limit_bytes
    from dpcore.mechanisms import noise
    avail = None
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1]) * 1024
    lim = memory_limit_bytes()
    # the limit is the memory available now (MemAvailable; it may move a little between the two reads), not total+swap
    print("limit_le_available", lim is not None and lim <= avail + 2**30)
    os.environ["DPCORE_MAX_MEMORY_BYTES"] = str(256 * 2**20)   # the user's cap: 256 MiB, read at every call
    print("limit_is_cap", memory_limit_bytes() == 256 * 2**20)
    cases = {
        "kernel_matrix": lambda: dpcore.kernel_matrix(np.zeros((6000, 2))),                 # 275 MiB
        "rff_fit": lambda: dpcore.RandomFourierFeatures(n_components=10**8).fit(np.zeros((3, 4))),  # >= 1.5 GiB
        "noise": lambda: noise.exponential(40 * 2**20),                                      # 320 MiB
        "small_ok": lambda: dpcore.kernel_matrix(np.zeros((100, 2))),
    }
    for name, call in cases.items():
        try:
            call()
            print(name, "OK")
        except MemoryError as e:
            print(name, "MemoryError", str(e).split(":")[0], "DPCORE_MAX_MEMORY_BYTES" in str(e))
    os.environ["DPCORE_MAX_MEMORY_BYTES"] = "lots"
    try:
        dpcore.kernel_matrix(np.zeros((6000, 2)))
    except ValueError as e:
        print("bad_cap", str(e).split(":")[0])
""")


def test_memory_limit_is_available_memory_lowered_by_the_user_cap():
    """The cap was physical memory + swap (read once): a 12 GB RandomFourierFeatures or an 18.6 GiB kernel_matrix
    started filling memory on a loaded machine. Now: MemAvailable at the call, lowered by DPCORE_MAX_MEMORY_BYTES."""
    env = {k: v for k, v in os.environ.items() if k != "DPCORE_MAX_MEMORY_BYTES"}
    res = subprocess.run([sys.executable, "-c", _CAPPED], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    lines = dict(line.split(" ", 1) for line in res.stdout.strip().splitlines())
    assert lines == {
        "limit_le_available": "True",
        "limit_is_cap": "True",
        "kernel_matrix": "MemoryError A True",
        "rff_fit": "MemoryError n_components True",
        "noise": "MemoryError size=41943040 True",
        "small_ok": "OK",
        "bad_cap": "DPCORE_MAX_MEMORY_BYTES",
    }, res.stdout


def test_gp_service_memory_message_shows_max_exact_queries_not_its_square():
    from dpcore.kernel_learning import GPService
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 2))
    model = KernelSVM(lam=1e-2, kernel="rbf", gamma=1.0).fit(X, np.where(X[:, 0] > 0, 1, -1))
    with pytest.raises(MemoryError, match=r"^max_exact_queries=1000000000: ") as e:
        GPService(model, 1.0, 1e-6, data_norm=1.0, max_exact_queries=10**9)
    assert "1000000000000000000" not in str(e.value)
