"""Invariance check: a transition must leave its target distribution invariant.

A Markov transition kernel :math:`P` samples :math:`\\pi` only if :math:`\\pi` is invariant:

.. math::

    X_0 \\sim \\pi \\implies X_K \\sim \\pi \\quad \\text{for } X_{k+1} \\sim P(X_k, \\cdot).

:func:`check_invariance` tests exactly that, with no warm-up and no burn-in to wait for:
it starts :math:`n` independent chains at **exact draws** of a target whose exact sampler
is known (:func:`exact_draws`; a Gaussian is trivial to sample), with the momentum and
any auxiliary variable (a random mass, a magnetic field's sign) drawn from their own
stationary distributions, applies :math:`K` iterations of the sampler with a fixed step
size, and tests whether the :math:`n` final positions are still distributed as
:math:`\\pi`:

* the mean and the variance of each coordinate against the exact moments. The chains are
  independent, so the standard errors are the plain ones,

  .. math::

      z^\\text{mean}_j = \\frac{\\bar x_j - \\mu_j}{\\sigma_j / \\sqrt n}, \\qquad
      z^\\text{var}_j = \\frac{\\overline{(x_j - \\mu_j)^2} - \\sigma_j^2}
      {\\operatorname{sd}\\bigl((x_j - \\mu_j)^2\\bigr) / \\sqrt n};

* the whole marginal of each coordinate by a Kolmogorov-Smirnov test
  (:func:`scipy.stats.kstest`) against an independent exact sample of :math:`4n` draws
  (two-sample), which sees a change of shape that leaves two moments alone;
* **where the momentum persists** (a refresh that ``keeps_momentum``: partial, or tested),
  the final momenta against :math:`4n` draws of the Hamiltonian's ``sample_momentum`` (four
  per chain, at the chains' final auxiliary variables, so that a random mass's mixture is
  the reference), by two-sample Kolmogorov-Smirnov tests of each coordinate's marginal and
  of the kinetic energy :math:`K(p)`. The stationary distribution is :math:`e^{-H(q, p)}`,
  not only its :math:`q` marginal: a momentum carried into the next trajectory with the
  wrong distribution biases the positions only slowly, but it is wrong at once. The
  kinetic energy is the sharper test of a change of shape that keeps the momentum's
  covariance (a partial refresh, which keeps only a Gaussian, with a relativistic kinetic
  energy on the kit's 3-d Gaussian: the position tests pass after ten iterations, the
  coordinates' KS p-values stay near :math:`10^{-2}`, and the kinetic energy's falls to
  :math:`10^{-9}`). A sampler that redraws the momentum every iteration (a full refresh)
  carries none over: the tests do not apply.

The :math:`T = 3D` tests (:math:`4D + 1` with the momentum's) share a family-wise level
:math:`\\alpha` (Bonferroni): each :math:`|z| < \\Phi^{-1}(1 - \\alpha / (2T))` and each
KS p-value :math:`> \\alpha / T`, so under invariance the check fails with probability at
most about :math:`\\alpha` (default :math:`10^{-3}`); with a fixed seed the outcome is
reproducible.

**What it proves, what it costs.** Invariance is a *necessary* condition, not a
sufficient one: a kernel that never moves leaves every distribution invariant (so the
check also asks that the chains moved), and ergodicity, mixing speed and the warm-up are
other tests' business (:mod:`hamiltonia.testing.moments` on long runs). It is cheap: a few
thousand chains for ten iterations, vectorised, take well under a second on a small
target, where a moment test on one long run takes thousands of iterations to get past the
autocorrelation. And it catches the mistakes that break detailed balance at once: a wrong
acceptance rule (accepting everything, a sign error in the energy difference, a missing
Jacobian term), a missing momentum flip on rejection with a partial refresh, a trajectory
policy that is not reversible. hamiltonia's tests of the kit show it failing an accept
step that accepts everything and a partial refresh that forgets the flip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hamiltonia import backend

__all__ = ["INVARIANCE_ALPHA", "InvarianceResult", "check_invariance", "exact_draws"]

#: The default family-wise level of :func:`check_invariance`.
INVARIANCE_ALPHA = 1e-3


def exact_draws(target: Any, n: int, seed: int = 0) -> np.ndarray:
    """``n`` independent exact draws of ``target``, shape ``(n, dim)``, from
    ``numpy.random.default_rng(seed)``.

    A target provides them with a method ``sample_exact(rng, n)`` (as
    :class:`hamiltonia.testing.targets.GaussianTarget` does); the built-in Gaussians
    (``"gaussian"``, ``"correlated-gaussian"``) are sampled from their scales or covariance.

    Raises
    ------
    TypeError
        For a target with no exact sampler.
    """
    from hamiltonia.targets.gaussian import CorrelatedGaussian, DiagonalGaussian

    rng = np.random.default_rng(seed)
    if callable(getattr(target, "sample_exact", None)):
        draws = np.asarray(target.sample_exact(rng, n), dtype=float)
    elif isinstance(target, DiagonalGaussian):
        draws = rng.normal(size=(n, target.dim)) * np.asarray(target.scales)
    elif isinstance(target, CorrelatedGaussian):
        draws = rng.normal(size=(n, target.dim)) @ np.linalg.cholesky(target.covariance).T
    else:
        raise TypeError(
            f"{type(target).__name__} has no exact sampler: give it a method "
            "sample_exact(rng, n) returning (n, dim) draws, or pass the draws yourself"
        )
    if draws.shape != (n, target.dim):
        raise ValueError(f"exact draws must have shape {(n, target.dim)}, got {draws.shape}")
    return draws


@dataclass
class InvarianceResult:
    """What :func:`check_invariance` measured.

    Attributes
    ----------
    z_mean, z_var : ndarray, shape ``(dim,)``
        z-scores of the final states' means and variances against the exact moments.
    ks_pvalues : ndarray, shape ``(dim,)``
        Two-sample Kolmogorov-Smirnov p-values per coordinate.
    z_critical, p_critical : float
        The Bonferroni-corrected thresholds.
    final : ndarray, shape ``(n_chains, dim)``
        The positions after the last iteration.
    acceptance_rate : float
        The fraction of accepted transitions (``nan`` for a sampler that reports none).
    momentum_ks_pvalues : ndarray, shape ``(dim,)``, or None
        Two-sample Kolmogorov-Smirnov p-values of the final momenta per coordinate against
        the Hamiltonian's momentum draws, where the momentum persists between iterations;
        ``None`` where it is redrawn (not tested).
    kinetic_ks_pvalue : float or None
        The same test of the kinetic energy :math:`K(p)`; ``None`` where not tested.
    """

    z_mean: np.ndarray
    z_var: np.ndarray
    ks_pvalues: np.ndarray
    z_critical: float
    p_critical: float
    final: np.ndarray
    acceptance_rate: float
    momentum_ks_pvalues: np.ndarray | None = None
    kinetic_ks_pvalue: float | None = None

    @property
    def momentum_passed(self) -> bool:
        """Whether the momentum's tests pass (vacuously where it was not tested)."""
        if self.momentum_ks_pvalues is None:
            return True
        return bool(
            np.all(self.momentum_ks_pvalues > self.p_critical)
            and self.kinetic_ks_pvalue > self.p_critical
        )

    @property
    def passed(self) -> bool:
        """Whether every test is within its threshold."""
        return bool(
            np.all(np.abs(self.z_mean) < self.z_critical)
            and np.all(np.abs(self.z_var) < self.z_critical)
            and np.all(self.ks_pvalues > self.p_critical)
            and self.momentum_passed
        )

    def failures(self, names) -> list[str]:
        """One line per failed test, naming the coordinate."""
        out = []
        for j, name in enumerate(names):
            if not abs(self.z_mean[j]) < self.z_critical:
                out.append(f"mean of {name}: z = {self.z_mean[j]:.2f}")
            if not abs(self.z_var[j]) < self.z_critical:
                out.append(f"variance of {name}: z = {self.z_var[j]:.2f}")
            if not self.ks_pvalues[j] > self.p_critical:
                out.append(f"KS test of {name}: p = {self.ks_pvalues[j]:.2g}")
        if self.momentum_ks_pvalues is not None:
            for j, name in enumerate(names):
                if not self.momentum_ks_pvalues[j] > self.p_critical:
                    out.append(
                        f"KS test of the momentum of {name}: p = {self.momentum_ks_pvalues[j]:.2g}"
                    )
            if not self.kinetic_ks_pvalue > self.p_critical:
                out.append(f"KS test of the kinetic energy: p = {self.kinetic_ks_pvalue:.2g}")
        return out


