"""A built-in target's size options are checked before anything is built (issue 26): a run
manifest with ``{"dim": 1e9}`` or ``hamiltonia sample gaussian -T dim=100000000`` used to
build 10**8 parameter names and never finish."""

import time

import pytest

import hamiltonia as hm
from hamiltonia._validation import MAX_TARGET_DIM
from hamiltonia.targets.banana import MAX_OBSERVATIONS
from hamiltonia.targets.bnn import max_hidden
from hamiltonia.targets.gaussian import MAX_DENSE_DIM
from hamiltonia.targets.jump_diffusion import MAX_TERMS
from tests.data import use_data

BNN = ["bnn-power", "bnn-airfoil", "bnn-concrete", "bnn-protein"]
JDP = ["jdp-sp500", "jdp-btc", "jdp-usdzar"]
BNN_FEATURES = {"bnn-power": 4, "bnn-airfoil": 5, "bnn-concrete": 8, "bnn-protein": 9}

#: (target, size option, largest value allowed)
SIZED = [
    ("gaussian", "dim", MAX_TARGET_DIM),
    ("correlated-gaussian", "dim", MAX_DENSE_DIM),
    ("funnel", "n_x", MAX_TARGET_DIM - 1),  # dim = n_x + 1
    ("banana", "n_obs", MAX_OBSERVATIONS),
    *[(name, "n_hidden", max_hidden(BNN_FEATURES[name])) for name in BNN],
    *[(name, "n_terms", MAX_TERMS) for name in JDP],
]

BAD = {
    "too big": lambda largest: largest + 1,
    "far too big": lambda largest: 10**12,
    "zero": lambda largest: 0,
    "negative": lambda largest: -3,
    "float": lambda largest: 1e9,  # as JSON gives it
    "integral float": lambda largest: 5.0,
    "fraction": lambda largest: 2.5,
    "bool": lambda largest: True,
    "string": lambda largest: "10",
}


@pytest.mark.parametrize("bad", list(BAD), ids=str)
@pytest.mark.parametrize(("name", "option", "largest"), SIZED, ids=[s[0] for s in SIZED])
def test_a_bad_size_is_refused_naming_the_option_and_the_range(name, option, largest, bad):
    value = BAD[bad](largest)
    began = time.perf_counter()
    with pytest.raises(ValueError) as err:
        hm.targets.get(name, **{option: value})
    assert time.perf_counter() - began < 2.0  # refused before building (or loading data)
    message = str(err.value)
    assert message.startswith(f"{option} must be an integer in [1, {largest}]"), message
    assert repr(value) in message


def test_the_bnn_bound_keeps_the_parameters_within_the_limit():
    for d in (1, 4, 9, 50):
        h = max_hidden(d)
        assert (d + 2) * h + 1 <= MAX_TARGET_DIM < (d + 2) * (h + 1) + 1


@pytest.mark.parametrize(
    ("name", "option", "value", "dim"),
    [
        ("gaussian", "dim", MAX_TARGET_DIM, MAX_TARGET_DIM),
        ("funnel", "n_x", MAX_TARGET_DIM - 1, MAX_TARGET_DIM),
        ("banana", "n_obs", MAX_OBSERVATIONS, 2),
        # The largest dense Gaussian takes seconds to invert: a moderate one here.
        ("correlated-gaussian", "dim", 200, 200),
    ],
    ids=str,
)
def test_the_largest_size_builds_quickly(name, option, value, dim):
    began = time.perf_counter()
    target = hm.targets.get(name, **{option: value})
    assert time.perf_counter() - began < 20.0
    assert target.dim == dim and len(target.names) == dim


def test_the_largest_bnn_and_jump_diffusion_build(monkeypatch):
    use_data(monkeypatch, "concrete", "sp500")
    target = hm.targets.get("bnn-concrete", n_hidden=max_hidden(8))
    assert target.dim <= MAX_TARGET_DIM and len(target.names) == target.dim
    assert hm.targets.get("jdp-sp500", n_terms=MAX_TERMS).n_terms == MAX_TERMS


def test_the_classes_check_the_same_bounds():
    """A size given to a target class directly (not through the registry) is checked too."""
    import numpy as np

    from hamiltonia.targets.bnn import BayesianNeuralNetwork
    from hamiltonia.targets.funnel import Funnel
    from hamiltonia.targets.gaussian import CorrelatedGaussian, DiagonalGaussian
    from hamiltonia.targets.jump_diffusion import MertonJumpDiffusion

    X, y = np.ones((3, 2)), np.arange(3.0)
    cases = [
        (lambda: DiagonalGaussian(MAX_TARGET_DIM + 1), "dim"),
        (lambda: CorrelatedGaussian(MAX_DENSE_DIM + 1), "dim"),
        (lambda: Funnel(n_x=MAX_TARGET_DIM), "n_x"),
        (lambda: BayesianNeuralNetwork(X, y, n_hidden=max_hidden(2) + 1), "n_hidden"),
        (lambda: MertonJumpDiffusion(np.zeros(3), n_terms=MAX_TERMS + 1), "n_terms"),
    ]
    for build, option in cases:
        with pytest.raises(ValueError, match=rf"^{option} must be an integer in \[1, "):
            build()


def test_the_command_line_refuses_a_huge_dim(capsys):
    from hamiltonia.cli import main

    began = time.perf_counter()
    code = main(["sample", "gaussian", "-T", "dim=100000000", "--no-progress"])
    assert time.perf_counter() - began < 5.0
    assert code != 0
    assert f"dim must be an integer in [1, {MAX_TARGET_DIM}], got 100000000" in (
        capsys.readouterr().err
    )
