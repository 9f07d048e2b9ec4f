"""Property-based tests of the robustness contract of :func:`hamiltonia.sample`.

The contract:

1. **Options.** Whatever value an option or run setting is given, ``sample`` either runs or
   raises ``ValueError``/``TypeError`` whose message names the parameter: never another
   exception type, never a hang. Unknown option names are refused by name.
2. **Initial points.** ``initial=`` is either used as given or refused naming ``initial``.
3. **Targets.** A user target whose log density is NaN or infinite (or whose gradient is
   not finite) in a region never yields a NaN draw: such points are divergent rejections. A
   user exception is shown as :class:`hamiltonia.ModelError` chaining the original, unless
   its type is declared with ``reject_on=``, in which case it is a rejection; an exception is
   never swallowed silently. A return of the wrong type or shape is a ``TypeError`` or
   ``ValueError`` naming it.

Every run is small (a few chains, a few dozen iterations) and guarded by a time limit, so a
hang fails the test instead of blocking CI. Examples are derandomised (reproducible in CI);
each property records what the library must do *and* what it must not do, so that it can
fail both ways.

Each library bug these properties found has its own test, with the failing case as an
explicit ``@example``.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
import signal
import threading
from contextlib import contextmanager

import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hamiltonia as hm
from hamiltonia.compiled.targets import NumbaTarget
from hamiltonia.samplers.recipes import MAX_STEPS
from hamiltonia.targets.banana import Banana

pytestmark = [
    pytest.mark.filterwarnings("ignore::hamiltonia.diagnostics.checks.SamplingWarning"),
    pytest.mark.filterwarnings("ignore::hamiltonia.runner.run.FallbackWarning"),
    pytest.mark.filterwarnings("ignore:.*one at a time:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
]


def _settings(max_examples: int):
    """Few, reproducible examples: the whole file runs in well under a minute."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# ---------------------------------------------------------------------------- helpers


class Hang(BaseException):
    """A run went on past its time limit (not an ``Exception``: nothing may catch it)."""


#: Seconds a single small run may take before it counts as a hang (compiling a new chain
#: kernel in a fresh cache takes a few seconds).
TIME_LIMIT = 30.0


@contextmanager
def time_limit(seconds: float = TIME_LIMIT):
    """Raise :class:`Hang` in the block after ``seconds`` (where SIGALRM exists)."""
    main = threading.current_thread() is threading.main_thread()
    if not hasattr(signal, "setitimer") or not main:
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"sample() still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(target, sampler="hmc", *, seconds: float = TIME_LIMIT, **kwargs):
    """``hm.sample`` without a progress bar, under a time limit."""
    with time_limit(seconds):
        return hm.sample(target, sampler, progress=False, **kwargs)


