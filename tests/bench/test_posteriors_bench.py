"""``python -m hamiltonia.bench posteriors``: hamiltonia's row on a fast posterior, the
command without NumPyro, the table's footer, and (with NumPyro installed) NumPyro's run and
its models, whose log densities must be the hamiltonia models' up to a constant."""

import math
import warnings

import numpy as np
import pytest

import hamiltonia.posteriors as posteriors
from hamiltonia.bench import posteriors as bench

FAST = "sblri-blr"
TINY = {"chains": 2, "warmup": 100, "draws": 100, "seed": 0}


def test_hamiltonia_gives_a_row_with_a_finite_rate():
    record = bench.run_hamiltonia(FAST, **TINY)
    assert record["backend"] == "numba" and record["compile_warning"] is None
    assert math.isfinite(record["ess_per_s"]) and record["ess_per_s"] > 0
    assert 0 < record["min_ess"] and record["max_abs_z"] >= 0
    row, ratio = bench.table_row(FAST, record, None)
    assert len(row) == len(bench.HEADER) and ratio is None
    assert row[:2] == [FAST, "numba"] and row[6:11] == ["–"] * 5


def test_the_command_runs_without_numpyro(tmp_path, capsys):
    out = tmp_path / "table.md"
    args = ["--models", FAST, "--no-numpyro", "--output", str(out)]
    args += [a for k, v in TINY.items() for a in (f"--{k}", str(v))]
    assert bench.main(args) == 0
    printed = capsys.readouterr().out
    assert "NumPyro not run" in printed and "failed" not in printed
    text = out.read_text()
    assert f"| {FAST} | numba |" in text
    assert "compiled (numba) on 1 of 1 posteriors." in text
    assert "Geometric mean" not in text  # no ratio without NumPyro


def test_the_footer_gives_the_geometric_mean_and_the_backends():
    records = {"a": {"posterior": "a", "backend": "numba"},
               "b": {"posterior": "b", "backend": "autograd"}}  # fmt: skip
    lines = bench.footer({"a": 4.0, "b": 1.0, "c": None}, records)
    assert "over 2 posteriors: 2.00; hamiltonia at least NumPyro's on 2 of 2" in lines[0]
    assert lines[1] == "hamiltonia compiled (numba) on 1 of 2 posteriors; autograd on b."
    timed_out = {"error": "over 300 s", "timeout": True, "backend": "autograd"}
    row, ratio = bench.table_row("b", timed_out, None)
    assert ratio is None and row[1:4] == ["autograd", "failed: over 300 s", "–"]


def test_several_seeds_give_each_posterior_the_geometric_mean_over_them():
    """One seed's ratio is a random variable (a run's adaptation varies with it): with
    several seeds a posterior's ratio is their geometric mean, and the footer says where
    hamiltonia was at least NumPyro's at every seed."""
    records = {"a": {"posterior": "a", "backend": "numba"},
               "b": {"posterior": "b", "backend": "numba"}}  # fmt: skip
    lines = bench.footer({"a": {0: 1.0, 1: 4.0}, "b": {0: 0.5, 1: 2.0}}, records)
    assert (
        "over its seeds) over 2 posteriors: 1.41; hamiltonia at least NumPyro's on 2" in (lines[0])
    )
    assert lines[1] == ("By posterior, the geometric mean over the seeds: a 2.00; b 1.00. "
                        "hamiltonia at least NumPyro's at every seed on 1 of 2.")  # fmt: skip


def test_a_run_out_of_time_keeps_its_models_backend():
    # What a process killed at its timeout printed (bytes): the model's line, not the run's.
    printed = (bench._MODEL_MARK + '{"backend": "autograd", "compile_warning": "..."}\n').encode()
    assert bench._marked(printed, bench._MODEL_MARK)["backend"] == "autograd"
    assert bench._marked(printed, bench._MARK) is None and bench._marked(None, bench._MARK) is None


def test_numpyro_gives_a_row():
    pytest.importorskip("numpyro")
    record = bench.run_numpyro(FAST, chains=1, warmup=50, draws=50)
    assert math.isfinite(record["ess_per_s"]) and record["ess_per_s"] > 0
    assert record["max_abs_z"] >= 0 and record["divergences"] >= 0


@pytest.mark.parametrize("name", posteriors.names())
def test_numpyro_models_have_the_hamiltonia_models_density(name):
    """At the reference means and at a random point near them (hamiltonia's unconstrained
    coordinates, mapped to the constrained blocks both models read), the two log densities
    of the constrained parameters differ by the same constant; and the NumPyro run reports
    the hamiltonia model's quantities under the same names."""
    pytest.importorskip("numpyro")
    import jax
    from numpyro.infer.util import log_density

    from hamiltonia.bench.peers.numpyro_posteriors import build, reported_draws

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the HMMs' and the GP's CompileWarning
        model = posteriors.get(name, backend="autograd")  # nothing to compile here
    numpyro_model = build(name)

    @jax.jit  # one compilation, not one per operation
    def numpyro_log_density(values):
        log_joint, trace = log_density(numpyro_model, (), {}, values)
        return log_joint, {site: entry["value"] for site, entry in trace.items()}

    z = model.layout.unconstrain(posteriors.reference_point(name, model))
    rng = np.random.default_rng(sum(map(ord, name)))
    differences = []
    for point in (z, z + rng.normal(0.0, 0.2, z.shape)):
        values, log_jacobian = model.layout.constrain(point)
        ours = float(model.log_prob(point[None])[0] - log_jacobian)
        theirs, sites = numpyro_log_density(values)
        differences.append(ours - float(theirs))
    assert differences[1] == pytest.approx(differences[0], abs=1e-8 * max(1.0, abs(ours)))
    names, draws = reported_draws(name, {k: np.asarray(v)[None, None] for k, v in sites.items()})
    assert names == tuple(model.reported_names)
    np.testing.assert_allclose(draws[0, 0], model.constrain(point), rtol=1e-12)