def _stationary_start(sampler: Any, positions: np.ndarray, seed: int, rngs: list):
    """The sampler's chain state at ``positions`` with every other variable drawn from its
    stationary distribution too: the Hamiltonian's auxiliary variables (a random mass),
    the momentum :math:`p \\sim e^{-K(p)}` (a partial refresh carries it over, so it must
    not start at zero), and the structure's (a magnetic field's sign, uniform on both)."""
    chain = sampler.init(positions)
    ham = getattr(sampler, "hamiltonian", None)
    if ham is None:
        return chain
    phase = ham.update_auxiliary(chain.phase, rngs)
    phase = phase.with_momentum(ham.sample_momentum(rngs, phase.aux))
    integrator = getattr(sampler, "integrator", None)
    if integrator is not None:
        flip = np.random.default_rng(seed).random(len(rngs)) < 0.5
        phase = integrator.structure.reverse(phase).select(backend.asmask(flip), phase)
    chain.phase = phase
    return chain


def _momentum_persists(sampler: Any) -> bool:
    """Whether the sampler carries the momentum from one iteration into the next (its
    refresh ``keeps_momentum``), so that the momentum's distribution is part of what the
    transition must keep."""
    if getattr(sampler, "hamiltonian", None) is None:
        return False
    return bool(getattr(getattr(sampler, "refresh", None), "keeps_momentum", False))


