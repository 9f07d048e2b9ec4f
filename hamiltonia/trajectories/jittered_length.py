"""A trajectory of a jittered duration: the length policy of ChEES-HMC.

:class:`JitteredLength` integrates for a duration :math:`T` shortened each iteration by a
quasi-random factor, the jitter of Hoffman, Radul and Sountsov (2021) that
:class:`~hamiltonia.tuners.chees.ChEES` adapts :math:`T` for. It is written once, as the
kernel of one role (``trajectory_length``), and reuses the built-in Metropolis transition.
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import as_float
from hamiltonia.compiled.roles import offset, own
from hamiltonia.trajectories.metropolis import MetropolisTrajectory

__all__ = ["JitteredLength", "halton", "jittered_steps"]


def halton(i) -> float:
    """The :math:`(i+1)`-th point of the base-2 Halton (van der Corput) sequence in
    :math:`(0, 1)`: the binary digits of :math:`i + 1` mirrored about the point,
    :math:`\\sum_b d_b(i + 1)\\, 2^{-b-1}`."""
    n = int(i) + 1
    value, scale = 0.0, 0.5
    while n > 0:
        value += scale * (n % 2)
        n //= 2
        scale *= 0.5
    return value


def jittered_steps(duration, step_size, u, jitter):
    """:math:`L = \\lceil (1 - j + j u)\\, T / \\varepsilon \\rceil`, at least 1."""
    return max(1, int(np.ceil((1.0 - jitter + jitter * u) * duration / step_size)))


def jittered_length_kernel(ctx, eps):
    """Kernel of :class:`JitteredLength` (role ``trajectory_length``): the number of steps
    of this iteration from the chain's Halton index, which it advances."""
    i = ctx.aux[offset.halton_index]
    ctx.aux[offset.halton_index] = i + 1.0
    return jittered_steps(own.duration, eps, halton(i), own.jitter), eps


class JitteredLength(MetropolisTrajectory):
    """Integrate for a jittered duration, then apply the Metropolis test.

    Iteration :math:`i` integrates

    .. math::

        L_i = \\Bigl\\lceil \\bigl(1 - j + j\\, h_i\\bigr) \\frac{T}{\\varepsilon} \\Bigr\\rceil

    steps, with :math:`h_i \\in (0, 1)` the :math:`i`-th point of the base-2 Halton sequence
    (:func:`halton`), the same for every chain, and :math:`j` the jitter: a quasi-random
    fraction of the duration :math:`T`, whose mean is :math:`(1 - j/2)\\,T`, which breaks
    the resonance of a fixed length with a period of the target (Hoffman, Radul and
    Sountsov 2021, §3.3; BlackJAX's ``dynamic_hmc``). Each chain counts its iterations in an
    auxiliary variable, ``halton_index``, saved with it, so that a resumed run continues the
    sequence.

    Parameters
    ----------
    duration : float > 0
        :math:`T`, the full integration time (default 1); :class:`~hamiltonia.tuners.chees.
        ChEES` adapts it in warm-up.
    jitter : float in [0, 1]
        :math:`j` (default 1: a duration uniform-like on :math:`(0, T]`).

    Notes
    -----
    Written once: the kernel is its only form, so it runs on the compiled path only (the
    NumPy path refuses it, naming the methods it has no Python form of).

    References
    ----------
    Hoffman, M. D., Radul, A. and Sountsov, P. (2021), "An adaptive MCMC scheme for setting
    trajectory lengths in Hamiltonian Monte Carlo", AISTATS, PMLR 130.
    """

    def __init__(self, duration: float = 1.0, jitter: float = 1.0):
        super().__init__(1, 1)
        self.duration = duration
        self.jitter = as_float(jitter, "jitter", "a number in [0, 1]")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must lie in [0, 1], got {jitter!r}")

    @property
    def duration(self) -> float:
        return self._duration

    @duration.setter
    def duration(self, value) -> None:
        value = as_float(value, "duration", "a finite number > 0")
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"duration must be a finite number > 0, got {value!r}")
        self._duration = value

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["trajectory_length"] = jittered_length_kernel
        kernels.params.update(duration=self.duration, jitter=self.jitter)
        kernels.aux = (("halton_index", 1, 0.0),)
        return kernels

    def __repr__(self):
        return f"JitteredLength(duration={self.duration:.6g}, jitter={self.jitter})"
