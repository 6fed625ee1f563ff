"""From a raw CSV (numbers, strings, labels ">50K"/"<=50K") to a private model, with only ε and δ given.

Run::

    python examples/raw_csv_to_private_model.py            # full Adult train/test, total (1, 1e-6)-DP
    python examples/raw_csv_to_private_model.py --n 12000 --n-test 4000   # a quicker run

What is public (declared, never read off the records): the column types, the category lists and the
numeric ranges (from the data set's documentation, ``dpcore.datasets.ADULT_CATEGORIES`` /
``ADULT_NUMERIC_RANGES``), the label rule (">50K" is 1, anything else 0), and the row radius 1, which
is the model's ``data_norm``. Everything learnt from the records — the clip range, mean and scale
of every numeric column, and the model — is private, and the whole pipeline is (ε, δ)-DP:
``dpcore.preprocessing.make_private_pipeline`` splits the total budget and charges one accountant.

1. write the raw Adult training and test rows to CSV files in a temporary folder (as a user would
   have them);
2. read them back with the csv module: numeric columns as floats, categorical columns as strings;
3. ``ColumnTransformer``: private ``StandardScaler`` on the numeric columns (private bounds inside the
   declared ranges, noisy mean and variance), ``OneHotEncoder`` with the declared categories (free);
   ``RowNormClipper`` to the radius 1 (free); ``ObjectivePerturbation`` (data_norm = 1);
4. print the budget split, the accountant's remainder, accuracy, ROC AUC and balanced accuracy on the
   test file.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import tempfile

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score

import dpcore
from dpcore.datasets import ADULT_CATEGORIES, ADULT_NUMERIC_RANGES, load_adult_raw
from dpcore.preprocessing import OneHotEncoder, RowNormClipper, StandardScaler, make_private_pipeline

HEADER = list(load_adult_raw("test").feature_names) + ["income"]
NUMERIC = [c for c in HEADER[:-1] if c in ADULT_NUMERIC_RANGES]
CATEGORICAL = [c for c in HEADER[:-1] if c in ADULT_CATEGORIES]


def write_csv(path: str, subset: str, n: int | None) -> None:
    raw = load_adult_raw(subset)
    rows = raw.data if n is None else raw.data[:n]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for r, label in zip(rows, raw.target):
            w.writerow(list(r) + [label])


def read_csv(path: str):
    """Numeric columns as floats, categorical as strings; labels by the public rule '>50K' -> 1, else 0."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    num = np.array([[float(r[c]) for c in NUMERIC] for r in rows])
    cat = np.array([[r[c] for c in CATEGORICAL] for r in rows], dtype=object)
    y = np.array([1 if r["income"].strip() == ">50K" else 0 for r in rows])
    return np.hstack([num, cat]).astype(object), y


def build_pipeline(epsilon: float, delta: float, random_state=None):
    """The private pipeline: only (epsilon, delta), the declared ranges/categories and the radius 1."""
    lower = [ADULT_NUMERIC_RANGES[c][0] for c in NUMERIC]
    upper = [ADULT_NUMERIC_RANGES[c][1] for c in NUMERIC]
    k = len(NUMERIC)
    columns = ColumnTransformer([
        ("num", StandardScaler(bounds=(lower, upper), estimate_bounds=True, random_state=random_state),
         list(range(k))),
        ("cat", OneHotEncoder(categories=[ADULT_CATEGORIES[c] for c in CATEGORICAL]),
         list(range(k, k + len(CATEGORICAL)))),
    ])
    # a standardised numeric column and a one-hot block each have norm about 1: 1/sqrt(#columns) puts a
    # typical row near the unit ball (public constant), the clipper guarantees it
    return make_private_pipeline(
        columns,
        RowNormClipper(1.0, scale=1.0 / math.sqrt(len(NUMERIC) + len(CATEGORICAL))),
        dpcore.ObjectivePerturbation(data_norm=1.0, lam=1e-3, classes=(0, 1), random_state=random_state),
        epsilon=epsilon, delta=delta, weights=(1, 4))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--n", type=int, default=None, help="use only the first n training rows")
    parser.add_argument("--n-test", type=int, default=None, help="use only the first n test rows")
    parser.add_argument("--seed", type=int, default=None, help="reproducible noise (research only)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        train_csv, test_csv = os.path.join(tmp, "adult_train.csv"), os.path.join(tmp, "adult_test.csv")
        write_csv(train_csv, "train", args.n)
        write_csv(test_csv, "test", args.n_test)
        X, y = read_csv(train_csv)
        X_test, y_test = read_csv(test_csv)
    acc = dpcore.BudgetAccountant(args.epsilon, args.delta)
    pipe = build_pipeline(args.epsilon, args.delta, args.seed).set_params(accountant=acc)
    pipe.fit(X, y)
    scores = pipe.decision_function(X_test)
    pred = pipe.predict(X_test)
    out = dict(n=len(y), accuracy=accuracy_score(y_test, pred), auc=roc_auc_score(y_test, scores),
               balanced_accuracy=balanced_accuracy_score(y_test, pred), remaining=acc.remaining(),
               split=pipe.budget_split_)
    print(f"trained on {out['n']} raw rows; budget split (step, epsilon, delta): {out['split']}")
    print(f"accountant: remaining (epsilon, delta) = {out['remaining']}")
    print(f"test: accuracy {out['accuracy']:.3f}, ROC AUC {out['auc']:.3f}, "
          f"balanced accuracy {out['balanced_accuracy']:.3f}")
    return out


if __name__ == "__main__":
    main()
