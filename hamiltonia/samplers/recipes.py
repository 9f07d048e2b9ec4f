"""Named samplers: short recipes composing the parts.

Each recipe takes the target first and the sampler's options by keyword, and returns a
:class:`~hamiltonia.samplers.Sampler`. They are registered under the entry-point group
``hamiltonia.samplers``, the same way a plugin registers its own.

Step size: with ``step_size=None`` (default) the step size is found by the initial-step-size
heuristic and adapted by dual averaging during warm-up, then frozen. A number fixes it
(no adaptation), unless ``adapt_step_size=True``, in which case it is the starting point of
the adaptation.

Each recipe is a short composition of the public helpers of
:mod:`hamiltonia.samplers.composition`, which a plugin's recipe uses too. They build the
parts through their registries (:mod:`hamiltonia.registry`), the path a plugin's part takes:
``integrator=NAME`` from ``hamiltonia.integrators``, ``field=NAME`` from
``hamiltonia.structures``, ``hamiltonian=NAME`` from ``hamiltonia.hamiltonians``,
``tuners=NAME`` from ``hamiltonia.tuners``, and the refresh, trajectory policy, tuners and
reducers the options choose from the groups of their kinds.

Hamiltonian and tuners: every Hamiltonian recipe takes ``hamiltonian=`` (a registered name
or a :class:`~hamiltonia.hamiltonians.Hamiltonian` class, built for the target with the
recipe's ``metric`` and ``mass_volatility`` where the factory takes them, or a Hamiltonian
built for the target) in place of the one ``metric`` and ``mass_volatility`` build, except
with a ``shadow``, which is built over the recipe's own. Every recipe takes ``tuners=`` (a
registered tuner's name, a comma-separated string or a list of names, Tuner classes or
instances): each is added to the recipe's own warm-up tuners, or replaces the one of its
class there (``tuners="dual-averaging"`` with a fixed ``step_size`` adapts it, as
``adapt_step_size=True`` does; a :class:`~hamiltonia.tuners.DualAveraging` instance
replaces the recipe's dual averaging with its own settings). ``adapt_step_size=False`` turns
the step size's adaptation off, and then refuses a dual averaging in ``tuners``.

The presets (:func:`mhmc`, :func:`s2hmc`, the antithetic recipes...) are defined here, as
:func:`hmc` or :func:`nuts` with other defaults; :func:`hmc`, :func:`nuts`, :func:`mala`,
:func:`rwmh` and :func:`split_hmc` in :mod:`hamiltonia.samplers.core_recipes` (importable
from here, where the entry points name them), and the reading of their options in
:mod:`hamiltonia.samplers.recipe_options`.
"""

from __future__ import annotations

import inspect

# Kept importable from here, where they were first defined.
from hamiltonia.samplers.composition import ADAPTED_METRICS as ADAPTED_METRICS
from hamiltonia.samplers.composition import MAX_STEPS as MAX_STEPS
from hamiltonia.samplers.core_recipes import hmc, mala, nuts, rwmh, split_hmc
from hamiltonia.samplers.recipe_options import _as_recipe

__all__ = [
    "a_hmc",
    "a_mhmc",
    "a_s2hmc",
    "as2hmc",
    "chees",
    "hmc",
    "js2hmc",
    "mala",
    "mhmc",
    "nuts",
    "phmc",
    "pmhmc",
    "ps2hmc",
    "pshmc",
    "qihmc",
    "qimhmc",
    "rwmh",
    "s2hmc",
    "shmc",
    "smhmc",
    "split_hmc",
]


def _preset(name: str, doc: str, base=None, **defaults):
    """A recipe: ``base`` (:func:`hmc` by default) with other defaults, and the same options
    (its signature shows the defaults, so ``hamiltonia.samplers.options`` and the docs list
    them)."""
    base = hmc if base is None else base

    def recipe(target, **options):
        sampler = _as_recipe(name, base, target, **{**defaults, **options})
        sampler.name = name
        return sampler

    signature = inspect.signature(base)
    recipe.__signature__ = signature.replace(
        parameters=[
            p.replace(default=defaults[p.name]) if p.name in defaults else p
            for p in signature.parameters.values()
        ]
    )
    recipe.__name__ = recipe.__qualname__ = name
    recipe.__doc__ = doc + (_PRESET_FOOTER if base is hmc else _NUTS_FOOTER)
    return recipe


_NUTS_FOOTER = """

    Every option of :func:`nuts` is accepted, with the defaults in the signature.
"""