def names(err: BaseException, name: str) -> bool:
    """Whether the message of ``err`` names ``name`` (as a word)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", str(err)) is not None


def is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def beyond_float(value) -> bool:
    """Whether ``value`` holds a Python int that no float can represent."""
    if isinstance(value, list | tuple):
        return any(beyond_float(v) for v in value)
    if not is_int(value):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def check_finite_run(result, chains: int, draws: int, dim: int) -> None:
    """A finished run: the shapes asked for, no NaN or infinite draw or log density, and
    every divergent transition a rejection."""
    assert result.draws.shape == (chains, draws, dim)
    assert np.all(np.isfinite(result.draws)), "a draw is not finite"
    assert np.all(np.isfinite(result.stats["lp"])), "a draw has a non-finite log density"
    both = result.stats["diverging"] & result.stats["accepted"]
    assert not np.any(both), "a divergent transition was accepted"


# ------------------------------------------------------- 1. option values and settings

SAMPLERS = ("hmc", "mala", "rwmh")
SAMPLER_OPTIONS = {name: tuple(hm.samplers.options(name)) for name in SAMPLERS}
RUN_SETTINGS = ("chains", "warmup", "draws", "seed", "checkpoint_seconds", "compiled")
KNOWN_NAMES = tuple(sorted({o for opts in SAMPLER_OPTIONS.values() for o in opts}))
SAMPLE_PARAMETERS = frozenset(inspect.signature(hm.sample).parameters)

#: The run every example starts from; one parameter is then given a drawn value.
BASE = {"chains": 2, "warmup": 4, "draws": 4}

WORDS = ["identity", "diagonal", "dense", "leapfrog", "two-stage", "nan", "1", "0.5", "-inf", ""]
REALS = st.floats(allow_nan=True, allow_infinity=True)
SCALARS = st.one_of(
    st.integers(-3, 12),
    REALS,
    st.floats(1e-3, 2.0),  # plausible step sizes, probabilities, jitters, seconds
    st.floats(0.0, 1.0, exclude_min=True, exclude_max=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
    st.sampled_from(WORDS),
    st.integers(-2, 6).map(np.int64),
    st.floats(0.0, 1.0).map(np.float64),
)
SPD = st.tuples(st.floats(0.1, 5.0), st.floats(-0.5, 0.5), st.floats(0.1, 5.0)).map(
    lambda t: [[t[0] + 1.0, t[1]], [t[1], t[2] + 1.0]]  # symmetric positive definite
)

MATRICES = st.one_of(
    hnp.arrays(np.float64, st.sampled_from([(2,), (2, 2), (3,), (1, 2)]), elements=REALS),
    SPD,
)
WILD = st.one_of(SCALARS, st.lists(SCALARS, max_size=3), MATRICES)

#: Values only a refusal can answer (a run of that size would never end); the other huge
#: values come from the floats above.
HUGE = {
    "chains": st.integers(10**13, 10**300),  # more memory than any machine has
    "draws": st.integers(10**13, 10**300),
    "n_steps": st.integers(MAX_STEPS + 1, 10**300),
    "seed": st.integers(0, 2**300),  # valid: any non-negative integer
}

#: Values each parameter accepts, so that a good share of the examples run.
VALID = {
    "step_size": st.floats(1e-3, 2.0) | st.none(),
    "n_steps": st.integers(1, 12),
    "target_accept": st.floats(0.01, 0.99),
    "adapt_step_size": st.sampled_from([True, None, np.True_]),
    "metric": st.sampled_from(["identity", "diagonal", "dense", None])
    | SPD
    | st.lists(st.floats(0.1, 10.0), min_size=2, max_size=2),
    "step_size_jitter": st.floats(0.0, 0.9),
    "n_steps_jitter": st.floats(0.0, 1.0),
    "integrator": st.sampled_from(hm.integrators.names()),
    "rho": st.floats(0.0, 0.9),
    "chains": st.integers(1, 4),
    "warmup": st.integers(0, 12),
    "draws": st.integers(1, 8),
    "seed": st.integers(0, 2**64) | st.none(),
    "checkpoint_seconds": st.floats(0.0, 1e9) | st.just(float("inf")),
    "compiled": st.sampled_from([None, False, True]),
}

UNKNOWN = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: n not in SAMPLE_PARAMETERS and n not in KNOWN_NAMES
)


@st.composite
def option_cases(draw):
    """A sampler, one parameter and its value (more often a known name and a good value, so
    that about half the examples run), and the path."""
    sampler = draw(st.sampled_from(["hmc", "hmc", "mala", "rwmh"]))
    if draw(st.sampled_from(["known", "known", "known", "unknown"])) == "known":
        name = draw(st.sampled_from(KNOWN_NAMES + RUN_SETTINGS))
    else:
        name = draw(UNKNOWN)
    kind = draw(st.sampled_from(["valid", "valid", "wild", "huge"]))
    source = {"valid": VALID, "huge": HUGE}.get(kind, {})
    value = draw(source.get(name, WILD))
    compiled = draw(st.sampled_from([False, None])) if name != "compiled" else value
    return sampler, name, value, compiled


def must_refuse(sampler: str, name: str, value) -> bool:
    """What the documentation plainly forbids (a lenient library may accept more, e.g. a
    number written as a string; it must refuse at least these)."""
    if name not in SAMPLER_OPTIONS[sampler] and name not in RUN_SETTINGS:
        return True  # an unknown option, or one of another sampler
    if name in ("chains", "draws"):
        return not is_int(value) or value < 1 or value >= 10**13
    if name == "warmup":
        return not is_int(value) or value < 0
    if name == "n_steps":
        return not is_int(value) or not 1 <= value <= MAX_STEPS
    if name == "seed":
        return not (value is None or (is_int(value) and value >= 0))
    if name == "step_size":
        return value is not None and not (is_real(value) and math.isfinite(value) and value > 0)
    if name == "target_accept":
        return not (is_real(value) and 0 < value < 1)
    if name == "step_size_jitter":
        return not (is_real(value) and 0 <= value < 1)
    if name == "n_steps_jitter":
        return not (is_real(value) and 0 <= value <= 1)
    if name == "rho":
        return not (is_real(value) and 0 <= value < 1)
    if name == "adapt_step_size":
        return not (value is None or isinstance(value, bool | np.bool_))
    if name == "integrator":
        return not (isinstance(value, str) and value in hm.integrators.names())
    if name == "metric" and isinstance(value, str):
        return value not in ("identity", "diagonal", "dense")
    if name == "checkpoint_seconds" and is_real(value):
        return not value >= 0
    if name == "compiled":
        return not (value is None or isinstance(value, bool | np.bool_))
    return False


def honoured(sampler: str, name: str, value, result) -> bool:
    """Whether an accepted setting did what it says (the run's path for ``compiled``)."""
    if name == "compiled" and value is not None:
        return result.attrs["compiled"] is bool(value)
    return True


def _makes_floats(value) -> bool:
    try:
        np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _makes_a_float(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


@_settings(250)
@given(option_cases(), st.integers(0, 2**32 - 1))
@example(("hmc", "n_steps", 10**9, False), 0)  # the example: refused, not run
@example(("hmc", "stepsize", 0.1, False), 0)  # a typo
@example(("mala", "n_steps", 3, False), 0)  # an option of another sampler
@example(("hmc", "step_size", float("nan"), None), 0)
@example(("hmc", "chains", 10**13, None), 0)
def test_an_option_either_runs_or_is_refused_naming_it(case, seed):
    sampler, name, value, compiled = case
    kwargs = {**BASE, "seed": seed, "compiled": compiled, name: value}
    try:
        result = run("banana", sampler, **kwargs)
    except (ValueError, TypeError) as err:
        event("refused")
        assert names(err, name), f"{type(err).__name__} does not name {name!r}: {err}"
        return
    event("ran")
    assert not must_refuse(sampler, name, value), f"{name}={value!r} was accepted"
    assert honoured(sampler, name, value, result), f"{name}={value!r} was not honoured"
    check_finite_run(result, kwargs["chains"], kwargs["draws"], 2)


@_settings(30)
@given(
    st.sampled_from(
        [
            "step_size",
            "target_accept",
            "rho",
            "step_size_jitter",
            "metric",
            "initial",
            "checkpoint_seconds",
            "chains",
        ]
    ),
    st.integers(2**1024, 10**400) | st.integers(-(10**400), -(2**1024)),
)
@example("step_size", 10**400)
def test_integers_beyond_float_range_are_refused_naming_them(name, huge):
    value = {"metric": [huge, 1.0], "initial": [huge, 0.0]}.get(name, huge)
    with pytest.raises((ValueError, TypeError)) as err:
        run("banana", chains=1, warmup=2, draws=2, seed=0, compiled=False, **{name: value})
    assert names(err.value, name), str(err.value)


@_settings(30)
@given(
    st.sampled_from(
        [
            ("metric", ["a", "b"]),
            ("metric", {"a": 1}),
            ("metric", [[1.0], [1.0, 2.0]]),
            ("metric", [1 + 1j, 1.0]),
            ("checkpoint_seconds", "a"),
            ("checkpoint_seconds", None),
            ("checkpoint_seconds", [1.0]),
            ("checkpoint_seconds", np.ones(2)),
            ("compiled", np.array([True, False])),
        ]
    )
)
@example(("metric", ["a", "b"]))
def test_values_no_number_can_be_made_of_are_refused_naming_them(case):
    name, value = case
    with pytest.raises((ValueError, TypeError)) as err:
        run("banana", chains=1, warmup=2, draws=2, seed=0, **{name: value})
    assert names(err.value, name), str(err.value)


@_settings(10)
@given(st.sampled_from([0, 1, 0.0, 1.0, np.int64(0), np.float64(1.0)]))
@example(0)
def test_compiled_given_as_a_number_is_refused_or_honoured(value):
    try:
        result = run("banana", "hmc", chains=1, warmup=2, draws=2, seed=0, compiled=value)
    except (ValueError, TypeError) as err:
        assert names(err, "compiled"), str(err)
        return
    assert result.attrs["compiled"] is bool(value), f"compiled={value!r} not honoured"
    if value:  # as compiled=True: refused for a sampler with no compiled counterpart
        with pytest.raises(ValueError, match="compiled"):
            run("banana", "rwmh", chains=1, warmup=2, draws=2, seed=0, compiled=value)


@_settings(5)
@given(st.integers(10**12, 10**300), st.sampled_from([False, None]))
@example(10**12, False)
def test_a_warmup_that_cannot_finish_is_refused(warmup, compiled):
    with pytest.raises(ValueError, match=r"\bwarmup\b"):
        run(
            "banana",
            chains=1,
            warmup=warmup,
            draws=1,
            seed=0,
            step_size=0.1,
            compiled=compiled,
            seconds=3.0,
        )


# ---------------------------------------------------------------------- 2. initial points


class RecordingBanana(Banana):
    """The banana, remembering the positions of its first evaluation (the initial state)."""

    def __init__(self):
        super().__init__()
        self.first = None

    def log_prob_and_grad(self, x):
        if self.first is None:
            self.first = np.array(x, dtype=float, copy=True)
        return super().log_prob_and_grad(x)


ELEMENTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-5.0, 5.0),
    st.integers(-5, 5),
    st.text(max_size=3),
    st.sampled_from(["1.5", "nan", "-inf"]),
    st.none(),
    st.booleans(),
)


