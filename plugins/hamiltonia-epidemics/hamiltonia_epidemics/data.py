"""South Africa's confirmed COVID-19 cases, 5 March to 20 April 2020, as daily new cases.

The canonical file ``covid19za_confirmed_2020-03-05_2020-04-20.csv`` (columns ``date,total``:
cumulative confirmed cases on each reported day) is found as hamiltonia's own data sets are
(:func:`hamiltonia.datasets.fetch.resolve`): in the local mirror ``$HAMILTONIA_DATA``, else in
the per-user cache, else downloaded from its original source (the dsfsi/covid19za repository),
converted to the canonical CSV and checked against its sha256.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hamiltonia.datasets import parse
from hamiltonia.datasets.fetch import resolve
from hamiltonia.datasets.registry import DatasetInfo, raw_url

__all__ = ["CASES", "CaseDataError", "Cases", "convert_source", "load_cases", "read_cases"]

FIRST_DAY = "2020-03-05"
LAST_DAY = "2020-04-20"
_REPO = "dsfsi/covid19za"
_PATH = "data/covid19za_provincial_cumulative_timeline_confirmed.csv"
#: The snapshot the canonical file was made from (data README), and another commit in the
#: public code index holding the same rows.
_SNAPSHOT = "009d9840cd715a616e951557c60af71267557977"
_OTHER = "c88a6384a7be9655c82158befbfa5745a6f96b76"


class CaseDataError(ValueError):
    """The case counts cannot be used (the message says which row and why)."""


def convert_source(parts, source: str = "<source>") -> bytes:
    """The canonical CSV from the source file of dsfsi/covid19za: the rows dated 2020-03-05 to
    2020-04-20 (column ``YYYYMMDD``), their national ``total``, dates written ISO."""
    text = parts[0].decode("utf-8-sig") if isinstance(parts[0], bytes) else parts[0]
    reader = csv.DictReader(io.StringIO(text))
    if (
        not reader.fieldnames
        or "YYYYMMDD" not in reader.fieldnames
        or "total" not in (reader.fieldnames)
    ):
        raise ValueError(f"{source}: expected the columns YYYYMMDD and total")
    lo, hi = FIRST_DAY.replace("-", ""), LAST_DAY.replace("-", "")
    rows = []
    for row in reader:
        day = (row["YYYYMMDD"] or "").strip()
        if lo <= day <= hi:
            rows.append((f"{day[:4]}-{day[4:6]}-{day[6:]}", row["total"].strip()))
    if not rows:
        raise ValueError(f"{source}: no rows between {FIRST_DAY} and {LAST_DAY}")
    return parse.to_canonical((("date", "str"), ("total", "int")), rows, source=source)


#: The registry entry of the canonical file (for :func:`hamiltonia.datasets.fetch.resolve`).
CASES = DatasetInfo(
    name="covid19za",
    file="covid19za_confirmed_2020-03-05_2020-04-20.csv",
    sha256="d1b8037641b813eb60fa058077e8a00b3b2628fd5801abbc3739fe41f17aa345",
    kind="counts",
    rows=45,
    columns=(("date", "str"), ("total", "int")),
    feature_columns=(),
    target_name="cumulative confirmed COVID-19 cases in South Africa",
    description="South Africa, cumulative confirmed COVID-19 cases, 2020-03-05..2020-04-20",
    sources=(
        (raw_url(_REPO, _PATH, _SNAPSHOT),),
        (raw_url(_REPO, _PATH, _OTHER),),
        (raw_url(_REPO, _PATH),),
    ),
    convert=convert_source,
    snapshot="dsfsi/covid19za @ 009d9840cd71",
    licence="MIT (repository LICENSE); figures from the national Department of Health / NICD",
)


@dataclass(frozen=True)
class Cases:
    """Daily new confirmed cases on consecutive calendar days.

    Attributes
    ----------
    dates : list of str
        ISO dates, one per calendar day from the first report to the last.
    new : ndarray
        New cases per day: differences of the cumulative totals (the first day's total
        counts as new); a day without a report has 0 and its cases fall on the next
        reported day.
    cumulative : ndarray
        The cumulative total on each day (carried forward over days without a report).
    reported : ndarray of bool
        Whether the day had a report.
    """

    dates: list
    new: np.ndarray
    cumulative: np.ndarray
    reported: np.ndarray

    def until(self, end: str) -> Cases:
        """The days up to and including ``end`` (ISO date)."""
        end = _date(end, "end").isoformat()
        if end not in self.dates:
            raise CaseDataError(
                f"end {end} is outside the data ({self.dates[0]}..{self.dates[-1]})"
            )
        n = self.dates.index(end) + 1
        return Cases(self.dates[:n], self.new[:n], self.cumulative[:n], self.reported[:n])


def _date(value, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise CaseDataError(f"{what}: {value!r} is not an ISO date (YYYY-MM-DD)") from None


def read_cases(path, *, where: str | None = None) -> Cases:
    """Daily new cases from a CSV of cumulative totals with the columns ``date,total``.

    Refused, with a :class:`CaseDataError` naming the row: a missing column, a date that is
    not ISO, dates out of order or repeated, a count that is not a whole number, negative,
    or lower than the one before (cumulative counts never decrease).
    """
    where = where or str(path)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or [h.strip() for h in header][:2] != ["date", "total"]:
            raise CaseDataError(f"{where}: the header must be 'date,total', got {header!r}")
        days, totals = [], []
        for line, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) < 2:
                raise CaseDataError(f"{where}, line {line}: expected date,total, got {row!r}")
            day = _date(row[0], f"{where}, line {line}")
            try:
                x = float(row[1])
            except ValueError:
                raise CaseDataError(
                    f"{where}, line {line}: total {row[1]!r} is not a number"
                ) from None
            if not np.isfinite(x) or not x.is_integer():
                raise CaseDataError(f"{where}, line {line}: total {row[1]!r} is not a whole number")
            if x < 0:
                raise CaseDataError(f"{where}, line {line}: negative cumulative count {row[1]}")
            if days:
                if day == days[-1]:
                    raise CaseDataError(f"{where}, line {line}: date {day} is repeated")
                if day < days[-1]:
                    raise CaseDataError(
                        f"{where}, line {line}: dates out of order ({day} after {days[-1]})"
                    )
                if x < totals[-1]:
                    raise CaseDataError(
                        f"{where}, line {line}: cumulative count decreases ({int(x)} on {day} "
                        f"after {int(totals[-1])} on {days[-1]}); cumulative counts cannot fall"
                    )
            days.append(day)
            totals.append(x)
    if not days:
        raise CaseDataError(f"{where}: no rows")
    n = (days[-1] - days[0]).days + 1
    dates = [(days[0] + dt.timedelta(d)).isoformat() for d in range(n)]
    cumulative = np.empty(n)
    reported = np.zeros(n, dtype=bool)
    for day, x in zip(days, totals, strict=True):
        i = (day - days[0]).days
        cumulative[i] = x
        reported[i] = True
    for i in range(1, n):  # no report: the total stands, and the day adds nothing
        if not reported[i]:
            cumulative[i] = cumulative[i - 1]
    new = np.diff(cumulative, prepend=0.0)
    return Cases(dates, new, cumulative, reported)


def load_cases(end: str = LAST_DAY, *, timeout: float | None = None) -> Cases:
    """The verified canonical file (mirror, cache or download; see the module docs) as daily
    new cases up to and including ``end``."""
    path: Path = resolve(CASES) if timeout is None else resolve(CASES, timeout=timeout)
    return read_cases(path).until(end)
