"""Predictive metrics on held-out data, computed with scikit-learn.

Classification (thesis §3.4, Tables 3.6-3.7; ROC AUC in ch. 9): accuracy, ROC AUC,
precision, recall and F1 of the posterior predictive probability thresholded at 0.5.
Regression: MSE, RMSE, MAE and :math:`R^2` of the posterior predictive mean.

scikit-learn is an optional dependency (``pip install 'hamiltonia[metrics]'``); a missing
install raises an ImportError that says so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ClassifierTarget", "RegressorTarget", "classification_metrics", "regression_metrics"]


def _sklearn_metrics():
    try:
        from sklearn import metrics
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "predictive metrics need scikit-learn: pip install 'hamiltonia[metrics]'"
        ) from None
    return metrics


def classification_metrics(y_true, probability, threshold: float = 0.5) -> dict[str, float]:
    """Accuracy, ROC AUC, precision, recall and F1 of predicted probabilities."""
    m = _sklearn_metrics()
    y_true = np.asarray(y_true)
    probability = np.asarray(probability, dtype=float)
    if y_true.shape != probability.shape:
        raise ValueError(
            f"y_true and probability must have the same shape, got {y_true.shape} and "
            f"{probability.shape}"
        )
    label = (probability >= threshold).astype(int)
    two_classes = len(np.unique(y_true)) == 2
    return {
        "accuracy": float(m.accuracy_score(y_true, label)),
        "roc_auc": float(m.roc_auc_score(y_true, probability)) if two_classes else float("nan"),
        "precision": float(m.precision_score(y_true, label, zero_division=0)),
        "recall": float(m.recall_score(y_true, label, zero_division=0)),
        "f1": float(m.f1_score(y_true, label, zero_division=0)),
    }


def regression_metrics(y_true, prediction) -> dict[str, float]:
    """MSE, RMSE, MAE and :math:`R^2` of point predictions."""
    m = _sklearn_metrics()
    y_true = np.asarray(y_true, dtype=float)
    prediction = np.asarray(prediction, dtype=float)
    mse = float(m.mean_squared_error(y_true, prediction))
    return {
        "mse": mse,
        "rmse": float(np.sqrt(mse)),
        "mae": float(m.mean_absolute_error(y_true, prediction)),
        "r2": float(m.r2_score(y_true, prediction)),
    }


class ClassifierTarget:
    """Mixin for targets with ``predict(draws, X=None, log_weights=None)`` returning
    probabilities and a held-out ``X_test``, ``y_test``."""

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """Classification metrics of the posterior predictive on the test split."""
        if getattr(self, "y_test", None) is None:
            raise ValueError("this target has no test split (y_test is None)")
        return classification_metrics(self.y_test, self.predict(draws, log_weights=log_weights))


class RegressorTarget:
    """Mixin for targets with ``predict(draws, X=None, log_weights=None)`` returning the
    posterior predictive mean and a held-out ``y_test`` on the same scale."""

    def test_metrics(self, draws, log_weights=None) -> dict[str, float]:
        """Regression metrics of the posterior predictive mean on the test split."""
        if getattr(self, "y_test", None) is None:
            raise ValueError("this target has no test split (y_test is None)")
        return regression_metrics(self.y_test, self.predict(draws, log_weights=log_weights))
