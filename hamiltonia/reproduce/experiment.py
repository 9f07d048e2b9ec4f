"""A published experiment as data: its targets, samplers, protocol, published figures and claims.

Each experiment is a TOML file in :mod:`hamiltonia.reproduce.experiments`, one per published
table. The file names the targets (registered names, with their ``setting="paper"``), the
samplers (registered recipes and their options), the protocol of the publication (chains,
retained draws, burn-in, how the chains start), the figures the publication prints, and the
claims it makes from them. Sampler options may refer to a target's variables with ``"$name"``
(the step size of Table 3.8, the trajectory length, the field strength ``g``, ``beta``), so a
table whose columns share options but whose rows differ in step size is written once:

.. code-block:: toml

    [[targets]]
    label = "Pima"
    name = "blr-pima"
    params = { setting = "paper" }
    vars = { L = 50, eps_hmc = 0.1062, eps_mhmc = 0.0300, g = 0.2 }

    [[samplers]]
    label = "MHMC"
    recipe = "mhmc"
    options = { step_size = "$eps_mhmc", n_steps = "$L", field = "research", g = "$g" }

    [published.Pima]
    acceptance = { MHMC = 82.35 }

Everything is checked when the file is loaded: unknown keys, a published figure for a sampler or
target the experiment does not run, a ``$name`` no target defines, a claim about an unknown
sampler or metric are errors naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

__all__ = [
    "Claim",
    "Experiment",
    "ExperimentError",
    "Protocol",
    "SamplerSpec",
    "TargetSpec",
    "experiment_names",
    "load_experiment",
]

#: Metrics an experiment may publish; :mod:`hamiltonia.reproduce.metrics` computes each.
METRIC_NAMES = ("acceptance", "ess", "t", "ess_per_t", "rhat", "avg_l", "step_size", "rank",
                "mean_ess", "kish", "eta", "eta_mean")  # fmt: skip

SCALES = ("small", "full")

#: Which ESS a sampler column reports (:class:`SamplerSpec`).
ESS_KINDS = ("auto", "antithetic", "antithetic-mean")


class ExperimentError(ValueError):
    """An experiment file that is not well formed; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How each cell (target x sampler) is run.

    Attributes
    ----------
    chains, draws, warmup : int
        Chains, retained draws per chain and burn-in iterations per chain (discarded).
    init : str
        ``"normal"``: each chain starts at a standard normal draw, as the author's code does;
        ``"default"``: hamiltonia's default start (uniform(-2, 2), or the target's own
        initial point, :meth:`~hamiltonia.Target.initial_point`).
    seed : int
        Seed of the run; cell ``k`` uses ``SeedSequence([seed, k])``.
    """

    chains: int
    draws: int
    warmup: int
    init: str = "normal"
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """A target row: its label in the published table, registered name, parameters and the
    variables its samplers' options refer to."""

    label: str
    name: str
    params: Mapping
    vars: Mapping


@dataclasses.dataclass(frozen=True)
class SamplerSpec:
    """A sampler column: its label in the published table, recipe and options, and which ESS
    the publication reports for it (``"auto"``: importance-weighted when the draws carry
    weights; ``"antithetic"``: eq. 8.1 over the chain pairs, :math:`\\eta` the largest over
    the parameters, as the thesis states; ``"antithetic-mean"``: :math:`\\eta` their mean, which
    its printed figures match; see
    :func:`~hamiltonia.diagnostics.publication.antithetic_eta`)."""

    label: str
    recipe: str
    options: Mapping
    ess: str = "auto"
    targets: tuple | None = None

    def runs_on(self, target: str) -> bool:
        """Whether this column has a cell on the target labelled ``target``."""
        return self.targets is None or target in self.targets

    def options_for(self, target: TargetSpec) -> dict:
        """The options with each ``"$name"`` replaced by the target's variable."""
        return {key: _resolve(value, target) for key, value in self.options.items()}


