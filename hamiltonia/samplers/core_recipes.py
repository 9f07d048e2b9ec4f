"""The recipes the others are built on, :mod:`hamiltonia.samplers.recipes`' presets among them
(that module registers and re-exports them, and documents them):
:func:`~hamiltonia.samplers.recipes.hmc` and :func:`~hamiltonia.samplers.recipes.nuts`, and
:func:`~hamiltonia.samplers.recipes.mala`, :func:`~hamiltonia.samplers.recipes.rwmh` and
:func:`~hamiltonia.samplers.recipes.split_hmc`, each a short composition of
:mod:`hamiltonia.samplers.composition`'s helpers over the options
:mod:`hamiltonia.samplers.recipe_options` reads.
"""

from __future__ import annotations

import inspect

from hamiltonia.samplers import composition as make
from hamiltonia.samplers.hamiltonian import HamiltonianSampler
from hamiltonia.samplers.random_walk import RandomWalkMetropolis
from hamiltonia.samplers.recipe_options import (
    _as_recipe,
    _dynamics,
    _recipe,
    _trajectory,
    _tuner_list,
)
from hamiltonia.trajectories.no_u_turn import DEFAULT_MAX_TREE_DEPTH

__all__ = ["DEFAULT_N_STEPS_JITTER", "hmc", "mala", "nuts", "rwmh", "split_hmc"]

#: The number of steps' jitter of :func:`hmc` (and of the presets over it) when
#: ``n_steps_jitter`` is left out, except for the research's setting: each iteration's
#: :math:`L` uniform on :math:`\lceil L_{max}/2 \rceil .. L_{max}`. A fixed length resonates on
#: near-Gaussian posteriors (:doc:`/troubleshooting`, the ``resonance`` warning).
DEFAULT_N_STEPS_JITTER = 0.5


def _is_research_setting(target) -> bool:
    """Whether ``target`` (or the target it wraps, a split one's ``base``) was built with
    ``setting="paper"``."""
    while target is not None:
        if getattr(target, "setting", None) == "paper":
            return True
        target = getattr(target, "base", None)
    return False


def _n_steps_jitter(target, trajectory, n_steps_jitter):
    """``n_steps_jitter``, or its default: :data:`DEFAULT_N_STEPS_JITTER` for the Metropolis
    transition, 0 (a fixed length) for the research's setting or a named trajectory
    policy, which has its own lengths."""
    if n_steps_jitter is not None:
        return n_steps_jitter
    if trajectory is not None or _is_research_setting(target):
        return 0.0
    return DEFAULT_N_STEPS_JITTER