def _momentum_pvalues(sampler: Any, phase: Any, seed: int) -> tuple[np.ndarray, float]:
    """Two-sample KS p-values of the chains' momenta ``phase.p`` against :math:`4n` draws
    of the Hamiltonian's ``sample_momentum`` at the chains' auxiliary variables (four per
    chain, from the children of ``SeedSequence(seed)``): per coordinate, and of the
    kinetic energy."""
    import scipy.stats

    ham = sampler.hamiltonian
    n = np.shape(phase.p)[0]
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]
    # Each block of n draws lines up with the chains, so one chain's auxiliary variables
    # (its random mass) serve its own draws and kinetic energies.
    blocks = [ham.sample_momentum(rngs, phase.aux) for _ in range(4)]

    def numpy(values):
        return np.asarray(backend.to_numpy(values), dtype=float)

    final = numpy(phase.p)
    reference = np.concatenate([numpy(block) for block in blocks])
    kinetic = numpy(ham.kinetic(phase.p, phase.aux))
    kinetic_reference = np.concatenate([numpy(ham.kinetic(b, phase.aux)) for b in blocks])
    per_coordinate = np.array(
        [scipy.stats.kstest(final[:, j], reference[:, j]).pvalue for j in range(final.shape[1])]
    )
    return per_coordinate, float(scipy.stats.kstest(kinetic, kinetic_reference).pvalue)


def _compiled_iterations(sampler, chain, rngs, n_iterations: int) -> list:
    """Advance ``chain`` (in place) by ``n_iterations`` of the compiled chain, a target
    without a kernel called back; the acceptance flags, per iteration."""
    from hamiltonia.compiled import plan_for

    plan = plan_for(sampler, python_target=True)
    layout = plan.layout()
    n, dim = np.shape(chain.phase.q)
    out_q = np.empty((n, n_iterations, dim))
    out_stats = np.zeros((n, n_iterations, len(layout.stats)))
    with plan:
        layout = plan.run(chain, rngs, n_iterations, False, out_q, out_stats)
    columns = [name for name, _ in layout.stats]
    if "accepted" not in columns:
        return [np.full(n, np.nan)]
    return list(out_stats[:, :, columns.index("accepted")].T)


