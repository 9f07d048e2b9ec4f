"""ChEES: the trajectory's duration and the step size adapted over many chains at once.

:class:`ChEES` is a warm-up tuner written once, in Python, through the public tuner
contract: it reads every iteration's acceptance and, from the trajectory, its proposal and
the velocity there (:attr:`~hamiltonia.tuners.Tuner.reads`), on both paths
(:attr:`~hamiltonia.tuners.Tuner.per_iteration`), and sets the duration of a
:class:`~hamiltonia.trajectories.jittered_length.JitteredLength` trajectory
(:attr:`~hamiltonia.tuners.Tuner.adapts`, so that a resumed run has it back).
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_int, check_positive, check_probability
from hamiltonia.tuners.adaptation import dual_averaging_step, find_initial_step_size
from hamiltonia.tuners.base import Tuner

__all__ = ["ChEES", "chees_gradient", "harmonic_mean_acceptance"]

#: Largest change of :math:`\log T` in one update (as TensorFlow Probability's and
#: BlackJAX's implementations clip it).
LOG_UPDATE_CLIP = 0.35


def harmonic_mean_acceptance(prob, diverging) -> float:
    """:math:`\\bigl(\\tfrac1n \\sum_c 1/\\alpha_c\\bigr)^{-1}` over the chains that did not
    diverge (0 where any :math:`\\alpha_c = 0` or none is left): what the step size's dual
    averaging targets, which one stuck chain pulls down."""
    alpha = np.asarray(prob, dtype=float)[~np.asarray(diverging, dtype=bool)]
    with np.errstate(divide="ignore", over="ignore"):
        value = 1.0 / np.mean(1.0 / alpha) if alpha.size else 0.0
    return float(value) if np.isfinite(value) else 0.0


def chees_gradient(initial, proposal, velocity, prob, diverging, duration) -> float:
    """The ChEES criterion's derivative in :math:`\\log T`, estimated from one iteration of
    every chain (Hoffman, Radul and Sountsov 2021, eq. 6):

    .. math::

        g = \\frac{\\sum_c \\alpha_c\\, t_c
            \\bigl(\\lVert q'_c - \\bar q'\\rVert^2 - \\lVert q_c - \\bar q\\rVert^2\\bigr)
            (q'_c - \\bar q')^\\top v'_c}{\\sum_c \\alpha_c}

    over the chains that did not diverge: :math:`q_c` the chain's position before the
    iteration, :math:`q'_c` its proposal and :math:`v'_c = \\partial H / \\partial p` there,
    :math:`\\alpha_c` the acceptance probability, :math:`t_c` the time it integrated;
    :math:`\\bar q` the chains' mean position and :math:`\\bar q'` the proposals' mean
    weighted by :math:`\\alpha_c`. ``duration`` is :math:`t_c` per chain. 0 where no chain
    is left."""
    keep = ~np.asarray(diverging, dtype=bool) & np.all(np.isfinite(proposal), axis=1)
    keep &= np.all(np.isfinite(velocity), axis=1)
    w = np.where(keep, np.asarray(prob, dtype=float), 0.0)
    if not np.any(w > 0):
        return 0.0
    centred = np.where(keep[:, None], proposal, 0.0) - np.average(proposal[keep], 0, w[keep])
    start = initial - np.mean(initial, axis=0)
    change = np.sum(centred**2, axis=1) - np.sum(start**2, axis=1)
    speed = np.sum(centred * np.where(keep[:, None], velocity, 0.0), axis=1)
    return float(np.sum(w * duration * change * speed) / (np.sum(w) + 1e-20))


class ChEES(Tuner):
    """ChEES-HMC adaptation (Hoffman, Radul and Sountsov 2021, Algorithm 1) of one step size
    and one trajectory duration :math:`T` for all chains, from all chains at every warm-up
    iteration.

    The step size follows dual averaging (:func:`~hamiltonia.tuners.adaptation.
    dual_averaging_step`, Stan's :math:`\\gamma, t_0, \\kappa`) of the chains' harmonic-mean
    acceptance (:func:`harmonic_mean_acceptance`) towards ``target_accept``; :math:`\\log T`
    climbs the ChEES criterion, :math:`\\tfrac14 E[(\\lVert q' - E q'\\rVert^2 -
    \\lVert q - E q\\rVert^2)^2]` (the change in the estimate of the second moments a
    trajectory makes), by Adam on the gradient :func:`chees_gradient`, its step clipped to
    :data:`LOG_UPDATE_CLIP`:

    .. math::

        m_k = \\beta_1 m_{k-1} + (1 - \\beta_1) g_k, \\quad
        s_k = \\beta_2 s_{k-1} + (1 - \\beta_2) g_k^2, \\quad
        \\log T_k = \\log T_{k-1} + \\eta\\,
            \\frac{m_k / (1 - \\beta_1^k)}{\\sqrt{s_k / (1 - \\beta_2^k)} + 10^{-8}}.

    Both run in logs with a moving average of weight :math:`k^{-\\delta}` (``decay``); the
    warm-up iterations use :math:`\\varepsilon_k` and :math:`T_k` (at most
    :math:`L_{max} \\varepsilon_k`), and sampling the averages of both, as the authors'
    implementation does (TensorFlow Probability's ``GradientBasedTrajectoryLengthAdaptation``).
    BlackJAX's ``chees_adaptation`` instead restarts Adam at every iteration from the average,
    kept within :math:`[\\varepsilon_k, L_{max} \\varepsilon_k]` (``iterate="averaged"``),
    which damps the :math:`k`-th step of :math:`\\log T` by :math:`k^{-\\delta}`: its
    :math:`T` grows slowly from where the initial step size put it (on ``gaussian-d100``,
    whose largest scale is 8.3, from :math:`\\varepsilon_0 = 1` it reaches 6.9 in 1,000
    iterations and from 0.05 only 1.2, where the authors' iterate settles near 18 within 200);
    :mod:`hamiltonia.bench.chees` measures both. The trajectory (a
    :class:`~hamiltonia.trajectories.jittered_length.JitteredLength`) starts at
    :math:`T = \\varepsilon_0`, the step size found by
    :func:`~hamiltonia.tuners.adaptation.find_initial_step_size` (the chains' geometric mean)
    unless given. Otherwise this is BlackJAX's ``chees_adaptation`` with its defaults (no
    metric adaptation, Halton jitter) and the paper's Adam.

    Parameters
    ----------
    target_accept : float in (0, 1)
        Default 0.651, the optimal acceptance of HMC in high dimension (Beskos et al. 2013).
    learning_rate, beta1, beta2 : float
        Adam's :math:`\\eta, \\beta_1, \\beta_2`: default 0.025, 0 and 0.95 (the paper's).
    decay : float in (0, 1]
        :math:`\\delta` of the moving averages (default 0.5).
    max_steps : int
        :math:`L_{max}`, the most steps a duration may ask (default 1000).
    initial_step_size : float, optional
        :math:`\\varepsilon_0`; by default it is searched.
    iterate : {"raw", "averaged"}
        Which :math:`T` the next warm-up iteration uses and Adam continues from: the
        optimiser's own (default, the authors') or the moving average (BlackJAX's).

    Notes
    -----
    It reads the chains together, so it needs many (tens or more); it adapts
    ``trajectory.duration`` (saved with every checkpoint) and the chains' step size (saved
    with the chains), so a run killed after warm-up resumes bit for bit. A run stopped in
    warm-up restarts it (:meth:`warmup_state` is ``None``).
    """

    per_iteration = True
    sets_step_size = True
    reads = ("proposal", "proposal_velocity")
    adapts = ("trajectory.duration",)

    def __init__(
        self,
        target_accept: float = 0.651,
        *,
        learning_rate: float = 0.025,
        beta1: float = 0.0,
        beta2: float = 0.95,
        decay: float = 0.5,
        max_steps: int = 1000,
        initial_step_size: float | None = None,
        iterate: str = "raw",
    ):
        self.target_accept = check_probability(target_accept, "target_accept")
        self.learning_rate = check_positive(learning_rate, "learning_rate")
        self.beta1 = float(beta1)
        if not 0.0 <= self.beta1 < 1.0:
            raise ValueError(f"beta1 must lie in [0, 1), got {beta1!r}")
        self.beta2 = check_probability(beta2, "beta2")
        self.decay = check_positive(decay, "decay")
        if self.decay > 1.0:
            raise ValueError(f"decay must lie in (0, 1], got {decay!r}")
        self.max_steps = check_int(max_steps, "max_steps", minimum=1)
        if iterate not in ("raw", "averaged"):
            raise ValueError(f"iterate must be 'raw' or 'averaged', got {iterate!r}")
        self.iterate = iterate
        self.initial_step_size = initial_step_size
        if initial_step_size is not None:
            self.initial_step_size = check_positive(initial_step_size, "initial_step_size")

    def start(self, sampler, chain, n_warmup, rngs):
        if not hasattr(getattr(sampler, "trajectory", None), "duration"):
            raise TypeError(
                "ChEES adapts the trajectory's duration: give the sampler a trajectory with "
                f"one (JitteredLength), not {type(getattr(sampler, 'trajectory', None)).__name__}"
            )
        if self.initial_step_size is None:
            eps0 = float(np.exp(np.mean(np.log(find_initial_step_size(sampler, chain, rngs)))))
        else:
            eps0 = self.initial_step_size
        chain.step_size = np.full(len(rngs), eps0)
        sampler.trajectory.duration = eps0
        # (mu, h_bar, log_eps_bar, m) of dual averaging; Adam's moments; the averages; k.
        self.dual = [np.log(10.0 * eps0), 0.0, 0.0, 0.0]
        self.adam = [0.0, 0.0]
        self.log_step_average, self.log_duration_average, self.k = 0.0, 0.0, 0
        self.log_duration = np.log(eps0)
        self.previous = np.array(chain.phase.q, dtype=float)

    def update(self, sampler, chain, info, iteration):
        eps = float(np.asarray(chain.step_size)[0])
        times = np.asarray(info["n_steps"], dtype=float) * eps
        prob = np.nan_to_num(np.asarray(info["acceptance_rate"], dtype=float))
        diverging = np.asarray(info["diverging"], dtype=bool)
        self.k += 1
        weight = self.k ** (-self.decay)
        # The step size: dual averaging of the harmonic-mean acceptance.
        mu, h_bar, _, m = self.dual
        alpha = harmonic_mean_acceptance(prob, diverging)
        h_bar, log_eps, log_eps_bar, m = dual_averaging_step(
            mu, h_bar, self.dual[2], m, alpha, self.target_accept, 0.05, 10.0, 0.75
        )
        if np.isfinite(log_eps):
            self.dual = [mu, h_bar, log_eps_bar, m]
        else:
            log_eps = np.log(eps)
        self.log_step_average = (1 - weight) * self.log_step_average + weight * log_eps
        # The duration: Adam up the ChEES criterion.
        g = chees_gradient(self.previous, info["proposal"], info["proposal_velocity"], prob,
                           diverging, times)  # fmt: skip
        first, second = self.adam
        first = self.beta1 * first + (1 - self.beta1) * g
        second = self.beta2 * second + (1 - self.beta2) * g * g
        step = (
            self.learning_rate
            * (first / (1 - self.beta1**self.k))
            / (np.sqrt(second / (1 - self.beta2**self.k)) + 1e-8)
        )
        new_eps = float(np.exp(log_eps))
        climbed = self.log_duration
        if np.isfinite(step):
            self.adam = [first, second]
            climbed += float(np.clip(step, -LOG_UPDATE_CLIP, LOG_UPDATE_CLIP))
        self.log_duration_average = (1 - weight) * self.log_duration_average + weight * climbed
        longest = float(np.log(self.max_steps * new_eps))
        if self.iterate == "averaged":
            # BlackJAX's: the average, within [eps, L_max eps], is the next iterate, which
            # damps every step by k^-decay.
            self.log_duration = min(max(self.log_duration_average, log_eps), longest)
        else:
            # The authors': the iterate itself, at most L_max steps long.
            self.log_duration = min(climbed, longest)
        chain.step_size = np.full(len(prob), new_eps)
        sampler.trajectory.duration = float(np.exp(self.log_duration))
        self.previous = np.array(chain.phase.q, dtype=float)

    def finalize(self, sampler, chain):
        if getattr(self, "k", 0) == 0:
            return  # never started (a resumed run) or no warm-up: keep what is there
        eps = float(np.exp(self.log_step_average))
        chain.step_size = np.full(len(np.asarray(chain.step_size)), eps)
        # The average, at most L_max steps long (a duration under a step makes one step).
        longest = float(np.log(self.max_steps * eps))
        sampler.trajectory.duration = float(np.exp(min(self.log_duration_average, longest)))

    def __repr__(self):
        extra = ", iterate='averaged'" if self.iterate == "averaged" else ""
        return f"ChEES(target_accept={self.target_accept}{extra})"
