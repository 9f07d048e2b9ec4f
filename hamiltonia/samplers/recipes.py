"""Named samplers: short recipes composing the parts.

Each recipe takes the target first and the sampler's options by keyword, and returns a
:class:`~hamiltonia.samplers.Sampler`. They are registered under the entry-point group
``hamiltonia.samplers``, the same way a plugin registers its own.

Step size: with ``step_size=None`` (default) the step size is found by the initial-step-size
heuristic and adapted by dual averaging during warm-up, then frozen. A number fixes it
(no adaptation), unless ``adapt_step_size=True``, in which case it is the starting point of
the adaptation.
"""

from __future__ import annotations

from hamiltonia.hamiltonians.euclidean import EuclideanHamiltonian
from hamiltonia.integrators.leapfrog import Leapfrog
from hamiltonia.momentum import FullRefresh
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.samplers.random_walk import RandomWalkMetropolis
from hamiltonia.trajectories import StaticLength
from hamiltonia.tuners import DualAveraging, WindowedMetric

__all__ = ["hmc", "mala", "rwmh"]


ADAPTED_METRICS = ("diagonal", "dense")


def _metric_and_tuner(metric):
    """A metric option: 'identity' (or None), 'diagonal' / 'dense' (adapted during warm-up on
    Stan's windows, starting from the identity), or an inverse-mass array (fixed)."""
    if isinstance(metric, str) and metric in ADAPTED_METRICS:
        return None, [WindowedMetric(metric)]
    return metric, []


def _step_size_tuners(step_size, adapt_step_size, target_accept):
    adapt = step_size is None if adapt_step_size is None else bool(adapt_step_size)
    if not adapt:
        if step_size is None:
            raise ValueError("step_size must be given when adapt_step_size=False")
        return []
    return [DualAveraging(target_accept, initial_step_size=step_size)]


def hmc(
    target,
    *,
    n_steps: int = 15,
    step_size: float | None = None,
    target_accept: float = 0.8,
    adapt_step_size: bool | None = None,
    metric="identity",
    step_size_jitter: float = 0.0,
) -> HamiltonianSampler:
    """Hamiltonian Monte Carlo with a static number of leapfrog steps.

    Full momentum refreshment :math:`p \\sim \\mathcal N(0, M)`, ``n_steps`` leapfrog steps, a
    Metropolis test on :math:`H` (spec/seed002_ch1-3.md §2.3, Algorithm 2), and dual averaging
    of the step size during warm-up (§2.7).

    Parameters
    ----------
    target : Target
    n_steps : int
        Leapfrog steps per trajectory :math:`L` (default 15, the thesis's value for banana and
        the Gaussians).
    step_size : float, optional
        Fixed (or initial, see module docs) step size :math:`\\varepsilon`.
    target_accept : float
        Target acceptance rate of dual averaging (default 0.8).
    adapt_step_size : bool, optional
        Adapt the step size during warm-up (default: only when ``step_size`` is not given).
    metric : str, array or Metric
        ``"identity"`` (default, :math:`M = I` as in the thesis); ``"diagonal"`` or
        ``"dense"`` to adapt the inverse mass matrix during warm-up on Stan's windows
        (:class:`~hamiltonia.tuners.WindowedMetric`); or a fixed inverse mass matrix (1-D
        diagonal, 2-D dense, or a :class:`~hamiltonia.hamiltonians.Metric`).
    step_size_jitter : float in [0, 1)
        Draw each trajectory's step size uniformly within this relative distance of the
        adapted one (default 0, as in the thesis); breaks resonances of a fixed trajectory
        length.
    """
    fixed_metric, metric_tuners = _metric_and_tuner(metric)
    sampler = HamiltonianSampler(
        hamiltonian=EuclideanHamiltonian(target, fixed_metric),
        integrator=Leapfrog(),
        trajectory=StaticLength(n_steps, step_size_jitter=step_size_jitter),
        refresh=FullRefresh(),
        tuners=_step_size_tuners(step_size, adapt_step_size, target_accept) + metric_tuners,
        step_size=step_size,
    )
    sampler.name = "hmc"
    return sampler


def mala(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.6,
    adapt_step_size: bool | None = None,
    metric="identity",
) -> HamiltonianSampler:
    """Metropolis-adjusted Langevin algorithm: HMC with one leapfrog step.

    With :math:`M = I`, one leapfrog step of size :math:`\\varepsilon` from a fresh momentum is
    the Langevin proposal
    :math:`x' = x + \\tfrac{\\varepsilon^2}{2}\\nabla\\log\\pi(x) + \\varepsilon z`, and the
    Metropolis test on :math:`H` equals the MALA ratio
    :math:`\\pi(x')q(x|x')/(\\pi(x)q(x'|x))` (spec/seed002_ch1-3.md §2.2). Default target
    acceptance 0.6, the thesis's value for MALA (ch. 9).

    References
    ----------
    Roberts and Tweedie (1996), *Exponential convergence of Langevin distributions and their
    discrete approximations*.
    """
    sampler = hmc(
        target,
        n_steps=1,
        step_size=step_size,
        target_accept=target_accept,
        adapt_step_size=adapt_step_size,
        metric=metric,
    )
    sampler.name = "mala"
    return sampler


def rwmh(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.25,
    adapt_step_size: bool | None = None,
) -> RandomWalkMetropolis:
    """Random-walk Metropolis with Gaussian proposals of standard deviation step_size.

    The proposal is :math:`x^* \\sim \\mathcal N(x, \\varepsilon^2 I)`: ``step_size`` is the
    proposal **standard deviation**. Dual averaging targets acceptance 0.25 by default
    (Roberts and Rosenthal's optimal scaling; the thesis's value, ch. 9).
    """
    sampler = RandomWalkMetropolis(
        target,
        step_size=step_size,
        tuners=_step_size_tuners(step_size, adapt_step_size, target_accept),
    )
    return sampler
