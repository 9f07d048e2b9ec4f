"""Warm-up adaptation.

A :class:`Tuner` adapts a sampler's free parameters during warm-up and freezes them after.
All chains adapt at once (the arrays hold one value per chain); ``finalize`` runs at the
barrier that ends warm-up, where a tuner may pool information across chains.
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_int, check_positive, check_probability
from hamiltonia.state import ChainState

__all__ = ["DualAveraging", "Tuner", "find_initial_step_size"]


class Tuner:
    """Abstract warm-up tuner.

    Contract
    --------
    * ``start(sampler, chain, n_warmup, rngs)`` runs once before warm-up (it may change
      ``chain``, for instance to set an initial step size).
    * ``update(sampler, chain, info, iteration)`` runs after each warm-up iteration with the
      transition's ``info`` (per-chain arrays, see
      :class:`~hamiltonia.trajectories.TrajectoryPolicy`). ``iteration`` counts from 0.
    * ``finalize(sampler, chain)`` runs once at the end of warm-up and sets the values used
      for sampling.
    """

    def start(self, sampler, chain: ChainState, n_warmup: int, rngs) -> None:
        pass

    def update(self, sampler, chain: ChainState, info: dict, iteration: int) -> None:
        raise NotImplementedError

    def finalize(self, sampler, chain: ChainState) -> None:
        pass

    def __repr__(self):
        return f"{type(self).__name__}()"


def find_initial_step_size(sampler, chain: ChainState, rngs, step_size=1.0, max_doublings=100):
    """The heuristic of Hoffman and Gelman (2014, Algorithm 4), per chain.

    Starting from ``step_size``, doubles (or halves) :math:`\\varepsilon` until the acceptance
    probability of a one-step trial, :math:`a(\\varepsilon)`, crosses :math:`1/2`:
    with :math:`s = 2\\,[a(\\varepsilon_0) > 1/2] - 1`, repeat
    :math:`\\varepsilon \\leftarrow 2^s \\varepsilon` while :math:`a(\\varepsilon)^s > 2^{-s}`.

    Each chain searches on its own, drawing only from its own generator, so a chain's stream
    does not depend on the other chains.
    """
    eps = np.empty(len(rngs))
    for c, rng in enumerate(rngs):
        single = ChainState(chain.phase.take(slice(c, c + 1)), chain.step_size[c : c + 1])
        e = float(step_size)
        prob = sampler.probe_acceptance(single, np.array([e]), [rng])[0]
        direction = 1.0 if prob > 0.5 else -1.0
        for _ in range(max_doublings):
            # a^s > 2^-s  <=>  s log a > -s log 2 (a = 0 never satisfies it when s = 1)
            if not direction * np.log(max(prob, 1e-300)) > -direction * np.log(2.0):
                break
            e *= 2.0**direction
            prob = sampler.probe_acceptance(single, np.array([e]), [rng])[0]
        eps[c] = e
    return eps


class DualAveraging(Tuner):
    """Nesterov primal-dual averaging of the log step size (Hoffman and Gelman 2014).

    With target acceptance :math:`\\delta` and the iteration's acceptance statistic
    :math:`\\alpha_m`:

    .. math::

        \\bar H_m &= \\Bigl(1 - \\frac{1}{m + t_0}\\Bigr)\\bar H_{m-1}
                    + \\frac{1}{m + t_0}(\\delta - \\alpha_m) \\\\
        \\log\\varepsilon_m &= \\mu - \\frac{\\sqrt m}{\\gamma}\\bar H_m \\\\
        \\log\\bar\\varepsilon_m &= m^{-\\kappa}\\log\\varepsilon_m
                    + (1 - m^{-\\kappa})\\log\\bar\\varepsilon_{m-1}

    with :math:`\\mu = \\log(10\\varepsilon_0)`, :math:`\\bar H_0 = 0`,
    :math:`\\bar\\varepsilon_0 = 1`; after warm-up :math:`\\varepsilon = \\bar\\varepsilon`
    (spec/seed002_ch1-3.md §2.7, eq. 2.36). Divergent transitions count as
    :math:`\\alpha = 0`.

    Parameters
    ----------
    target_accept : float in (0, 1)
        :math:`\\delta`, default 0.8.
    gamma, t0, kappa : float
        Defaults 0.05, 10 and 0.75 (Stan's and the thesis's).
    initial_step_size : float, optional
        :math:`\\varepsilon_0`. By default it comes from :func:`find_initial_step_size`.
    find_initial : bool
        Search for :math:`\\varepsilon_0` (default true; the thesis starts from
        :math:`10^{-4}` without a search, pass ``initial_step_size=1e-4,
        find_initial=False`` to reproduce it).
    pool_chains : bool
        Give every chain the geometric mean of the adapted step sizes at the end of warm-up
        (default false: each chain keeps its own, as in Stan).
    """

    def __init__(
        self,
        target_accept: float = 0.8,
        *,
        gamma: float = 0.05,
        t0: float = 10.0,
        kappa: float = 0.75,
        initial_step_size: float | None = None,
        find_initial: bool = True,
        pool_chains: bool = False,
    ):
        self.target_accept = check_probability(target_accept, "target_accept")
        self.gamma = check_positive(gamma, "gamma")
        self.t0 = float(t0)
        if not np.isfinite(self.t0) or self.t0 < 0:
            raise ValueError(f"t0 must be a finite number >= 0, got {t0!r}")
        self.kappa = check_probability(kappa, "kappa")
        self.initial_step_size = (
            None
            if initial_step_size is None
            else check_positive(initial_step_size, "initial_step_size")
        )
        self.find_initial = bool(find_initial)
        self.pool_chains = bool(pool_chains)

    def start(self, sampler, chain, n_warmup, rngs):
        check_int(n_warmup, "n_warmup")
        if self.find_initial:
            start = 1.0 if self.initial_step_size is None else self.initial_step_size
            chain.step_size = find_initial_step_size(sampler, chain, rngs, start)
        elif self.initial_step_size is not None:
            chain.step_size = np.full_like(chain.step_size, self.initial_step_size)
        self._mu = np.log(10.0 * chain.step_size)
        self._h_bar = np.zeros_like(chain.step_size)
        self._log_eps_bar = np.zeros_like(chain.step_size)

    def update(self, sampler, chain, info, iteration):
        m = iteration + 1
        alpha = np.where(info["diverging"], 0.0, np.nan_to_num(info["acceptance_rate"]))
        w = 1.0 / (m + self.t0)
        self._h_bar = (1.0 - w) * self._h_bar + w * (self.target_accept - alpha)
        log_eps = self._mu - np.sqrt(m) / self.gamma * self._h_bar
        eta = m ** (-self.kappa)
        self._log_eps_bar = eta * log_eps + (1.0 - eta) * self._log_eps_bar
        chain.step_size = np.exp(log_eps)

    def finalize(self, sampler, chain):
        if not hasattr(self, "_log_eps_bar"):
            return
        log_eps = self._log_eps_bar
        if self.pool_chains:
            log_eps = np.full_like(log_eps, np.mean(log_eps))
        chain.step_size = np.exp(log_eps)

    def __repr__(self):
        return f"DualAveraging(target_accept={self.target_accept})"