_PRESET_FOOTER = """

    Every option of :func:`hmc` is accepted, with the defaults in the signature: ``None``
    for ``n_steps``, ``g`` and ``mass_volatility`` takes the target's research value
    (:attr:`~hamiltonia.targets.Target.research_n_steps` and the like; Table 3.8 and the
    chapters' settings); ``None`` for ``n_steps_jitter`` draws each iteration's number of
    steps from the upper half of ``1 .. n_steps`` (0.5), except on a target of the
    research's setting (``setting="paper"``), which keeps the fixed length. The step size is
    adapted by dual averaging towards acceptance 0.8 during warm-up, as the research tuned
    its step sizes, unless ``step_size`` fixes it.
"""

chees = _preset(
    "chees",
    """ChEES-HMC (Hoffman, Radul and Sountsov 2021): a Halton-jittered trajectory duration
    (:class:`~hamiltonia.trajectories.jittered_length.JitteredLength`) and one step size for
    all chains, adapted from all chains at every warm-up iteration
    (:class:`~hamiltonia.tuners.chees.ChEES`, towards acceptance 0.651): for many chains
    (tens or more), as BlackJAX's ``chees_adaptation``. The same as ``hmc`` with
    ``trajectory="jittered-length"``, ``tuners="chees"`` and ``target_accept=0.651``.""",
    trajectory="jittered-length",
    tuners="chees",
    target_accept=0.651,
)

mhmc = _preset(
    "mhmc",
    """Magnetic HMC (Tripuraneni et al. 2017; Mongwe 2022, thesis, §2.5, Algorithm 3).

    The leapfrog over the magnetic structure with the research's field :math:`G_{1i} = g`,
    :math:`G_{i1} = -g`; the field's sign is negated with the momentum on rejection
    (:mod:`hamiltonia.structures.magnetic`).""",
    n_steps=None,
    field="research",
)

phmc = _preset(
    "phmc",
    """HMC with partial momentum refreshment (Horowitz 1991; Mongwe 2022, thesis, §5.2):
    :math:`p' = \\rho p + \\sqrt{1 - \\rho^2}\\, u` with :math:`\\rho = 0.7`, the momentum
    negated on rejection.""",
    n_steps=None,
    rho=0.7,
)

pmhmc = _preset(
    "pmhmc",
    """Magnetic HMC with partial momentum refreshment (Mongwe et al. 2021; Mongwe 2022, thesis,
    §5.2, Algorithm 10): :math:`\\rho = 0.7`; a rejection negates the momentum and the
    field's sign together.""",
    n_steps=None,
    field="research",
    rho=0.7,
)

qihmc = _preset(
    "qihmc",
    """Quantum-inspired HMC (Liu and Zhang 2019; Mongwe 2022, thesis, §2.6, Algorithm 4): a
    diagonal mass redrawn every iteration, :math:`\\log m_i \\sim \\mathcal N(0, \\beta^2)`
    (:class:`~hamiltonia.hamiltonians.RandomMassHamiltonian`).""",
    n_steps=None,
    mass_volatility=None,
)

qimhmc = _preset(
    "qimhmc",
    """Quantum-inspired magnetic HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022,
    thesis, §4.2, Algorithm 9): magnetic HMC with a random diagonal mass; the magnetic flow is
    that of the drawn mass (thesis eq. 4.1).""",
    n_steps=None,
    field="research",
    mass_volatility=None,
)

s2hmc = _preset(
    "s2hmc",
    """Separable shadow HMC (Sweet et al. 2009; Mongwe 2022, thesis, §2.7, Algorithm 5;
    Mongwe, Mbuvha and Marwala 2021, PS2HMC, eqs. 14-17): the processed leapfrog samples the
    separable shadow
    :math:`\\tilde H = H + \\tfrac{\\varepsilon^2}{24}\\nabla U^\\top M^{-1}\\nabla U`, and the
    draws carry the importance weights :math:`\\log w = \\tilde H - H`. The step size is
    adapted towards an acceptance of 0.95 on :math:`\\tilde H`: the research ran S2HMC with
    HMC's step size (tuned to 0.8 on :math:`H`), where it accepts nearly every proposal, and
    reports that a step size tuned to a lower acceptance makes the weights less even
    (Mongwe 2022, thesis, §7.4).""",
    n_steps=None,
    shadow="separable",
    target_accept=0.95,
)

ps2hmc = _preset(
    "ps2hmc",
    """S2HMC with partial momentum refreshment (Mongwe, Mbuvha and Marwala 2021,
    Algorithm 1; Mongwe 2022, thesis, §5.2, Algorithm 11):
    :math:`\\rho = 0.7` (the thesis's; the PS2HMC paper uses 0.9, ``rho=0.9``). The shadow is
    separable with the Gaussian momentum, so the refresh needs no momentum test; a rejection
    negates the refreshed momentum.""",
    n_steps=None,
    shadow="separable",
    rho=0.7,
    target_accept=0.95,
)

