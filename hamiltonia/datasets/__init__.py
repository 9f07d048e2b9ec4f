"""Real data sets of the seed research, verified by checksum.

The twelve data sets of the thesis's Table 3.2 and chapter 9 (Mongwe 2022, thesis,
§3.2.7 and §3.3), each a canonical CSV with a registered sha256:

* classification (Bayesian logistic regression): ``pima``, ``heart``, ``australian``,
  ``german``, ``audit`` (13 financial ratios; the two string columns are not features);
* regression (BNN): ``power``, ``airfoil``, ``concrete``, ``protein``;
* daily prices 2017-2020 (jump-diffusion): ``sp500``, ``btc``, ``usdzar``.

>>> from hamiltonia import datasets
>>> datasets.names()  # doctest: +SKIP
['pima', 'heart', ...]
>>> data = datasets.load("pima")  # doctest: +SKIP
>>> data.X_train.shape, data.X_test.shape  # doctest: +SKIP
((479, 7), (53, 7))

Files come from a local mirror (``HAMILTONIA_DATA``), the per-user cache (``HAMILTONIA_CACHE``,
``$XDG_CACHE_HOME/hamiltonia`` or ``~/.cache/hamiltonia``), or the original public source,
converted and checked; see :mod:`hamiltonia.datasets.fetch`. The licences differ per set (see
``info(name).licence``); the price series are not openly licensed.
"""

from __future__ import annotations

from pathlib import Path

from hamiltonia.datasets import fetch
from hamiltonia.datasets.dataset import Dataset, load, split_indices
from hamiltonia.datasets.fetch import (
    DatasetChecksumError,
    DatasetMirrorMissingError,
    DatasetUnavailableError,
)
from hamiltonia.datasets.registry import DATASETS, DatasetInfo, UnknownDatasetError, get_info

__all__ = [
    "Dataset",
    "DatasetChecksumError",
    "DatasetInfo",
    "DatasetMirrorMissingError",
    "DatasetUnavailableError",
    "UnknownDatasetError",
    "describe",
    "info",
    "load",
    "names",
    "path",
    "split_indices",
    "status",
]


def names() -> list[str]:
    """Names of the registered data sets, in the order of the data README."""
    return list(DATASETS)


def describe() -> dict[str, str]:
    """Name to one-line description of every registered data set."""
    return {name: entry.description for name, entry in DATASETS.items()}


def info(name: str) -> DatasetInfo:
    """The registry entry of ``name``: file, sha256, columns, sources, licence."""
    return get_info(name)


def path(name: str, *, timeout: float = fetch.TIMEOUT) -> Path:
    """Path of the verified canonical CSV of ``name``.

    Looks in the local mirror ``$HAMILTONIA_DATA`` if that is set, else in the per-user cache,
    else downloads the original source, converts it and caches it (see
    :mod:`hamiltonia.datasets.fetch`). The file always has the registered sha256.

    Raises
    ------
    UnknownDatasetError
        ``name`` is not registered (a ``KeyError``).
    DatasetMirrorMissingError
        ``HAMILTONIA_DATA`` is set but lacks the file (an ``OSError``).
    DatasetUnavailableError
        No mirror, no cached copy and the download failed (an ``OSError``; names the URLs).
    DatasetChecksumError
        The file or the converted download has another sha256 (a ``ValueError``).
    """
    return fetch.resolve(get_info(name), timeout=timeout)


def status() -> dict[str, str]:
    """Name to ``"mirrored"``, ``"cached"`` or ``"missing"`` (file presence only)."""
    return {name: fetch.status(entry) for name, entry in DATASETS.items()}
