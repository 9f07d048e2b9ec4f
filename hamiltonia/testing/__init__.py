"""The test kit: checks that a new part, or a plugin's target or sampler, is correct.

hamiltonia's own tests use it, and so can a plugin author's, through plain imports or
through the pytest fixtures of :mod:`hamiltonia.testing.plugin` (registered automatically
when hamiltonia is installed). One concept per module:

* :mod:`~hamiltonia.testing.gradients`: a target's gradient (and Hessian-vector product)
  against finite differences of its log density;
* :mod:`~hamiltonia.testing.integrators`: reversibility, volume preservation and order of
  an integrator, with any kinetic energy;
* :mod:`~hamiltonia.testing.invariance`: a transition leaves an exactly sampled target
  invariant;
* :mod:`~hamiltonia.testing.momentum`: a Hamiltonian's momentum draws follow
  :math:`e^{-K}` and its velocity is :math:`\\partial K/\\partial p`;
* :mod:`~hamiltonia.testing.calibration`: an estimator's reported MCSE against the errors
  of replicated runs;
* :mod:`~hamiltonia.testing.adapted`: a resumed run gets back every part parameter warm-up
  adapted;
* :mod:`~hamiltonia.testing.paths`: the NumPy path and the compiled path give the same
  draws (and the compiled path on the CPU and on the GPU, ``device="cuda"``);
* :mod:`~hamiltonia.testing.device`: a sampler's fused GPU kernel compiles, without a GPU;
* :mod:`~hamiltonia.testing.moments`: a run recovers exact moments, or a reference run's,
  within z-scores on the Monte Carlo standard error (importance weights honoured);
* :mod:`~hamiltonia.testing.targets`: a Gaussian with exact moments and an exact sampler.
* :mod:`~hamiltonia.testing.installed`: a plugin's test module skipped when the plugin is
  not installed.

A plugin author's test of a new trajectory policy and a new target:

.. code-block:: python

    import hamiltonia as hm
    from hamiltonia.testing import check_gradient, check_invariance
    from my_plugin import MyTarget, MyTrajectory

    def test_my_target_gradient():
        check_gradient(MyTarget())

    def test_my_trajectory_leaves_the_target_invariant(gaussian_target):  # a fixture
        sampler = hm.HamiltonianSampler(
            hm.EuclideanHamiltonian(gaussian_target), MyTrajectory(), step_size=0.4)
        check_invariance(gaussian_target, sampler)
"""

from __future__ import annotations

from hamiltonia.testing.adapted import AdaptedStateResult, check_adapted_state
from hamiltonia.testing.calibration import CalibrationResult, calibrate, check_calibration
from hamiltonia.testing.device import check_device_compiles
from hamiltonia.testing.gradients import GRADIENT_RTOL, check_gradient, gradient_points
from hamiltonia.testing.installed import skip_unless_installed
from hamiltonia.testing.integrators import (
    check_energy_error_order,
    check_integrate_contract,
    check_integrator,
    check_reversibility,
    check_volume_preservation,
    energy_error_slope,
    start_states,
)
from hamiltonia.testing.invariance import InvarianceResult, check_invariance, exact_draws
from hamiltonia.testing.moments import (
    MIN_ESS,
    Z_THRESHOLD,
    assert_moments_recovered,
    min_ess,
    moment_z_scores,
)
from hamiltonia.testing.momentum import MomentumResult, check_momentum
from hamiltonia.testing.paths import PATHS_ATOL, assert_paths_agree
from hamiltonia.testing.targets import GaussianTarget, correlated_gaussian

__all__ = [
    "GRADIENT_RTOL",
    "MIN_ESS",
    "PATHS_ATOL",
    "Z_THRESHOLD",
    "AdaptedStateResult",
    "CalibrationResult",
    "GaussianTarget",
    "InvarianceResult",
    "MomentumResult",
    "assert_moments_recovered",
    "assert_paths_agree",
    "calibrate",
    "check_adapted_state",
    "check_calibration",
    "check_device_compiles",
    "check_energy_error_order",
    "check_gradient",
    "check_integrate_contract",
    "check_integrator",
    "check_invariance",
    "check_momentum",
    "check_reversibility",
    "check_volume_preservation",
    "correlated_gaussian",
    "energy_error_slope",
    "exact_draws",
    "gradient_points",
    "min_ess",
    "moment_z_scores",
    "skip_unless_installed",
    "start_states",
]
