"""Progress bars and logging (``dpcore._internal.progress``): one ``verbose`` flag with one meaning and one
docstring across the package, a bar with ``verbose=True`` and nothing with ``verbose=False``, log records through
module loggers, and no ``print`` anywhere in the library (the ``dpcore.demo`` CLI excepted)."""

from __future__ import annotations

import ast
import inspect
import logging
from pathlib import Path

import numpy as np
import pytest

import dpcore
from dpcore import audit, ldp
from dpcore._internal import progress
from dpcore._internal.progress import NoProgress, check_verbose, progress_bar

PACKAGE = Path(dpcore.__file__).parent

# every public callable with a ``verbose`` option
VERBOSE_API = [
    dpcore.KernelSVM, dpcore.KernelLogisticRegression, dpcore.PINP, dpcore.TDDL, dpcore.TDIL, dpcore.GPService,
    dpcore.PrivateGridSearch, dpcore.OutputPerturbation, dpcore.ObjectivePerturbation, dpcore.SimplexERM,
    dpcore.PrivateFTRL, dpcore.PrivateSVM, ldp.simulate, ldp.LDPMeanEstimator, ldp.LDPSparseRegression,
    ldp.LDPKernelRidge, ldp.LDPLogisticRegression, audit.audit,
]


def _data(n=200, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] > 0, 1, -1)
    return X, y


# ----------------------------------------------------------------------------- the helper
def test_check_verbose():
    assert check_verbose(False) is False and check_verbose(0) is False
    assert check_verbose(True) is True and check_verbose(2) is True and check_verbose(np.int64(1)) is True
    assert check_verbose(np.bool_(True)) is True
    for bad in (-1, 0.5, "yes", None):
        with pytest.raises(ValueError, match="verbose"):
            check_verbose(bad)


def test_progress_bar_silent_and_shown(capsys):
    with progress_bar(False, total=3, desc="quiet") as bar:
        assert isinstance(bar, NoProgress)
        bar.update(2)
        bar.set_postfix_str("x")
    assert capsys.readouterr().err == ""
    with progress_bar(True, total=3, desc="loud", unit="step") as bar:
        bar.update(3)
    assert "loud" in capsys.readouterr().err


def test_helper_docstring_states_the_privacy_rule():
    doc = progress.__doc__
    assert "curator" in doc and "not part of any released object" in doc
    text = (PACKAGE.parent.parent / "docs" / "privacy.md")
    if text.exists():  # the docs ship with the repository, not with the wheel
        assert "progress bar" in text.read_text().lower()


# ----------------------------------------------------------------------------- one flag, one meaning
@pytest.mark.parametrize("obj", VERBOSE_API, ids=lambda o: o.__name__)
def test_verbose_is_keyword_only_false_by_default_with_the_shared_doc(obj):
    sig = inspect.signature(obj)
    p = sig.parameters["verbose"]
    assert p.kind is inspect.Parameter.KEYWORD_ONLY
    assert p.default is False
    # KernelLogisticRegression documents "Same parameters and attributes as KernelSVM"
    doc = inspect.getdoc({dpcore.KernelLogisticRegression: dpcore.KernelSVM}.get(obj, obj))
    first = progress.VERBOSE_DOC.splitlines()
    lines = [ln.strip() for ln in doc.splitlines()]
    i = lines.index(first[0])
    assert lines[i + 1:i + len(first)] == [ln.strip() for ln in first[1:]]


@pytest.mark.parametrize("obj", VERBOSE_API, ids=lambda o: o.__name__)
def test_no_other_progress_option_name(obj):
    assert not {"progress", "show_progress", "progress_bar", "verbosity"} & set(inspect.signature(obj).parameters)


# ----------------------------------------------------------------------------- bars appear only with verbose
def _fits(verbose):
    X, y = _data()
    svm = dpcore.KernelSVM(lam=0.05, gamma=1.0, tol=1e-8, verbose=verbose).fit(X, y)
    dpcore.TDDL(svm, 2.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0, verbose=verbose).fit(X[:20])
    dpcore.OutputPerturbation(2.0, 1e-6, lam=0.05, data_norm=1.0, random_state=0, verbose=verbose).fit(X, y)
    dpcore.PrivateFTRL(5, 5.0, data_norm_inf=1.0, random_state=0, verbose=verbose).partial_fit(np.abs(X[:5]))
    proto = ldp.LogisticProtocol(2, 200, 8.0, 1e-6)
    reports = ldp.simulate(X, y, proto, random_state=0, verbose=verbose)
    ldp.LDPLogisticRegression(proto, batch_size=20, verbose=verbose).fit(reports)
    audit.audit(lambda v, n, s: dpcore.laplace_mechanism(np.full(n, v), 1.0, 1.0, random_state=s), 0.0, 1.0,
                n_samples=1000, thresholds=[0.5], random_state=0, verbose=verbose)
    return svm


