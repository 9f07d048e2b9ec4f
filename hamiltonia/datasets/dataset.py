"""Train/test splits of the registered data sets (:func:`load`, :class:`Dataset`).

Modelling sets (Mongwe 2022, thesis, §3.2.8: the features "were normalised" and "a random
90-10 train-test split was used"): rows are split at random by
``numpy.random.default_rng(seed).permutation``, and each feature is standardised with the
mean and standard deviation of the **training** rows only, so nothing about the test rows
leaks into the model:

.. math::

    \\tilde x_{ij} = \\frac{x_{ij} - \\bar x_j^{\\text{train}}}{s_j^{\\text{train}}},
    \\qquad s_j^{\\text{train}} = \\Bigl(\\tfrac{1}{n_{\\text{train}}}
    \\sum_{i \\in \\text{train}} (x_{ij} - \\bar x_j^{\\text{train}})^2\\Bigr)^{1/2}

(a column that is constant on the training rows keeps scale 1). The thesis does not say how
it normalises; the public reference code uses min-max scaling on the audit data
(WilsonMongwe/hybridtorch). Standardisation is used here because it puts the N(0, 10²) BLR
prior on the same footing for every feature; pass ``standardize=False`` for raw features, or
``scaling="minmax"`` for the reference code's min-max scaling, fitted on the training rows
too (so the training rows span exactly [0, 1] and test rows may fall outside it):

.. math::

    \\tilde x_{ij} = \\frac{x_{ij} - \\min_{k \\in \\text{train}} x_{kj}}
        {\\max_{k \\in \\text{train}} x_{kj} - \\min_{k \\in \\text{train}} x_{kj}}

(scikit-learn's ``MinMaxScaler`` with its default range; a column constant on the training
rows keeps range 1). Targets ``y`` are never transformed.

Price series (JDP, thesis §3.2.8): daily log returns :math:`r_i = \\log(S_i / S_{i-1})`, split
chronologically (the earliest returns form the training part), never standardised.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hamiltonia.datasets import fetch, parse
from hamiltonia.datasets.registry import DatasetInfo, get_info

__all__ = ["SCALINGS", "Dataset", "load", "split_indices"]

_SPLITS = ("random", "ordered")
#: Feature scalings of :func:`load`, each fitted on the training rows only.
SCALINGS = ("standard", "minmax", "none")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A data set split into training and test parts.

    Attributes
    ----------
    name : str
        Registry name.
    kind : str
        ``"classification"``, ``"regression"`` or ``"prices"``.
    X_train, X_test : ndarray of shape (n, p) or None
        Features (scaled with training statistics as ``scaling`` says); ``None`` for price
        series.
    y_train, y_test : ndarray of shape (n,) or None
        Targets (0/1 floats for classification); ``None`` for price series.
    feature_names : tuple of str
        Column names of ``X`` as in the canonical CSV (empty for price series).
    target_name : str
        What ``y`` measures (the CSV column itself is named ``y``; ``close`` for prices).
    train_index, test_index : ndarray of int
        Rows of the canonical file in each part (modelling sets, sorted) or indices of the
        returns (price series).
    split : str
        ``"random"`` or ``"ordered"`` (first rows / earliest dates for training).
    mean_, scale_ : ndarray of shape (p,) or None
        The shift and scale applied to ``X``: the training mean and standard deviation
        (``scaling="standard"``) or the training minimum and range (``"minmax"``); ``None``
        when not scaled. ``X_raw = X * scale_ + mean_``.
    scaling : str or None
        ``"standard"``, ``"minmax"`` or ``"none"`` (modelling sets); ``None`` for price
        series.
    dates : ndarray of datetime64[D] or None
        Price series: the trading dates of ``close`` (``None`` otherwise).
    close : ndarray or None
        Price series: the closing prices :math:`S_0, \\dots, S_{N-1}`.
    returns_train, returns_test : ndarray or None
        Price series: the log returns :math:`r_i = \\log(S_i/S_{i-1})`, ``i = 1..N-1``, split
        by date; return ``r_i`` belongs to ``dates[i]``, so the test returns are those of
        ``dates[len(returns_train) + 1:]``.
    path : pathlib.Path
        The verified canonical file the data came from.
    """

    name: str
    kind: str
    X_train: np.ndarray | None
    y_train: np.ndarray | None
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    feature_names: tuple[str, ...]
    target_name: str
    train_index: np.ndarray
    test_index: np.ndarray
    split: str
    mean_: np.ndarray | None = None
    scale_: np.ndarray | None = None
    scaling: str | None = None
    dates: np.ndarray | None = None
    close: np.ndarray | None = None
    returns_train: np.ndarray | None = None
    returns_test: np.ndarray | None = None
    path: Path | None = None

    @property
    def n_features(self) -> int:
        """Number of feature columns (0 for price series)."""
        return len(self.feature_names)

    def __repr__(self) -> str:
        if self.kind == "prices":
            sizes = f"returns: train={len(self.returns_train)}, test={len(self.returns_test)}"
        else:
            sizes = f"train={len(self.y_train)}, test={len(self.y_test)}, p={self.n_features}"
        return f"Dataset({self.name!r}, {self.kind}, {sizes}, split={self.split!r})"