@st.composite
def initial_cases(draw):
    chains = draw(st.integers(1, 3))
    dim = 2
    good_shapes = st.sampled_from([(dim,), (chains, dim)])
    value = draw(
        st.one_of(
            hnp.arrays(np.float64, good_shapes, elements=st.floats(-1e3, 1e3)),
            hnp.arrays(np.float64, good_shapes, elements=st.floats(allow_nan=True)),
            hnp.arrays(
                np.float64, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)
            ),
            hnp.arrays(np.float32, good_shapes, elements=st.floats(-10, 10, width=32)),
            st.lists(ELEMENTS, max_size=3),
            st.lists(st.lists(ELEMENTS, max_size=3), max_size=3),  # ragged, nested
            ELEMENTS,
            st.just(np.ma.masked_array([0.5, 0.5], mask=[True, False])),
        )
    )
    return chains, value, draw(st.sampled_from([False, None]))


def expected_initial(value, chains: int, dim: int):
    """The ``(chains, dim)`` positions ``value`` stands for per the documentation (shape
    ``(dim,)`` or ``(chains, dim)``, finite numbers), or None where it must be refused."""
    try:
        q = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    if q.shape == (dim,):
        q = np.broadcast_to(q, (chains, dim))
    if q.shape != (chains, dim) or not np.all(np.isfinite(q)):
        return None
    return q


