"""new_sampler.py: a new sampler from two small parts, compiled.

An integrator given only by its coefficient table, and a momentum refresh with its own
kernel. Kernels are module-level functions in a file: the compiled path copies them from
their source (``inspect.getsource``), so they cannot be defined in an interactive session.
"""

import numpy as np

import hamiltonia as hm
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import REFRESH, draw_momentum


class MinimumErrorTwoStage(hm.Splitting):
    """McLachlan's (1995) minimum-error two-stage splitting: b = 0.19318..."""

    b = 0.1931833275037836
    kicks = (b, 1.0 - 2.0 * b, b)  # b0, b1, b2: palindromic, sum 1
    drifts = (0.5, 0.5)  # a1, a2: palindromic, sum 1


def occasional_refresh_kernel(rng, q, p, grad, lp, eps, aux, stats, PF, PI, logp, fdata, idata):
    """One chain: with probability PF[REFRESH][0] a fresh momentum, else keep p."""
    if rng.random() < PF[REFRESH][0]:
        draw_momentum(rng, q, p, aux, PF, PI)


class OccasionalRefresh(hm.MomentumRefresh):
    """Redraw p ~ N(0, M) with probability `prob`, keep it otherwise (both keep N(0, M))."""

    flip_on_reject = True  # p is carried over: a rejection must negate it

    def __init__(self, prob):
        self.prob = float(prob)
        if not 0.0 < self.prob <= 1.0:  # prob = 0 would never refresh: not ergodic
            raise ValueError(f"prob must lie in (0, 1], got {prob!r}")

    def refresh(self, hamiltonian, state, rngs, step_size=None):
        # Per chain, the kernel's draws in the kernel's order: one uniform, then maybe p.
        redraw = [c for c, rng in enumerate(rngs) if rng.random() < self.prob]
        p = np.array(state.p, copy=True)
        if redraw:
            aux = {name: value[redraw] for name, value in state.aux.items()}
            p[redraw] = hamiltonian.sample_momentum([rngs[c] for c in redraw], aux)
        return state.with_momentum(p)

    def compiled(self, dim):
        # iparams[0] is flip_on_reject, which the Metropolis kernel reads.
        return PartKernels({"refresh": occasional_refresh_kernel}, fparams=[self.prob],
                           iparams=[self.flip_on_reject])  # fmt: skip


def persistent_hmc(target, *, n_steps=5, prob=0.5, step_size=None, target_accept=0.8):
    """Two-stage HMC whose momentum is redrawn only now and then."""
    return hm.HamiltonianSampler(
        hamiltonian=hm.EuclideanHamiltonian(target),
        integrator=MinimumErrorTwoStage(),
        trajectory=hm.StaticLength(n_steps),
        refresh=OccasionalRefresh(prob),
        tuners=[hm.DualAveraging(target_accept)] if step_size is None else [],
        step_size=step_size,  # a given step size is fixed
    )
