"""What made a reproduction's cell: the code, the cell's definition and the run's settings.

A cell record (``cells/NAME.json``) is reused by a later run, and shown on the documentation's
page, only if it was made by the same code, for the same definition of the cell, with the same
settings, and its figures are those it was written with. Each record therefore holds:

``code``
    :func:`code_version`: the package's version and a digest of its own source.
``definition``
    :func:`cell_definition`: everything of the experiment that the cell's run and figures
    depend on (the protocol, the scale, the cell's place in the table, which seeds its run, the
    target's and the sampler's specifications, the figures computed), and ``fingerprint``, its
    SHA-256.
``settings``
    :func:`run_settings`: how it was run (chains, executor, workers, compiled).
``checksum``
    :func:`checksum` of the ``cell`` payload, its figures.

:func:`mismatch` says why a record does not match, in words that follow its path ("cells/x.json
was made by other code (...)"); ``None`` where it matches.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import platform
from pathlib import Path

__all__ = [
    "CELL_FORMAT",
    "canonical_json",
    "cell_definition",
    "checksum",
    "code_version",
    "fingerprint",
    "mismatch",
    "run_settings",
]

#: The layout of a cell record that carries its provenance (records without ``format`` are an
#: earlier version's).
CELL_FORMAT = 2


@functools.cache
def code_version() -> dict:
    """The code that makes a cell: ``{"version": hamiltonia.__version__, "digest": SHA-256,
    "python": ..., "numpy": ...}``, computed once per process.

    The digest is taken over every ``*.py`` file of the installed package (``hamiltonia/**``)
    and the experiment files it ships (``hamiltonia/reproduce/experiments/*.toml``), in sorted
    order, each as its path relative to the package, its length and its bytes. The whole
    package rather than the modules a cell imports: which code a run goes through depends on
    its recipe, its target and the registries' plugins, and no list of modules kept by hand
    would stay right; an edit that cannot change a figure (the command line, say) costs a
    recomputation, never a wrong figure. The version alone would not do: it is not raised at
    each change, and an editable install changes with every edit. Reading the sources (about
    2 MB) takes milliseconds.

    Python's and NumPy's versions are recorded to help explain a difference, but are not
    compared: NumPy keeps its random streams across versions, and a new patch release of
    either should not throw away hours of runs.
    """
    import numpy

    import hamiltonia

    root = Path(hamiltonia.__file__).resolve().parent
    files = sorted(
        [*root.rglob("*.py"), *(root / "reproduce" / "experiments").glob("*.toml")],
        key=lambda p: p.relative_to(root).as_posix(),
    )
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return {
        "version": hamiltonia.__version__,
        "digest": digest.hexdigest(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }


def canonical_json(value) -> bytes:
    """``value`` as JSON with sorted keys and no spaces: the same bytes for the same data,
    however the file it was read from was laid out."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def checksum(cell: dict) -> str:
    """The SHA-256 of a cell's ``cell`` payload (its figures, time and warnings) as
    :func:`canonical_json`. It catches a hand edit or a damaged file; it is not a signature
    (whoever edits the figures can compute it again)."""
    return hashlib.sha256(canonical_json(cell)).hexdigest()


def cell_definition(experiment, scale: str, protocol, target, sampler, index: int, metrics) -> dict:
    """Everything of the experiment that the cell's run and figures depend on, as plain
    data: the experiment's name, the scale and the protocol at it (chains included, after an
    override), the cell's place in the table (its run's seed is ``SeedSequence([seed,
    index])``), the target (label, registered name, parameters), the sampler (label, recipe,
    options with the experiment's and the target's variables filled in, which ESS) and the
    figures computed (``metrics``). The experiment's published figures, claims and notes are
    not part of it: they change the report, not the cell."""
    return json.loads(
        json.dumps(
            {
                "experiment": experiment.name,
                "scale": scale,
                "protocol": dataclasses.asdict(protocol),
                "cell": index,
                "target": {
                    "label": target.label,
                    "name": target.name,
                    "params": dict(target.params),
                },
                "sampler": {
                    "label": sampler.label,
                    "recipe": sampler.recipe,
                    "options": {**experiment.options, **sampler.options_for(target)},
                    "ess": sampler.ess,
                },
                "metrics": list(metrics),
            },
            default=str,
        )
    )


def fingerprint(definition: dict) -> str:
    """The SHA-256 of a cell's :func:`cell_definition`."""
    return hashlib.sha256(canonical_json(definition)).hexdigest()


def run_settings(chains: int, executor, workers, compiled) -> dict:
    """The settings a cell was run with that can change its figures: the chains, the
    executor and its workers (how many chains run at once, which ``t`` depends on) and
    ``compiled`` as asked. A Dask scheduler's address is left out: it names where the
    cluster is, and changes each time one starts."""
    return {"chains": chains, "executor": executor, "workers": workers, "compiled": compiled}


def _short(code: dict) -> str:
    return f"hamiltonia {code.get('version')}, source digest {str(code.get('digest'))[:12]}"


def _changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """What differs between two plain records, as ``"key old, now new"``, each key by its
    dotted path (``"protocol.chains 4, now 2"``, ``"sampler.options.step_size 0.1, now
    0.12"``)."""
    said = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            said += _changes(a, b, f"{prefix}{key}.")
        else:
            said.append(f"{prefix}{key} {a!r}, now {b!r}")
    return said


def mismatch(payload, definition: dict, settings: dict | None) -> str | None:
    """Why the cell record ``payload`` (a parsed ``cells/NAME.json``) cannot stand for the cell
    of ``definition`` run with ``settings`` by this code, in words that follow the record's
    path; ``None`` where it can. Checked in this order: a record at all, a record of this
    layout, its checksum, its code, its definition, its settings."""
    if not isinstance(payload, dict) or not isinstance(payload.get("cell"), dict):
        return "is not a cell record (it holds no cell)"
    if payload.get("format") != CELL_FORMAT or not isinstance(payload.get("code"), dict):
        return "was made by an earlier version of hamiltonia, which recorded no code version"
    if payload.get("checksum") != checksum(payload["cell"]):
        return (
            "has a checksum that does not verify: its figures were edited or damaged after it "
            "was written"
        )
    code, now = payload["code"], code_version()
    if (code.get("version"), code.get("digest")) != (now["version"], now["digest"]):
        return f"was made by other code ({_short(code)}; this is {_short(now)})"
    made_for = payload.get("definition")
    if not isinstance(made_for, dict) or payload.get("fingerprint") != fingerprint(made_for):
        return "has a definition that does not match its fingerprint: it was edited"
    if made_for != definition:
        changes = "; ".join(_changes(made_for, definition)[:4])
        return f"was made for another definition of the cell ({changes})"
    made_with = payload.get("settings")
    if settings is not None and made_with != settings:
        if not isinstance(made_with, dict):
            return "records no settings"
        return f"was made with other settings ({'; '.join(_changes(made_with, settings))})"
    return None
