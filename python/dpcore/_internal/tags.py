"""scikit-learn estimator tags shared by dpcore's estimators (``__sklearn_tags__``).

dpcore's classifiers are binary with a *declared* label set (``classes``, a public parameter:
reading it off the data would let one record change the label mapping), so they are tagged
``multi_class=False``; scikit-learn's common checks then use two labels. Which common checks are
expected to fail, and why, is given by :func:`expected_failed_checks` (a ``{check: reason}`` dict,
the role of scikit-learn's former ``_xfail_checks`` tag, computed from the estimator's tags and
parameters); the test suite passes it to ``parametrize_with_checks(expected_failed_checks=...)``.
Every entry is inherent to differential privacy, except :data:`NO_INTERCEPT_CHECKS` (a kernel ERM declared
without its intercept, ``intercept_scaling=0``); the list is also in docs/sklearn.md.
"""

from __future__ import annotations

from sklearn.utils import ClassifierTags, RegressorTags, Tags

__all__ = ["binary_classifier_tags", "regressor_tags", "expected_failed_checks"]

_LABELS_DECLARED = ("DP-inherent: the label set is a public parameter (classes=...); this check fits labels "
                    "outside the declared pair (e.g. {1, 2} or strings), which are refused rather than read "
                    "off the data (an inferred label set changes between neighbouring datasets)")

#: Checks that fit labels other than the declared pair.
LABEL_CHECKS = {
    "check_estimators_dtypes": _LABELS_DECLARED,
    "check_classifier_data_not_an_array": _LABELS_DECLARED,
    "check_classifiers_classes": _LABELS_DECLARED,
    "check_fit2d_1feature": _LABELS_DECLARED,
}
#: Checks that a DP release cannot pass.
RELEASE_CHECKS = {
    "check_non_transformer_estimators_n_iter": (
        "DP-inherent: the solver's iteration count depends on the data and is not covered by the privacy "
        "proof, so the released model has no n_iter_"),
}
#: Checks that a DP classifier cannot pass.
RELEASE_CLASSIFIER_CHECKS = {
    "check_classifiers_one_label": (
        "DP-inherent: a training set with a single class is an admissible dataset and trains like any other "
        "(a special case would reveal it); the noisy model need not predict that class everywhere"),
}


#: Checks the bias-free kernel ERM (``intercept_scaling=0``) cannot pass (not DP-inherent: a model-class limitation;
#: with the default intercept the check passes).
NO_INTERCEPT_CHECKS = {
    "check_class_weight_classifiers": (
        "No intercept (intercept_scaling=0): the check weights class 0 by 1000 on very noisy blobs and expects "
        "class 0 almost everywhere, which a model f(z) = sum_i mu_i K(z, x_i) without a bias cannot do far from the "
        "training points (the RBF kernel vanishes there); the weights themselves are applied (see "
        "tests/kernel_learning/test_class_weight.py)"),
}


def expected_failed_checks(estimator) -> dict:
    """``{check name: reason}`` of the scikit-learn common checks ``estimator`` is expected to fail.

    Depends on public parameters only (the task follows ``loss``/``label_bound``); every reason is
    inherent to differential privacy. Pass it to ``parametrize_with_checks(expected_failed_checks=...)``
    or ``check_estimator(expected_failed_checks=...)``.
    """
    tags = estimator.__sklearn_tags__()
    out = {}
    classifier = tags.estimator_type == "classifier"
    if classifier:
        out.update(LABEL_CHECKS)
    params = estimator.get_params()
    if getattr(estimator, "_loss", None) in ("hinge", "logistic") and "class_weight" in params \
            and params.get("intercept_scaling", 0.0) == 0.0:
        out.update(NO_INTERCEPT_CHECKS)  # a kernel ERM declared without its intercept
    if getattr(estimator, "_dp_release", False):
        out.update(RELEASE_CHECKS)
        if classifier:
            out.update(RELEASE_CLASSIFIER_CHECKS)
    return out


def binary_classifier_tags(tags: Tags, *, sparse: bool = False, private: bool = True) -> Tags:
    """Tag ``tags`` as a binary classifier with a declared label set (``sparse``: accepts sparse X).

    ``private``: the fitted model is a DP release, whose accuracy on scikit-learn's tiny test sets
    (n ≈ 100 at ε = 1) is limited by the noise — tagged ``poor_score`` as scikit-learn intends."""
    tags.estimator_type = "classifier"
    tags.classifier_tags = ClassifierTags(multi_class=False, poor_score=private)
    tags.regressor_tags = None
    tags.target_tags.required = True
    tags.input_tags.sparse = sparse
    return tags


def regressor_tags(tags: Tags, *, sparse: bool = False, private: bool = True) -> Tags:
    """Tag ``tags`` as a single-output regressor (``sparse``: accepts sparse X; ``private``: as above)."""
    tags.estimator_type = "regressor"
    tags.regressor_tags = RegressorTags(poor_score=private)
    tags.classifier_tags = None
    tags.target_tags.required = True
    tags.input_tags.sparse = sparse
    return tags