@_settings(120)
@given(initial_cases(), st.integers(0, 2**32 - 1))
@example((2, [1e150, 0.0], None), 0)  # a finite but extreme start: used
@example((2, [1e300, 1e300], False), 0)  # the log density overflows there: refused
@example((1, [[0.1, 0.2]], None), 0)
@example((3, np.zeros((1, 1, 2)), False), 0)
def test_an_initial_point_is_used_as_given_or_refused_naming_initial(case, seed):
    chains, value, compiled = case
    target = RecordingBanana()
    if value is None:  # the default: uniform(-2, 2) starts
        check_finite_run(run(target, chains=chains, warmup=3, draws=3, seed=seed), chains, 3, 2)
        return
    expected = expected_initial(value, chains, target.dim)
    finite_there = False
    if expected is not None:
        with np.errstate(all="ignore"):
            lp, grad = Banana().log_prob_and_grad(expected)
        finite_there = bool(np.all(np.isfinite(lp)) and np.all(np.isfinite(grad)))
    try:
        result = run(
            target, chains=chains, warmup=3, draws=3, seed=seed, initial=value, compiled=compiled
        )
    except (ValueError, TypeError) as err:
        event("refused")
        assert names(err, "initial"), f"{type(err).__name__} does not name initial: {err}"
        assert not finite_there, f"a valid initial point was refused: {err}"
        return
    event("ran")
    assert expected is not None and finite_there, f"initial={value!r} was accepted"
    np.testing.assert_array_equal(target.first, expected)  # used as given, not redrawn
    check_finite_run(result, chains, 3, target.dim)


# ------------------------------------------- 3a. log densities that are not finite in a region

#: How the target misbehaves where x[0] > c: the kernel's code for each.
REGION_MODES = {"nan": 0, "-inf": 1, "+inf": 2, "nan-grad": 3, "inf-grad": 4}
LP_MODES = ("nan", "-inf", "+inf")


def region_kernel(q, grad, fdata, idata):
    """Compiled counterpart of :class:`Region` (module level: numba caches it on disk)."""
    lp = 0.0
    for i in range(q.shape[0]):
        lp -= 0.5 * q[i] * q[i]
        grad[i] = -q[i]
    if q[0] > fdata[0]:
        mode = idata[0]
        if mode == 0:
            return math.nan
        if mode == 1:
            return -math.inf
        if mode == 2:
            return math.inf
        if mode == 3:
            grad[0] = math.nan
        else:
            grad[q.shape[0] - 1] = math.inf
    return lp


