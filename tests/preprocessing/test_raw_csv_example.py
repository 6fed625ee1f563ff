"""The example examples/raw_csv_to_private_model.py runs end to end on a small raw CSV (issue 25, item 2)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "raw_csv_to_private_model.py"


def _load():
    spec = importlib.util.spec_from_file_location("raw_csv_to_private_model", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_raw_csv_example_runs_with_only_epsilon_and_delta(capsys):
    out = _load().main(["--n", "12000", "--n-test", "4000", "--seed", "0"])
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "ROC AUC" in printed and "balanced accuracy" in printed
    assert out["n"] == 12000
    # the whole pipeline fits the total (1, 1e-6) budget, split over the private scaler and the model
    assert [s[0] for s in out["split"]] == ["columntransformer__num", "objectiveperturbation"]
    # each step calibrates for its share rounded down onto the 40-bit budget grid: ~1e-12 of ε may stay unspent
    assert out["remaining"][0] == pytest.approx(0.0, abs=1e-9) and out["remaining"][1] == pytest.approx(0.0, abs=1e-15)
    # a working model, not the majority class (0.76 on the test file)
    assert out["auc"] > 0.83 and out["balanced_accuracy"] > 0.68 and out["accuracy"] > 0.8, out
