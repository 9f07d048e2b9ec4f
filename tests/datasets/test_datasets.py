"""The data-set registry: checksums, shapes, splits, converters, download path and errors."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import io
import re
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from hamiltonia import datasets
from hamiltonia.datasets import fetch, parse

NAMES = [
    "pima", "heart", "australian", "german", "power", "airfoil", "concrete", "protein",
    "audit", "sp500", "btc", "usdzar",
]  # fmt: skip

#: rows, features, positives (classification) per the data README.
EXPECTED = {
    "pima": (532, 7, 177),
    "heart": (270, 13, 120),
    "australian": (690, 14, 307),
    "german": (1000, 24, 300),
    "power": (9568, 4, None),
    "airfoil": (1503, 5, None),
    "concrete": (1030, 8, None),
    "protein": (45730, 9, None),
    "audit": (1560, 13, 707),
    "sp500": (1007, 0, None),
    "btc": (1461, 0, None),
    "usdzar": (1041, 0, None),
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- registry
def test_names_and_descriptions():
    assert datasets.names() == NAMES
    desc = datasets.describe()
    assert list(desc) == NAMES
    for name, line in desc.items():
        assert line and "\n" not in line, name


def test_registry_agrees_with_the_data_readme(data_dir):
    readme = data_dir / "README.md"
    if not readme.is_file():
        pytest.skip(f"no README.md in {data_dir}")
    table = dict(re.findall(r"^\| `([^`]+\.csv)` \|.*\| `([0-9a-f]{64})` \|$",
                            readme.read_text(), flags=re.M))  # fmt: skip
    for name in NAMES:
        info = datasets.info(name)
        assert table[info.file] == info.sha256, name


def test_unknown_name_suggests_a_close_one():
    with pytest.raises(datasets.UnknownDatasetError, match=r"'pimaa'.*did you mean 'pima'"):
        datasets.path("pimaa")
    with pytest.raises(KeyError):
        datasets.load("nope")


# ----------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", NAMES)
def test_path_is_the_verified_mirror_file(mirror, name):
    p = datasets.path(name)
    info = datasets.info(name)
    assert p == mirror / info.file
    assert sha256(p.read_bytes()) == info.sha256


def test_status(mirror, monkeypatch, tmp_path):
    assert datasets.status() == dict.fromkeys(NAMES, "mirrored")
    monkeypatch.setenv(fetch.ENV_MIRROR, str(tmp_path / "empty"))
    assert set(datasets.status().values()) == {"missing"}
    monkeypatch.delenv(fetch.ENV_MIRROR)
    fetch.cache_dir().mkdir(parents=True)
    shutil.copy(mirror / "heart.csv", fetch.cache_dir() / "heart.csv")
    status = datasets.status()
    assert status["heart"] == "cached"
    assert status["pima"] == "missing"
    assert datasets.path("heart") == fetch.cache_dir() / "heart.csv"


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch.ENV_CACHE, str(tmp_path / "c"))
    assert fetch.cache_dir() == tmp_path / "c" / "datasets"
    monkeypatch.delenv(fetch.ENV_CACHE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fetch.cache_dir() == tmp_path / "xdg" / "hamiltonia" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fetch.cache_dir() == tmp_path / "home" / ".cache" / "hamiltonia" / "datasets"


# ----------------------------------------------------------------------------- load
@pytest.mark.parametrize("name", NAMES)
def test_rows_features_and_classes(data_dir, name):
    rows, p, positives = EXPECTED[name]
    info = datasets.info(name)
    assert (info.rows, info.n_features) == (rows, p)
    data = datasets.load(name)
    assert data.name == name and data.kind == info.kind
    if data.kind == "prices":
        n = rows - 1  # returns
        assert len(data.returns_train) + len(data.returns_test) == n
        assert len(data.returns_test) == round(0.1 * n)
        assert data.dates.shape == data.close.shape == (rows,)
        assert data.X_train is None and data.y_train is None
        return
    n_test = round(0.1 * rows)
    assert data.X_train.shape == (rows - n_test, p)
    assert data.X_test.shape == (n_test, p)
    assert data.y_train.shape == (rows - n_test,) and data.y_test.shape == (n_test,)
    assert len(data.feature_names) == p
    assert np.all(np.isfinite(data.X_train)) and np.all(np.isfinite(data.X_test))
    if positives is not None:
        y = np.concatenate([data.y_train, data.y_test])
        assert set(np.unique(y)) <= {0.0, 1.0}
        assert int(y.sum()) == positives


def test_audit_features_are_the_13_ratios(data_dir):
    data = datasets.load("audit")
    assert data.feature_names[0] == "Debt to Community Wealth/Equity"
    assert "demarcation.code" not in data.feature_names
    assert "opinion.code" not in data.feature_names
    assert data.X_train.dtype == float


def test_random_split_is_reproducible_and_partitions_the_rows(data_dir):
    a = datasets.load("german", seed=3)
    b = datasets.load("german", seed=3)
    c = datasets.load("german", seed=4)
    np.testing.assert_array_equal(a.train_index, b.train_index)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.test_index, c.test_index)
    both = np.concatenate([a.train_index, a.test_index])
    np.testing.assert_array_equal(np.sort(both), np.arange(1000))
    perm = np.random.default_rng(3).permutation(1000)
    np.testing.assert_array_equal(a.test_index, np.sort(perm[900:]))
    assert a.split == "random"


def test_standardisation_uses_training_statistics_only(data_dir):
    raw = datasets.load("heart", standardize=False, seed=1)
    std = datasets.load("heart", seed=1)
    assert raw.mean_ is None and raw.scale_ is None
    np.testing.assert_allclose(std.mean_, raw.X_train.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(std.scale_, raw.X_train.std(axis=0), rtol=1e-13)
    np.testing.assert_allclose(std.X_train.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(std.X_train.std(axis=0), 1, rtol=1e-12)
    np.testing.assert_allclose(std.X_test, (raw.X_test - std.mean_) / std.scale_, rtol=1e-13)
    everything = np.concatenate([raw.X_train, raw.X_test])
    assert not np.allclose(std.mean_, everything.mean(axis=0))
    np.testing.assert_array_equal(std.y_test, raw.y_test)


def test_minmax_scaling_uses_the_training_range_only(data_dir):
    raw = datasets.load("audit", split="ordered", standardize=False)
    mm = datasets.load("audit", split="ordered", scaling="minmax")
    assert (raw.scaling, mm.scaling, datasets.load("heart").scaling) == (
        "none",
        "minmax",
        "standard",
    )
    lo, hi = raw.X_train.min(axis=0), raw.X_train.max(axis=0)
    np.testing.assert_array_equal(mm.mean_, lo)
    np.testing.assert_array_equal(mm.scale_, hi - lo)
    np.testing.assert_array_equal(mm.X_train.min(axis=0), np.zeros(13))
    np.testing.assert_allclose(mm.X_train.max(axis=0), np.ones(13), rtol=0, atol=1e-15)
    np.testing.assert_allclose(mm.X_test, (raw.X_test - lo) / (hi - lo), rtol=1e-13)
    back = mm.X_train * mm.scale_ + mm.mean_  # exact up to rounding on each column's range
    assert np.all(np.abs(back - raw.X_train) <= 1e-12 * (hi - lo))
    assert np.any((mm.X_test < 0) | (mm.X_test > 1))  # test rows are not refitted
    np.testing.assert_array_equal(mm.y_test, raw.y_test)
    explicit = datasets.load("heart", seed=1, scaling="standard")
    np.testing.assert_array_equal(explicit.X_train, datasets.load("heart", seed=1).X_train)
    assert datasets.load("heart", scaling="none").mean_ is None


def test_audit_ordered_split_is_the_public_codes(data_dir):
    data = datasets.load("audit", split="ordered")
    np.testing.assert_array_equal(data.train_index, np.arange(1404))
    np.testing.assert_array_equal(data.test_index, np.arange(1404, 1560))
    assert data.split == "ordered"


def test_price_series_log_returns_split_by_date(data_dir):
    data = datasets.load("sp500")
    assert str(data.dates[0]) == "2017-01-03" and str(data.dates[-1]) == "2020-12-31"
    returns = np.concatenate([data.returns_train, data.returns_test])
    np.testing.assert_allclose(returns, np.log(data.close[1:] / data.close[:-1]), rtol=1e-12)
    assert np.all(np.diff(data.dates).astype(int) > 0)
    np.testing.assert_array_equal(data.train_index, np.arange(len(data.returns_train)))
    # Thesis Table 3.1 (Google Finance prices): mean 0.00043, sd 0.01317; FRED is close.
    assert abs(returns.std() - 0.01317) < 0.001
    assert data.mean_ is None
    with pytest.raises(ValueError, match="split by date"):
        datasets.load("btc", split="random")


def test_load_rejects_bad_arguments(data_dir):
    with pytest.raises(ValueError, match="test_fraction"):
        datasets.load("pima", test_fraction=1.0)
    with pytest.raises(ValueError, match="split"):
        datasets.load("pima", split="shuffled")
    with pytest.raises(ValueError, match="scaling must be one of"):
        datasets.load("pima", scaling="zscore")
    with pytest.raises(ValueError, match="standardize=False"):
        datasets.load("pima", standardize=False, scaling="minmax")
    data = datasets.load("pima", test_fraction=0)
    assert data.X_test.shape == (0, 7) and data.X_train.shape == (532, 7)


# ----------------------------------------------------------------------------- converters
# Synthetic "raw" sources rebuilt from the canonical files in each source's own format; the
# converters must turn them back into the canonical bytes.
def _canonical(folder: Path, file: str) -> tuple[list[str], list[list[str]]]:
    with open(folder / file, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _g(cell: str) -> str:
    """R / %g style: ``32.0`` -> ``32``."""
    return format(float(cell), ".15g")


def _fixed(cell: str, decimals: int) -> str:
    text = f"{float(cell):.{decimals}f}"
    assert float(text) == float(cell)
    return text


def _raw_pima(folder):
    header, rows = _canonical(folder, "pima.csv")
    parts = []
    for chunk in (rows[:200], rows[200:]):
        out = io.StringIO()
        w = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        w.writerow(["rownames", *header[:-1], "type"])
        for i, r in enumerate(chunk, start=1):
            out.write(",".join([str(i), *map(_g, r[:-1]), '"Yes"' if r[-1] == "1" else '"No"']))
            out.write("\n")
        parts.append(out.getvalue().encode())
    return parts


def _raw_heart(folder):  # UCI heart.dat: "70.0 1.0 ... 2.4 2.0 3.0 3.0 2", header as in one copy
    _, rows = _canonical(folder, "heart.csv")
    lines = ["age sex chest_pain_type resting_blood_pressure serum_cholestoral oldpeak thal"]
    for r in rows:
        lines.append(" ".join([_fixed(c, 1) for c in r[:-1]] + [str(int(r[-1]) + 1)]))
    return ["\n".join(lines).encode()]


def _raw_australian(folder, labels=(0, 1)):
    _, rows = _canonical(folder, "australian.csv")
    lines = [" ".join([*map(_g, r[:-1]), str(labels[int(r[-1])])]) for r in rows]
    return ["\n".join(lines).encode() + b"\n"]


def _raw_german(folder):  # fixed width: 25 fields of 4 characters, a space, newline
    _, rows = _canonical(folder, "german.csv")
    lines = ["".join(f"{int(c):4d}" for c in r[:-1]) + f"{int(r[-1]) + 1:4d} " for r in rows]
    assert all(len(line) + 1 == 102 for line in lines)
    return ["\n".join(lines).encode() + b"\n"]


def _raw_savetxt(file):  # yaringal's data.txt: numbers in %.18e separated by spaces
    def make(folder):
        _, rows = _canonical(folder, file)
        lines = [" ".join(f"{float(c):.18e}" for c in r) for r in rows]
        return ["\n".join(lines).encode() + b"\n"]

    return make


def _raw_airfoil(folder):  # tab-separated with a header row added
    _, rows = _canonical(folder, "airfoil.csv")
    lines = ["Frequency\tAngle\tChord\tVelocity\tThickness\tSound"]
    lines += ["\t".join(map(_g, r)) for r in rows]
    return ["\r\n".join(lines).encode() + b"\r\n"]


def _raw_protein(folder):  # CASP.csv: RMSD first
    _, rows = _canonical(folder, "protein.csv")
    lines = ["RMSD,F1,F2,F3,F4,F5,F6,F7,F8,F9"]
    lines += [",".join(map(_g, [r[-1], *r[:-1]])) for r in rows]
    return ["\n".join(lines).encode() + b"\n"]


def _raw_audit(folder):  # the source has no y column and CRLF line endings
    header, rows = _canonical(folder, "audit_outcomes.csv")
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header[:-1])
    w.writerows(r[:-1] for r in rows)
    return [out.getvalue().encode()]


def _days(start: str, end: str, weekdays_only: bool):
    day, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    while day <= last:
        if not weekdays_only or day.weekday() < 5:
            yield day.isoformat()
        day += dt.timedelta(days=1)


def _raw_sp500(folder):  # FRED: every weekday, blank on holidays, 2016..2021
    _, rows = _canonical(folder, "sp500_2017_2020.csv")
    close = dict(rows)
    lines = ["observation_date,SP500"]
    for day in _days("2016-12-20", "2021-01-08", weekdays_only=True):
        if day in close:
            value = _fixed(close[day], 2)
        elif "2017" <= day[:4] <= "2020":
            value = ""
        else:
            value = "2250.00"
        lines.append(f"{day},{value}")
    return ["\n".join(lines).encode() + b"\n"]


def _raw_btc(folder):  # Yahoo: Date,Open,High,Low,Close,Adj Close,Volume with 6 decimals
    _, rows = _canonical(folder, "btc_usd_2017_2020.csv")
    lines = [
        "Date,Open,High,Low,Close,Adj Close,Volume",
        "2016-12-30,null,null,null,null,null,null",
        "2016-12-31,960.0,970.0,950.0,963.743,963.743,99",
    ]
    for day, c in rows:
        v = _fixed(c, 6)
        lines.append(f"{day},1.000000,2.000000,0.500000,{v},{v},123456")
    lines.append("2021-01-01,29000.0,29600.0,28800.0,29374.152,29374.152,1")
    return ["\n".join(lines).encode() + b"\n"]


def _raw_usdzar(folder):  # semicolons and decimal commas; Yahoo's missing weekdays as null
    _, rows = _canonical(folder, "usdzar_2017_2020.csv")
    close = dict(rows)
    lines = ["Date;Adj Close;Close;High;Low;Open;Volume"]
    for day in _days("2016-12-28", "2021-01-05", weekdays_only=True):
        if day in close:
            v = close[day].replace(".", ",")
            lines.append(f"{day};{v};{v};14,5;13,1;14,0;0")
        elif "2017" <= day[:4] <= "2020":
            lines.append(f"{day};null;null;null;null;null;null")
        else:
            lines.append(f"{day};13,9;13,9;14,0;13,8;13,9;0")
    return ["\n".join(lines).encode() + b"\n"]


RAW = {
    "pima": _raw_pima,
    "heart": _raw_heart,
    "australian": _raw_australian,
    "german": _raw_german,
    "power": _raw_savetxt("power_plant.csv"),
    "airfoil": _raw_airfoil,
    "concrete": _raw_savetxt("concrete.csv"),
    "protein": _raw_protein,
    "audit": _raw_audit,
    "sp500": _raw_sp500,
    "btc": _raw_btc,
    "usdzar": _raw_usdzar,
}


@pytest.mark.parametrize("name", NAMES)
def test_converter_rebuilds_the_canonical_file(data_dir, name):
    info = datasets.info(name)
    parts = RAW[name](data_dir)
    assert all(part != (data_dir / info.file).read_bytes() for part in parts)
    assert sha256(info.convert(parts, source=f"synthetic {name}")) == info.sha256


def test_australian_copies_coded_minus_one_convert_the_same(data_dir):
    info = datasets.info("australian")
    parts = _raw_australian(data_dir, labels=(-1, 1))
    assert sha256(info.convert(parts)) == info.sha256


def test_audit_numeric_file_is_the_audit_file_without_string_columns(data_dir):
    full = (data_dir / "audit_outcomes.csv").read_bytes()
    numeric = parse.drop_columns(full, ["demarcation.code", "opinion.code"])
    assert sha256(numeric) == "b5a6294c5ff6a27f7eca58aea9e65019277c8ab3f042ea273c94c375b609b10d"


def test_converter_errors_name_the_source_and_the_problem():
    heart = datasets.info("heart")
    row = " ".join(["1"] * 13)
    with pytest.raises(ValueError, match=r"src.dat line 1: label '3' is not one of \[1, 2\]"):
        heart.convert([f"{row} 3\n".encode()], source="src.dat")
    with pytest.raises(ValueError, match=r"src.dat line 2: 13 cells, expected 14"):
        heart.convert([f"{row} 1\n{row}\n".encode()], source="src.dat")
    with pytest.raises(ValueError, match=r"src.dat line 2: non-numeric"):
        heart.convert([f"a b\nc d\n{row} 1\n".encode()], source="src.dat")
    with pytest.raises(ValueError, match="HTML page"):
        heart.convert([b"<!DOCTYPE html><html>404</html>"], source="src.dat")
    with pytest.raises(ValueError, match=r"'oldpeak'.*non-finite"):
        heart.convert([" ".join(["1"] * 9 + ["nan"] + ["1"] * 4).encode()], source="src.dat")
    pima = datasets.info("pima")
    bad = b"rownames,npreg,glu,bp,skin,bmi,ped,age,type\n1,1,2,3,4,5,6,7,Maybe\n"
    with pytest.raises(ValueError, match="type 'Maybe'"):
        pima.convert([bad, bad], source="Pima")
    with pytest.raises(ValueError, match=r"expected Pima\.tr and Pima\.te"):
        pima.convert([bad], source="Pima")


# ----------------------------------------------------------------------------- download path
class FakeNetwork:
    """Stands in for :func:`hamiltonia.datasets.fetch.download`: serves bytes by URL."""

    def __init__(self, served: dict[str, bytes]):
        self.served = served
        self.calls: list[str] = []

    def __call__(self, url: str, *, timeout: float) -> bytes:
        self.calls.append(url)
        assert timeout > 0
        if url not in self.served:
            raise urllib.error.URLError(f"no route to host for {url}")
        return self.served[url]


@pytest.mark.parametrize("name", ["pima", "german", "usdzar"])
def test_download_convert_verify_and_cache(data_dir, isolated, monkeypatch, name):
    info = datasets.info(name)
    net = FakeNetwork(dict(zip(info.sources[0], RAW[name](data_dir), strict=True)))
    monkeypatch.setattr(fetch, "download", net)
    assert datasets.status()[name] == "missing"
    p = datasets.path(name)
    assert p == isolated / info.file
    assert sha256(p.read_bytes()) == info.sha256
    assert net.calls == list(info.sources[0])
    assert [f.name for f in isolated.iterdir()] == [info.file]  # no temporary files left
    assert datasets.status()[name] == "cached"
    datasets.path(name)
    assert len(net.calls) == len(info.sources[0])  # served from the cache the second time
    assert datasets.load(name).name == name


def test_download_falls_back_to_the_next_source(data_dir, isolated, monkeypatch):
    info = datasets.info("heart")
    assert len(info.sources) > 1
    net = FakeNetwork({info.sources[1][0]: _raw_heart(data_dir)[0]})
    monkeypatch.setattr(fetch, "download", net)
    assert sha256(datasets.path("heart").read_bytes()) == info.sha256
    assert net.calls == [info.sources[0][0], info.sources[1][0]]


def test_no_mirror_and_no_network_is_a_clear_oserror(isolated, monkeypatch):
    net = FakeNetwork({})
    monkeypatch.setattr(fetch, "download", net)
    with pytest.raises(datasets.DatasetUnavailableError) as err:
        datasets.path("concrete")
    message = str(err.value)
    assert isinstance(err.value, OSError)
    assert "HAMILTONIA_DATA" in message
    assert datasets.info("concrete").sources[0][0] in message
    assert "concrete.csv" in message
    assert not isolated.exists() or not any(isolated.iterdir())


def test_downloaded_source_with_another_checksum_is_rejected(data_dir, isolated, monkeypatch):
    info = datasets.info("airfoil")
    raw = _raw_airfoil(data_dir)[0].replace(b"126.201", b"126.202", 1)
    net = FakeNetwork({urls[0]: raw for urls in info.sources})
    monkeypatch.setattr(fetch, "download", net)
    with pytest.raises(datasets.DatasetChecksumError) as err:
        datasets.path("airfoil")
    assert info.sha256 in str(err.value) and "airfoil.csv" in str(err.value)
    assert err.value.expected == info.sha256 and err.value.actual != info.sha256
    assert isinstance(err.value, ValueError)
    assert not (isolated / info.file).exists()


# ----------------------------------------------------------------------------- errors
def test_missing_file_in_the_mirror(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch.ENV_MIRROR, str(tmp_path))
    with pytest.raises(datasets.DatasetMirrorMissingError) as err:
        datasets.path("pima")
    assert str(tmp_path / "pima.csv") in str(err.value)
    assert "HAMILTONIA_DATA" in str(err.value)
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, OSError)


def test_a_mirror_that_is_not_a_folder_is_named_as_such(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch.ENV_MIRROR, str(tmp_path / "nowhere"))
    with pytest.raises(datasets.DatasetMirrorMissingError, match="is not a folder"):
        datasets.path("pima")


@pytest.mark.parametrize("where", ["mirror", "cache"])
def test_wrong_checksum_names_the_file_and_both_digests(data_dir, monkeypatch, tmp_path, where):
    folder = tmp_path / where
    if where == "mirror":
        monkeypatch.setenv(fetch.ENV_MIRROR, str(folder))
    else:
        monkeypatch.delenv(fetch.ENV_MIRROR, raising=False)
        monkeypatch.setenv(fetch.ENV_CACHE, str(tmp_path))
        folder = fetch.cache_dir()
    folder.mkdir(parents=True)
    data = bytearray((data_dir / "pima.csv").read_bytes())
    data[100] = ord("9") if data[100] != ord("9") else ord("8")
    (folder / "pima.csv").write_bytes(bytes(data))
    with pytest.raises(datasets.DatasetChecksumError) as err:
        datasets.path("pima")
    message = str(err.value)
    assert str(folder / "pima.csv") in message
    assert datasets.info("pima").sha256 in message
    assert sha256(bytes(data)) in message


@pytest.mark.parametrize(("cell", "row"), [("nan", 5), ("", 17), ("abc", 300), ("inf", 532)])
def test_bad_cell_in_a_numeric_column_names_file_and_column(
    data_dir, monkeypatch, tmp_path, cell, row
):
    lines = (data_dir / "pima.csv").read_text().splitlines()
    cells = lines[row].split(",")
    cells[4] = cell  # bmi
    lines[row] = ",".join(cells)
    bad = tmp_path / "pima.csv"
    bad.write_text("\n".join(lines) + "\n")
    # Register the altered file's digest so that only the cell check can fail.
    info = dataclasses.replace(datasets.info("pima"), sha256=sha256(bad.read_bytes()))
    monkeypatch.setitem(datasets.DATASETS, "pima", info)
    monkeypatch.setenv(fetch.ENV_MIRROR, str(tmp_path))
    with pytest.raises(ValueError, match=r"pima\.csv: column 'bmi'") as err:
        datasets.load("pima")
    assert f"line {row + 1}" in str(err.value)


def test_headers_and_spacing_of_the_public_copies(data_dir):
    """First lines as they appear in public copies (header rows, tabs, ragged widths)."""
    cases = {
        "german": (
            "Checking-Account   Duration   Credit-history   target\t\t \n"
            "   1   6   4  12   5   5   3   4   1  67   3   2   1   2   1   0   0   1   0   0"
            "   1   0   0   1   1 \n"
            "   2  48   2  60   1   3   2   2   1  22   3   1   1   1   1   0   0   1   0   0"
            "   1   0   0   1   2 \n"
        ),
        "australian": (
            "1 2 3 4 5 6 7 8 9 10 11 12 13 14 class\n"
            "1 22.08 11.46 2 4 4 1.585 0 0 0 1 2 100 1213 0\n"
            "0 22.67 7 2 8 4 0.165 0 0 0 0 2 160 1 0\n"
        ),
        "heart": (
            "age sex chest_pain_type resting_blood_pressure thal\n"
            "70.0 1.0 4.0 130.0 322.0 0.0 2.0 109.0 0.0 2.4 2.0 3.0 3.0 2\n"
            "67.0 0.0 3.0 115.0 564.0 0.0 2.0 160.0 0.0 1.6 2.0 0.0 7.0 1\n"
        ),
    }
    for name, text in cases.items():
        info = datasets.info(name)
        out = info.convert([text.encode()], source=name).decode().splitlines()
        expected = (data_dir / info.file).read_text().splitlines()[:3]
        assert out == expected, name
