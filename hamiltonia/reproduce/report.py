"""Published beside reproduced: the tables, the claims, and the text of the report.

:func:`comparison_rows` lays out one target's table (a published, a reproduced and a ratio row
per metric, a column per sampler); :func:`check_claims` tests each published claim on the
published and on the reproduced figures; :func:`markdown` and :func:`restructured_text` write
the same report for the terminal and for the documentation.
"""

from __future__ import annotations

import dataclasses
import math

from hamiltonia.reproduce.metrics import HIGHER_IS_BETTER, LABELS

__all__ = [
    "ClaimCheck",
    "check_claims",
    "check_docs_page",
    "comparison_rows",
    "docs_page",
    "errata",
    "markdown",
    "restructured_text",
    "write_docs_page",
    "write_report",
]


@dataclasses.dataclass(frozen=True)
class ClaimCheck:
    """A claim checked on both sets of figures: ``holds`` is ``True``, ``False`` or ``None``
    (a figure is missing); ``failures`` names the targets (and pairs) where it does not."""

    text: str
    published: bool | None
    reproduced: bool | None
    failures: tuple
    explanation: str


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, list):
        return ", ".join(_number(v) for v in value)
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _as_printed(value) -> str:
    """A published figure as the publication prints it (TOML keeps its digits)."""
    if value is None:
        return "–"
    if isinstance(value, list):
        return ", ".join(_as_printed(v) for v in value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _with_spread(metric: dict | None) -> str:
    if metric is None:
        return "–"
    text = _number(metric["value"])
    if metric.get("sd") is not None:
        text += f" ± {_number(metric['sd'])}"
    return text


def comparison_rows(reproduction, target: str) -> list[list[str]]:
    """One target's table as rows of text: a heading row, then per metric the published
    figure, the reproduced mean ± sd over chains, and reproduced / published."""
    experiment = reproduction.experiment
    samplers = [s.label for s in experiment.samplers if s.runs_on(target)]
    published = experiment.published.get(target, {})
    # ESS grows with the draws: at another scale than the publication's, compare per draw.
    per_draw = reproduction.protocol.draws / experiment.protocol.draws
    rows = [["", *samplers]]
    for metric in experiment.metrics:
        if metric == "rank":
            rows += _rank_rows(reproduction, target, samplers, published.get("rank", {}))
            continue
        label = LABELS[metric]
        pub = published.get(metric, {})
        rep = []
        ratio = []
        for s in samplers:
            cell = reproduction.cells.get((target, s))
            figures = None if cell is None else cell.metrics.get(metric)
            rep.append(_with_spread(figures))
            p = pub.get(s)
            if figures is None or p is None or not p or isinstance(p, list):
                ratio.append("–")
            else:
                scale = per_draw if metric == "ess" else 1.0
                ratio.append(f"{figures['value'] / (p * scale):.3g}")
        if pub:
            rows.append([f"{label} published", *[_as_printed(pub.get(s)) for s in samplers]])
        rows.append([f"{label} reproduced", *rep])
        if pub:
            what = " (per draw)" if metric == "ess" and per_draw != 1 else ""
            rows.append([f"{label} ratio{what}", *ratio])
    return rows


def _rank_rows(reproduction, target, samplers, published) -> list[list[str]]:
    """Rankings are lists: the published one, the reproduced one, and how many ranks agree
    from the top (a ranking's ratio means nothing)."""
    rows = [["ranking published", *[_as_printed(published.get(s)) for s in samplers]]]
    reproduced, agree = [], []
    for s in samplers:
        cell = reproduction.cells.get((target, s))
        ranking = None if cell is None else cell.metrics.get("rank", {}).get("value")
        reproduced.append(_as_printed(ranking))
        mine = published.get(s)
        if ranking is None or mine is None:
            agree.append("–")
            continue
        same = sum(a == b for a, b in zip(ranking, mine, strict=False))
        first = next(
            (i for i, (a, b) in enumerate(zip(ranking, mine, strict=False)) if a != b), None
        )
        where = "all" if first is None else f"first differs at rank {first + 1}"
        agree.append(f"{same} of {len(mine)} equal; {where}")
    return [*rows, ["ranking reproduced", *reproduced], ["ranks equal", *agree]]


def _values(experiment, reproduction, metric, target, published: bool) -> dict:
    if published:
        return dict(experiment.published.get(target, {}).get(metric, {}))
    out = {}
    for s in experiment.samplers:
        v = reproduction.value(target, s.label, metric)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out[s.label] = v
    return out


def _check(claim, experiment, reproduction, published: bool):
    higher = HIGHER_IS_BETTER.get(claim.metric, True)
    better = (lambda a, b: a > b) if higher else (lambda a, b: a < b)
    outcomes = []  # (target, detail, holds)
    for target in claim.targets:
        values = _values(experiment, reproduction, claim.metric, target, published)
        if claim.rule == "best":
            if claim.sampler not in values or len(values) < 2:
                return None, ()
            rival = max(
                (v for k, v in values.items() if k != claim.sampler),
                key=lambda v: v if higher else -v,
            )
            winner = max(values, key=lambda k: values[k] if higher else -values[k])
            if len(set(values.values())) == 1:
                # Every sampler equal (all rejecting, say): nobody is best.
                outcomes.append((target, f"{target}: all equal", False))
                continue
            # A tie for first place is first place.
            first = not better(rival, values[claim.sampler])
            outcomes.append((target, f"{target}: {winner} best", first))
        else:
            for a, b in claim.pairs:
                if a not in values or b not in values:
                    return None, ()
                outcomes.append(
                    (
                        target,
                        f"{target}: {a} {_number(values[a])} vs {b} {_number(values[b])}",
                        better(values[a], values[b]),
                    )
                )
    need = len(outcomes) if claim.at_least is None else claim.at_least
    if claim.rule == "greater" and claim.at_least is not None:
        need = claim.at_least * len(claim.pairs)
    held = sum(ok for *_, ok in outcomes)
    return held >= need, tuple(detail for _, detail, ok in outcomes if not ok)


def check_claims(reproduction) -> list[ClaimCheck]:
    """Each claim of the experiment, checked on the published and the reproduced figures."""
    experiment = reproduction.experiment
    checks = []
    for claim in experiment.claims:
        published, _ = _check(claim, experiment, reproduction, True)
        reproduced, failures = _check(claim, experiment, reproduction, False)
        checks.append(ClaimCheck(claim.text, published, reproduced, failures, claim.explanation))
    return checks


def _verdict(value) -> str:
    return {True: "holds", False: "does not hold", None: "–"}[value]


def _protocol_text(reproduction) -> str:
    p = reproduction.protocol
    start = "standard normal draws" if p.init == "normal" else "hamiltonia's default start"
    return (
        f"scale {reproduction.scale}: {p.chains} chains × {p.draws} retained draws after "
        f"{p.warmup} burn-in, started at {start}, seed {p.seed}; reproduced figures are the "
        f"mean ± sd over chains; t is the sampling time per chain after burn-in (see "
        "hamiltonia.reproduce.metrics)."
    )


def _warning_lines(reproduction, target: str) -> list[str]:
    """What went wrong in the target's cells: divergences and the runs' warnings."""
    lines = []
    for (t, s), cell in reproduction.cells.items():
        if t != target:
            continue
        said = list(cell.warnings)
        if cell.n_divergent:
            said.insert(0, f"{cell.n_divergent} divergent transitions")
        if said:
            lines.append(f"- {s}: " + "; ".join(said))
    return ["", *lines] if lines else []


def markdown(reproduction) -> str:
    """The report of a reproduction as Markdown: per target, published beside reproduced;
    then the claims; then the experiment's notes."""
    experiment = reproduction.experiment
    lines = [f"# {experiment.name}: {experiment.title}", "", f"Source: {experiment.source}.", ""]
    lines += [_protocol_text(reproduction), ""]
    for target in experiment.targets:
        rows = comparison_rows(reproduction, target.label)
        params = ", ".join(f"{k}={v!r}" for k, v in target.params.items())
        lines += [f"## {target.label} (`{target.name}`{': ' + params if params else ''})", ""]
        lines.append("| " + " | ".join(rows[0]) + " |")
        lines.append("|" + "---|" * len(rows[0]))
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        lines += _warning_lines(reproduction, target.label)
        lines.append("")
    checks = check_claims(reproduction)
    if checks:
        lines += [
            "## Claims",
            "",
            "| claim | published | reproduced | where not |",
            "|---|---|---|---|",
        ]
        for c in checks:
            verdicts = f"{_verdict(c.published)} | {_verdict(c.reproduced)}"
            lines.append(f"| {c.text} | {verdicts} | {'; '.join(c.failures)} |")
        lines.append("")
        explained = [c for c in checks if c.explanation]
        for c in explained:
            lines += [f"- **{c.text}** — {c.explanation}"]
        if explained:
            lines.append("")
    if experiment.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in experiment.notes] + [""]
    return "\n".join(lines)


