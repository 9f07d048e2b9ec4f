"""new_sampler.py: a new sampler from three new parts, each written once, compiled.

An integrator given by its coefficient table, a momentum refresh and a trajectory length
policy, each a kernel (the Python form is optional: :doc:`/design`). Kernels are
module-level functions in a file: the compiled path copies them from their source
(``inspect.getsource``), so they cannot be defined in an interactive session.
"""

import math

import hamiltonia as hm
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import draw_momentum, own


class MinimumErrorTwoStage(hm.Splitting):
    """McLachlan's (1995) minimum-error two-stage splitting: b = 0.19318..."""

    b = 0.1931833275037836
    kicks = (b, 1.0 - 2.0 * b, b)  # b0, b1, b2: palindromic, sum 1
    drifts = (0.5, 0.5)  # a1, a2: palindromic, sum 1


def occasional_refresh_kernel(ctx, q, p, grad, lp, eps):
    """One chain: with probability `prob` a fresh momentum, else keep p."""
    if ctx.rng.random() < own.prob:
        draw_momentum(ctx, q, p)


class OccasionalRefresh(hm.MomentumRefresh):
    """Redraw p ~ N(0, M) with probability `prob`, keep it otherwise (both keep N(0, M))."""

    flip_on_reject = True  # p is carried over: a rejection must negate it

    def __init__(self, prob):
        self.prob = float(prob)
        if not 0.0 < self.prob <= 1.0:  # prob = 0 would never refresh: not ergodic
            raise ValueError(f"prob must lie in (0, 1], got {prob!r}")

    def compiled(self, dim):
        params = {"prob": self.prob, "flip_on_reject": self.flip_on_reject}
        return PartKernels({"refresh": occasional_refresh_kernel}, params=params)


def geometric_length_kernel(ctx, eps):
    """One chain: 1 + a geometric number of steps (mean 1/stop), at most `max_steps`."""
    extra = math.floor(math.log1p(-ctx.rng.random()) / math.log1p(-own.stop))
    return min(1 + extra, own.max_steps), eps


class GeometricLength(hm.MetropolisTrajectory):
    """The Metropolis transition over a geometric number of steps of mean `mean_steps`."""

    def __init__(self, mean_steps, max_steps=1000):
        if not 1.0 <= mean_steps <= max_steps:
            raise ValueError(f"mean_steps must lie in [1, {max_steps}], got {mean_steps!r}")
        super().__init__(1, max_steps)
        self.stop = 1.0 / mean_steps

    def compiled(self, dim):
        kernels = super().compiled(dim)  # the transition, reused
        kernels.functions["trajectory_length"] = geometric_length_kernel
        kernels.params["stop"] = self.stop
        return kernels


def persistent_hmc(target, *, mean_steps=5, prob=0.5, step_size=None, target_accept=0.8):
    """Two-stage HMC of geometric length whose momentum is redrawn only now and then."""
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(target),
        integrator=MinimumErrorTwoStage(),
        trajectory=GeometricLength(mean_steps),
        refresh=OccasionalRefresh(prob),
        tuners=[hm.DualAveraging(target_accept)] if step_size is None else [],
        step_size=step_size,  # a given step size is fixed
    )
