"""Predictive metrics."""

import numpy as np
import pytest

from hamiltonia.diagnostics.predictive import classification_metrics, regression_metrics


def test_classification_metrics_by_hand():
    y = np.array([1, 0, 1, 1, 0, 0])
    p = np.array([0.9, 0.2, 0.4, 0.8, 0.6, 0.1])
    m = classification_metrics(y, p)
    # labels 1,0,0,1,1,0: TP=2, FP=1, FN=1, TN=2
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    # AUC: pairs (pos, neg) ranked correctly: 8 of 9
    assert m["roc_auc"] == pytest.approx(8 / 9)


def test_regression_metrics_by_hand():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    f = np.array([1.5, 2.0, 2.0, 4.0])
    m = regression_metrics(y, f)
    assert m["mse"] == pytest.approx((0.25 + 0 + 1 + 0) / 4)
    assert m["rmse"] == pytest.approx(np.sqrt(1.25 / 4))
    assert m["mae"] == pytest.approx(1.5 / 4)
    assert m["r2"] == pytest.approx(1 - 1.25 / 5)


def test_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        classification_metrics(np.ones(3), np.ones(4))