def check_invariance(
    target: Any,
    sampler: Any = "hmc",
    *,
    n_chains: int = 2000,
    n_iterations: int = 10,
    seed: int = 0,
    alpha: float = INVARIANCE_ALPHA,
    exact: Any = None,
    initial: np.ndarray | None = None,
    check: bool = True,
    **options: Any,
) -> InvarianceResult:
    """Assert that ``sampler`` leaves ``target`` invariant (see the module docstring).

    The chains start at exact draws of :math:`q`, with the momentum and the auxiliary
    variables drawn from their stationary distributions as well, and advance by
    ``sampler.step`` (the NumPy path, where a new part's Python maths runs;
    :func:`~hamiltonia.testing.paths.assert_paths_agree` ties the compiled path to it), or,
    for a sampler with a part written only as a kernel, in the compiled chain (a target
    without a kernel called back),
    each chain with its own generator (the children of ``SeedSequence(seed + 1)``).

    Parameters
    ----------
    target : Target
        A target with exact moments and exact draws (:func:`exact_draws`).
    sampler : str or Sampler
        A registered name (built for ``target`` with ``options``, which must then fix
        ``step_size``) or a :class:`~hamiltonia.samplers.Sampler` built with a fixed
        ``step_size``. Its chains must be independent (not antithetic pairs) and unweighted
        (a shadow sampler's chain leaves :math:`e^{-\\tilde H}` invariant, not :math:`\\pi`).
    n_chains, n_iterations : int
        :math:`n` independent chains, :math:`K` iterations each (no warm-up). :math:`K > 1`
        lets a small bias per transition accumulate.
    seed : int
        Seeds the exact draws (``seed``), the chains (``seed + 1``), the KS reference
        sample (``seed + 2``), the field's signs (``seed + 3``) and the momentum's
        reference sample (``seed + 4``).
    alpha : float
        Family-wise level of the :math:`3D` tests, :math:`4D + 1` where the momentum
        persists and is tested too (default :data:`INVARIANCE_ALPHA`).
    exact : ExactMoments-like, optional
        Default ``target.exact_moments``.
    initial : ndarray ``(n_chains, dim)``, optional
        The exact draws to start from (default :func:`exact_draws`).
    check : bool
        Assert (default); with ``False`` only measure, e.g. to show that a broken
        transition fails.
    **options
        Options of the named sampler (``step_size``, ``n_steps``...).

    Returns
    -------
    InvarianceResult
    """
    import scipy.stats

    from hamiltonia import samplers
    from hamiltonia.reducers.base import gives_weights
    from hamiltonia.runner.loop import kernel_only_parts

    if isinstance(sampler, str):
        if options.get("step_size") is None:
            raise ValueError(
                "check_invariance needs a fixed step size: pass step_size= (there is no warm-up)"
            )
        sampler = samplers.build(sampler, target, **options)
    elif options:
        raise ValueError(f"options {sorted(options)} apply to a sampler name, not to a Sampler")
    if getattr(sampler, "initial_step_size", 1.0) is None:
        raise ValueError(
            f"check_invariance needs a fixed step size: build {type(sampler).__name__} with "
            "step_size= (there is no warm-up)"
        )
    if gives_weights(sampler.reducer):
        raise ValueError(
            "the sampler gives importance weights: its chain leaves exp(-H~) invariant, not "
            "the target, so the invariance check does not apply"
        )
    if sampler.reducer.pairs:
        raise ValueError("the sampler couples its chains in pairs: they are not independent")
    exact = target.exact_moments if exact is None else exact
    if exact is None:
        raise ValueError(f"{type(target).__name__} has no exact moments: pass exact=")
    mu = np.asarray(exact.mean, dtype=float)
    var = np.asarray(exact.var, dtype=float)
    start = exact_draws(target, n_chains, seed) if initial is None else np.asarray(initial)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed + 1).spawn(n_chains)]
    chain = _stationary_start(sampler, start, seed + 3, rngs)
    persists = _momentum_persists(sampler)
    if kernel_only_parts(sampler):
        # A part written only as a kernel: the iterations run in the compiled chain.
        accepted = _compiled_iterations(sampler, chain, rngs, n_iterations)
    else:
        accepted = []
        for _ in range(n_iterations):
            chain, info = sampler.step(chain, rngs)
            accepted.append(np.asarray(info.get("accepted", np.nan), dtype=float))
    final = np.array(chain.phase.q, dtype=float)
    n, dim = final.shape
    moved = np.mean(np.any(final != start, axis=-1))
    assert moved > 0.1, f"only {moved:.0%} of the chains moved: the check would be vacuous"
    z_mean = (final.mean(axis=0) - mu) / np.sqrt(var / n)
    sq = (final - mu) ** 2
    z_var = (sq.mean(axis=0) - var) / (sq.std(axis=0, ddof=1) / np.sqrt(n))
    reference = exact_draws(target, 4 * n_chains, seed + 2)
    ks = np.array([scipy.stats.kstest(final[:, j], reference[:, j]).pvalue for j in range(dim)])
    momentum_ks, kinetic_ks = (
        _momentum_pvalues(sampler, chain.phase, seed + 4) if persists else (None, None)
    )
    n_tests = 3 * dim + (0 if momentum_ks is None else dim + 1)
    report = InvarianceResult(
        z_mean=z_mean,
        z_var=z_var,
        ks_pvalues=ks,
        z_critical=float(scipy.stats.norm.isf(alpha / (2 * n_tests))),
        p_critical=alpha / n_tests,
        final=final,
        acceptance_rate=float(np.nanmean(accepted)),
        momentum_ks_pvalues=momentum_ks,
        kinetic_ks_pvalue=kinetic_ks,
    )
    if check:
        names = getattr(target, "names", [f"x[{j}]" for j in range(dim)])
        assert report.passed, (
            f"the sampler does not leave {type(target).__name__} invariant after "
            f"{n_iterations} iterations from {n_chains} exact draws (family-wise level "
            f"{alpha:g}; |z| < {report.z_critical:.2f}, KS p > {report.p_critical:.2g}): "
            + "; ".join(report.failures(names))
            + (
                ""
                if report.momentum_passed
                else " (the momentum carried into the next iteration is not distributed as "
                f"{type(sampler.hamiltonian).__name__}.sample_momentum draws it: does refresh "
                f"{type(sampler.refresh).__name__} keep this kinetic energy's momentum "
                "distribution? A partial refresh keeps only a Gaussian one; "
                "MetropolisPartialRefresh keeps any)"
            )
        )
    return report
