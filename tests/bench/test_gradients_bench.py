"""The gradient benchmark of issue 53 (``python -m hamiltonia.bench.gradients``): its three
implementations of each model compute the same log density and gradient, and its table
renders, with NumPyro's column left out where NumPyro is not installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hamiltonia.bench import gradients


def _points(name: str) -> list[np.ndarray]:
    """Two random unconstrained points of model ``name``."""
    rng = np.random.default_rng(7)
    return [rng.normal(scale=0.5, size=gradients.point(name).size) for _ in range(2)]


@pytest.mark.parametrize("name", gradients.MODELS)
def test_the_hand_written_gradient_is_the_models(name):
    model = gradients.user_model(name, backend="numba")
    written, hand = model.numba_kernel(), gradients.hand_kernel(name)
    for q in _points(name):
        lp, grad = written.evaluate(q)
        hand_lp, hand_grad = hand.evaluate(q)
        assert np.isfinite(lp)
        np.testing.assert_allclose(hand_lp, lp, rtol=1e-9)
        # rtol 1e-9 of each entry; an entry near zero by chance is held to 1e-9 of the largest.
        np.testing.assert_allclose(hand_grad, grad, rtol=1e-9, atol=1e-9 * np.max(np.abs(grad)))


@pytest.mark.parametrize("name", gradients.MODELS)
def test_numpyros_gradient_is_the_models(name):
    pytest.importorskip("numpyro")
    import jax

    logp, args = gradients.numpyro_logp(name)
    value_and_grad = jax.jit(jax.value_and_grad(logp))
    written = gradients.user_model(name, backend="numba").numba_kernel()
    offsets = []
    for q in _points(name):
        lp, grad = written.evaluate(q)
        peer_lp, peer_grad = value_and_grad(jax.numpy.asarray(q), args)
        np.testing.assert_allclose(peer_grad, grad, rtol=1e-8, atol=1e-9 * np.max(np.abs(grad)))
        offsets.append(float(peer_lp) - lp)
    # The log densities differ by the normalising constants only.
    assert offsets[0] == pytest.approx(offsets[1], rel=1e-9, abs=1e-8)


def test_the_table_renders_without_numpyro(monkeypatch, capsys, tmp_path):
    real = importlib.util.find_spec

    def find_spec(name, *args):  # as on a machine without the extra "bench"
        return None if name in ("jax", "numpyro") else real(name, *args)

    monkeypatch.setattr(gradients.importlib.util, "find_spec", find_spec)
    out = tmp_path / "table.rst"
    argv = ["--models", "eight-schools", "--rounds", "1", "--repeats", "1", "--budget", "0.01",
            "--output", str(out)]  # fmt: skip
    assert gradients.main(argv) == 0
    printed = capsys.readouterr()
    assert "NumPyro or JAX is not installed" in printed.err
    header, rule, row = printed.out.splitlines()[:3]
    assert header.startswith("| model | dim | as written ns | hand-written ns | NumPyro ns |")
    assert rule == "|" + "---|" * 10
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:2] == ["eight-schools", "10"]
    assert float(cells[2].replace(",", "")) > 0 and float(cells[3].replace(",", "")) > 0
    assert cells[4] == "not run" and cells[6] == cells[8] == "–"
    assert cells[7] in ("yes", "no") and cells[9] == "yes"  # the hand-written gradient agrees
    text = out.read_text()
    assert text.startswith(".. list-table::\n   :header-rows: 1\n") and "not run" in text


def test_a_failure_is_a_row_not_a_crash():
    records = [{"model": "gp", "dim": 3, "hand_ns": 1000.0, "hamiltonia_error": "x | y\nz"}]
    table = gradients.render(records)
    assert "failed: x / y z" in table and table.count("\n") == 2