def hmc(
    target,
    *,
    n_steps: int | None = 15,
    step_size: float | None = None,
    target_accept: float = 0.8,
    adapt_step_size: bool | None = None,
    metric="identity",
    step_size_jitter: float = 0.0,
    n_steps_jitter: float | None = None,
    integrator="leapfrog",
    rho: float = 0.0,
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    field=None,
    g: float | None = None,
    field_seed: int = 0,
    mass_volatility: float | None = 0.0,
    shadow: str | None = None,
    fixed_point_tolerance: float = 1e-6,
    fixed_point_max_iterations: int = 100,
    hessian: str = "finite-difference",
    shadow_sign: str = "corrected",
    antithetic: bool = False,
    control_variates: int | bool = False,
    refresh: str | None = None,
    trajectory: str | None = None,
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """Hamiltonian Monte Carlo with a jittered or a static number of leapfrog steps.

    By default each iteration draws its number of steps up to ``n_steps``; with
    ``n_steps_jitter=0``, and on a target of the research's setting, it is static.

    Full momentum refreshment :math:`p \\sim \\mathcal N(0, M)`, ``n_steps`` leapfrog steps, a
    Metropolis test on :math:`H` (Mongwe 2022, thesis, §2.4, Algorithm 2), and dual averaging
    of the step size during warm-up (§2.8). The thesis's trajectories have a fixed length; a
    fixed length resonates on near-Gaussian posteriors (a direction whose period the
    trajectory nearly matches barely moves, and the error bars of the estimates that
    involve it come out too small), so by default the length is drawn at random
    (``n_steps_jitter`` below), except for a target of the research's setting
    (``setting="paper"``), which keeps the research's fixed length.

    Parameters
    ----------
    target : Target
    n_steps : int or None
        Leapfrog steps per trajectory :math:`L` (default 15, the thesis's value for banana and
        the Gaussians; ``None``: the target's research value, Table 3.8).
    step_size : float, optional
        Fixed (or initial, see module docs) step size :math:`\\varepsilon`.
    target_accept : float
        Target acceptance rate of dual averaging (default 0.8).
    adapt_step_size : bool, optional
        Adapt the step size during warm-up (default: only when ``step_size`` is not given).
    metric : str, array or Metric
        ``"identity"`` (default, :math:`M = I` as in the thesis); ``"diagonal"`` or
        ``"dense"`` to adapt the inverse mass matrix during warm-up on Stan's windows
        (:class:`~hamiltonia.tuners.adaptation.WindowedMetric`); or a fixed inverse mass matrix (1-D
        diagonal, 2-D dense, or a :class:`~hamiltonia.hamiltonians.Metric`).
    adapt_windows : (int, int, int)
        Stan's warm-up schedule for an adapted metric: the initial buffer (step size only),
        the first metric window (each next one twice as long), and the terminal buffer
        (default ``(75, 25, 50)``, Stan's; scaled down as Stan does when warm-up is short).
    adapt_metric : {"pooled", "per-chain"}
        How an adapted metric reads the chains' warm-up draws: ``"pooled"`` (default), one
        metric from every chain's draws of a window; ``"per-chain"`` (Stan's and NumPyro's
        choice), each chain's (each antithetic pair's) own metric from its own draws and its
        step size searched from its own, so that a chain's draws do not depend on the number
        of chains and an executor's task warms its own chains up (:doc:`/adaptation`). A
        fixed metric is not adapted either way (the step size is adapted per chain always).
    step_size_jitter : float in [0, 1)
        Draw each trajectory's step size uniformly within this relative distance of the
        adapted one (default 0, as in the thesis); breaks resonances of a fixed trajectory
        length, but less surely than ``n_steps_jitter`` on Gaussians (refused with a
        ``shadow``, whose Hamiltonian depends on the step size).
    n_steps_jitter : float in [0, 1], optional
        Draw each chain's number of steps per iteration uniformly from
        :math:`\\lceil(1 - j)L\\rceil` (at least 1) to :math:`L` = ``n_steps`` (0: always
        :math:`L`, the thesis's fixed length; 1: uniform on :math:`1..L`, the random length
        of :class:`~hamiltonia.trajectories.metropolis.RandomLength`). Default ``None``:
        :data:`DEFAULT_N_STEPS_JITTER` = 0.5 (:math:`L` uniform on 8..15 for
        ``n_steps=15``), which breaks the resonances of a fixed length (:doc:`/troubleshooting`);
        0 for a target built with ``setting="paper"`` (the research's fixed length, as the
        reproductions run it) and with a named ``trajectory``.
    integrator : str or Integrator
        ``"leapfrog"`` (default), ``"two-stage"`` or ``"three-stage"`` (the splittings of
        Blanes, Casas and Sanz-Serna; ``n_steps`` counts steps, each costing one gradient per
        stage), any other name registered in ``hamiltonia.integrators``
        (:func:`hamiltonia.integrators.names`, a plugin's included), or an
        :class:`~hamiltonia.integrators.Integrator`.
    rho : float in [0, 1)
        Partial momentum refreshment :math:`p' = \\rho p + \\sqrt{1-\\rho^2}\\, u`, the
        momentum kept between iterations and negated on rejection (default 0: a full
        refresh); see :class:`~hamiltonia.refresh.momentum.PartialRefresh`.
    field : None, "research", "random", str or array
        A magnetic field :math:`G` (magnetic HMC, :mod:`hamiltonia.structures.magnetic`): the
        research's rank-two field, a random antisymmetric one, or a given antisymmetric
        ``(dim, dim)`` matrix (default ``None``: the canonical dynamics); or the name of
        another structure registered in ``hamiltonia.structures``
        (:func:`hamiltonia.structures.names`).
    g : float >= 0, optional
        The research field's strength, or the random field's entry scale (default: the
        target's research value, 0.2 for the logistic regressions and 0.1 otherwise).
    field_seed : int
        Seed of the random field (default 0).
    mass_volatility : float >= 0 or None
        The vol-of-vol :math:`\\beta` of a random diagonal mass redrawn every iteration,
        :math:`\\log m_i \\sim \\mathcal N(0, \\beta^2)` (quantum-inspired HMC,
        :class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`; default 0: a fixed mass;
        ``None``: the target's research value, 0.1 for banana and Australian credit, 0.3
        otherwise).
    shadow : None, "separable" or "leapfrog"
        Sample a shadow Hamiltonian and reweigh the draws (default ``None``: :math:`H`
        itself). ``"separable"``: S2HMC's separable shadow
        (:class:`~hamiltonia.hamiltonians.SeparableShadowHamiltonian`) integrated by the
        processed leapfrog (:class:`~hamiltonia.integrators.ProcessedLeapfrog`).
        ``"leapfrog"``: the leapfrog's non-separable shadow, with the magnetic term when a
        ``field`` is given (:class:`~hamiltonia.hamiltonians.LeapfrogShadowHamiltonian`),
        the refresh then tested
        (:class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`). Both with importance
        weights (:class:`~hamiltonia.reducers.base.ImportanceWeights`).
    fixed_point_tolerance : float > 0
        Of the processed leapfrog's fixed points (default 1e-6, the thesis's).
    fixed_point_max_iterations : int >= 1
        Of the processed leapfrog's fixed points (default 100, the thesis's).
    hessian : {"finite-difference", "target"}
        The curvature of ``shadow="leapfrog"``: central differences of the gradient (two
        gradients an energy, compiled) or the target's ``hvp`` (NumPy path).
    shadow_sign : {"corrected", "printed"}
        The sign of the magnetic term of ``shadow="leapfrog"`` with a field: the one that
        conserves to fourth order (default) or the SMHMC paper's printed one.
    antithetic : bool
        Run the chains in antithetic pairs
        (:class:`~hamiltonia.reducers.antithetic.AntitheticPairs`:
        shared random numbers, the secondary's momentum normals negated; an even number of
        chains); default ``False``.
    control_variates : {False, 1, 2}
        Keep the gradient of the log density at each draw for zero-variance control
        variates of this polynomial order
        (:class:`~hamiltonia.reducers.control_variates.ControlVariates`;
        :meth:`hamiltonia.Result.control_variate_summary`); default ``False``.
    refresh : str, optional
        A registered momentum refresh by name (:func:`hamiltonia.refresh.names`, a plugin's
        among them), given ``rho`` where it takes it; default: full, or partial with ``rho``.
    trajectory : str, optional
        A registered trajectory policy by name (:func:`hamiltonia.trajectories.names`, a
        plugin's length policy among them), given ``n_steps`` and the jitters where it
        takes them; default: the Metropolis transition over ``n_steps``.
    hamiltonian : str, Hamiltonian class or Hamiltonian, optional
        The Hamiltonian to sample, in place of the one ``metric`` and ``mass_volatility``
        build: a name registered in ``hamiltonia.hamiltonians`` (``"euclidean"``,
        ``"random-mass"``, a plugin's: :func:`hamiltonia.hamiltonians.names`) or a
        :class:`~hamiltonia.hamiltonians.Hamiltonian` class, built for the target with
        ``metric`` (as a :class:`~hamiltonia.hamiltonians.Metric`; ``"diagonal"`` and
        ``"dense"`` as the identity of that kind, adapted in warm-up) and with
        ``mass_volatility`` when it asks for a random mass (``None`` or above 0), where its
        factory takes them (an option it does not take must stay at its default); or a
        Hamiltonian built for the target, whose metric an adapted ``metric`` must match.
        Refused with a ``shadow``, which is built over the recipe's own Hamiltonian (default
        ``None``: ``"euclidean"``, or ``"random-mass"`` when ``mass_volatility`` asks).
    tuners : str, list, Tuner class or Tuner, optional
        Warm-up tuners added to the recipe's own (the dual averaging of the step size, the
        windowed metric): names registered in ``hamiltonia.tuners``
        (:func:`hamiltonia.tuners.names`, a plugin's among them; one name, a list, or
        comma-separated on the command line) or Tuner classes, built with those of
        ``target_accept``, ``initial_step_size`` (``step_size``) and, for an adapted
        ``metric``, ``kind``, the windows and ``per_chain`` that the factory takes; or Tuner
        instances. A tuner of a class the recipe already has replaces the recipe's:
        ``tuners="dual-averaging"`` with a fixed ``step_size`` adapts it (as
        ``adapt_step_size=True``), a :class:`~hamiltonia.tuners.DualAveraging` instance
        replaces the recipe's with its own settings. Refused where another option turns the
        tuner off: a dual averaging with ``adapt_step_size=False``, a windowed metric of
        another kind than an adapted ``metric``. Default ``None``: the recipe's own.
    """
    recipe = _recipe("hmc")
    metric_tuners, hamiltonian, integrator = _dynamics(
        target, metric, adapt_windows, adapt_metric, mass_volatility, field, g, field_seed,
        shadow, integrator, hamiltonian, recipe, fixed_point_tolerance=fixed_point_tolerance,
        fixed_point_max_iterations=fixed_point_max_iterations,
        hessian=hessian, shadow_sign=shadow_sign,
    )  # fmt: skip
    return make.compose(
        hamiltonian,
        integrator=integrator,
        trajectory=_trajectory(
            target,
            trajectory,
            n_steps,
            _n_steps_jitter(target, trajectory, n_steps_jitter),
            step_size_jitter,
        ),
        refresh=make.momentum_refresh(rho, hamiltonian)
        if refresh is None
        else make.named_refresh(refresh, rho),
        tuners=_tuner_list(
            recipe,
            tuners,
            metric_tuners,
            step_size,
            adapt_step_size,
            target_accept,
            metric,
            adapt_windows,
            adapt_metric,
        ),
        reducer=make.reducer(hamiltonian, antithetic=antithetic, control_variates=control_variates),
        step_size=step_size,
        name="hmc",
    )


def nuts(
    target,
    *,
    max_tree_depth: int = DEFAULT_MAX_TREE_DEPTH,
    criterion: str = "stan",
    step_size: float | None = None,
    target_accept: float = 0.8,
    adapt_step_size: bool | None = None,
    metric="diagonal",
    integrator="leapfrog",
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    field=None,
    g: float | None = None,
    field_seed: int = 0,
    mass_volatility: float | None = 0.0,
    shadow: str | None = None,
    fixed_point_tolerance: float = 1e-6,
    fixed_point_max_iterations: int = 100,
    antithetic: bool = False,
    control_variates: int | bool = False,
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """The no-U-turn sampler (multinomial NUTS, generalised criterion), as in Stan and NumPyro.

    The trajectory policy is :class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`.

    Defaults as Stan's: a diagonal metric adapted on Stan's warm-up windows, dual averaging of
    the step size towards an acceptance statistic of 0.8, trees of depth at most 10.

    Parameters
    ----------
    target : Target
    max_tree_depth : int in [1, 20]
        Most doublings of a trajectory (default 10: at most 1023 steps).
    criterion : {"stan", "numpyro"}
        The no-U-turn criterion: Stan's (default) or NumPyro's and BlackJAX's
        (:class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`).
    step_size, target_accept, adapt_step_size, integrator
        As in :func:`hmc`.
    metric : str, array or Metric
        ``"diagonal"`` (default) or ``"dense"``, adapted during warm-up; ``"identity"``; or a
        fixed inverse mass matrix, as in :func:`hmc`.
    adapt_windows : (int, int, int)
        Stan's warm-up windows, as in :func:`hmc`.
    adapt_metric : {"pooled", "per-chain"}
        One metric from every chain's warm-up draws (default), or each chain's own from its
        own draws (Stan's and NumPyro's choice), as in :func:`hmc`.
    field, g, field_seed, mass_volatility
        A magnetic field and a random mass, as in :func:`hmc`: the tree then follows the
        magnetic flow of a fixed :math:`G` (valid: see
        :class:`~hamiltonia.trajectories.no_u_turn.NoUTurn`),
        or a mass drawn for each tree.
    shadow, fixed_point_tolerance, fixed_point_max_iterations
        ``shadow="separable"`` builds the tree from processed-leapfrog steps and weighs
        its states by the separable shadow :math:`\\tilde H`, with importance weights: the
        research's adaptive S2HMC (Mongwe 2022, thesis, §7.2, Algorithm 13; valid because
        the processed step is symplectic and reversible, and :math:`\\tilde H` is separable
        with the Gaussian momentum the tree is weighed against), as in :func:`hmc`.
    antithetic : bool
        Antithetic pairs of chains, as in :func:`hmc`: the pair shares the tree's random
        numbers too, so on a symmetric target the secondary's tree mirrors the primary's.
    control_variates : {False, 1, 2}
        Keep the draws' gradients for zero-variance control variates, as in :func:`hmc`.
    hamiltonian, tuners
        A registered Hamiltonian in place of the one ``metric`` and ``mass_volatility``
        build, and warm-up tuners added to (or replacing those of their class among) the
        recipe's own, as in :func:`hmc` (a Hamiltonian that takes no metric, such as
        ``"relativistic"``, ignores the default ``metric="diagonal"``; any other ``metric``
        is refused with it).

    References
    ----------
    Hoffman and Gelman (2014), *The No-U-Turn Sampler*, JMLR 15; Betancourt (2017), *A
    Conceptual Introduction to Hamiltonian Monte Carlo*, arXiv:1701.02434;
    Mongwe (2022), thesis, §2.8.
    """
    recipe = _recipe("nuts")
    metric_tuners, hamiltonian, integrator = _dynamics(
        target, metric, adapt_windows, adapt_metric, mass_volatility, field, g, field_seed,
        shadow, integrator, hamiltonian, recipe, fixed_point_tolerance=fixed_point_tolerance,
        fixed_point_max_iterations=fixed_point_max_iterations, recipe_metric="diagonal",
    )  # fmt: skip
    return make.compose(
        hamiltonian,
        integrator=integrator,
        trajectory=make.no_u_turn(max_tree_depth, criterion),
        tuners=_tuner_list(
            recipe,
            tuners,
            metric_tuners,
            step_size,
            adapt_step_size,
            target_accept,
            metric,
            adapt_windows,
            adapt_metric,
        ),
        reducer=make.reducer(hamiltonian, antithetic=antithetic, control_variates=control_variates),
        step_size=step_size,
        name="nuts",
    )


def mala(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.6,
    adapt_step_size: bool | None = None,
    metric="identity",
    integrator="leapfrog",
    rho: float = 0.0,
    control_variates: int | bool = False,
    adapt_windows=(75, 25, 50),
    adapt_metric: str = "pooled",
    hamiltonian=None,
    tuners=None,
) -> HamiltonianSampler:
    """Metropolis-adjusted Langevin algorithm: HMC with one leapfrog step.

    With :math:`M = I`, one leapfrog step of size :math:`\\varepsilon` from a fresh momentum is
    the Langevin proposal
    :math:`x' = x + \\tfrac{\\varepsilon^2}{2}\\nabla\\log\\pi(x) + \\varepsilon z`, and the
    Metropolis test on :math:`H` equals the MALA ratio
    :math:`\\pi(x')q(x|x')/(\\pi(x)q(x'|x))` (Mongwe 2022, thesis, §2.3). Default target
    acceptance 0.6, the thesis's value for MALA (ch. 9). ``integrator``, ``rho``,
    ``control_variates``, ``hamiltonian``, ``tuners`` and, for an adapted ``metric``,
    ``adapt_windows`` and ``adapt_metric`` are those of :func:`hmc` (with ``rho > 0`` it is
    Horowitz's generalised HMC with one step, a discretised underdamped Langevin diffusion).

    References
    ----------
    Roberts and Tweedie (1996), *Exponential convergence of Langevin distributions and their
    discrete approximations*.
    """
    sampler = _as_recipe(
        "mala",
        hmc,
        target,
        n_steps=1,
        step_size=step_size,
        target_accept=target_accept,
        adapt_step_size=adapt_step_size,
        metric=metric,
        integrator=integrator,
        rho=rho,
        control_variates=control_variates,
        adapt_windows=adapt_windows,
        adapt_metric=adapt_metric,
        hamiltonian=hamiltonian,
        tuners=tuners,
    )
    sampler.name = "mala"
    return sampler


def rwmh(
    target,
    *,
    step_size: float | None = None,
    target_accept: float = 0.25,
    adapt_step_size: bool | None = None,
    tuners=None,
) -> RandomWalkMetropolis:
    """Random-walk Metropolis with Gaussian proposals of standard deviation step_size.

    The proposal is :math:`x^* \\sim \\mathcal N(x, \\varepsilon^2 I)`: ``step_size`` is the
    proposal **standard deviation**. Dual averaging targets acceptance 0.25 by default
    (Roberts and Rosenthal's optimal scaling; the thesis's value, ch. 9). ``tuners`` adds
    warm-up tuners as in :func:`hmc` (none that adapts a metric: the random walk has no
    Hamiltonian, and so no ``hamiltonian`` option either).
    """
    sampler = RandomWalkMetropolis(
        target,
        step_size=step_size,
        tuners=_tuner_list(
            _recipe("rwmh"), tuners, [], step_size, adapt_step_size, target_accept, metric=None
        ),
    )
    return sampler


def split_hmc(target, *, scheme: str = "symmetric", n_splits: int = 2, n_steps: int | None = None,
              **options) -> HamiltonianSampler:  # fmt: skip
    """Split HMC over data subsets (Cobb and Jalaian 2021): the target's rows split into
    ``n_splits`` consecutive subsets, each a component
    :math:`U_m = -\\log p(\\omega)/M - \\ell_m(\\omega)` of the potential, integrated one
    subset's gradient at a time; the Metropolis test (or the no-U-turn tree) keeps the whole
    Hamiltonian, so the chain samples the exact posterior with no stochastic gradient.

    Parameters
    ----------
    target : Target
        A data target with rows (:class:`~hamiltonia.targets.split.RowTarget`: the logistic
        regressions, the Bayesian neural networks, the linear regression...), or one already
        split (:func:`~hamiltonia.targets.split.split_target`).
    scheme : {"symmetric", "randomised", "naive"}
        The split integrator (:mod:`hamiltonia.integrators.data_split`): the symmetric split of
        Cobb and Jalaian's Algorithm 1 (default), Neal's randomised split, or the naive
        nested leapfrog.
    n_splits : int
        :math:`M`, from 1 (the leapfrog) to the number of rows (default 2).
    n_steps : int, optional
        Steps per trajectory (default: the target's research value).
    **options
        Every option of :func:`hmc`: the step size and its adaptation, ``metric``, ``rho``
        and ``refresh``, ``trajectory`` (``"no-u-turn"`` for NUTS over the split), the
        jitters, ``antithetic``, ``control_variates``, ``hamiltonian`` (by name or class: it
        is built for the split target) and ``tuners``. A ``field`` or a ``shadow`` is
        refused: the split integrators integrate the canonical flow of :math:`H`.

    References
    ----------
    Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
    neural networks with symmetric splitting*, UAI; Neal (2011), §5.1.
    """
    from hamiltonia.integrators.data_split import make_split_integrator
    from hamiltonia.targets.split import split_target

    if "integrator" in options:
        raise ValueError("split-hmc chooses its integrator by scheme=, not integrator=")
    for name in ("field", "shadow"):
        if options.get(name) is not None:
            raise ValueError(
                f"split-hmc integrates the canonical flow of H with a split integrator; "
                f"{name}={options[name]!r} is not available with it"
            )
    split = split_target(target, n_splits)
    sampler = _as_recipe(
        "split-hmc",
        hmc,
        split,
        integrator=make_split_integrator(scheme, split.n_splits),
        n_steps=n_steps,
        **options,
    )
    sampler.name = "split-hmc"
    return sampler


#: Options of :func:`hmc` that choose the dynamics a split integrator replaces.
_NOT_SPLIT = ("integrator", "field", "g", "field_seed", "shadow", "fixed_point_tolerance",
              "fixed_point_max_iterations", "hessian", "shadow_sign")  # fmt: skip
_split_signature = inspect.signature(split_hmc)
split_hmc.__signature__ = _split_signature.replace(
    parameters=[
        *(p for p in _split_signature.parameters.values() if p.kind != p.VAR_KEYWORD),
        *(
            p
            for name, p in inspect.signature(hmc).parameters.items()
            if name not in _split_signature.parameters and name not in _NOT_SPLIT
        ),
    ]
)
