"""The array backend: the NumPy path is backend-neutral (checked with array_api_strict,
which refuses any NumPy-only call), and CuPy fails clearly where it cannot run."""

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia import backend

pytest.importorskip("array_api_strict")

CASES = [
    ("hmc", "banana", {}),
    ("hmc", "gaussian-d10", {"metric": "diagonal", "step_size_jitter": 0.3}),
    ("hmc", "correlated-gaussian", {"metric": "dense"}),
    ("mala", "funnel-d25", {}),
    ("rwmh", "banana", {}),
]


@pytest.mark.parametrize(
    ("sampler", "name", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_strict_backend_gives_the_numpy_draws(sampler, name, options):
    a = hm.sample(
        name,
        sampler,
        chains=2,
        warmup=150,
        draws=40,
        seed=4,
        progress=False,
        compiled=False,
        **options,
    )
    b = hm.sample(
        name,
        sampler,
        chains=2,
        warmup=150,
        draws=40,
        seed=4,
        progress=False,
        backend="array_api_strict",
        **options,
    )
    assert b.attrs["compiled"] is False
    np.testing.assert_array_equal(a.draws, b.draws)
    for key in a.stats:
        np.testing.assert_array_equal(a.stats[key], b.stats[key])
    assert backend.get_backend() == "numpy"  # the run's backend does not leak


def test_targets_compute_on_the_backend():
    xs = backend.asarray
    with backend.using("array_api_strict"):
        for name in ("banana", "gaussian-d10", "funnel-d25", "correlated-gaussian"):
            target = hm.targets.get(name)
            q = xs(np.full((3, target.dim), 0.3))
            lp, g = target.log_prob_and_grad(q)
            ref_lp, ref_g = target.log_prob_and_grad(np.full((3, target.dim), 0.3))
            np.testing.assert_allclose(backend.to_numpy(lp), ref_lp)
            np.testing.assert_allclose(backend.to_numpy(g), ref_g)
            hv = target.hvp(q, xs(np.ones((3, target.dim))))
            np.testing.assert_allclose(
                backend.to_numpy(hv),
                target.hvp(np.full((3, target.dim), 0.3), np.ones((3, target.dim))),
            )


def test_numpy_only_target_is_refused_with_a_clear_error():
    import autograd.numpy as anp

    target = hm.Target.from_logp(lambda x: -0.5 * anp.sum(x**2), dim=2)
    with pytest.raises(ValueError, match="cannot run on backend 'array_api_strict'"):
        hm.sample(
            target, "hmc", chains=1, warmup=5, draws=5, progress=False, backend="array_api_strict"
        )


def test_compiled_needs_numpy():
    with pytest.raises(ValueError, match="backend 'array_api_strict'"):
        hm.sample(
            "banana",
            "hmc",
            chains=1,
            warmup=5,
            draws=5,
            progress=False,
            backend="array_api_strict",
            compiled=True,
        )


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        hm.sample("banana", backend="jax", progress=False)
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.set_backend("torch")


def test_cupy_fails_clearly_without_cuda():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a CUDA device is present: CuPy runs")
    except Exception:  # CuPy missing or without a driver: the case tested
        pass
    with pytest.raises(RuntimeError, match="cupy"):
        backend.set_backend("cupy")
    assert backend.get_backend() == "numpy"
