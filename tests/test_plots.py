"""Diagnostic plots (hamiltonia.plots) and ``hamiltonia plot``."""

import numpy as np
import pytest

import hamiltonia as hm

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def run():
    return hm.sample("banana", "hmc", chains=2, warmup=100, draws=200, seed=1, progress=False,
                     compiled=False, n_steps=5)  # fmt: skip


@pytest.mark.parametrize("kind", ["trace", "rank", "pair", "energy"])
def test_each_kind_draws_the_run(run, kind):
    import matplotlib.pyplot as plt

    fig = hm.plots.plot(run, kind)
    panels = {"trace": 2 * 2, "rank": 2, "pair": 4, "energy": 1}[kind]
    assert len(fig.axes) == panels
    if kind == "trace":
        # The right-hand panel holds one line per chain: the chains' draws themselves.
        lines = fig.axes[1].get_lines()
        np.testing.assert_array_equal(lines[0].get_ydata(), run.draws[0, :, 0])
    plt.close(fig)


def test_a_block_name_selects_its_elements_and_bad_names_are_errors(run):
    import matplotlib.pyplot as plt

    fig = hm.plots.plot_trace(run, ["w2"])
    assert len(fig.axes) == 2 and fig.axes[0].get_ylabel() == "w2"
    plt.close(fig)
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        hm.plots.plot_trace(run, ["nope"])
    with pytest.raises(ValueError, match="kind must be one of"):
        hm.plots.plot(run, "violin")


def test_ess_comparison_across_samplers(run):
    import matplotlib.pyplot as plt

    other = hm.sample("banana", "mala", chains=2, warmup=100, draws=200, seed=1, progress=False,
                      compiled=False)  # fmt: skip
    fig = hm.plots.plot_ess({"hmc": run, "mala": other}, per="gradient")
    heights = [p.get_height() for p in fig.axes[0].patches]
    np.testing.assert_allclose(heights[:2], hm.diagnostics.ess_per_gradient(run))
    plt.close(fig)


def test_the_cli_writes_the_image_and_keeps_an_existing_one(run, tmp_path, capsys):
    from hamiltonia.cli import main

    path = run.save(tmp_path / "run.nc")
    image = tmp_path / "trace.png"
    assert main(["plot", str(path), "--kind", "trace", "-o", str(image)]) == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(path), "-o", str(image)]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main(["plot", str(path), "--kind", "pair", "-o", str(image), "--overwrite"]) == 0
