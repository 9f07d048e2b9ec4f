"""The vendored posteriordb files: each posterior's data and reference summaries.

The folder ``data/`` beside this module holds, for each of the ten posteriors of the suite
(:data:`NAMES`), the files of the public posterior database (posteriordb; Magnusson et al.,
*posteriordb: Testing, Benchmarking and Developing Bayesian Inference Algorithms*, 2024,
https://github.com/stan-dev/posteriordb, BSD 3-Clause, ``data/LICENCE.md``), unchanged:

``data.json``
    the data, exactly as Stan reads it;
``reference_mean_value.json``
    per parameter (``names``, Stan's 1-based names such as ``beta[1]``) the reference
    posterior mean :math:`\\hat m_1` and its Monte Carlo standard error;
``reference_mean_squared_value.json``
    the same for :math:`E[x^2]`, :math:`\\hat m_2`, so that the reference standard deviation
    is :math:`\\sqrt{\\hat m_2 - \\hat m_1^2}`.

The numbers are printed to a fixed number of digits (:math:`E[x^2]` to about eight
significant ones): each value's resolution, the unit of its last printed digit, is kept
(:attr:`Reference.mean_resolution`, :attr:`Reference.mean_square_resolution`), since for a
parameter whose mean is large against its sd the rounding of :math:`\\hat m_2` is a large
part of the reference variance's error (``sblri-blr``: 2.7 % of the sd at most).

The reference draws themselves (up to 2 MB a posterior) are not vendored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["DATA", "NAMES", "Reference", "load_data", "load_reference", "resolution"]

#: The folder of the vendored files.
DATA = Path(__file__).parent / "data"

#: The suite's posteriors, posteriordb's names (``<data>-<model>``), in the issue's order.
NAMES = (
    "bball_drive_event_0-hmm_drive_0",
    "hmm_example-hmm_example",
    "gp_pois_regr-gp_regr",
    "mcycle_gp-accel_gp",
    "kilpisjarvi_mod-kilpisjarvi",
    "kidiq-kidscore_momhsiq",
    "kidiq_with_mom_work-kidscore_mom_work",
    "mesquite-logmesquite_logvolume",
    "nes1980-nes",
    "sblri-blr",
)


def _folder(name: str) -> Path:
    if name not in NAMES:
        raise KeyError(f"no posterior {name!r} in the suite; it has {', '.join(NAMES)}")
    return DATA / name


def load_data(name: str) -> dict:
    """The data of posterior ``name`` as Stan reads it: lists become float or int arrays
    (int where every value is an integer in the file), numbers stay numbers."""
    raw = json.loads((_folder(name) / "data.json").read_text())
    out = {}
    for key, value in raw.items():
        if isinstance(value, list):
            array = np.asarray(value)
            out[key] = array if array.dtype.kind == "i" else array.astype(float)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Reference:
    """posteriordb's reference summaries of one posterior, by Stan's parameter names.

    Attributes
    ----------
    names : tuple of str
        Stan's names, 1-based (``beta[1]``).
    mean, mean_mcse : numpy.ndarray
        :math:`\\hat m_1 = \\hat E[x]` and its Monte Carlo standard error.
    mean_square, mean_square_mcse : numpy.ndarray
        :math:`\\hat m_2 = \\hat E[x^2]` and its Monte Carlo standard error.
    mean_resolution, mean_square_resolution : numpy.ndarray
        The unit of the last digit printed in the files (``0.3206177``: :math:`10^{-7}`;
        ``1.3e-06``: :math:`10^{-7}`): the values are rounded to it.
    """

    names: tuple
    mean: np.ndarray
    mean_mcse: np.ndarray
    mean_square: np.ndarray
    mean_square_mcse: np.ndarray
    mean_resolution: np.ndarray
    mean_square_resolution: np.ndarray

    @property
    def sd(self) -> np.ndarray:
        """The reference standard deviation :math:`\\sqrt{\\hat m_2 - \\hat m_1^2}`."""
        return np.sqrt(np.maximum(self.mean_square - self.mean**2, 0.0))


def resolution(number: str) -> float:
    """The unit of the last digit of a number as printed: ``"0.3206177"`` gives
    :math:`10^{-7}`, ``"1.333923e-06"`` :math:`10^{-12}`, ``"12"`` 1."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _read(path: Path) -> dict:
    """A reference file, its numbers kept as printed (strings)."""
    return json.loads(path.read_text(), parse_float=str, parse_int=str)


def _values(numbers: list) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([float(x) for x in numbers]), np.array([resolution(x) for x in numbers]))


def load_reference(name: str) -> Reference:
    """The reference summaries of posterior ``name`` (:class:`Reference`)."""
    folder = _folder(name)
    first = _read(folder / "reference_mean_value.json")
    second = _read(folder / "reference_mean_squared_value.json")
    if first["names"] != second["names"]:
        raise ValueError(f"{name}: the two reference files name different parameters")
    mean, mean_resolution = _values(first["mean_value"])
    mean_square, mean_square_resolution = _values(second["mean_squared_value"])
    return Reference(
        names=tuple(first["names"]),
        mean=mean,
        mean_mcse=_values(first["mcse_mean"])[0],
        mean_square=mean_square,
        mean_square_mcse=_values(second["mcse_mean"])[0],
        mean_resolution=mean_resolution,
        mean_square_resolution=mean_square_resolution,
    )
