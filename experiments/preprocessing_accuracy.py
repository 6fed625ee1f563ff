"""Private preprocessing from raw columns (issue 25, item 2): dpcore.preprocessing vs public preprocessing vs diffprivlib.

Adult (UCI) from its raw columns: the 6 numeric columns with their declared ranges, the 8 categorical
columns with their declared categories, labels by the public rule ">50K" -> 1. Methods, all at total
(ε, δ) = (1, 1e-6) and the same model (logistic loss, λ = 1e-3, rows in the unit ball):

``public``      dpcore.ObjectivePerturbation on ``load_adult()`` (the bundled public, data-independent
                encoding into the unit ball: log scales, declared ranges, one-hot / sqrt(14)), ε = 1.
``dpcore``      the private pipeline of ``examples/raw_csv_to_private_model.py``: private StandardScaler
                (private 5–95 % clip range inside the declared ranges, noisy moments) on the numeric columns,
                declared one-hot, RowNormClipper(1, scale=1/sqrt(14)), ObjectivePerturbation; weights (1, 4):
                ε = 0.2 for the scaler, 0.8 for the model.
``dpcore_log``  the same with a public ``log1p`` of fnlwgt and the capital columns first (a fixed function).
``diffprivlib`` diffprivlib 0.6 StandardScaler(ε = 0.2, declared bounds) on the numeric columns + the same declared
                one-hot and row clipping + diffprivlib LogisticRegression(ε = 0.8, data_norm = 1, C = 1/(nλ)).

The issue's synthetic raw task: 4 columns N(3, 5²), 2,000 training rows (10,000 test rows), label
``1[(x − 3)·w > 0]`` with the public ``w = (1, −0.5, 0.8, 0.3)``, ε = 1, declared bounds ±50: ``clip_raw``
(ObjectivePerturbation with clip=True on the raw rows, data_norm = 1), ``sklearn_leaky`` (scikit-learn's
StandardScaler — leaks its mean and scale; shown for reference only), ``dpcore`` (make_private_pipeline,
weights (1, 3)) and ``diffprivlib`` (its StandardScaler ε = 0.25 + LogisticRegression ε = 0.75), and, to
attribute the difference, each library's scaler with the other library's model.

Run ``python experiments/preprocessing_accuracy.py`` (3 Adult seeds and 10 synthetic ones, about a minute on 2
cores; ``--seeds``, ``--synthetic-seeds``).
Writes ``results/preprocessing_results.json`` and ``results/preprocessing_results.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import types
import warnings

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.preprocessing import StandardScaler as SkStandardScaler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import dpcore  # noqa: E402
from _harness import derive_seed  # noqa: E402
from dpcore.datasets import ADULT_CATEGORIES, ADULT_NUMERIC_RANGES, load_adult, load_adult_raw  # noqa: E402
from dpcore.preprocessing import OneHotEncoder, RowNormClipper, StandardScaler, make_private_pipeline  # noqa: E402
from raw_csv_to_private_model import CATEGORICAL, NUMERIC, build_pipeline  # noqa: E402

EPS, DELTA, LAM = 1.0, 1e-6, 1e-3


def import_diffprivlib():
    """As in glm_accuracy.py: diffprivlib 0.6 imports tree models that fail with scikit-learn >= 1.6; stub them."""
    if "diffprivlib.models.forest" not in sys.modules:
        stub = types.ModuleType("diffprivlib.models.forest")
        stub.RandomForestClassifier = stub.DecisionTreeClassifier = None
        sys.modules["diffprivlib.models.forest"] = stub
    import diffprivlib
    from diffprivlib.models import LogisticRegression, StandardScaler as DplScaler

    return diffprivlib.__version__, LogisticRegression, DplScaler


def metrics(y, scores, pred):
    return dict(acc=float(accuracy_score(y, pred)), auc=float(roc_auc_score(y, scores)),
                bacc=float(balanced_accuracy_score(y, pred)))


def adult_raw(subset):
    b = load_adult_raw(subset)
    num = b.data[:, [b.feature_names.index(c) for c in NUMERIC]].astype(float)
    cat = b.data[:, [b.feature_names.index(c) for c in CATEGORICAL]]
    return np.hstack([num, cat]).astype(object), (b.target == ">50K").astype(int)


LOG_COLS = [NUMERIC.index(c) for c in ("fnlwgt", "capital-gain", "capital-loss")]


def _log_numeric(X):
    X = np.array(X, dtype=float, copy=True)
    X[:, LOG_COLS] = np.log1p(X[:, LOG_COLS])
    return X


def dpcore_log_pipeline(seed):
    lower = np.array([ADULT_NUMERIC_RANGES[c][0] for c in NUMERIC])
    upper = np.array([ADULT_NUMERIC_RANGES[c][1] for c in NUMERIC])
    lower[LOG_COLS], upper[LOG_COLS] = np.log1p(lower[LOG_COLS]), np.log1p(upper[LOG_COLS])
    k = len(NUMERIC)
    num = make_pipeline(FunctionTransformer(_log_numeric), StandardScaler(bounds=(lower, upper), random_state=seed))
    ct = ColumnTransformer([("num", num, list(range(k))),
                            ("cat", OneHotEncoder(categories=[ADULT_CATEGORIES[c] for c in CATEGORICAL]),
                             list(range(k, k + len(CATEGORICAL))))])
    return make_private_pipeline(ct, RowNormClipper(1.0, scale=1 / math.sqrt(14)),
                                 dpcore.ObjectivePerturbation(data_norm=1.0, lam=LAM, classes=(0, 1),
                                                              random_state=seed),
                                 epsilon=EPS, delta=DELTA, weights=(1, 4))


def diffprivlib_pipeline(seed, n, bounds, cat_columns, categories, eps_scaler, eps_model, row_scale):
    _, DPLR, DplScaler = import_diffprivlib()
    k = len(bounds[0])
    steps = [("num", DplScaler(epsilon=eps_scaler, bounds=bounds, random_state=seed % 2**32), list(range(k)))]
    if cat_columns:
        steps.append(("cat", OneHotEncoder(categories=categories), cat_columns))
    return make_pipeline(ColumnTransformer(steps), RowNormClipper(1.0, scale=row_scale),
                         DPLR(epsilon=eps_model, data_norm=1.0, C=1.0 / (n * LAM), random_state=seed % 2**32))


def run_adult(seeds):
    X, y = adult_raw("train")
    Xt, yt = adult_raw("test")
    pub, pub_t = load_adult("train"), load_adult("test")
    n = len(y)
    bounds = ([ADULT_NUMERIC_RANGES[c][0] for c in NUMERIC], [ADULT_NUMERIC_RANGES[c][1] for c in NUMERIC])
    k = len(NUMERIC)
    rows = []
    for s in seeds:
        seed = derive_seed(s, "preprocessing", "adult")
        m = dpcore.ObjectivePerturbation(EPS, DELTA, data_norm=1.0, lam=LAM, random_state=seed).fit(pub.X, pub.y)
        ytp = (pub_t.y > 0).astype(int)
        rows.append(dict(task="adult", method="public", seed=s,
                         **metrics(ytp, m.decision_function(pub_t.X), (m.predict(pub_t.X) > 0).astype(int))))
        for name, pipe in (("dpcore", build_pipeline(EPS, DELTA, seed)), ("dpcore_log", dpcore_log_pipeline(seed)),
                           ("diffprivlib", diffprivlib_pipeline(seed, n, bounds, list(range(k, k + len(CATEGORICAL))),
                                                                [ADULT_CATEGORIES[c] for c in CATEGORICAL],
                                                                0.2, 0.8, 1 / math.sqrt(14)))):
            pipe.fit(X, y)
            rows.append(dict(task="adult", method=name, seed=s,
                             **metrics(yt, pipe.decision_function(Xt), pipe.predict(Xt))))
    return rows


def synthetic(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(3.0, 5.0, size=(12000, 4))
    y = ((X - 3.0) @ np.array([1.0, -0.5, 0.8, 0.3]) > 0).astype(int)
    return X[:2000], y[:2000], X[2000:], y[2000:]


def run_synthetic(seeds):
    rows = []
    for s in seeds:
        seed = derive_seed(s, "preprocessing", "synthetic")
        Xtr, ytr, Xte, yte = synthetic(seed)
        model = lambda e: dpcore.ObjectivePerturbation(e, DELTA, data_norm=1.0, lam=LAM, classes=(0, 1),  # noqa: E731
                                                       random_state=seed)
        pipes = {
            "clip_raw": model(EPS).set_params(clip=True),
            "sklearn_leaky": make_pipeline(SkStandardScaler(), RowNormClipper(1.0, scale=0.5), model(EPS)),
            "dpcore": make_private_pipeline(StandardScaler(bounds=(-50, 50), random_state=seed),
                                            RowNormClipper(1.0, scale=0.5),
                                            dpcore.ObjectivePerturbation(data_norm=1.0, lam=LAM, classes=(0, 1),
                                                                         random_state=seed),
                                            epsilon=EPS, delta=DELTA, weights=(1, 3)),
            "diffprivlib": diffprivlib_pipeline(seed, 2000, ([-50.0] * 4, [50.0] * 4), [], [], 0.25, 0.75, 0.5),
            # attribution: each library's scaler with the other's model (same ε split 0.25 / 0.75)
            "dpcore_scaler+diffprivlib_LR": make_pipeline(
                StandardScaler(epsilon=0.25, bounds=(-50, 50), random_state=seed), RowNormClipper(1.0, scale=0.5),
                import_diffprivlib()[1](epsilon=0.75, data_norm=1.0, C=1.0 / (2000 * LAM), random_state=seed % 2**32)),
            "diffprivlib_scaler+dpcore_model": make_pipeline(
                import_diffprivlib()[2](epsilon=0.25, bounds=([-50.0] * 4, [50.0] * 4), random_state=seed % 2**32),
                RowNormClipper(1.0, scale=0.5), model(0.75)),
        }
        for name, p in pipes.items():
            p.fit(Xtr, ytr)
            rows.append(dict(task="synthetic", method=name, seed=s,
                             **metrics(yte, p.decision_function(Xte), p.predict(Xte))))
    return rows


def table(rows):
    out = ["| task | method | accuracy | ROC AUC | balanced accuracy |", "|---|---|---|---|---|"]
    keys = []
    for r in rows:
        if (r["task"], r["method"]) not in keys:
            keys.append((r["task"], r["method"]))
    for task, method in keys:
        sel = [r for r in rows if r["task"] == task and r["method"] == method]
        cells = []
        for m in ("acc", "auc", "bacc"):
            v = np.array([r[m] for r in sel])
            cells.append(f"{v.mean():.3f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.3f}")
        out.append(f"| {task} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the Adult runs")
    parser.add_argument("--synthetic-seeds", type=int, default=10, help="seeds of the synthetic task (fast)")
    parser.add_argument("--outdir", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", module="diffprivlib")
    t0 = time.time()
    seeds = list(range(args.seeds))
    rows = run_synthetic(list(range(args.synthetic_seeds))) + run_adult(seeds)
    md = table(rows)
    os.makedirs(args.outdir, exist_ok=True)
    version, _, _ = import_diffprivlib()
    with open(os.path.join(args.outdir, "preprocessing_results.json"), "w") as fh:
        json.dump(dict(rows=rows, epsilon=EPS, delta=DELTA, lam=LAM, diffprivlib=version, dpcore=dpcore.__version__,
                       seconds=time.time() - t0), fh, indent=1)
    with open(os.path.join(args.outdir, "preprocessing_results.md"), "w") as fh:
        fh.write(md + "\n")
    print(md)
    print(f"({time.time() - t0:.0f} s; diffprivlib {version})")


if __name__ == "__main__":
    main()