def _rst_cell(text: str) -> str:
    """A cell's text with reStructuredText's inline markup characters escaped (an
    explanation's ``|grad U|`` is not a substitution)."""
    for char in ("\\", "|", "*", "`"):
        text = text.replace(char, "\\" + char)
    return text


def _rst_table(rows: list[list[str]]) -> list[str]:
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in rows:
        out.append(f"   * - {_rst_cell(row[0]) or ' '}")
        out += [f"     - {_rst_cell(cell)}" for cell in row[1:]]
    return [*out, ""]


def restructured_text(reproduction, level: str = "-") -> list[str]:
    """The report of a reproduction as reStructuredText lines (for the docs page)."""
    experiment = reproduction.experiment
    head = f"{experiment.name}: {experiment.title}"
    lines = [
        head,
        level * len(head),
        "",
        f"Source: {experiment.source}.",
        "",
        _protocol_text(reproduction),
        "",
    ]
    for target in experiment.targets:
        lines += [f"**{target.label}** (``{target.name}``)", ""]
        lines += _rst_table(comparison_rows(reproduction, target.label))
        said = [_rst_cell(line) for line in _warning_lines(reproduction, target.label) if line]
        lines += [*said, ""]
    checks = check_claims(reproduction)
    if checks:
        rows = [["claim", "published", "reproduced", "where not", "why"]]
        rows += [
            [
                c.text,
                _verdict(c.published),
                _verdict(c.reproduced),
                "; ".join(c.failures) or "–",
                c.explanation or "–",
            ]
            for c in checks
        ]
        lines += ["**Claims**", "", *_rst_table(rows)]
    if experiment.notes:
        lines += ["**Notes**", ""] + [f"- {_rst_cell(n)}" for n in experiment.notes] + [""]
    return lines


