"""Replace-one neighbours on every private fit path: both sides release (issue 12, part 1).

Under replace-one adjacency nothing observable may depend on the private data unless the privacy
proof covers it. The constructions below are the ones that broke dpcore before the label set
became a declared parameter (``classes``, see ``dpcore._internal.labels``):

* ``one-class``: ``D`` has one record of class −1 and ``n − 1`` of class +1, ``D'`` relabels that
  record +1 (``D'`` has a single class). Inferring the label set from ``y`` refused ``D'`` and
  released on ``D`` — a certain distinguisher (ε = ∞).
* ``extreme-norm``: one record at exactly the declared radius vs. the zero vector.
* ``relabel``: one label changed to the other declared class (no refusal either way).

Every private estimator is fitted on both sides with the same seed: both must release (no
exception, no warning). The audits at the end run the *whole* fit path — refusals included, as an
event — and catch a copy that infers the label set the old way.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpcore
from dpcore import KernelSVM, PrivateSVM, SimplexERM
from dpcore.audit import audit
from dpcore.glm.perturbation import ObjectivePerturbation, OutputPerturbation

R = 1.0


def _base(n=24, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (0.9 * R / np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    return X, y


def _pairs(n=24, d=3, seed=0):
    X, y = _base(n, d, seed)
    out = {}
    # one-class: D has exactly one -1 (record 0); D' relabels it to +1
    yA = np.ones(n, dtype=int)
    yA[0] = -1
    out["one-class"] = ((X, yA), (X, np.ones(n, dtype=int)))
    # extreme-norm: record 0 at exactly the declared radius vs the origin
    XA, XB = X.copy(), X.copy()
    XA[0] = 0.0
    XA[0, 0] = R
    XB[0] = 0.0
    out["extreme-norm"] = ((XA, y), (XB, y))
    # relabel: one label flipped inside the declared set
    yB = y.copy()
    yB[0] = -yB[0]
    out["relabel"] = ((X, y), (X, yB))
    return out


# ----------------------------------------------------------------------------------------------
# one "release" function per private fit path: (X, y, seed) -> a vector of released numbers
# ----------------------------------------------------------------------------------------------
Z_PUBLIC = _base(12, 3, seed=99)[0]


def _glm_output(X, y, seed):
    est = OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, random_state=seed).fit(X, y)
    return np.r_[est.coef_, est.intercept_]


def _glm_objective_gauss(X, y, seed):
    est = ObjectivePerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, random_state=seed).fit(X, y)
    return np.r_[est.coef_, est.intercept_]


def _glm_objective_gamma(X, y, seed):
    est = ObjectivePerturbation(epsilon=1.0, lam=0.1, data_norm=R, noise="gamma", loss="huber_svm",
                                random_state=seed).fit(X, y)
    return np.r_[est.coef_, est.intercept_]


def _glm_hinge_output(X, y, seed):
    est = OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, loss="hinge",
                             random_state=seed).fit(X, y)
    return np.r_[est.coef_, est.intercept_]


def _private_svm_linear(X, y, seed):
    est = PrivateSVM(C=1.0, epsilon=1.0, kernel="linear", data_norm=R, random_state=seed).fit(X, y)
    return est.coef_.copy()


def _private_svm_rff(X, y, seed):
    est = PrivateSVM(C=1.0, epsilon=1.0, n_components=8, gamma=1.0, random_state=seed).fit(X, y)
    return est.coef_.copy()


def _simplex(X, y, seed):
    est = SimplexERM(epsilon=1.0, lam=0.5, data_norm_inf=R, loss="logistic", task="classification",
                     max_draws=200, random_state=seed).fit(X, y)
    return est.coef_.copy()


def _kernel_svm(X, y):
    return KernelSVM(lam=0.05, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)


def _tddl(X, y, seed):
    rel = dpcore.TDDL(_kernel_svm(X, y), 2.0, 1e-5, data_norm=R, random_state=seed).fit(Z_PUBLIC)
    return rel.decision_function(Z_PUBLIC)


def _pinp(X, y, seed):
    svc = dpcore.PINP(_kernel_svm(X, y), 10.0, 1e-5, beta=0.05, n_queries=12, data_norm=R, random_state=seed)
    return svc.predict(Z_PUBLIC)


def _tdil(X, y, seed):
    # the continuous sampler needs a model without intercept (its score has no intercept coordinate)
    model = KernelSVM(lam=0.01, kernel="linear", tol=1e-9, intercept_scaling=0.0).fit(X, y)
    rel = dpcore.TDIL(model, 50.0, 1e-6, data_norm=R, calibration="tight", sampler="continuous",
                      net_radius=0.02, random_state=seed).fit()
    return rel.decision_function(Z_PUBLIC[:, :2])


PATHS = {
    "OutputPerturbation": _glm_output,
    "ObjectivePerturbation-gauss": _glm_objective_gauss,
    "ObjectivePerturbation-gamma": _glm_objective_gamma,
    "OutputPerturbation-hinge": _glm_hinge_output,
    "PrivateSVM-linear": _private_svm_linear,
    "PrivateSVM-rff": _private_svm_rff,
    "SimplexERM": _simplex,
    "TDDL": _tddl,
    "PINP": _pinp,
    "TDIL": _tdil,
}


def _run(fn, X, y, seed):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = np.asarray(fn(X, y, seed), dtype=np.float64)
    return out, [f"{w.category.__name__}: {w.message}" for w in caught]


@pytest.mark.parametrize("pair", ["one-class", "extreme-norm", "relabel"])
@pytest.mark.parametrize("path", list(PATHS))
def test_both_neighbours_release(path, pair):
    # TDIL's paper constants need n*eps >= 100 R_phi log(4/delta): a larger 2-D set
    (XA, yA), (XB, yB) = (_pairs(3000, 2) if path == "TDIL" else _pairs())[pair]
    outA, warnA = _run(PATHS[path], XA, yA, 7)
    outB, warnB = _run(PATHS[path], XB, yB, 7)
    assert outA.shape == outB.shape and np.isfinite(outA).all() and np.isfinite(outB).all()
    # nothing the caller sees may differ between the neighbours except the released numbers
    assert warnA == warnB, (warnA, warnB)


def test_one_class_training_sets_fit_like_any_other():
    X, _ = _base()
    for y in (np.ones(24, dtype=int), -np.ones(24, dtype=int)):
        svm = KernelSVM(lam=0.05, gamma=1.0).fit(X, y)
        assert list(svm.classes_) == [-1, 1]
        # one class, no bias: every training point pushed to the one side
        assert np.all(np.sign(svm.decision_function(X)) == y[0])
        est = OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, random_state=0).fit(X, y)
        assert list(est.classes_) == [-1, 1] and set(np.unique(est.predict(X))) <= {-1, 1}


def test_label_outside_the_declared_set_is_an_input_error_naming_y():
    """The old {0, 1} -> {1, 2} relabelling: with a declared set it is an error about that record
    only, whatever the other records are (and the message says how to declare the set)."""
    X, y = _base()
    y01 = (y > 0).astype(int)
    y012 = y01.copy()
    y012[0] = 2
    est = OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, classes=[0, 1], random_state=0)
    est.fit(X, y01)
    for other in (y012, np.where(np.arange(24) == 0, 2, 1), np.where(np.arange(24) == 0, 2, 0)):
        with pytest.raises(ValueError, match=r"^y contains 1 label\(s\) outside the declared classes=\[0, 1\]"):
            OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, classes=[0, 1]).fit(X, other)
    # the default rule (issue 25) reads 0/1 labels per label; a 2 is refused with the fix in the message
    OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R).fit(X, y01)
    with pytest.raises(ValueError, match=r"^y contains 1 label\(s\) outside the declared classes=None.*pass classes="):
        OutputPerturbation(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R).fit(X, y012)


@pytest.mark.parametrize("bad", [[None] * 24, ["a"] * 24, [1.5] * 24])
def test_odd_label_values_give_a_value_error_naming_y(bad):
    X, _ = _base()
    for est in (KernelSVM(), OutputPerturbation(epsilon=1.0, delta=1e-5, data_norm=R),
                PrivateSVM(kernel="linear", data_norm=R)):
        with pytest.raises(ValueError, match="^y contains"):
            est.fit(X, np.array(bad, dtype=object))


@pytest.mark.parametrize("classes", [[1], [1, 1], [1, 2, 3], "ab", [np.nan, 1], [1, "a"]])
def test_bad_declared_classes(classes):
    X, y = _base()
    with pytest.raises((ValueError, TypeError), match="^classes"):
        KernelSVM(classes=classes).fit(X, y)


def test_declared_classes_fix_the_encoding_not_the_data():
    """classes_[1] -> +1 regardless of which labels occur; string labels work when declared."""
    X, y = _base()
    lab = np.where(y > 0, "yes", "no")
    a = PrivateSVM(kernel="linear", data_norm=R, classes=("yes", "no"), random_state=3).fit(X, lab)
    b = PrivateSVM(kernel="linear", data_norm=R, random_state=3).fit(X, y)
    assert list(a.classes_) == ["no", "yes"]
    np.testing.assert_array_equal(a.coef_, b.coef_)
    only_yes = PrivateSVM(kernel="linear", data_norm=R, classes=("yes", "no"), random_state=3).fit(
        X, np.full(24, "yes"))
    assert list(only_yes.classes_) == ["no", "yes"]


# ----------------------------------------------------------------------------------------------
# audits of the whole fit path (refusal = an event) on the one-class pair
# ----------------------------------------------------------------------------------------------
def _infer_classes_like_before(cls):
    """Deliberately broken copy: the label set read off ``y`` (``np.unique``), refusing one class."""

    class Inferred(cls):
        def fit(self, X, y):
            u = np.unique(y)
            if u.shape[0] != 2:
                raise ValueError(f"y must contain exactly two classes, got {u.shape[0]}")
            self.classes = tuple(u.tolist())
            return super().fit(X, y)

    Inferred.__name__ = f"Inferred{cls.__name__}"
    return Inferred


def _fit_path_sampler(release):
    """sampler(input, k, seed): k independent fits; a refusal is released as NaN."""

    def sampler(data, k, seed):
        X, y = data
        ss = np.random.SeedSequence(seed)
        out = np.empty(k)
        for i, s in enumerate(ss.generate_state(k, dtype=np.uint32)):
            try:
                out[i] = release(X, y, int(s))
            except ValueError:
                out[i] = np.nan
        return out

    return sampler


_N_FIT_AUDIT = 400  # 400/400 vs 0/400 refusals gives eps >= 3.1 at alpha = 1e-6


def _audit_fit_path(release, eps):
    (XA, yA), (XB, yB) = _pairs()["one-class"]
    events = {"refused": np.isnan, "released, stat > 0": lambda o: o > 0}  # fixed before sampling
    return audit(_fit_path_sampler(release), (XA, yA), (XB, yB), n_samples=_N_FIT_AUDIT, events=events,
                 delta=1e-5, random_state=11)


@pytest.mark.parametrize("name", ["OutputPerturbation", "PrivateSVM", "TDDL"])
def test_audit_fit_path_on_the_one_class_pair_and_catch_an_inferred_label_set(name):
    if name == "OutputPerturbation":
        def make(cls):
            return lambda X, y, s: cls(epsilon=1.0, delta=1e-5, lam=0.1, data_norm=R, random_state=s).fit(X, y).coef_[0]
        honest, broken = make(OutputPerturbation), make(_infer_classes_like_before(OutputPerturbation))
    elif name == "PrivateSVM":
        def make(cls):
            return lambda X, y, s: cls(C=1.0, epsilon=1.0, kernel="linear", data_norm=R, random_state=s).fit(X, y).coef_[0]
        honest, broken = make(PrivateSVM), make(_infer_classes_like_before(PrivateSVM))
    else:
        def make(cls):
            def rel(X, y, s):
                model = cls(lam=0.05, kernel="rbf", gamma=1.0, tol=1e-8).fit(X, y)
                return dpcore.TDDL(model, 1.0, 1e-5, data_norm=R, norm_bound="public", random_state=s).fit(
                    Z_PUBLIC).decision_function(Z_PUBLIC[:1])[0]
            return rel
        honest, broken = make(KernelSVM), make(_infer_classes_like_before(KernelSVM))
    res = _audit_fit_path(honest, 1.0)
    res.assert_private(1.0)
    bad = _audit_fit_path(broken, 1.0)
    assert bad.epsilon_lower_bound > 2.5, str(bad)
    print(f"\n{name} fit path, one-class pair: honest eps >= {res.epsilon_lower_bound:.3f}, "
          f"inferred label set {bad.epsilon_lower_bound:.3f}")
