"""The ``yoshida4`` integrator, found through the ``hamiltonia.integrators`` entry point.

These tests install nothing: they check the plugin as installed beside hamiltonia
(``pip install -e plugins/hamiltonia-example``, as ``.ci/run`` does), and are skipped when
it is not.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.hamiltonians import EuclideanHamiltonian
from hamiltonia.testing import skip_unless_installed

skip_unless_installed("hamiltonia-example")

from hamiltonia_example.integrators import Yoshida4

RUN = {"chains": 2, "warmup": 100, "draws": 100, "seed": 0, "progress": False}


def test_registered_through_the_entry_point():
    hm.integrators.registry.refresh()
    assert "yoshida4" in hm.integrators.names()
    assert hm.integrators.registry.source("yoshida4") == "hamiltonia-example"
    assert "yoshida4" not in hm.integrators.registry._extra  # not registered on import
    assert hm.integrators.describe()["yoshida4"].startswith("Yoshida's fourth-order")
    integrator = hm.integrators.get("yoshida4")
    assert isinstance(integrator, Yoshida4)
    assert isinstance(integrator, hm.Integrator)
    assert integrator.order == 4
    assert integrator.n_grad_per_step == 3
    assert hm.integrators.options("yoshida4") == ["structure"]


def test_coefficients_are_the_triple_jump():
    w1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
    w0 = -(2.0 ** (1.0 / 3.0)) * w1
    integrator = hm.integrators.get("yoshida4")
    np.testing.assert_allclose(integrator.drifts, [w1, w0, w1], rtol=1e-15)
    np.testing.assert_allclose(
        integrator.kicks, [w1 / 2, (w1 + w0) / 2, (w1 + w0) / 2, w1 / 2], rtol=1e-14
    )


def test_samples_on_the_compiled_path():
    result = hm.sample("banana", "hmc", integrator="yoshida4", n_steps=5, compiled=True, **RUN)
    assert result.attrs["compiled"] is True
    assert result.draws.shape == (2, 100, 2)
    assert np.all(np.isfinite(result.draws))
    assert result.acceptance_rate > 0.5
    # Three gradients a step (the recipe draws each iteration's number of steps).
    assert np.all(result.stats["n_grad"] == 3 * result.stats["n_steps"])
    assert np.all(result.stats["n_steps"] <= 5)


def test_both_paths_draw_the_same_numbers():
    # A fixed step size: adaptation would amplify the paths' different roundings.
    options = {"integrator": "yoshida4", "n_steps": 5, "step_size": 0.3, **RUN}
    compiled = hm.sample("banana", "hmc", compiled=True, **options)
    plain = hm.sample("banana", "hmc", compiled=False, **options)
    assert (compiled.attrs["compiled"], plain.attrs["compiled"]) == (True, False)
    np.testing.assert_allclose(compiled.draws, plain.draws, rtol=1e-9, atol=1e-12)


def test_magnetic_flow_on_the_compiled_path():
    result = hm.sample("banana", "mhmc", integrator="yoshida4", n_steps=5, compiled=True, **RUN)
    assert result.attrs["compiled"] is True
    assert np.all(np.isfinite(result.draws))


def _energy_errors(integrator, total_time, n_steps):
    target = hm.targets.get("banana")
    ham = EuclideanHamiltonian(target)
    rng = np.random.default_rng(3)
    start = ham.evaluate(0.5 * rng.normal(size=(8, 2)), rng.normal(size=(8, 2)))
    h0 = ham.energy(start)
    errors = []
    for n in n_steps:
        end, _ = integrator.integrate(ham, start, np.full(8, total_time / n), int(n))
        errors.append(np.sqrt(np.mean((ham.energy(end) - h0) ** 2)))
    return np.array(errors)


def test_energy_error_falls_as_the_fourth_power_of_the_step_size():
    total_time = 0.3
    n_steps = np.array([8, 16, 32, 64])
    step_sizes = total_time / n_steps
    errors = _energy_errors(hm.integrators.get("yoshida4"), total_time, n_steps)
    slope = np.polyfit(np.log(step_sizes), np.log(errors), 1)[0]
    assert abs(slope - 4.0) < 0.2, (slope, errors)
    # The leapfrog's falls as the square over the same time.
    leapfrog = _energy_errors(hm.integrators.get("leapfrog"), total_time, n_steps)
    assert abs(np.polyfit(np.log(step_sizes), np.log(leapfrog), 1)[0] - 2.0) < 0.2
    assert errors[-1] < leapfrog[-1] / 100


def test_command_line(tmp_path):
    output = tmp_path / "run.nc"
    command = [
        sys.executable,
        "-c",
        "import sys; from hamiltonia.cli import main; sys.exit(main())",
        "sample",
        "banana",
        "--sampler",
        "hmc",
        "-O",
        "integrator=yoshida4",
        "--n-steps",
        "5",
        "--chains",
        "2",
        "--warmup",
        "50",
        "--draws",
        "50",
        "--seed",
        "0",
        "--no-progress",
        "--output",
        str(output),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = hm.load(output)
    assert result.attrs["options"]["integrator"] == "yoshida4"
    assert result.attrs["compiled"] is True
    assert result.draws.shape == (2, 50, 2)


def test_unknown_integrator_lists_the_plugin_one():
    with pytest.raises(ValueError, match="'yoshida4'") as info:
        hm.sample("banana", "hmc", integrator="yoshida5", **RUN)
    assert "did you mean 'yoshida4'" in str(info.value)
