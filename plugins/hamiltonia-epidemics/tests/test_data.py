"""The case data: found like hamiltonia's data sets (mirror, cache, download, sha256) and
refused, with a clear error, when it cannot be used."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hamiltonia.datasets import fetch
from hamiltonia.testing import skip_unless_installed

skip_unless_installed("hamiltonia-epidemics")

from hamiltonia_epidemics import data
from hamiltonia_epidemics.data import CASES, CaseDataError, load_cases, read_cases


@pytest.fixture
def canonical():
    return fetch.resolve(CASES)


def test_the_daily_new_cases_put_a_missing_report_on_the_next_day(canonical):
    cases = read_cases(canonical)
    assert cases.dates[0] == "2020-03-05" and cases.dates[-1] == "2020-04-20"
    assert len(cases.dates) == 47
    # 2020-03-06 has no report (0 new), 03-07 carries the one case since 03-05
    assert list(cases.new[:3]) == [1, 0, 1]
    assert not cases.reported[1] and not cases.reported[5]
    assert cases.new.sum() == 3300 and np.all(cases.new >= 0)
    assert load_cases("2020-03-20").dates[-1] == "2020-03-20"
    with pytest.raises(CaseDataError, match="outside the data"):
        load_cases("2020-05-01")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cases.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("2020-03-05,1\n2020-03-06,-2\n", "negative cumulative count"),
        ("2020-03-05,5\n2020-03-06,3\n", "cumulative count decreases"),
        ("2020-03-05,1\n2020-03-07,2\n2020-03-06,3\n", "dates out of order"),
        ("2020-03-05,1\n2020-03-05,2\n", "is repeated"),
        ("2020-03-05,1\n05/03/2020,2\n", "not an ISO date"),
        ("2020-03-05,1.5\n", "not a whole number"),
        ("2020-03-05,abc\n", "not a number"),
    ],
)
def test_bad_data_is_refused_with_a_clear_error(tmp_path, body, message):
    with pytest.raises(CaseDataError, match=message):
        read_cases(_write(tmp_path, "date,total\n" + body))


def test_a_wrong_header_is_refused(tmp_path):
    with pytest.raises(CaseDataError, match="header"):
        read_cases(_write(tmp_path, "day,count\n2020-03-05,1\n"))


def test_the_mirror_is_used_and_checked(tmp_path, monkeypatch, canonical):
    monkeypatch.setenv("HAMILTONIA_DATA", str(tmp_path))
    with pytest.raises(fetch.DatasetMirrorMissingError):
        load_cases()
    shutil.copy(canonical, tmp_path / CASES.file)
    assert load_cases().new.sum() == 3300
    (tmp_path / CASES.file).write_text(canonical.read_text().replace(",3300", ",3301"))
    with pytest.raises(fetch.DatasetChecksumError, match="checksum mismatch"):
        load_cases()


def _source(canonical: Path) -> bytes:
    """The original source's layout (dsfsi/covid19za): DD-MM-YYYY and YYYYMMDD dates,
    provincial columns, a row outside the window."""
    lines = ["date,YYYYMMDD,EC,GP,total,source"]
    for row in canonical.read_text().splitlines()[1:]:
        day, total = row.split(",")
        y, m, d = day.split("-")
        lines.append(f"{d}-{m}-{y},{y}{m}{d},,,{total},")
    lines.append("21-04-2020,20200421,345,1199,3465,https://example.org")
    return ("\n".join(lines) + "\n").encode()


def test_without_a_mirror_the_source_is_downloaded_converted_and_verified(
    tmp_path, monkeypatch, canonical
):
    source = _source(canonical)
    calls = []

    def fake_download(url, timeout=None):
        calls.append(url)
        return source

    monkeypatch.delenv("HAMILTONIA_DATA", raising=False)
    monkeypatch.setenv("HAMILTONIA_CACHE", str(tmp_path))
    monkeypatch.setattr(fetch, "download", fake_download)
    cases = load_cases()
    assert cases.new.sum() == 3300 and len(calls) == 1 and "009d9840cd71" in calls[0]
    cached = tmp_path / "datasets" / CASES.file
    assert cached.read_bytes() == canonical.read_bytes()
    # a second call reads the cache
    load_cases()
    assert len(calls) == 1
    # a changed source does not pass the checksum
    cached.unlink()
    source = source.replace(b",3300,", b",3301,")
    with pytest.raises(fetch.DatasetChecksumError):
        load_cases()


def test_the_converter_needs_the_source_columns():
    with pytest.raises(ValueError, match="YYYYMMDD"):
        data.convert_source([b"date,total\n2020-03-05,1\n"])
