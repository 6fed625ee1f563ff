"""A user's script touching every public class and function of dpcore (``dpcore.__all__`` and the public names
of each subpackage), type-checked with ``mypy --strict`` by ``tests/typing/test_mypy_strict.py``.

It is written as a user would write it (no casts, no ``type: ignore``): every error mypy reports here is a gap in
dpcore's annotations. It also runs (small sizes, a few seconds): ``python tests/typing/user_script.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

import dpcore
from dpcore import audit, datasets, ldp
from dpcore.accounting import (
    BudgetAccountant,
    BudgetRecord,
    compose_advanced,
    compose_basic,
    gaussian_delta,
    gaussian_sigma,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    laplace_scale,
)
from dpcore.exceptions import BudgetExceededError, DpcoreError
from dpcore.glm import FTRLCalibration, GLMPrivacy, SimplexCalibration
from dpcore.kernel_learning import (
    GPServiceCalibration,
    PINPCalibration,
    SelectionPrivacy,
    TDDLCalibration,
    TDILCalibration,
    auto_lam,
)
from dpcore.mechanisms import (
    ChaChaRng,
    LinearBallEM,
    discrete_gaussian,
    discrete_laplace,
    multinomial_counts,
    multinomial_draws,
    private_proportion,
)
from dpcore.private_svm import PrivateSVMPrivacy


def toy_data(n: int, d: int, seed: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Rows in the unit ball, ±1 labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def mechanisms_and_accounting() -> None:
    version: str = dpcore.__version__
    acc = dpcore.BudgetAccountant(10.0, 1e-5)
    rng: ChaChaRng = dpcore.check_random_state(0)
    mean = dpcore.laplace_mechanism(0.5, 0.01, 1.0, random_state=rng, accountant=acc)
    vec = dpcore.gaussian_mechanism(np.zeros(3), 0.1, 1.0, 1e-6, random_state=1, accountant=acc)
    eps_left, delta_left = acc.remaining()
    per_step: float = acc.remaining_per_step(4)
    acc.check(0.1, label="probe")
    records: list[BudgetRecord] = acc.log
    try:
        acc.spend(1e6)
    except BudgetExceededError as exc:
        refused: DpcoreError = exc
    frac: float = private_proportion(np.array([1, -1, 1]), 1, 1.0, random_state=2)
    weights = dpcore.private_class_weights(np.array([1, -1, -1]), (-1, 1), 1.0, random_state=3)
    cw: dict[int, float] = {int(k): float(v) for k, v in weights.items()}
    dpcore.KernelSVM(lam=0.1, class_weight=cw).fit(np.array([[0.1], [0.2], [0.3]]), np.array([1, -1, -1]))
    dg = discrete_gaussian(4, 1, size=5, random_state=3)
    dl = discrete_laplace(2, 1, size=5, random_state=3)
    idx, counts = multinomial_counts(np.array([0.2, 0.8]), 10, random_state=4)
    draws = multinomial_draws(np.array([0.5, 0.5]), 10, random_state=4)
    em = LinearBallEM(ChaChaRng(5))
    point: NDArray[np.float64] = em.sample(np.array([1.0, 0.0]), 2.0, 1.0)
    t: float = em.sample_t(1.0, 2, 1.0)
    e1, d1 = compose_basic([0.5, 0.5], [1e-6, 1e-6])
    e2, d2 = compose_advanced(0.1, 1e-7, 10, 1e-6)
    s1: float = gaussian_sigma(1.0, 1.0, 1e-5)
    s2: float = gaussian_sigma_analytic(1.0, 1.0, 1e-5)
    s3: float = gaussian_sigma_classic(1.0, 0.5, 1e-5)
    dd: float = gaussian_delta(s1, 1.0, 1.0)
    b: float = laplace_scale(1.0, 1.0)
    print(version, mean, vec.shape, eps_left + delta_left + per_step, len(records), refused, frac, dg.sum(),
          dl.sum(), idx.shape, counts.sum(), draws.shape, point.shape, t, e1 + d1 + e2 + d2, s2 + s3 + dd + b)


def privacy_audit() -> None:
    def sampler(value: float, n: int, seed: int) -> NDArray[np.float64]:
        return dpcore.laplace_mechanism(np.full(n, value), 1.0, 1.0, random_state=seed)

    res: audit.AuditResult = audit.audit(sampler, 0.0, 1.0, n_samples=20_000, thresholds=[0.5, 1.0], random_state=1)
    ok: bool = res.check(1.0)
    res.assert_private(1.0)
    lo, hi = audit.clopper_pearson(5, 100, 1e-3)
    lb: float = audit.epsilon_lower_bound(60, 100, 40, 100, alpha=1e-3)
    print(res.epsilon_lower_bound, ok, lo, hi, lb)


def kernels() -> None:
    X, _ = toy_data(50, 3, 0)
    K: NDArray[np.float64] = dpcore.kernel_matrix(X, kernel="rbf", gamma=1.0)
    f: NDArray[np.float64] = dpcore.kernel_predict(X[:5], X, np.ones(50) / 50, kernel="rbf", gamma=1.0)
    r: float = dpcore.feature_map_radius(1.0, kernel="poly", degree=2, gamma=1.0)
    rff = dpcore.RandomFourierFeatures(n_components=20, gamma=1.0, random_state=0).fit(X)
    Phi: NDArray[np.float64] = rff.transform(X)
    Phi2: NDArray[np.float64] = dpcore.RandomFourierFeatures(n_components=8, random_state=1).fit_transform(X)
    kv: NDArray[np.float64] = rff.kernel_value(X[:2], X[:3])
    names: list[str] = list(dpcore.kernels.KERNELS)
    print(K.shape, f.shape, r, Phi.shape, Phi2.shape, kv.shape, names)


def kernel_learning() -> None:
    X, y = toy_data(300, 2, 1)
    Z, yz = toy_data(40, 2, 2)
    svm = dpcore.KernelSVM(lam=0.01, kernel="rbf", gamma=1.0, tol=1e-8, verbose=False).fit(X, y)
    pred: NDArray[np.float64] = svm.predict(Z)
    dec: NDArray[np.float64] = svm.decision_function(Z)
    acc: float = svm.score(Z, yz)
    klr = dpcore.KernelLogisticRegression(lam=0.01, gamma=1.0, tol=1e-8).fit(X, y)
    proba: NDArray[np.float64] = klr.predict_proba(Z)

    lam: float = auto_lam(300, 1.0, 1e-6, data_norm=1.0, kernel="rbf", gamma=1.0)
    svm_auto = dpcore.KernelSVM(lam=lam, gamma=1.0, tol=1e-8).fit(X, y)

    pinp = dpcore.PINP(svm, 5.0, 1e-6, data_norm=1.0, n_queries=40, random_state=0)
    answers: NDArray[np.float64] = pinp.predict(Z)
    pinp_cal: PINPCalibration = pinp.privacy_
    pinp.close()

    gps = dpcore.GPService(svm_auto, 1.0, 1e-6, data_norm=1.0, max_exact_queries=40, random_state=0)
    gp_pred: NDArray[np.float64] = gps.decision_function(Z)
    gp_dec: NDArray[np.float64] = gps.decision_function(Z)
    gp_cal: GPServiceCalibration = gps.privacy_
    gps.close()

    tddl = dpcore.TDDL(svm, 2.0, 1e-6, data_norm=1.0, noise="gaussian", random_state=0).fit(Z)
    release: dpcore.KernelRelease = tddl.release_
    tddl_cal: TDDLCalibration = tddl.privacy_
    rel_acc: float = release.score(Z, yz)
    rel_pred: NDArray[np.float64] = release.predict(Z)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "release.json"
        release.save(path)
        loaded = dpcore.KernelRelease.load(path)
        same: bool = bool(np.allclose(loaded.decision_function(Z), release.decision_function(Z)))
    norm: float = release.norm()
    as_dict: dict[str, object] = release.to_dict()

    svm_lin = dpcore.KernelSVM(lam=0.01, kernel="linear", tol=1e-9).fit(X, y)
    tdil = dpcore.TDIL(svm_lin, 50.0, 1e-6, net_radius=0.05, random_state=0).fit()
    tdil_release: dpcore.KernelRelease = tdil.release_
    tdil_cal: TDILCalibration = tdil.privacy_

    search = dpcore.PrivateGridSearch({"lam": [0.1, 0.01]}, 2.0, 1e-6, Z=Z, data_norm=1.0,
                                      base_params={"gamma": 1.0, "tol": 1e-8}, scoring="roc_auc",
                                      random_state=0).fit(X, y)
    sel_pred: NDArray[np.float64] = search.predict(Z)
    sel_score: float = search.score(Z, yz)
    sel_priv: SelectionPrivacy = search.privacy_
    print(pred.shape, dec.shape, acc, proba.shape, answers.shape, pinp_cal.B, gp_pred.shape, gp_dec.shape,
          gp_cal.mu, tddl_cal.noise_scale, rel_acc, rel_pred.shape, same, norm, len(as_dict),
          tdil_release.norm(), tdil_cal.B, sel_pred.shape, sel_score, sel_priv.epsilon)


def glm() -> None:
    X, y = toy_data(400, 3, 3)
    acc = BudgetAccountant(20.0, 1e-4)
    out = dpcore.OutputPerturbation(2.0, 1e-6, lam=0.01, data_norm=1.0, random_state=0, accountant=acc).fit(X, y)
    out_pred: NDArray[np.float64] = out.predict(X)
    coef: NDArray[np.float64] = out.coef_
    out_priv: GLMPrivacy = out.privacy_
    obj = dpcore.ObjectivePerturbation(2.0, 1e-6, lam=0.01, data_norm=1.0, random_state=0).fit(X, y)
    obj_dec: NDArray[np.float64] = obj.decision_function(X)
    obj_score: float = obj.score(X, y)

    simplex = dpcore.SimplexERM(10.0, lam=0.5, data_norm_inf=1.0, loss="logistic", random_state=0)
    cal: SimplexCalibration = simplex.calibration(400, 3)
    simplex.fit(X, y)
    s_pred: NDArray[np.float64] = simplex.predict(X)

    ftrl = dpcore.PrivateFTRL(50, 30.0, 1e-6, data_norm_inf=1.0, n_features=3, random_state=1)
    ftrl_cal: FTRLCalibration = ftrl.calibration(3)
    choice: int = ftrl.predict()
    ftrl.partial_fit(X[:10])
    print(out_pred.shape, coef.shape, out_priv.epsilon, obj_dec.shape, obj_score, cal.n_draws, s_pred.shape,
          ftrl_cal.lam, choice, acc.remaining())


def private_svm() -> None:
    X, y = toy_data(300, 3, 4)
    clf = dpcore.PrivateSVM(2.0, n_components=20, gamma=1.0, data_norm=1.0, random_state=0).fit(X, y)
    pred: NDArray[np.float64] = clf.predict(X)
    dec: NDArray[np.float64] = clf.decision_function(X)
    score: float = clf.score(X, y)
    priv: PrivateSVMPrivacy = clf.privacy_
    print(pred.shape, dec.shape, score, priv.as_dict()["epsilon"])


def local_dp() -> None:
    X, y = toy_data(500, 3, 5)
    channel: ldp.GaussianChannel = ldp.gaussian_channel(3, 1.0, 1e-6, data_norm=1.0)
    noisy: NDArray[np.float64] = ldp.privatize_vector(X[0], 1.0, 1e-6, random_state=0)
    many: NDArray[np.float64] = ldp.sample_privatize_vector(X[0], 1.0, 1e-6, 4, random_state=0)
    reports_basic = ldp.simulate(X, None, channel, random_state=0)

    mean_proto = ldp.MeanEstimationProtocol(3, 500, 4.0, 1e-6)
    budget: ldp.LDPBudget = mean_proto.budget()
    one_report: NDArray[np.float64] = ldp.mean_report(X[0], mean_proto, random_state=0)
    mean_reports = ldp.simulate(X, None, mean_proto, random_state=0)
    mean_est = ldp.LDPMeanEstimator(mean_proto).fit(mean_reports)
    mean_vec: NDArray[np.float64] = mean_est.mean_
    u_hat, tau_used = ldp.l1_recovery(np.eye(3), np.array([0.5, 0.0, 0.0]), 0.1)

    reg_proto = ldp.SparseRegressionProtocol(3, 500, 4.0, 1e-6)
    zr, vr = ldp.regression_report(X[0], y[0], reg_proto, random_state=0)
    Zr, Vr = ldp.simulate(X, y, reg_proto, random_state=0)
    reg = ldp.LDPSparseRegression(reg_proto).fit(Zr, Vr)
    reg_pred: NDArray[np.float64] = reg.predict(X)

    kr_proto = ldp.KernelRidgeProtocol(3, 500, 4.0, 1e-6, n_components=20)
    feats: NDArray[np.float64] = kr_proto.features(X)
    zk, vk = ldp.kernel_report(X[0], y[0], kr_proto, random_state=0)
    Zk, Vk = ldp.simulate(X, y, kr_proto, random_state=0)
    kr = ldp.LDPKernelRidge(kr_proto).fit(Zk, Vk)
    kr_pred: NDArray[np.float64] = kr.predict(X)

    lr_proto = ldp.LogisticProtocol(3, 500, 8.0, 1e-6, degree=2)
    one: ldp.LogisticReports = ldp.logistic_report(X[0], y[0], lr_proto, random_state=0)
    lr_reports = ldp.simulate(X, y, lr_proto, random_state=0)
    lr = ldp.LDPLogisticRegression(lr_proto, verbose=0).fit(lr_reports)
    lr_proba: NDArray[np.float64] = lr.predict_proba(X)
    lr_pred: NDArray[np.int64] = lr.predict(X)  # labels ±1 (fit is now typed, so this is checked)
    coefs: NDArray[np.float64] = ldp.chebyshev_coefficients(np.tanh, 3)
    specs: list[ldp.ReleaseSpec] = list(lr_proto.releases())
    print(channel.sigma, noisy.shape, many.shape, np.shape(reports_basic), budget.epsilon, one_report.shape,
          mean_vec.shape, u_hat.shape, tau_used, np.shape(zr), np.shape(vr), reg_pred.shape, feats.shape, np.shape(zk),
          np.shape(vk), kr_pred.shape, one.z0.shape, lr_proba.shape, lr_pred.shape, coefs.shape, len(specs))


def bundled_data() -> None:
    adult: datasets.Bunch = datasets.load_adult("test")
    Xa: NDArray[np.float64] = adult.X
    ya: NDArray[np.float64] = adult.y
    names: list[str] = datasets.adult_feature_names()
    raw = datasets.load_adult_raw("test")
    enc: NDArray[np.float64] = datasets.encode_adult(raw.data[:5])
    lab: NDArray[np.float64] = datasets.encode_adult_labels(raw.target[:5])
    shuttle = datasets.load_shuttle("test")
    sh_raw = datasets.load_shuttle_raw("test")
    sh_enc: NDArray[np.float64] = datasets.encode_shuttle(sh_raw.data[:5])
    sh_lab: NDArray[np.float64] = datasets.encode_shuttle_labels(sh_raw.target[:5])
    letter = datasets.load_letter("test")
    bound: float = datasets.ADULT_NORM_BOUND + datasets.SHUTTLE_NORM_BOUND
    print(Xa.shape, ya.shape, len(names), enc.shape, lab.shape, shuttle.X.shape, sh_enc.shape, sh_lab.shape,
          letter.X.shape, bound, len(datasets.ADULT_CATEGORIES), len(datasets.SHUTTLE_FEATURES))


def preprocessing() -> None:
    from dpcore import preprocessing as pp

    rng = np.random.default_rng(0)
    X: NDArray[np.float64] = rng.normal(3.0, 5.0, size=(500, 3))
    y: NDArray[np.int64] = (X[:, 0] > 3.0).astype(np.int64)
    q = pp.PrivateQuantiles((0.1, 0.9), bounds=(-50.0, 50.0), epsilon=1.0, random_state=0).fit(X)
    sc = pp.StandardScaler(epsilon=1.0, bounds=(-50.0, 50.0), random_state=0).fit(X)
    mm = pp.MinMaxScaler(bounds=(-50.0, 50.0)).fit(X)
    clip = pp.RowNormClipper(1.0, scale=0.5)
    enc = pp.OneHotEncoder(categories=[["a", "b"]]).fit(np.array([["a"], ["c"]], dtype=object))
    pipe: pp.PrivatePipeline = pp.make_private_pipeline(
        pp.StandardScaler(bounds=(-50.0, 50.0), random_state=0), pp.RowNormClipper(1.0, scale=0.5),
        dpcore.ObjectivePerturbation(data_norm=1.0, classes=(0, 1), random_state=0), epsilon=1.0, delta=1e-6)
    pipe.fit(X, y)
    print(q.quantiles_.shape, sc.transform(X).shape, mm.transform(X).shape, clip.fit_transform(X).shape,
          enc.transform(np.array([["b"]], dtype=object)).shape, pp.pipeline_dp_event(pipe))


def main() -> None:
    mechanisms_and_accounting()
    privacy_audit()
    kernels()
    kernel_learning()
    glm()
    private_svm()
    local_dp()
    bundled_data()
    preprocessing()


if __name__ == "__main__":
    main()
