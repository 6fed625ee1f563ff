"""PrivateSVM with K >= 3 declared classes (issue 24, item 4): a K × F weight matrix released with Laplace noise
on its L1 sensitivity √(K·F)·(2·√2·C·κ + 2ρ) (multinomial logistic loss, L = √2; proof in
dpcore.private_svm.estimator). Fixed seeds; the audit at alpha = 1e-6 with thresholds fixed before sampling."""

import math

import numpy as np
import pytest

from dpcore import BudgetAccountant, PrivateSVM
from dpcore.audit import audit

CLS = [0, 1, 2]


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    y = rng.integers(0, 3, size=n)
    X = centers[y] + 0.1 * rng.standard_normal((n, 2))
    return X, y


def test_k3_fits_and_predicts_well_at_large_epsilon():
    X, y = _blobs(3000, 0)
    Xt, yt = _blobs(1000, 1)
    clf = PrivateSVM(epsilon=50.0, C=1.0, loss="logistic", classes=CLS, n_components=100, gamma=2.0,
                     random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 100) and clf.intercept_.shape == (3,)
    assert clf.decision_function(Xt).shape == (1000, 3)
    assert set(np.unique(clf.predict(Xt))) <= set(CLS)
    assert clf.score(Xt, yt) > 0.95
    proba = clf.predict_proba(Xt[:5])
    assert proba.shape == (5, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert clf.privacy_.n_classes == 3
    assert list(clf.classes_) == CLS
    tags = clf.__sklearn_tags__()
    assert tags.classifier_tags.multi_class


def test_k3_calibration_numbers():
    X, y = _blobs(500, 2)
    est = PrivateSVM(epsilon=1.0, C=0.5, loss="logistic", classes=CLS, kernel="linear", data_norm=1.0, clip=True)
    cal = est._prepare(X, y).cal
    K, F, n = 3, 2, 500
    root = math.sqrt(K * F)
    assert cal.n_classes == K and cal.n_features_out == F and cal.lipschitz == pytest.approx(math.sqrt(2))
    assert cal.sensitivity_l2 >= 2 * math.sqrt(2) * 0.5 * cal.kappa  # 2 L C κ (scikit-learn C)
    assert cal.sensitivity_l1 >= root * (cal.sensitivity_l2 + 2 * cal.residual_bound)
    assert cal.sensitivity_l1 <= root * (cal.sensitivity_l2 + 2 * cal.residual_bound) * (1 + 1e-6)
    assert cal.release_scale >= cal.sensitivity_l1 / cal.epsilon


def _sens_pairs():
    """Adversarial neighbours: same point relabelled, point negated, points at the boundary of the ball."""
    rng = np.random.default_rng(5)
    out = []
    for t in range(6):
        n, d = 8, 3
        X = rng.normal(size=(n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(1.0, 2.0, size=(n, 1))
        X[0] /= np.linalg.norm(X[0])
        y = rng.integers(0, 3, size=n)
        X2, y2 = X.copy(), y.copy()
        if t % 3 == 0:
            y2[0] = (y[0] + 1) % 3
        elif t % 3 == 1:
            X2[0] = -X[0]
        else:
            X2[0] = rng.normal(size=d); X2[0] /= np.linalg.norm(X2[0]); y2[0] = (y[0] + 2) % 3
        out.append((X, y, X2, y2, [0.05, 1.0, 20.0][t % 3]))
    return out


@pytest.mark.parametrize("X, y, X2, y2, C", _sens_pairs())
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sensitivity_bound_holds_on_adversarial_pairs(X, y, X2, y2, C, fit_intercept):
    est = PrivateSVM(epsilon=1.0, C=C, loss="logistic", classes=CLS, kernel="linear", data_norm=1.0,
                     fit_intercept=fit_intercept)
    pa, pb = est._prepare(X, y), est._prepare(X2, y2)
    wa, wb = est._solve(pa)[0], est._solve(pb)[0]
    assert wa.shape == (3, 3 + fit_intercept)
    l2 = float(np.linalg.norm(wa - wb))
    l1 = float(np.abs(wa - wb).sum())
    cal = pa.cal
    assert l2 <= cal.sensitivity_l2 + 2 * cal.residual_bound
    assert l1 <= cal.sensitivity_l1


def test_refusals_come_before_the_charge():
    X, y = _blobs(200, 3)
    acc = BudgetAccountant(10.0, 0.0)
    with pytest.raises(ValueError, match="loss"):  # the hinge has no certified K-class solver here
        PrivateSVM(epsilon=1.0, classes=CLS, accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        PrivateSVM(epsilon=1.0, loss="logistic", classes=CLS, accountant=acc).fit(X, np.where(y == 2, 7, y))
    with pytest.raises(ValueError, match="classes"):
        PrivateSVM(epsilon=1.0, loss="logistic", classes=[0, 1, 1], accountant=acc).fit(X, y)
    with pytest.raises(ValueError, match="epsilon"):
        PrivateSVM(epsilon=-1.0, loss="logistic", classes=CLS, accountant=acc).fit(X, y)
    assert acc.spent == (0.0, 0.0)
    PrivateSVM(epsilon=1.0, loss="logistic", classes=CLS, accountant=acc, random_state=0).fit(X, y)
    assert acc.spent == (1.0, 0.0)


# ------------------------------------------------------------------------------------------ audit
class _BinarySensitivity(PrivateSVM):
    """Deliberately broken copy: the binary sensitivity (L = 1, √F instead of √(K·F)) for K classes."""

    _multiclass_lipschitz = 1.0

    @staticmethod
    def _multiclass_l1_factor(K, F):
        return math.sqrt(F)


def _mc_audit(cls, eps, n_samples, seed):
    # K = 3, d = 1, n = 4, small C (W* ≈ C Σ (e_y − softmax(0)) x: the regime where the gradient difference is
    # largest in L1): D' negates the one point of D at the boundary, keeping its label, so
    # W_D − W_D' ≈ 2C(1/3 − e_y)·1: L1 ≈ (8/3)·C, against the calibrated 2·√2·√3·C (+ residual).
    X = np.array([[1.0], [0.5], [-0.5], [0.25]])
    XB = X.copy(); XB[0] = -1.0
    y = np.array([0, 1, 2, 1])
    kw = dict(C=0.02, epsilon=eps, kernel="linear", data_norm=1.0, loss="logistic", classes=CLS)
    est = cls(**kw)
    ta, tb = est._solve(est._prepare(X, y))[0].ravel(), est._solve(est._prepare(XB, y))[0].ravel()
    l1 = float(np.abs(ta - tb).sum())

    def stat(out):  # Laplace log-likelihood ratio (times the scale)
        return (np.abs(out - tb) - np.abs(out - ta)).sum(axis=1)

    def sampler(which, k, s):
        return cls(**kw)._release_samples(X if which == 0 else XB, y, k, random_state=s).reshape(k, -1)

    thresholds = l1 * np.linspace(0.0, 1.0, 21)[:-1]  # fixed before sampling
    return audit(sampler, 0, 1, n_samples=n_samples, thresholds=thresholds, statistic=stat, random_state=seed)


def test_audit_k3_honest_passes_and_binary_sensitivity_copy_is_caught():
    honest = _mc_audit(PrivateSVM, 1.0, 400_000, 41)
    honest.assert_private(1.0)
    broken = _mc_audit(_BinarySensitivity, 1.0, 400_000, 42)
    assert broken.epsilon_lower_bound > 1.0, str(broken)
    print(f"\nPrivateSVM K=3: honest eps >= {honest.epsilon_lower_bound:.3f}, binary-sensitivity copy "
          f"{broken.epsilon_lower_bound:.3f}")


def test_sklearn_check_estimator_k3():
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    from dpcore._internal.tags import LABEL_CHECKS, RELEASE_CHECKS, RELEASE_CLASSIFIER_CHECKS
    from dpcore.kernel_learning.multiclass import MULTICLASS_EXPECTED_FAILED_CHECKS

    est = PrivateSVM(epsilon=1.0, loss="logistic", data_norm=1.0, clip=True, classes=CLS, random_state=0)
    expected = {**LABEL_CHECKS, **MULTICLASS_EXPECTED_FAILED_CHECKS, **RELEASE_CHECKS, **RELEASE_CLASSIFIER_CHECKS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(est, expected_failed_checks=expected, on_fail=None)
    failed = {r["check_name"]: str(r["exception"])[:200] for r in res if r["status"] == "failed"}
    assert failed == {}, failed
