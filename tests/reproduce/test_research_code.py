"""The emulation of the author's public S2HMC code: the method's map where asked, and the
code's momentum sign breaking the shadow's fourth-order conservation."""

import numpy as np

import hamiltonia as hm
from hamiltonia.integrators.processed import ProcessedLeapfrog
from hamiltonia.reproduce import research_code
from hamiltonia.testing.integrators import check_energy_error_order, start_states

TIGHT = {"tolerance": 1e-12, "max_iterations": 200}


class _Transition:
    """``processed_transition`` as an integrator, for the test kit's order check."""

    structure = hm.CanonicalStructure()

    def __init__(self, code_momentum_sign):
        self.code_momentum_sign = code_momentum_sign

    def integrate(self, hamiltonian, state, step_size, n_steps):
        q, p, ok = research_code.processed_transition(
            hamiltonian, state.q, state.p, float(np.asarray(step_size)[0]), int(n_steps),
            code_momentum_sign=self.code_momentum_sign, **TIGHT,
        )  # fmt: skip
        assert ok.all()
        return hamiltonian.evaluate(q, p), None


def _banana():
    return hm.EuclideanHamiltonian(hm.targets.get("banana"))


def test_the_method_s_variant_is_the_package_s_processed_leapfrog():
    ham = _banana()
    start = start_states(ham, ProcessedLeapfrog(), 6, seed=1)
    eps = np.full(6, 0.05)
    expected, _ = ProcessedLeapfrog(**TIGHT).integrate(ham, start, eps, 12)
    q, p, ok = research_code.processed_transition(
        ham, start.q, start.p, 0.05, 12, code_momentum_sign=False, **TIGHT
    )
    assert ok.all()
    np.testing.assert_allclose(q, expected.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p, expected.p, rtol=0, atol=1e-12)


def test_the_method_conserves_the_shadow_to_fourth_order_and_the_code_s_sign_to_second():
    ham = _banana()
    shadow = hm.SeparableShadowHamiltonian(ham).energy
    check_energy_error_order(_Transition(False), ham, order=4, energy=shadow)
    check_energy_error_order(_Transition(True), ham, order=2, energy=shadow)


def test_the_code_s_momentum_is_the_method_s_with_the_correction_s_sign_flipped():
    """Both variants end at the same position (its fixed point does not involve the final
    momentum's sign); their momenta straddle the leapfrog's end momentum
    :math:`\\hat p'` and differ by twice the correction,
    :math:`\\tfrac{\\varepsilon}{12}(g_+ - g_-)` at :math:`q \\pm \\varepsilon \\hat p'`."""
    ham = _banana()
    start = start_states(ham, ProcessedLeapfrog(), 5, seed=2)
    eps = 0.05
    ends = {
        flag: research_code.processed_transition(
            ham, start.q, start.p, eps, 12, code_momentum_sign=flag, **TIGHT
        )
        for flag in (False, True)
    }
    (q_method, p_method, ok_m), (q_code, p_code, ok_c) = ends[False], ends[True]
    assert ok_m.all() and ok_c.all()
    np.testing.assert_array_equal(q_code, q_method)
    p_hat = (p_code + p_method) / 2
    g_plus = ham.evaluate(q_method + eps * p_hat).grad
    g_minus = ham.evaluate(q_method - eps * p_hat).grad
    np.testing.assert_allclose(p_code - p_method, eps / 12 * (g_plus - g_minus), atol=1e-9)
    assert np.max(np.abs(p_code - p_method)) > 1e-6  # the correction is not vacuous


def test_only_both_departures_together_lower_the_acceptance():
    """On the D = 50 Gaussian at the PS2HMC paper's step size, from exact draws: the method
    and each departure alone accept nearly every proposal; both together accept fewer, by more
    than five binomial standard errors of the difference."""
    target = hm.targets.get("gaussian-d50", setting="paper")
    moments = target.exact_moments
    rng = np.random.default_rng(11)
    starts = moments.mean + np.sqrt(moments.var) * rng.standard_normal((4, target.dim))
    n = 4 * 60
    rate = {
        v.label: research_code.fraction_accepted(target, 0.07, 100, starts, v, iterations=60)
        for v in research_code.VARIANTS
    }
    both = rate["public code (both)"]
    for label, value in rate.items():
        if label == "public code (both)":
            continue
        se = np.sqrt((value * (1 - value) + both * (1 - both)) / n)
        assert (value - both) / se > 5, rate


def test_the_command_reports_every_variant(capsys):
    assert research_code.main(["gaussian-d10", "0.1", "5", "--chains", "2",
                               "--iterations", "3"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    for variant in research_code.VARIANTS:
        assert variant.label in out