def write_report(reproduction, figures: bool = True) -> list:
    """Write into the reproduction's folder its report (``NAME.md``), its figures as plain
    data (``reproduction.json``) and, with ``figures``, the images (matplotlib); the paths
    written. The folder is the reproduction's own: these files are redrawn from its cells
    each time it runs (a link at one of their names is replaced, never followed; a folder
    there is refused before anything is written)."""
    import json
    from pathlib import Path

    from hamiltonia.reproduce import folders
    from hamiltonia.results.runfile import atomic_write_bytes

    if reproduction.output is None:
        raise ValueError("this reproduction has no output folder: run it with output=FOLDER")
    folder = Path(reproduction.output)
    name = reproduction.experiment.name
    folders.check_files(folder, folders.experiment_files(name))
    written = [
        atomic_write_bytes(folder / f"{name}.md", markdown(reproduction).encode()),
        atomic_write_bytes(
            folder / "reproduction.json", json.dumps(reproduction.to_json(), indent=1).encode()
        ),
    ]
    if figures and reproduction.cells:
        from hamiltonia.reproduce.figures import write_figures

        written += write_figures(reproduction, folder)
    return written


def errata() -> list[dict]:
    """The publications' printed errors that hamiltonia corrects (``errata.toml``): each
    with where it is printed, the correction, and where hamiltonia applies it."""
    import tomllib
    from importlib import resources

    text = (resources.files("hamiltonia.reproduce") / "errata.toml").read_text()
    return tomllib.loads(text)["erratum"]


def docs_page(reproductions, title: str = "Reproduction: results") -> str:
    """The documentation's page of results: each reproduction's report as reStructuredText
    (a plugin study's, the lines it wrote: :func:`~hamiltonia.reproduce.study.load_study_report`),
    then the errata applied."""
    lines = [title, "=" * len(title), ""]
    lines += [
        ".. This page is generated by `hamiltonia reproduce --docs-page`; do not edit it.",
        "",
    ]
    for reproduction in reproductions:
        # A plugin's study gives its section's lines itself (hamiltonia.reproduce.study).
        is_lines = isinstance(reproduction, list)
        lines += [*reproduction, ""] if is_lines else restructured_text(reproduction)
    heading = "Errata applied"
    lines += [heading, "-" * len(heading), ""]
    rows = [["printed in", "as printed", "as implemented", "where"]]
    rows += [[e["where"], e["printed"], e["corrected"], e["applied_in"]] for e in errata()]
    lines += _rst_table(rows)
    return "\n".join(lines) + "\n"


def check_docs_page(path, overwrite: bool = False):
    """``path`` as a ``Path`` a docs page may be written to: a folder, device or pipe is
    refused whatever ``overwrite`` says (:class:`~hamiltonia.results.runfile.RunFileError`),
    an existing file unless ``overwrite``."""
    from pathlib import Path

    from hamiltonia.results.runfile import checked_file_path

    path = checked_file_path(Path(path), "docs page")
    if path.exists() and not overwrite:
        raise ValueError(f"{path} exists; pass overwrite=True (--overwrite) to replace it")
    return path


def write_docs_page(reproductions, path, overwrite: bool = False):
    """Write :func:`docs_page` to ``path`` (checked by :func:`check_docs_page`)."""
    from hamiltonia.results.runfile import atomic_write_bytes

    return atomic_write_bytes(check_docs_page(path, overwrite), docs_page(reproductions).encode())