@dataclasses.dataclass(frozen=True)
class Claim:
    """A claim the publication makes from its table, checked on the reproduced figures.

    ``rule`` is ``"best"`` (``sampler`` has the highest ``metric`` of the experiment's
    samplers on each of ``targets``, or on at least ``at_least`` of them) or ``"greater"``
    (for each pair ``(a, b)`` of ``pairs``, ``a`` has a higher ``metric`` than ``b`` on each
    of ``targets``, or on at least ``at_least``). ``explanation`` is the finding on why a claim
    that does not hold does not (a setting, a defect, an error in the publication).
    """

    text: str
    rule: str
    metric: str
    targets: tuple
    sampler: str | None = None
    pairs: tuple = ()
    at_least: int | None = None
    explanation: str = ""


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One published table and how to rerun it (see the module's description)."""

    name: str
    title: str
    source: str
    description: str
    protocol: Protocol
    scales: Mapping
    options: Mapping
    targets: tuple
    samplers: tuple
    published: Mapping
    metrics: tuple
    claims: tuple
    notes: tuple
    source_file: str = ""

    def protocol_at(self, scale: str) -> Protocol:
        """The protocol at ``scale``: ``"full"`` is the publication's, ``"small"`` the same
        with fewer chains and draws (minutes on two cores)."""
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        if scale == "full":
            return self.protocol
        return dataclasses.replace(self.protocol, **self.scales.get(scale, {}))

    def cells(self):
        """``(target, sampler)`` pairs in table order (targets outer)."""
        return [(t, s) for t in self.targets for s in self.samplers if s.runs_on(t.label)]

    def sampler(self, label: str) -> SamplerSpec:
        """The sampler column labelled ``label``."""
        for spec in self.samplers:
            if spec.label == label:
                return spec
        raise KeyError(f"experiment {self.name!r} has no sampler {label!r}")


def _resolve(value, target: TargetSpec):
    if isinstance(value, str) and value.startswith("$"):
        return target.vars[value[1:]]
    return value


def _experiments_folder():
    return resources.files("hamiltonia.reproduce") / "experiments"


def experiment_names() -> list[str]:
    """Names of the experiments shipped with hamiltonia, sorted."""
    return sorted(
        p.name.removesuffix(".toml")
        for p in _experiments_folder().iterdir()
        if p.name.endswith(".toml")
    )


def load_experiment(name_or_path) -> Experiment:
    """The experiment called ``name`` (see :func:`experiment_names`) or in the TOML file at
    a path; :class:`ExperimentError` names the file and key of anything malformed."""
    text_path = Path(str(name_or_path))
    if text_path.suffix == ".toml" and text_path.exists():
        source = text_path
        data = tomllib.loads(text_path.read_text())
    else:
        source = _experiments_folder() / f"{name_or_path}.toml"
        if not source.is_file():
            raise ValueError(
                f"no experiment {name_or_path!r}: choose one of {experiment_names()} "
                "(hamiltonia reproduce --list) or give a .toml file"
            )
        data = tomllib.loads(source.read_text())
    return _parse(data, str(source))


_TOP_KEYS = {
    "name", "title", "source", "description", "protocol", "scales", "options", "targets",
    "samplers", "published", "metrics", "claims", "notes",
}  # fmt: skip


def _parse(data: dict, where: str) -> Experiment:
    def fail(message):
        raise ExperimentError(f"{where}: {message}")

    unknown = set(data) - _TOP_KEYS
    if unknown:
        fail(f"unknown keys {sorted(unknown)}; allowed: {sorted(_TOP_KEYS)}")
    for key in ("name", "title", "source", "protocol", "targets", "samplers"):
        if key not in data:
            fail(f"missing {key!r}")
    protocol = _protocol(data["protocol"], fail)
    scales = data.get("scales", {})
    for scale, values in scales.items():
        if scale not in SCALES or scale == "full":
            fail(f"scales.{scale}: only 'small' may be set (full is the protocol)")
        _protocol({**dataclasses.asdict(protocol), **values}, fail)
    targets = tuple(_target(t, i, fail) for i, t in enumerate(data["targets"]))
    labels = [t.label for t in targets]
    if len(set(labels)) != len(labels):
        fail(f"target labels repeat: {labels}")
    samplers = tuple(_sampler(s, i, labels, fail) for i, s in enumerate(data["samplers"]))
    columns = [s.label for s in samplers]
    if len(set(columns)) != len(columns):
        fail(f"sampler labels repeat: {columns}")
    for spec in samplers:
        for t in targets:
            if not spec.runs_on(t.label):
                continue
            for key, value in spec.options.items():
                if isinstance(value, str) and value.startswith("$") and value[1:] not in t.vars:
                    fail(
                        f"sampler {spec.label!r} option {key}={value!r}: target {t.label!r} "
                        f"defines no variable {value[1:]!r} (its vars: {sorted(t.vars)})"
                    )
    metrics = tuple(data.get("metrics", ("acceptance", "ess", "t", "ess_per_t", "rhat")))
    for metric in metrics:
        if metric not in METRIC_NAMES:
            fail(f"metrics: unknown {metric!r}; known: {list(METRIC_NAMES)}")
    published = data.get("published", {})
    for label, table in published.items():
        if label not in labels:
            fail(f"published.{label}: no target labelled {label!r} (targets: {labels})")
        for metric, row in table.items():
            if metric not in metrics:
                fail(f"published.{label}.{metric}: not among the metrics {list(metrics)}")
            for column, value in row.items():
                if column not in columns:
                    fail(f"published.{label}.{metric}.{column}: no sampler {column!r}")
                if not isinstance(value, int | float | list):
                    fail(f"published.{label}.{metric}.{column}: a number, got {value!r}")
    claims = tuple(
        _claim(c, i, labels, columns, metrics, fail) for i, c in enumerate(data.get("claims", []))
    )
    return Experiment(
        name=data["name"],
        title=data["title"],
        source=data["source"],
        description=data.get("description", "").strip(),
        protocol=protocol,
        scales=scales,
        options=data.get("options", {}),
        targets=targets,
        samplers=samplers,
        published=published,
        metrics=metrics,
        claims=claims,
        notes=tuple(n.strip() for n in data.get("notes", [])),
        source_file=where,
    )


def _protocol(values: dict, fail) -> Protocol:
    fields = {f.name for f in dataclasses.fields(Protocol)}
    unknown = set(values) - fields
    if unknown:
        fail(f"protocol: unknown keys {sorted(unknown)}; allowed: {sorted(fields)}")
    for key in ("chains", "draws", "warmup"):
        if not isinstance(values.get(key), int) or values[key] < (0 if key == "warmup" else 1):
            fail(f"protocol.{key} must be an integer >= {0 if key == 'warmup' else 1}")
    if values.get("init", "normal") not in ("normal", "default"):
        fail(f"protocol.init must be 'normal' or 'default', got {values['init']!r}")
    return Protocol(**values)


def _target(values: dict, i: int, fail) -> TargetSpec:
    allowed = {"label", "name", "params", "vars"}
    if set(values) - allowed or not {"label", "name"} <= set(values):
        fail(f"targets[{i}]: needs label and name, may have params and vars; got {sorted(values)}")
    return TargetSpec(
        values["label"], values["name"], values.get("params", {}), values.get("vars", {})
    )


def _sampler(values: dict, i: int, labels: list, fail) -> SamplerSpec:
    allowed = {"label", "recipe", "options", "ess", "targets"}
    if set(values) - allowed or not {"label", "recipe"} <= set(values):
        optional = sorted(allowed - {"label", "recipe"})
        fail(f"samplers[{i}]: needs label and recipe, may have {optional}")
    if values.get("ess", "auto") not in ESS_KINDS:
        fail(f"samplers[{i}].ess must be one of {list(ESS_KINDS)}, got {values['ess']!r}")
    only = values.get("targets")
    if only is not None:
        missing = [t for t in only if t not in labels]
        if missing:
            fail(f"samplers[{i}].targets: unknown targets {missing}")
        only = tuple(only)
    return SamplerSpec(
        values["label"],
        values["recipe"],
        values.get("options", {}),
        values.get("ess", "auto"),
        only,
    )


def _claim(values: dict, i: int, labels, columns, metrics, fail) -> Claim:
    allowed = {"text", "rule", "metric", "targets", "sampler", "pairs", "at_least", "explanation"}
    if set(values) - allowed or not {"text", "rule", "metric"} <= set(values):
        fail(f"claims[{i}]: needs text, rule and metric; may have {sorted(allowed)}")
    if values["rule"] not in ("best", "greater"):
        fail(f"claims[{i}].rule must be 'best' or 'greater', got {values['rule']!r}")
    if values["metric"] not in metrics:
        fail(f"claims[{i}].metric {values['metric']!r} is not among {list(metrics)}")
    targets = values.get("targets", "all")
    targets = tuple(labels) if targets == "all" else tuple(targets)
    for t in targets:
        if t not in labels:
            fail(f"claims[{i}].targets: unknown target {t!r}")
    named = (
        [values.get("sampler")]
        if values["rule"] == "best"
        else [x for p in values.get("pairs", []) for x in p]
    )
    if values["rule"] == "best" and values.get("sampler") is None:
        fail(f"claims[{i}]: rule 'best' needs sampler")
    if values["rule"] == "greater" and not values.get("pairs"):
        fail(f"claims[{i}]: rule 'greater' needs pairs")
    for s in named:
        if s not in columns:
            fail(f"claims[{i}]: unknown sampler {s!r} (samplers: {columns})")
    return Claim(
        text=values["text"],
        rule=values["rule"],
        metric=values["metric"],
        targets=targets,
        sampler=values.get("sampler"),
        pairs=tuple(tuple(p) for p in values.get("pairs", ())),
        at_least=values.get("at_least"),
        explanation=values.get("explanation", "").strip(),
    )