def test_bars_with_verbose_true(capsys):
    svm = _fits(True)
    err = capsys.readouterr().err
    for name in ("KernelSVM", "TDDL", "OutputPerturbation solve", "PrivateFTRL rounds", "simulate LogisticProtocol",
                 "LDPLogisticRegression", "audit samples"):
        assert name in err, name
    pinp = dpcore.PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, random_state=0, verbose=True)
    pinp.predict(_data(10, seed=1)[0])
    assert "PINP queries" in capsys.readouterr().err


def test_nothing_with_verbose_false(capsys):
    svm = _fits(False)
    pinp = dpcore.PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=10, random_state=0)
    pinp.predict(_data(10, seed=1)[0])
    out = capsys.readouterr()
    assert out.err == "" and out.out == ""


def test_verbose_does_not_change_the_release():
    X, y = _data()
    a = dpcore.OutputPerturbation(2.0, 1e-6, lam=0.05, data_norm=1.0, random_state=3).fit(X, y)
    b = dpcore.OutputPerturbation(2.0, 1e-6, lam=0.05, data_norm=1.0, random_state=3, verbose=True).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_)
    svm = dpcore.KernelSVM(lam=0.05, gamma=1.0, tol=1e-8).fit(X, y)
    Q = _data(600, seed=2)[0]
    import dpcore.kernel_learning.pinp as pinp_module

    chunk = pinp_module._PROGRESS_CHUNK
    pinp_module._PROGRESS_CHUNK = 256  # several Rust calls for 600 queries
    try:
        answers = [dpcore.PINP(svm, 1.0, 1e-6, data_norm=1.0, n_queries=600, random_state=5, verbose=v).predict(Q)
                   for v in (False, True)]
    finally:
        pinp_module._PROGRESS_CHUNK = chunk
    assert np.array_equal(*answers)
    assert "verbose" not in str(b.privacy_)


def test_log_records(caplog):
    X, y = _data()
    acc = dpcore.BudgetAccountant(10.0, 1e-5)
    with caplog.at_level(logging.DEBUG, logger="dpcore"):
        svm = dpcore.KernelSVM(lam=0.05, gamma=1.0, tol=1e-8).fit(X, y)
        dpcore.TDDL(svm, 2.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0, accountant=acc).fit(X[:20])
    names = {r.name for r in caplog.records}
    assert "dpcore.kernel_learning.svm" in names and "dpcore.kernel_learning.tddl" in names
    text = caplog.text
    assert "duality gap" in text and "charged (epsilon=2" in text


# ----------------------------------------------------------------------------- no print in the library
def test_no_print_calls_in_the_library():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "demo" in path.relative_to(PACKAGE).parts:
            continue  # the CLI prints to stdout by design
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


def test_module_loggers_only():
    """Library modules log through ``logging.getLogger(__name__)`` (never the root logger)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "logging"
                    and node.func.attr in ("debug", "info", "warning", "error", "exception", "critical", "log")):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "getLogger"):
                assert [ast.unparse(a) for a in node.args] == ["__name__"], f"{path}:{node.lineno}"
    assert offenders == []


def test_tqdm_only_through_the_helper():
    """Bars come from ``progress_bar`` (one place decides what ``verbose`` means)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel == Path("_internal", "progress.py") or "demo" in rel.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(m.split(".")[0] == "tqdm" for m in mods):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_logistic_bar_counts_kernel_products_not_coordinate_updates(capsys):
    # the logistic solver's iterations are kernel matrix-vector products (Newton-CG), not coordinate
    # updates: its bar says so and shows no "active set" (the hinge solver's shrinking)
    X, y = _data()
    dpcore.KernelLogisticRegression(lam=0.05, gamma=1.0, tol=1e-8, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "KernelLogisticRegression" in err and "kernel products" in err
    assert "upd" not in err and "active" not in err
    dpcore.KernelSVM(lam=0.05, gamma=1.0, tol=1e-8, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "KernelSVM" in err and "upd" in err
