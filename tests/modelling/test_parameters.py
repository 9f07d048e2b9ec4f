"""Named parameter blocks (hamiltonia.modelling.parameters)."""

import numpy as np
import pytest

import hamiltonia as hm


def _layout():
    return hm.ParameterLayout(
        {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(3, dims="school"),
         "w": hm.simplex(3), "L": hm.cholesky_corr(2), "p": hm.interval(0, 1, (2, 2))}
    )  # fmt: skip


def test_sizes_and_names():
    layout = _layout()
    assert layout.dim == 1 + 1 + 3 + 2 + 1 + 4
    assert layout.size == 1 + 1 + 3 + 3 + 4 + 4
    assert layout.names[:5] == ("mu", "tau", "eta[0]", "eta[1]", "eta[2]")
    assert "L[1, 0]" in layout.names and "p[1, 1]" in layout.names


def test_unconstrain_and_constrain_are_inverse_with_and_without_batch():
    layout = _layout()
    values = {"mu": 1.5, "tau": 2.0, "eta": [0.1, -0.2, 0.3], "w": [0.2, 0.3, 0.5],
              "L": [[1.0, 0.0], [0.6, 0.8]], "p": [[0.1, 0.2], [0.3, 0.9]]}  # fmt: skip
    z = layout.unconstrain(values, (4,))
    assert z.shape == (4, layout.dim)
    back, log_jac = layout.constrain(z)
    assert log_jac.shape == (4,)
    for name, value in values.items():
        np.testing.assert_allclose(back[name], np.broadcast_to(value, back[name].shape), atol=1e-12)
    flat = layout.flatten(back, (4,))
    assert flat.shape == (4, layout.size)
    np.testing.assert_array_equal(layout.unflatten(flat)["L"], back["L"])


def test_log_jacobian_is_the_sum_of_the_blocks():
    layout = hm.ParameterLayout({"a": hm.positive(2), "b": hm.interval(-1, 1)})
    z = np.array([0.3, -0.4, 0.7])
    _, log_jac = layout.constrain(z)
    expected = 0.3 - 0.4 + np.log(2.0) - np.logaddexp(0, 0.7) - np.logaddexp(0, -0.7)
    assert log_jac == pytest.approx(expected, abs=1e-14)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"mu": 0.0}, r"values for \['tau'\] are missing"),
        ({"mu": 0.0, "tau": 1.0, "nu": 1.0}, r"unknown parameters \['nu'\]"),
        ({"mu": 0.0, "tau": -1.0}, "tau must be positive"),
        (
            {"mu": [0.0, 1.0], "tau": 1.0},
            r"mu must have shape \(\) or \(2,\), got \(2, 1\)|"
            r"mu must have shape",
        ),
        ({"mu": "a", "tau": 1.0}, "mu must be numbers"),
    ],
)
def test_bad_values_name_the_parameter(values, match):
    layout = hm.ParameterLayout({"mu": hm.real(), "tau": hm.positive()})
    with pytest.raises(ValueError, match=match):
        layout.unconstrain(values, (3,))


def test_bad_blocks_are_refused():
    with pytest.raises(ValueError, match="parameter names must be identifiers"):
        hm.ParameterLayout({"a b": hm.real()})
    with pytest.raises(TypeError, match=r"must be a block such as hm\.real"):
        hm.ParameterLayout({"a": 3.0})
    with pytest.raises(ValueError, match="shape must hold positive integers"):
        hm.real((0,))
    with pytest.raises(ValueError, match="dims must name each of the 1 axes"):
        hm.real(3, dims=("a", "b"))


@pytest.mark.parametrize(
    "blocks, message",
    [
        ({"chain": hm.real()}, "'chain': the names .* are kept by ArviZ"),
        ({"draw": hm.real(2)}, "'draw': the names .* are kept by ArviZ"),
        ({"a": hm.real(3, dims="draw")}, "name axis 0 'draw', a name ArviZ keeps"),
        ({"k": hm.real(), "a": hm.real(3, dims="k")},
         "parameter 'k' is also the dimension of axis 0 of parameter 'a'"),
        ({"a": hm.real(3), "a_dim_0": hm.real()},
         "'a_dim_0' is also the name ArviZ gives axis 0 of parameter 'a'"),
    ],
)  # fmt: skip
def test_names_the_run_output_could_not_hold_apart_are_refused(blocks, message):
    # A name shared with a dimension would become that dimension's labels in the ArviZ
    # groups, and the saved run could not be read back.
    with pytest.raises(ValueError, match=message):
        hm.ParameterLayout(blocks)
    # Dims shared between blocks, and a block named like a dimension of no block, are fine.
    hm.ParameterLayout({"a": hm.real(3, dims="k"), "b": hm.real(3, dims="k"), "c": hm.real()})


def test_a_dimension_named_twice_in_one_variable_is_refused_naming_both():
    """xarray takes two axes with one name for one axis, and ArviZ fails on the draws
    later: refused when the layout or the model is built, naming the variable and the
    dimension, for a block, a generated quantity and an observed variable alike."""
    with pytest.raises(ValueError, match=r"parameter 'L' name axes 0 and 1 'i'"):
        hm.ParameterLayout({"mu": hm.real(), "L": hm.cholesky_corr(2, dims=("i", "i"))})

    def logp(p):
        return -0.5 * p["mu"] ** 2

    with pytest.raises(ValueError, match=r"generated quantity 'outer' name axes 0 and 1 'k'"):
        hm.Model(logp, {"mu": hm.real()}, generated=lambda p: {"outer": np.ones((2, 3))},
                 generated_dims={"outer": ("k", "k")})  # fmt: skip
    with pytest.raises(ValueError, match=r"observed variable 'y' name axes 0 and 1 'j'"):
        hm.Model(logp, {"mu": hm.real()}, observed_data={"y": np.ones((2, 2))},
                 observed_dims={"y": ("j", "j")})  # fmt: skip


def test_a_value_outside_its_support_is_named_by_its_index():
    """The message points at the value that fails, not at the opening of the block."""
    layout = hm.ParameterLayout({"tau": hm.positive(3), "w": hm.simplex(3)})
    with pytest.raises(ValueError, match=r"tau must be positive, got tau\[1, 2\] = -1\.0"):
        layout.unconstrain({"tau": [[1.0, 2.0, 3.0], [1.0, 2.0, -1.0]], "w": [0.2, 0.3, 0.5]},
                           (2,))  # fmt: skip
    with pytest.raises(
        ValueError, match=r"w must be a simplex .*got w\[1\] = \[0\.0, 0\.5, 0\.5\]"
    ):
        layout.unconstrain({"tau": [1.0, 2.0, 3.0], "w": [[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]]},
                           (2,))  # fmt: skip