class Region(hm.Target):
    """A standard normal whose log density (or gradient) is NaN or infinite where
    ``x[0] > c``; counts the evaluations there."""

    def __init__(self, mode: str, c: float, dim: int, kernel: bool):
        super().__init__(dim)
        self.mode, self.c, self.kernel, self.bad_rows = mode, c, kernel, 0

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        lp, grad = -0.5 * np.sum(x * x, axis=-1), -x
        bad = x[..., 0] > self.c
        self.bad_rows += int(np.sum(bad))
        if self.mode in LP_MODES:
            lp = np.where(bad, {"nan": np.nan, "-inf": -np.inf, "+inf": np.inf}[self.mode], lp)
        else:  # as the kernel: NaN in the first coordinate, or +inf in the last
            column, value = (0, np.nan) if self.mode == "nan-grad" else (self.dim - 1, np.inf)
            grad = grad.copy()
            grad[..., column] = np.where(bad, value, grad[..., column])
        return lp, grad

    def numba_kernel(self):
        if not self.kernel:
            return None
        return NumbaTarget.build(region_kernel, [self.c], [REGION_MODES[self.mode]])


def region_logp(mode: str, c: float):
    """The same log density written for :meth:`Target.from_logp` (autograd)."""
    value = {"nan": np.nan, "-inf": -np.inf, "+inf": np.inf}[mode]

    def logp(x):
        return anp.where(x[0] > c, value, -0.5 * anp.sum(x**2))

    return logp