js2hmc = _preset(
    "js2hmc",
    """Jittered S2HMC (Mongwe 2022, thesis, §7.2): S2HMC whose number of steps is drawn
    uniformly on :math:`1..L_{max}` per chain and iteration, a mixture of reversible kernels
    (``n_steps_jitter=1``; :math:`L_{max}` the target's research length).""",
    n_steps=None,
    shadow="separable",
    n_steps_jitter=1.0,
    target_accept=0.95,
)

as2hmc = _preset(
    "as2hmc",
    """Adaptive S2HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §7.2, Algorithm
    13): the no-U-turn tree over processed-leapfrog steps, weighed by the separable shadow
    :math:`\\tilde H`, the U-turn checked on the post-processed states, importance weights
    :math:`\\log w = \\tilde H - H` on the draws. The step size is adapted on the shadow's
    acceptance statistic towards 0.9, not the research's 0.8: on banana the larger step
    size of 0.8 left the fixed points unconverged in the curved tail 188 times in 4000
    draws (37 at 0.9), each a divergence. Each step pre- and post-processes (two fixed
    points), so a step costs several times NUTS's gradients. The identity metric, as in the
    research.""",
    base=nuts,
    shadow="separable",
    metric="identity",
    target_accept=0.9,
)

shmc = _preset(
    "shmc",
    """Shadow HMC on the leapfrog's non-separable fourth-order shadow :math:`\\hat H`
    (Izaguirre and Hampton 2004; Mongwe et al. 2021, PS2HMC, Theorem 1 and §III): a fresh
    momentum is proposed and tested against :math:`\\hat H` (``rho=0`` of
    :class:`~hamiltonia.refresh.momentum.MetropolisPartialRefresh`; the original's momentum
    generation bounded by a constant ``c`` is not used), the leapfrog's proposal accepted on
    :math:`\\hat H`, the draws weighted by :math:`\\hat H - H`.""",
    n_steps=None,
    shadow="leapfrog",
)

pshmc = _preset(
    "pshmc",
    """SHMC with partial momentum refreshment, the "SHMC" baseline of the PS2HMC paper
    (Mongwe, Mbuvha and Marwala 2021, §III): the refresh :math:`\\rho = 0.9` (the paper's) tested
    against :math:`\\hat H`, the momentum negated on rejection.""",
    n_steps=None,
    shadow="leapfrog",
    rho=0.9,
)

smhmc = _preset(
    "smhmc",
    """Shadow magnetic HMC (Mongwe, Mbuvha and Marwala 2022, SMHMC,
    Algorithm 3): the magnetic leapfrog with the research's field, its shadow with the
    magnetic term of the corrected sign (``shadow_sign="printed"`` for the paper's), a
    partial refresh :math:`\\rho = 0.7` tested against the shadow, the momentum and the
    field's sign negated on rejection.""",
    n_steps=None,
    shadow="leapfrog",
    field="research",
    rho=0.7,
)

_ANTITHETIC = """

    The chains run in antithetic pairs (:mod:`hamiltonia.reducers.antithetic`; an even number of
    chains): the pair shares its random numbers and the secondary negates its momentum
    normals; the estimate is the pair mean, which :meth:`hamiltonia.Result.pair_summary`
    reports with its standard error and the reduction factor. The step size is adapted
    towards an acceptance of 0.95, as the research (after Piponi et al.) ran its antithetic
    samplers (Mongwe 2022, thesis, §8.3)."""

a_hmc = _preset(
    "a-hmc",
    """Antithetic HMC (Piponi, Hoffman and Sountsov 2020; Mongwe 2022, thesis, §2.9,
    Algorithm 8)."""
    + _ANTITHETIC,
    n_steps=None,
    antithetic=True,
    target_accept=0.95,
)

a_mhmc = _preset(
    "a-mhmc",
    """Antithetic magnetic HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §8.2,
    Algorithm 14): both chains start with the same field sign, which the reflection about a
    centre of symmetry preserves."""
    + _ANTITHETIC,
    n_steps=None,
    field="research",
    antithetic=True,
    target_accept=0.95,
)

a_s2hmc = _preset(
    "a-s2hmc",
    """Antithetic S2HMC (Mongwe, Mbuvha and Marwala 2021; Mongwe 2022, thesis, §8.2,
    Algorithm 15): each chain pre- and post-processes and carries its own importance
    weights; the pair estimate averages the chains' self-normalised means."""
    + _ANTITHETIC,
    n_steps=None,
    shadow="separable",
    antithetic=True,
    target_accept=0.95,
)
