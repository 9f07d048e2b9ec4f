"""The report: published beside reproduced with their ratio, and each claim checked on both
sets of figures."""

import pytest

from hamiltonia.reproduce.execute import CellOutcome, Reproduction
from hamiltonia.reproduce.experiment import load_experiment
from hamiltonia.reproduce.report import check_claims, comparison_rows, docs_page, errata, markdown


def _figure(value, sd=None):
    return {"value": value, "sd": sd, "per_chain": None}


def _reproduction(experiment, ess: dict, scale="full", draws=None):
    cells = {}
    for (target, sampler), value in ess.items():
        metrics = {"ess": _figure(value, 1.0), "acceptance": _figure(80.0), "t": _figure(2.0)}
        cells[(target, sampler)] = CellOutcome(target, sampler, metrics, 4.0, "", True, 0)
    protocol = (
        experiment.protocol
        if draws is None
        else experiment.protocol.__class__(**{**experiment.protocol.__dict__, "draws": draws})
    )
    return Reproduction(experiment, scale, protocol, cells)


@pytest.fixture
def tiny(tiny_file):
    return load_experiment(tiny_file)


def test_a_claim_that_holds_and_one_that_does_not(tiny):
    holds = _reproduction(
        tiny,
        {("Banana", "HMC"): 10, ("Banana", "PHMC"): 30, ("Gauss", "HMC"): 5, ("Gauss", "PHMC"): 6},
    )
    (check,) = check_claims(holds)
    assert check.published is None  # Gauss has no published ESS
    assert check.reproduced is True and check.failures == ()
    fails = _reproduction(
        tiny,
        {("Banana", "HMC"): 10, ("Banana", "PHMC"): 30, ("Gauss", "HMC"): 7, ("Gauss", "PHMC"): 6},
    )
    (check,) = check_claims(fails)
    assert check.reproduced is False
    assert check.failures == ("Gauss: PHMC 6.00 vs HMC 7.00",)


def test_best_at_least_and_lower_is_better(tiny_file, tmp_path):
    text = (
        tiny_file.read_text()
        + """
[[claims]]
text = "PHMC has the highest ESS on at least one target"
rule = "best"
metric = "ess"
sampler = "PHMC"
at_least = 1

[[claims]]
text = "HMC is the fastest everywhere"
rule = "best"
metric = "t"
sampler = "HMC"
"""
    )
    text = text.replace("metrics = ", "metrics = ")
    path = tmp_path / "claims.toml"
    path.write_text(
        text.replace("[protocol]", 'metrics = ["acceptance", "ess", "t"]\n\n[protocol]', 1)
    )
    experiment = load_experiment(path)
    rep = _reproduction(
        experiment,
        {("Banana", "HMC"): 10, ("Banana", "PHMC"): 30, ("Gauss", "HMC"): 7, ("Gauss", "PHMC"): 6},
    )
    rep.cells[("Gauss", "PHMC")].metrics["t"] = _figure(1.0)
    _, best, fastest = check_claims(rep)
    assert best.reproduced is True  # Banana only, and one is enough
    assert fastest.reproduced is False
    assert fastest.failures == ("Banana: all equal", "Gauss: PHMC best")


def test_rows_hold_published_reproduced_and_their_ratio(tiny):
    rep = _reproduction(tiny, {("Banana", "HMC"): 20, ("Banana", "PHMC"): 30})
    rows = {r[0]: r[1:] for r in comparison_rows(rep, "Banana")}
    assert rows["ESS published"] == ["10", "20"]
    assert rows["ESS reproduced"] == ["20.00 ± 1.00", "30.00 ± 1.00"]
    assert rows["ESS ratio"] == ["2", "1.5"]
    # At another number of draws the ESS ratio is per draw.
    half = _reproduction(tiny, {("Banana", "HMC"): 20, ("Banana", "PHMC"): 30}, draws=30)
    rows = {r[0]: r[1:] for r in comparison_rows(half, "Banana")}
    assert rows["ESS ratio (per draw)"] == ["4", "3"]
    assert "## Claims" in markdown(rep)


def test_the_docs_page_lists_the_errata():
    entries = errata()
    assert entries and all(
        {"where", "printed", "corrected", "applied_in"} <= set(e) for e in entries
    )
    page = docs_page([])
    assert "Errata applied" in page
    assert all(e["corrected"] in page for e in entries)


def test_when_every_sampler_is_equal_nobody_is_best(tiny_file, tmp_path):
    text = (
        tiny_file.read_text()
        + """
[[claims]]
text = "PHMC accepts the most"
rule = "best"
metric = "acceptance"
sampler = "PHMC"
targets = ["Banana"]
"""
    )
    path = tmp_path / "tie.toml"
    path.write_text(text)
    experiment = load_experiment(path)
    rep = _reproduction(experiment, {("Banana", "HMC"): 1, ("Banana", "PHMC"): 2})
    check = check_claims(rep)[-1]
    assert check.reproduced is False and check.failures == ("Banana: all equal",)
    assert check.published is False  # the published 90.0 and 90.0 tie too
