"""Diagnostic plots (hamiltonia.plots) and ``hamiltonia plot``."""

import numpy as np
import pytest

import hamiltonia as hm

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # no display: draw into memory


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


SCHOOLS = ["Choate", "Deerfield", "Phillips Andover", "Phillips Exeter", "Hotchkiss",
           "Lawrenceville", "St. Paul's", "Mt. Hermon"]  # fmt: skip


@pytest.fixture(scope="module")
def schools():
    """Eight schools (non-centred) with its schools as the coords of ``eta`` and of the
    generated ``theta``; ``w`` is a block whose dimension has no coords."""
    import autograd.numpy as anp

    y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
    sigma = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])

    def theta(p):
        return p["mu"][..., None] + p["tau"][..., None] * p["eta"]

    def logp(p):
        normals = anp.sum(p["eta"] ** 2, axis=-1) + anp.sum(p["w"] ** 2, axis=-1)
        prior = -0.5 * (p["mu"] / 5) ** 2 - anp.log1p((p["tau"] / 5) ** 2) - 0.5 * normals
        return prior + anp.sum(-0.5 * ((y - theta(p)) / sigma) ** 2, axis=-1)

    blocks = {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8, dims="school"),
              "w": hm.real(2, dims="other")}  # fmt: skip
    model = hm.Model(
        logp,
        blocks,
        generated=lambda p: {"theta": theta(p)},
        generated_dims={"theta": "school"},
        coords={"school": SCHOOLS},
        backend="autograd",
    )
    initial = {"mu": 0.0, "tau": 1.0, "eta": np.zeros(8), "w": np.zeros(2)}
    return hm.sample(model, "hmc", chains=2, warmup=30, draws=40, seed=0, progress=False,
                     compiled=False, n_steps=5, initial=initial)  # fmt: skip


def _labels_of(fig) -> list[str]:
    return [t for ax in fig.axes for t in (ax.get_ylabel(), ax.get_xlabel()) if t]


def test_panels_are_labelled_with_the_coords(schools, tmp_path):
    import matplotlib.pyplot as plt

    fig = hm.plots.plot_trace(schools, ["tau", "eta", "w"])
    # One row per element, the density panel (left) carries the label.
    rows = [ax.get_ylabel() for ax in fig.axes[::2]]
    assert rows == ["tau", *(f"eta[{s}]" for s in SCHOOLS), "w[0]", "w[1]"]
    plt.close(fig)
    fig = hm.plots.plot_rank(schools, ["theta"])
    assert [ax.get_ylabel() for ax in fig.axes] == [f"theta[{s}]" for s in SCHOOLS]
    plt.close(fig)
    # An element is selected by its label as by its index.
    fig = hm.plots.plot_pair(schools, ["eta[Choate]", "eta[7]"])
    assert "eta[Choate]" in _labels_of(fig) and "eta[Mt. Hermon]" in _labels_of(fig)
    assert not any(label.startswith("eta[") and label[4].isdigit() for label in _labels_of(fig))
    plt.close(fig)
    fig = hm.plots.plot_ess({"hmc": schools}, per="gradient")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks[2:4] == ["eta[Choate]", "eta[Deerfield]"]
    plt.close(fig)
    # A run read back from its file keeps its coords, hence its labels.
    again = hm.load(schools.save(tmp_path / "schools.nc"))
    fig = hm.plots.plot_trace(again, ["eta[St. Paul's]"])
    assert fig.axes[0].get_ylabel() == "eta[St. Paul's]"
    plt.close(fig)