def _check_fraction(test_fraction) -> float:
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float | np.floating):
        raise ValueError(f"test_fraction must be a number in [0, 1), got {test_fraction!r}")
    test_fraction = float(test_fraction)
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in [0, 1), got {test_fraction!r}")
    return test_fraction


def split_indices(
    n: int, test_fraction: float = 0.1, *, seed=0, split: str = "random"
) -> tuple[np.ndarray, np.ndarray]:
    """Training and test indices of ``n`` rows.

    ``n_test = round(test_fraction * n)``. With ``split="random"`` the rows are permuted by
    ``numpy.random.default_rng(seed).permutation(n)``, the first ``n - n_test`` of the
    permutation train and the rest test (each part returned sorted). With
    ``split="ordered"`` the first ``n - n_test`` rows train.
    """
    test_fraction = _check_fraction(test_fraction)
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")
    n_test = round(test_fraction * n)
    n_train = n - n_test
    if n_train < 1:
        raise ValueError(f"test_fraction={test_fraction} leaves no training rows of {n}")
    if split == "ordered":
        order = np.arange(n)
    else:
        order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[:n_train]), np.sort(order[n_train:])


def _check_scaling(scaling, standardize) -> str:
    """The feature scaling asked for by ``scaling`` and ``standardize`` (see :func:`load`)."""
    if scaling is None:
        return "standard" if standardize else "none"
    if not isinstance(scaling, str) or scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS} or None, got {scaling!r}")
    if not standardize and scaling != "none":
        raise ValueError(
            f"standardize=False asks for unscaled features but scaling={scaling!r} for scaled "
            "ones: give one of them"
        )
    return scaling


@functools.lru_cache(maxsize=32)
def _table(path: str, digest: str, columns: tuple) -> tuple[dict[str, np.ndarray], int]:
    # Keyed by the file's sha256 too, so a changed file is read again.
    table, n = parse.read_canonical(path, columns)
    for arr in table.values():
        arr.setflags(write=False)
    return table, n


def _read(info: DatasetInfo) -> tuple[Path, dict[str, np.ndarray], int]:
    path = fetch.resolve(info)
    table, n = _table(str(path), fetch.sha256_file(path), info.columns)
    if n != info.rows:
        raise ValueError(f"{path}: {n} data rows, expected {info.rows}")
    return path, table, n