@st.composite
def region_cases(draw):
    construction = draw(st.sampled_from(["kernel", "subclass", "from_logp"]))
    modes = LP_MODES if construction == "from_logp" else tuple(REGION_MODES)
    return {
        "construction": construction,
        "mode": draw(st.sampled_from(modes)),
        "c": draw(st.floats(-1.0, 1.5)),  # the region holds 7 % to 84 % of the mass
        "dim": draw(st.integers(1, 3)),
        "sampler": draw(st.sampled_from(SAMPLERS)),
        "chains": draw(st.integers(1, 3)),
        "adapt": draw(st.booleans()),
        "draws": draw(st.integers(10, 40)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def build_region(case):
    mode, c, dim = case["mode"], case["c"], case["dim"]
    if case["construction"] == "from_logp":
        return hm.Target.from_logp(region_logp(mode, c), dim=dim)
    return Region(mode, c, dim, kernel=case["construction"] == "kernel")


@_settings(60)
@given(region_cases())
@example(
    {
        "construction": "kernel",
        "mode": "nan",
        "c": 0.5,
        "dim": 2,
        "sampler": "hmc",
        "chains": 2,
        "adapt": True,
        "draws": 40,
        "seed": 1,
    }
)
@example(
    {
        "construction": "subclass",
        "mode": "-inf",
        "c": 0.0,
        "dim": 1,
        "sampler": "rwmh",
        "chains": 1,
        "adapt": False,
        "draws": 40,
        "seed": 2,
    }
)
def test_non_finite_regions_are_rejected_and_never_drawn(case):
    target = build_region(case)
    kwargs = {"chains": case["chains"], "draws": case["draws"], "seed": case["seed"]}
    if case["adapt"]:
        kwargs["warmup"] = 30
    else:
        # No warm-up and a fixed step from a point outside the region: every evaluation in
        # the region belongs to a retained iteration.
        kwargs.update(warmup=0, step_size=0.8, initial=np.full(case["dim"], case["c"] - 0.5))
    compiled = None if case["construction"] == "kernel" else False
    result = run(target, case["sampler"], compiled=compiled, **kwargs)
    check_finite_run(result, case["chains"], case["draws"], case["dim"])
    gradient_only = case["mode"] not in LP_MODES
    if case["sampler"] == "rwmh" and gradient_only:
        return  # random-walk Metropolis never asks for the gradient: no bad region for it
    assert np.all(result.draws[..., 0] <= case["c"]), "a draw lies where the density is not finite"
    # Where the sampler went into the region, the rejections show up as divergences (the
    # compiled path does not call Python, so it is checked by the test after this one).
    # Random-walk Metropolis counts only NaN as divergent: -inf is "outside the support".
    counted = not (case["sampler"] == "rwmh" and case["mode"] == "-inf")
    event(f"compiled={result.attrs['compiled']}, divergences={result.n_divergent > 0}")
    if not case["adapt"] and counted and not result.attrs["compiled"]:
        if getattr(target, "bad_rows", 0) > 0:
            assert result.n_divergent > 0, "proposals in the region were not recorded"


@st.composite
def trajectory_cases(draw):
    return {
        "mode": draw(st.sampled_from(tuple(REGION_MODES))),
        "c": draw(st.floats(-0.5, 1.0)),
        "dim": draw(st.integers(1, 3)),
        "n_steps": draw(st.integers(2, 12)),
        "chains": draw(st.integers(1, 3)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def check_trajectories_meeting_the_region(case, compiled):
    """HMC: a trajectory that met a non-finite value (its gradient count stopped short of
    its steps) is a divergent rejection, whatever the trajectory did afterwards."""
    target = Region(case["mode"], case["c"], case["dim"], kernel=True)
    result = run(
        target,
        "hmc",
        chains=case["chains"],
        warmup=30,
        draws=60,
        seed=case["seed"],
        n_steps=case["n_steps"],
        compiled=compiled,
    )
    assert result.attrs["compiled"] is (compiled is None)
    stats = result.stats
    met = stats["n_grad"] < stats["n_steps"]
    assert np.all(stats["diverging"][met]), "a trajectory met the region and is not divergent"
    assert not np.any(stats["accepted"][met]), "a trajectory met the region and was accepted"
    check_finite_run(result, case["chains"], 60, case["dim"])
    assert np.all(result.draws[..., 0] <= case["c"])


REPRODUCER = {"mode": "nan", "c": 1.0, "dim": 1, "n_steps": 2, "chains": 1, "seed": 2}


@_settings(25)
@given(trajectory_cases())
@example(REPRODUCER)
def test_a_trajectory_meeting_a_non_finite_value_is_a_divergent_rejection_compiled(case):
    check_trajectories_meeting_the_region(case, compiled=None)


@_settings(25)
@given(trajectory_cases())
@example(REPRODUCER)
def test_a_trajectory_meeting_a_non_finite_value_is_a_divergent_rejection_numpy(case):
    check_trajectories_meeting_the_region(case, compiled=False)


# ------------------------------------------------------------- 3b. exceptions of the model


class DomainError(ValueError):
    """A user's own exception type."""


EXCEPTIONS = (
    ZeroDivisionError,
    FloatingPointError,
    KeyError,
    DomainError,
    ValueError,
    TypeError,
    RuntimeError,
)
DECLARABLE = (ArithmeticError, FloatingPointError, LookupError, DomainError, TypeError)


class Raising(hm.Target):
    """A standard normal whose log density raises ``error`` where ``x[0] > c``; keeps every
    exception it raised."""

    def __init__(self, error, c, dim):
        super().__init__(dim)
        self.error, self.c, self.raised = error, c, []

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        if np.any(x[..., 0] > self.c):
            self.raised.append(self.error("in the region"))
            raise self.raised[-1]
        return -0.5 * np.sum(x * x, axis=-1), -x


def build_raising(construction, error, c, dim):
    """The same model as a subclass, through ``from_functions`` or through ``from_logp``;
    the returned target's ``raised`` (a list) holds the exceptions raised."""
    if construction == "subclass":
        return Raising(error, c, dim)
    raised = []

    def check(x):
        if x[0] > c:
            raised.append(error("in the region"))
            raise raised[-1]

    if construction == "from_functions":

        def log_prob_and_grad(x):
            check(x)
            return -0.5 * np.sum(x * x), -x

        target = hm.Target.from_functions(
            lambda x: log_prob_and_grad(x)[0], log_prob_and_grad, dim=dim
        )
    else:

        def logp(x):
            check(x)
            return -0.5 * anp.sum(x**2)

        target = hm.Target.from_logp(logp, dim=dim)
        # from_logp probes the function on three test points to find whether it takes
        # batches; what it raised there is not the run's.
        raised.clear()
    target.raised = raised
    return target


@st.composite
def exception_cases(draw):
    return {
        "construction": draw(st.sampled_from(["subclass", "from_functions", "from_logp"])),
        "error": draw(st.sampled_from(EXCEPTIONS)),
        "reject_on": tuple(draw(st.lists(st.sampled_from(DECLARABLE), max_size=2))),
        "c": draw(st.floats(-1.0, 1.5)),
        "dim": draw(st.integers(1, 3)),
        "sampler": draw(st.sampled_from(SAMPLERS)),
        "chains": draw(st.integers(1, 3)),
        "adapt": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


@_settings(60)
@given(exception_cases())
@example(
    {
        "construction": "subclass",
        "error": ZeroDivisionError,
        "reject_on": (),
        "c": 0.5,
        "dim": 2,
        "sampler": "hmc",
        "chains": 2,
        "adapt": True,
        "seed": 0,
    }
)
@example(
    {
        "construction": "from_logp",
        "error": DomainError,
        "reject_on": (ValueError,),
        "c": 0.0,
        "dim": 2,
        "sampler": "mala",
        "chains": 2,
        "adapt": False,
        "seed": 0,
    }
)
def test_a_model_exception_is_shown_or_declared_never_swallowed(case):
    target = build_raising(case["construction"], case["error"], case["c"], case["dim"])
    declared = issubclass(case["error"], case["reject_on"]) if case["reject_on"] else False
    draws = 30
    kwargs = {"chains": case["chains"], "draws": draws, "seed": case["seed"]}
    if case["adapt"]:
        kwargs["warmup"] = 20
    else:
        # From a point outside the region with no warm-up: every exception raised belongs
        # to a retained iteration.
        kwargs.update(warmup=0, step_size=0.8, initial=np.full(case["dim"], case["c"] - 0.5))
    try:
        result = run(target, case["sampler"], compiled=False, reject_on=case["reject_on"], **kwargs)
    except hm.ModelError as err:
        event("ModelError")
        assert not declared, f"a declared {case['error'].__name__} stopped the run: {err}"
        cause = err.__cause__
        assert any(cause is e for e in target.raised), "the original exception is not chained"
        assert case["error"].__name__ in str(err) and names(err, "chain"), str(err)
        assert err.chain in range(case["chains"]) and err.position[0] > case["c"]
        return
    event(f"ran, declared={declared}, raised={bool(target.raised)}")
    if not declared:
        assert not target.raised, "the model raised and the run went on: a silent truncation"
    check_finite_run(result, case["chains"], draws, case["dim"])
    assert np.all(result.draws[..., 0] <= case["c"]), "a draw lies where the model raises"
    if not case["adapt"] and target.raised:
        assert result.n_divergent > 0, "the rejected proposals were not recorded"


class Labelled(hm.Target):
    """N(0, 1) in ``x[0]``; ``x[1]`` carries the chain's label (10 x its index) and barely
    moves (its inverse mass is 1e-12 and its force zero); chain ``bad`` raises where
    ``x[0] > c``, so every exception says which chain raised it."""

    def __init__(self, bad: int, c: float):
        super().__init__(2)
        self.bad, self.c = bad, c

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        label = np.rint(x[..., 1] / 10.0)
        if np.any((label == self.bad) & (x[..., 0] > self.c)):
            raise ZeroDivisionError(f"chain {self.bad}")
        grad = np.stack([-x[..., 0], np.zeros_like(x[..., 0])], axis=-1)
        return -0.5 * x[..., 0] ** 2, grad


@_settings(20)
@given(
    st.integers(0, 2),
    st.floats(0.5, 2.0),
    st.sampled_from(["hmc", "mala"]),
    st.integers(0, 2**32 - 1),
)
@example(2, 1.0, "hmc", 4)
def test_a_model_error_names_the_chain_that_raised(bad, c, sampler, seed):
    initial = [[0.0, 0.0], [0.0, 10.0], [0.0, 20.0]]
    with pytest.raises(hm.ModelError) as err:
        run(
            Labelled(bad, c),
            sampler,
            chains=3,
            warmup=50,
            draws=50,
            seed=seed,
            compiled=False,
            initial=initial,
            metric=[1.0, 1e-12],
        )
    assert np.rint(err.value.position[1] / 10.0) == bad  # the position is that of chain bad
    assert err.value.chain == bad and names(err.value, f"chain {bad}"), str(err.value)


# ------------------------------------------------------------------ 3c. wrong return values

#: Returns of ``log_prob_and_grad`` that are not (log density, gradient) numbers of the right
#: shapes, each with what the error must name.
BAD_RETURNS = {
    "log density None": (lambda lp, g: (None, g), "log density"),
    "log density text": (lambda lp, g: ("high", g), "log density"),
    "log density per coordinate": (lambda lp, g: (np.stack([lp, lp], axis=-1), g), "log density"),
    "log density empty": (lambda lp, g: (np.zeros((0,)), g), "log density"),
    "log density complex": (lambda lp, g: (lp + 1j, g), "log density"),
    "log density bool": (lambda lp, g: (lp > 0, g), "log density"),
    "log density object": (lambda lp, g: (np.asarray(lp, dtype=object), g), "log density"),
    "gradient text": (lambda lp, g: (lp, "down"), "gradient"),
    "gradient short": (lambda lp, g: (lp, g[..., :1]), "gradient"),
    "gradient long": (lambda lp, g: (lp, np.concatenate([g, g], axis=-1)), "gradient"),
    "gradient scalar": (lambda lp, g: (lp, 0.0), "gradient"),
    "gradient empty": (lambda lp, g: (lp, np.zeros((0,))), "gradient"),
    "gradient complex": (lambda lp, g: (lp, g + 1j), "gradient"),
}

#: Returns that are not a pair at all, or a gradient of None: pinned by an xfail test.
BROKEN_RETURNS = {
    "None": (lambda lp, g: None, "log_prob_and_grad"),
    "log density alone": (lambda lp, g: lp, "log_prob_and_grad"),
    "three values": (lambda lp, g: (lp, g, g), "log_prob_and_grad"),
    "gradient None": (lambda lp, g: (lp, None), "gradient"),
}


class Returning(hm.Target):
    """A standard normal (dimension 2) returning ``bad(lp, grad)`` from
    ``log_prob_and_grad`` where some ``x[0] > c``; notes when it did."""

    def __init__(self, bad, c):
        super().__init__(2)
        self.bad, self.c, self.returned_bad = bad, c, False

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        lp, g = -0.5 * np.sum(x * x, axis=-1), -x
        if np.any(x[..., 0] > self.c):
            self.returned_bad = True
            return self.bad(lp, g)
        return lp, g


def check_wrong_return(table, kind, c, sampler, chains, seed, reject_on=()):
    bad, what = table[kind]
    target = Returning(bad, c)
    try:
        result = run(
            target,
            sampler,
            chains=chains,
            warmup=10,
            draws=10,
            seed=seed,
            compiled=False,
            reject_on=reject_on,
        )
    except (TypeError, ValueError) as err:
        event("refused")
        assert target.returned_bad, f"refused a model that returned good values: {err}"
        assert what in str(err), f"does not name the {what}: {err}"
        assert "Returning" in str(err), f"does not name the target: {err}"
        return
    # Random-walk Metropolis reads the log density only.
    uses = what != "gradient" or sampler != "rwmh"
    event(f"ran, returned bad values: {target.returned_bad}")
    assert not (target.returned_bad and uses), "a wrong return was used silently"
    check_finite_run(result, chains, 10, 2)


@_settings(60)
@given(
    st.sampled_from(sorted(BAD_RETURNS)),
    st.floats(-1.0, 3.0),
    st.sampled_from(SAMPLERS),
    st.sampled_from([1, 3]),  # never 2 (= dim): a transposed batch gradient would fit
    st.integers(0, 2**32 - 1),
)
def test_a_wrong_return_is_refused_naming_it(kind, c, sampler, chains, seed):
    check_wrong_return(BAD_RETURNS, kind, c, sampler, chains, seed)


@_settings(20)
@given(
    st.sampled_from(sorted(BROKEN_RETURNS)),
    st.floats(-1.0, 1.0),
    st.sampled_from(["hmc", "mala"]),
    st.sampled_from([(), (TypeError, ValueError)]),
    st.integers(0, 2**32 - 1),
)
@example("None", 0.0, "hmc", (), 0)
def test_a_return_that_is_not_a_pair_of_numbers_is_refused_naming_it(
    kind, c, sampler, reject_on, seed
):
    check_wrong_return(BROKEN_RETURNS, kind, c, sampler, 3, seed, reject_on)


@_settings(20)
@given(
    st.sampled_from(
        [
            "log density None",
            "gradient None",
            "gradient short",
            "gradient scalar",
            "log density complex",
        ]
    ),
    st.floats(-1.0, 1.0),
    st.integers(0, 2**32 - 1),
)
@example("log density None", 0.5, 0)
def test_a_function_target_refuses_a_wrong_return_naming_it(kind, c, seed):
    bad = {**BAD_RETURNS, **BROKEN_RETURNS}[kind][0]
    what = "gradient" if kind.startswith("gradient") else "log density"
    returned_bad = []

    def log_prob_and_grad(x):
        lp, g = -0.5 * np.sum(x * x), -x
        if x[0] > c:
            returned_bad.append(True)
            return bad(lp, g)
        return lp, g

    target = hm.Target.from_functions(lambda x: log_prob_and_grad(x)[0], log_prob_and_grad, dim=2)
    try:
        run(target, chains=3, warmup=10, draws=10, seed=seed, compiled=False)
    except (TypeError, ValueError) as err:
        assert what in str(err), str(err)
        return
    assert not returned_bad, "a wrong return was used silently"
