"""Why does the release over public points (TDDL-gp) lose to the interactive service (GPService)? (issue 23, item 3)

For each task of ``imbalanced_accuracy.py`` (same public splits; rbf γ = 1, the library's default bias, private
balanced class weights capped at M = 10 with 5 % of ε, C = auto, ε = 1, n = 20,000): the AUC of the non-private
model, of its *noiseless* kernel interpolant from the T = 1,000 public points (what TDDL-gp would release without
noise: the interpolation error alone), and of TDDL-gp and GPService over 4 noise seeds each.

    PYTHONPATH=python .venv/bin/python experiments/tddl_vs_service.py adult,adult-5,letter,letter-A,shuttle-rare
"""
import sys, time, numpy as np
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imbalanced_accuracy as ia
import dpcore
from dpcore import _core
from _harness import classification_metrics as cm
from scipy import linalg
n = 20000
for task in sys.argv[1].split(","):
    cfg = ia.Config(n=n, T=1000, n_test=5000)
    d = ia.load_task(task, n)
    c = ia.Context(cfg, d); c.eps = 1.0; c.run = 0
    Q = d.X_test[1000:6000]; yq = d.y_test[1000:6000]; Z = d.X_test[:1000]
    eps, ex = c.weighted(10.0, {})
    lam = c.lam_auto(eps, **ex)
    m = c.model_lam("hinge", lam, **ex)
    f = m.decision_function(Q); b = m.intercept_scaling
    Kzz = _core.kernel_matrix(Z, Z, "rbf", 1.0, 3, 1.0, b); Kqz = _core.kernel_matrix(Q, Z, "rbf", 1.0, 3, 1.0, b)
    pf = Kqz @ linalg.cho_solve(linalg.cho_factor(Kzz + 1e-6*np.eye(1000), lower=True), m.decision_function(Z))
    t, s = [], []
    for seed in range(4):
        r = dpcore.TDDL(m, epsilon=eps, delta=1e-6, data_norm=1.0, random_state=100+seed).fit(Z).release_.decision_function(Q)
        v = dpcore.GPService(m, epsilon=eps, delta=1e-6, data_norm=1.0, max_exact_queries=5000, random_state=200+seed).decision_function(Q)
        t.append(cm(yq, r)["auc"]); s.append(cm(yq, v)["auc"])
    print(f"{task}: nonprivate {cm(yq,f)['auc']:.3f}, noiseless interpolant over T=1000 {cm(yq,pf)['auc']:.3f} "
          f"(max|f-Pf| {np.max(np.abs(f-pf)):.2e}, sd f {f.std():.3f}); TDDL-gp {np.mean(t):.3f}±{np.std(t):.3f}  GPService {np.mean(s):.3f}±{np.std(s):.3f}", flush=True)