def load(
    name: str,
    *,
    test_fraction: float = 0.1,
    seed=0,
    standardize: bool = True,
    split: str | None = None,
    scaling: str | None = None,
) -> Dataset:
    """Load a registered data set as a train/test :class:`Dataset`.

    Parameters
    ----------
    name : str
        A name from :func:`hamiltonia.datasets.names` (``"pima"``, ``"sp500"``, ...).
    test_fraction : float
        Fraction of rows (or returns) held out, in [0, 1); default 0.1 (the thesis's 90/10).
    seed : int or SeedSequence
        Seed of the random split (``numpy.random.default_rng(seed).permutation``).
    standardize : bool
        Standardise features with the training mean and standard deviation (modelling sets;
        ignored for price series).
    split : {"random", "ordered"}, optional
        Modelling sets: ``"random"`` (default; thesis §3.2.8) or ``"ordered"``, the first
        ``1 - test_fraction`` of the rows in file order for training. For ``audit``,
        ``split="ordered"`` reproduces the public code's chronological split, the first 1404 of
        the 1560 rows (WilsonMongwe/hybridtorch). Price series are always split by date
        (``"ordered"``); asking for ``"random"`` raises.
    scaling : {"standard", "minmax", "none"}, optional
        Modelling sets: how the features are scaled, with statistics of the training rows
        (see the module's description). ``None`` (default) follows ``standardize``:
        ``"standard"`` when it is true, ``"none"`` when false. ``"minmax"`` maps the training
        rows onto [0, 1], as the public reference code does for the audit data (with
        ``split="ordered"``, its chronological split). Given together with
        ``standardize=False``, only ``"none"`` agrees. Ignored for price series.

    Returns
    -------
    Dataset

    Raises
    ------
    DatasetUnavailableError, DatasetChecksumError, ValueError
        See :func:`hamiltonia.datasets.path`; ``ValueError`` also for a cell that is empty,
        non-numeric or NaN in a numeric column (naming the file and the column).
    """
    info = get_info(name)
    test_fraction = _check_fraction(test_fraction)
    if split is not None and split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS} or None, got {split!r}")
    scaling = _check_scaling(scaling, standardize)
    path, table, n = _read(info)
    if info.kind == "prices":
        if split == "random":
            raise ValueError(f"data set {name!r} is a price series: it is split by date only")
        close = np.array(table["close"])
        if np.any(close <= 0):
            raise ValueError(f"{path}: column 'close' has a non-positive price")
        dates = np.array(table["date"].astype(str), dtype="datetime64[D]")
        if np.any(np.diff(dates) <= np.timedelta64(0, "D")):
            raise ValueError(f"{path}: column 'date' is not strictly increasing")
        returns = np.log(close[1:] / close[:-1])
        train, test = split_indices(len(returns), test_fraction, split="ordered")
        return Dataset(
            name=name,
            kind=info.kind,
            X_train=None,
            y_train=None,
            X_test=None,
            y_test=None,
            feature_names=(),
            target_name=info.target_name,
            train_index=train,
            test_index=test,
            split="ordered",
            dates=dates,
            close=close,
            returns_train=returns[train],
            returns_test=returns[test],
            path=path,
        )
    split = split or "random"
    X = np.column_stack([table[c] for c in info.feature_columns])
    y = np.array(table["y"])
    train, test = split_indices(n, test_fraction, seed=seed, split=split)
    X_train, X_test = X[train], X[test]
    mean = scale = None
    if scaling == "standard":
        mean = X_train.mean(axis=0)
        scale = X_train.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        X_train = (X_train - mean) / scale
        X_test = (X_test - mean) / scale
    elif scaling == "minmax":
        mean = X_train.min(axis=0)
        scale = X_train.max(axis=0) - mean
        scale = np.where(scale > 0, scale, 1.0)
        X_train = (X_train - mean) / scale
        X_test = (X_test - mean) / scale
    return Dataset(
        name=name,
        kind=info.kind,
        X_train=X_train,
        y_train=y[train],
        X_test=X_test,
        y_test=y[test],
        feature_names=info.feature_columns,
        target_name=info.target_name,
        train_index=train,
        test_index=test,
        split=split,
        mean_=mean,
        scale_=scale,
        scaling=scaling,
        path=path,
    )
