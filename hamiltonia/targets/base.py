"""The :class:`Target`: the distribution a sampler draws from.

A target owns the log density :math:`\\log \\pi(x)` (up to a constant), its gradient, an
optional Hessian-vector product, the dimension and the parameter names. Samplers work with
the potential energy :math:`U(x) = -\\log \\pi(x)`, which the Hamiltonian derives from the
target.

Every method takes positions of shape ``(..., dim)``: leading axes are batch axes (chains),
so that many chains can share one call.

The functions that turn a user's log density into the functions of a target
(:meth:`Target.from_logp`, :meth:`Target.from_jax`) are in
:mod:`hamiltonia.targets.logp_backends`, their warnings in
:mod:`hamiltonia.targets.logp_warnings`; this module re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hamiltonia._validation import check_positions
from hamiltonia.targets.logp_backends import (
    AUTOGRAD_NUMPY_BACKENDS,  # noqa: F401 (moved to logp_backends)
    _jax_x64,  # noqa: F401 (pickles of jax_functions' closures name it here)
    accepts_batches,
    autograd_functions,
    check_dim,
    check_one_number,
    jax_functions,
    numba_functions,
    numba_or_autograd,
)
from hamiltonia.targets.logp_warnings import CompileWarning, RowByRowWarning

__all__ = [
    "SETTINGS",
    "CompileWarning",
    "ExactMoments",
    "FunctionTarget",
    "RowByRowWarning",
    "Target",
    "accepts_batches",
    "autograd_functions",
    "check_one_number",
    "check_setting",
    "jax_functions",
    "numba_functions",
    "with_setting",
]

#: The settings every built-in target factory takes (``setting=``): ``"default"``,
#: hamiltonia's own choices, and ``"paper"``, the model and data handling of the publication
#: the target comes from (Mongwe 2022, thesis, ch. 3), with the gaps the publication leaves
#: filled as each target's documentation says.
SETTINGS = ("default", "paper")


@dataclass(frozen=True)
class ExactMoments:
    """Exact first and second moments of a target, where they are known.

    Attributes
    ----------
    mean : ndarray, shape ``(dim,)``
        Exact marginal means; ``nan`` where unknown.
    var : ndarray, shape ``(dim,)``
        Exact marginal variances; ``nan`` where unknown or infinite.
    """

    mean: np.ndarray
    var: np.ndarray


class Target:
    """Abstract target distribution.

    Subclasses implement :meth:`log_prob` and :meth:`log_prob_and_grad`; :meth:`hvp` is
    optional (samplers that need curvature, such as the shadow samplers, check for it).

    Contract
    --------
    * ``log_prob(x)`` returns :math:`\\log\\pi(x)` up to an additive constant, with shape
      ``x.shape[:-1]``. Outside the support it returns ``-inf``; it may also return ``nan``
      or raise, and samplers treat such a point as a rejected, divergent proposal.
    * ``log_prob_and_grad(x)`` returns ``(log_prob, grad)`` with the gradient
      :math:`\\nabla_x \\log\\pi(x)` of shape ``x.shape``.
    * ``hvp(x, v)`` returns the Hessian-vector product :math:`\\nabla^2_x \\log\\pi(x)\\, v`.
    * ``dim`` and ``names`` (``len(names) == dim``) describe the parameters.
    * ``exact_moments`` is an :class:`ExactMoments` or ``None``.

    Positions are in the unconstrained space; ``constrain`` maps draws to the space the user
    reports (identity by default).
    """

    #: The class of a model over named parameter blocks (:class:`hamiltonia.Model`), which
    #: the constructors here build when given ``params``. :mod:`hamiltonia.targets.model`
    #: sets it on import: the model is a target, so this module cannot import it.
    named_model: type | None = None

    #: One line shown by ``hamiltonia list``.
    description: str = ""

    #: Which of :data:`SETTINGS` built the target (a factory's ``setting``); results record
    #: it with the target's parameters, and a ``"paper"`` target says so in its description.
    setting: str = "default"

    #: The research's settings for this kind of target (Mongwe 2022, thesis, §3.5 and
    #: Table 3.8; §4.3.1), used by the recipes of the magnetic and
    #: quantum-inspired family when an option is left out: the magnetic field strength
    #: :math:`g` (0.2 for the logistic regressions, 0.1 otherwise), the vol-of-vol
    #: :math:`\beta` of a random mass (0.1 for banana and Australian credit, 0.3 otherwise)
    #: and the trajectory length :math:`L` (15; 50 for the funnel and the logistic
    #: regressions, 25 for the networks). A plugin target may set its own.
    research_field_strength: float = 0.1
    research_mass_volatility: float = 0.3
    research_n_steps: int = 15

    #: Array backends the target computes with (see :mod:`hamiltonia.backend`). A target that
    #: takes its namespace from its input (``array_namespace(x)``) and keeps its data on that
    #: backend lists them all; the default is NumPy only.
    backends: tuple[str, ...] = ("numpy",)

    #: Whether a target with no numba kernel runs, by default (``compiled=None``), on the
    #: compiled path, called back from the compiled chain one point at a time
    #: (:mod:`hamiltonia.compiled.callback`), rather than on the NumPy path, which makes one
    #: call for all chains but runs the trajectory (the no-U-turn tree) in Python. True
    #: where a call on one point costs little beyond the target's own work: a jitted JAX
    #: function (eight schools and a hierarchical logistic regression run about twice as
    #: fast). False by default: a call to autograd costs hundreds of microseconds of its own,
    #: and one call on all chains is then cheaper.
    compiled_callback: bool = False

    #: The methods that compute the density: a subclass that overrides one of them below the
    #: class giving :meth:`numba_kernel` (a tempered built-in target) does not run that
    #: class's kernel, which computes the parent's density, but runs as a Python target.
    numeric_methods: tuple[str, ...] = ("log_prob", "log_prob_and_grad", "grad_log_prob")
    #: The attributes that give :meth:`numba_kernel` its density: the class defining the
    #: most derived of them provides the kernel (a base that builds the kernel from pieces
    #: its subclasses name lists those pieces too, as ``RowTarget`` its ``row_kernels``).
    kernel_attributes: tuple[str, ...] = ("numba_kernel",)

    @property
    def kernel_targets(self) -> tuple:
        """The targets whose kernels :meth:`numba_kernel` uses (checked for a subclass that
        rewrites their density): the target itself; a wrapper adds the one it wraps."""
        return (self,)

    def __init__(self, dim: int, names: Sequence[str] | None = None):
        self._dim = check_dim(dim)
        if names is None:
            names = [f"x{i + 1}" for i in range(self._dim)]
        names = [str(n) for n in names]
        if len(names) != self._dim:
            raise ValueError(f"names must have length dim={self._dim}, got {len(names)} names")
        if len(set(names)) != len(names):
            raise ValueError("names must be unique")
        reserved = sorted({"chain", "draw"} & set(names))
        if reserved:
            raise ValueError(
                f"names holds {reserved}: 'chain' and 'draw' are kept by ArviZ for the draws' "
                "dimensions; choose another"
            )
        self._names = tuple(names)

    @property
    def dim(self) -> int:
        """Number of (unconstrained) parameters."""
        return self._dim

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names, one per dimension."""
        return self._names

    @property
    def exact_moments(self) -> ExactMoments | None:
        """Exact means and variances where known, else ``None``."""
        return None

    @property
    def has_hvp(self) -> bool:
        """Whether :meth:`hvp` is available."""
        return type(self).hvp is not Target.hvp

    def log_prob(self, x: np.ndarray) -> np.ndarray:
        """Log density (up to a constant) at ``x`` of shape ``(..., dim)``."""
        return self.log_prob_and_grad(x)[0]

    def log_prob_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log density and its gradient at ``x`` of shape ``(..., dim)``.

        A subclass defines this method, or both :meth:`log_prob` and :meth:`grad_log_prob`
        (then called one after the other here)."""
        cls = type(self)
        if cls.log_prob is not Target.log_prob and cls.grad_log_prob is not Target.grad_log_prob:
            return self.log_prob(x), self.grad_log_prob(x)
        raise NotImplementedError(
            f"{cls.__name__} must define log_prob_and_grad, or both log_prob and grad_log_prob"
        )

    def grad_log_prob(self, x: np.ndarray) -> np.ndarray:
        """Gradient of the log density at ``x``."""
        return self.log_prob_and_grad(x)[1]

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Hessian of the log density at ``x`` times ``v`` (both of shape ``(..., dim)``)."""
        raise NotImplementedError(f"{type(self).__name__} has no Hessian-vector product")

    def numba_kernel(self):
        """The compiled log density for the compiled path, or ``None`` (the default).

        Return a :class:`hamiltonia.compiled.NumbaTarget`, usually built with
        ``NumbaTarget.build(py_func, fdata, idata)`` from a module-level function
        ``py_func(q, grad_out, fdata, idata) -> log_prob`` written in the subset of Python
        numba compiles (see :mod:`hamiltonia.compiled.targets`).
        """
        return None

    def initial_point(self, rng: np.random.Generator) -> np.ndarray | None:
        """A default initial position ``(dim,)`` drawn from ``rng``, for a target that knows a
        better start than hamiltonia's uniform(-2, 2) (a network's layer-scaled
        initialisation); ``None`` (the default) keeps uniform(-2, 2)."""
        return None

    @property
    def constrains(self) -> bool:
        """Whether :meth:`constrain` changes the draws (a subclass that overrides it does):
        the reported values are then not the sampled coordinates."""
        return type(self).constrain is not Target.constrain

    def constrain(self, x: np.ndarray) -> np.ndarray:
        """Map unconstrained draws ``(..., dim)`` to the reported values
        ``(..., len(reported_names))`` (identity by default)."""
        return x

    @property
    def reported_names(self) -> tuple[str, ...]:
        """Names of the values :meth:`constrain` reports (``names`` by default): with named
        blocks, ``mu``, ``eta[0]``, ...; they label the result's draws."""
        return self.names

    @property
    def blocks(self) -> list | None:
        """The reported values as named blocks ``[name, shape, dims]``, in the order of
        :attr:`reported_names`, or ``None``: each name is then a scalar variable."""
        return None

    @property
    def coords(self) -> dict:
        """Labels of the named dimensions of :attr:`blocks` (ArviZ coords)."""
        return {}

    @property
    def observed_dims(self) -> dict:
        """Dimension names of each observed variable ``{name: [dim, ...]}`` (the dims of
        its ``observed_data``, ``log_likelihood`` and predictive variables)."""
        return {}

    def unconstrain(self, values, chains: int = 1) -> np.ndarray:
        """The unconstrained positions, shape ``(chains, dim)``, of initial ``values``:
        an array of shape ``(dim,)`` or ``(chains, dim)`` here; named values for a target
        with :attr:`blocks` of parameters."""
        from collections.abc import Mapping

        if isinstance(values, Mapping):
            raise ValueError(
                f"target {type(self).__name__} has no named parameters: give initial as an "
                f"array of shape ({self.dim},) or ({chains}, {self.dim})"
            )
        try:
            q = np.asarray(values, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(
                f"initial must be an array of numbers of shape ({self.dim},) or "
                f"({chains}, {self.dim}), got {values!r:.80}"
            ) from None
        if q.shape == (self.dim,):
            q = np.broadcast_to(q, (chains, self.dim)).copy()
        if q.shape != (chains, self.dim):
            raise ValueError(
                f"initial must have shape ({self.dim},) or ({chains}, {self.dim}), got {q.shape}"
            )
        return q

    def pointwise_log_likelihood(self, draws: np.ndarray) -> dict | None:
        """The log likelihood of each observation at each of ``draws`` (reported values,
        shape ``(..., len(reported_names))``), by observed variable: arrays of shape
        ``draws.shape[:-1] + (n_obs,)``; ``None`` when the target has no likelihood to
        report (the ArviZ ``log_likelihood`` group, for LOO and WAIC)."""
        return None

    @property
    def observed_data(self) -> dict | None:
        """The observations by name (the ArviZ ``observed_data`` group), or ``None``."""
        return None

    def simulate_observations(self, draws: np.ndarray, rngs) -> dict | None:
        """Observations simulated at each of ``draws`` (reported values, shape ``(chains,
        n, len(reported_names))``), chain ``c`` drawing from ``rngs[c]``, by name: arrays of
        shape ``(chains, n, ...)`` (the ArviZ ``posterior_predictive`` group); ``None`` when
        the target cannot simulate its data (:mod:`hamiltonia.modelling.predictive`)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim})"

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def from_logp(
        logp: Callable[[np.ndarray], float],
        dim: int,
        names: Sequence[str] | None = None,
        *,
        vectorized: bool | None = None,
        backend: str | None = None,
    ) -> FunctionTarget:
        """A target from a log density written with ``autograd.numpy``.

        By default the log density and its gradient are compiled by numba from autograd's
        trace (:func:`numba_functions`) and run on the compiled path; a density numba
        cannot compile (an unsupported function, a branch on a parameter) runs with autograd
        on the NumPy path instead, with a :class:`CompileWarning` saying why
        (:func:`numba_or_autograd`). The Hessian-vector product comes from autograd
        (forward over reverse) either way.

        Parameters
        ----------
        logp : callable
            ``logp(x) -> float`` for ``x`` of shape ``(dim,)``, written with
            ``autograd.numpy`` operations.
        dim : int
            Number of parameters.
        names : sequence of str, optional
            Parameter names (default ``x1 .. x{dim}``).
        vectorized : bool or None
            Whether ``logp`` also accepts ``(..., dim)`` and returns ``(...)``: one call then
            serves all chains. ``None`` (default) finds out by calling it on a batch of
            three points and on each of them (:func:`accepts_batches`); when it does not,
            the function is applied row by row and a :class:`RowByRowWarning` says what a
            gradient costs that way.
        backend : {None, "numba", "autograd"}
            How the gradient is taken: ``None`` (default) numba where it compiles, else
            autograd (above); ``"numba"`` requires numba (a ``TraceError`` says why it
            cannot); ``"autograd"`` takes it by autograd on the NumPy path.
        """
        if not callable(logp):
            raise TypeError(f"logp must be callable, got {type(logp).__name__}")
        log_prob, lp_grad, hvp, vectorized, kernel, _ = numba_or_autograd(
            logp, dim, vectorized, "logp", backend
        )
        return FunctionTarget(log_prob, lp_grad, dim=dim, names=names, hvp=hvp,
                              vectorized=vectorized, numba_target=kernel)  # fmt: skip

    @staticmethod
    def from_jax(logp: Callable, dim: int | None = None, names=None, *, params=None, **model):
        """A target from a log density of one point written with ``jax.numpy`` (extra
        ``jax``): compiled with ``jax.jit``, vectorised over the chains with ``jax.vmap``,
        gradient and Hessian-vector product from JAX, in float64 (:func:`jax_functions`).

        Give ``dim`` (and optionally ``names``) for a flat vector ``x``, or ``params``, the
        named blocks of a :class:`~hamiltonia.Model` (``logp(p)`` then gets them by name,
        constrained, and ``model`` takes :class:`~hamiltonia.Model`'s other arguments:
        ``log_likelihood``, ``generated``, ``observed_data``, ``coords``...).

        A run (``compiled=None``) calls the jitted function back from the compiled chain, one
        point at a time, so that the trajectory (the no-U-turn tree) runs compiled
        (:attr:`Target.compiled_callback`); ``compiled=False`` runs the vectorised NumPy
        path, one call for all chains.
        """
        if not callable(logp):
            raise TypeError(f"logp must be callable, got {type(logp).__name__}")
        if (dim is None) == (params is None):
            raise ValueError("give either dim (a flat vector) or params (named blocks)")
        if params is not None:
            return Target.named_model(logp, params, backend="jax", **model)
        if model:
            raise TypeError(f"unexpected arguments {sorted(model)} for a flat target")
        log_prob, lp_grad, hvp = jax_functions(logp, dim)
        target = FunctionTarget(log_prob, lp_grad, dim, names, hvp=hvp, vectorized=True)
        target.compiled_callback = True
        return target

    @staticmethod
    def from_functions(
        log_prob: Callable,
        log_prob_and_grad: Callable,
        dim: int,
        names: Sequence[str] | None = None,
        *,
        hvp: Callable | None = None,
        vectorized: bool = False,
    ) -> FunctionTarget:
        """A target from explicit functions; see :class:`FunctionTarget`."""
        return FunctionTarget(
            log_prob, log_prob_and_grad, dim=dim, names=names, hvp=hvp, vectorized=vectorized
        )


def check_setting(setting) -> str:
    """``setting`` if it is one of :data:`SETTINGS`, else ``ValueError`` naming the argument
    and the valid values (checked by every built-in factory before any data are loaded)."""
    if not isinstance(setting, str) or setting not in SETTINGS:
        valid = ", ".join(repr(s) for s in SETTINGS)
        raise ValueError(f"setting must be one of {valid}, got {setting!r}")
    return setting


def with_setting(target: Target, setting: str) -> Target:
    """Record ``setting`` on ``target`` (its attribute :attr:`Target.setting`) and, for any
    setting but ``"default"``, in its description (``"... [setting: paper]"``), so that a run
    shows which variant it sampled. Returns ``target``."""
    target.setting = check_setting(setting)
    if setting != "default":
        target.description = f"{target.description} [setting: {setting}]"
    return target


class FunctionTarget(Target):
    """A target built from user functions.

    Parameters
    ----------
    log_prob : callable
        ``log_prob(x)`` for ``x`` of shape ``(dim,)`` (or ``(..., dim)`` when vectorised).
    log_prob_and_grad : callable
        ``log_prob_and_grad(x) -> (log_prob, grad)``.
    dim : int
        Number of parameters.
    names : sequence of str, optional
        Parameter names.
    hvp : callable, optional
        ``hvp(x, v)``: Hessian of the log density at ``x`` times ``v``.
    vectorized : bool
        Whether the functions accept a batch ``(..., dim)``. If not, batches are evaluated
        row by row.
    numba_target : NumbaTarget, optional
        The same log density compiled, for the compiled path (:meth:`numba_kernel`).
    """

    def __init__(
        self,
        log_prob: Callable,
        log_prob_and_grad: Callable,
        dim: int,
        names: Sequence[str] | None = None,
        *,
        hvp: Callable | None = None,
        vectorized: bool = False,
        numba_target=None,
    ):
        super().__init__(dim, names)
        for name, fn in (("log_prob", log_prob), ("log_prob_and_grad", log_prob_and_grad)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        if hvp is not None and not callable(hvp):
            raise TypeError(f"hvp must be callable, got {type(hvp).__name__}")
        self._log_prob = log_prob
        self._log_prob_and_grad = log_prob_and_grad
        self._hvp = hvp
        self.vectorized = bool(vectorized)
        self._numba_target = numba_target

    def numba_kernel(self):
        return self._numba_target

    @property
    def has_hvp(self) -> bool:
        return self._hvp is not None

    def log_prob(self, x):
        x = check_positions(x, self.dim)
        if self.vectorized or x.ndim == 1:
            return np.asarray(self._log_prob(x), dtype=float)
        flat = x.reshape(-1, self.dim)
        out = np.array([float(self._log_prob(row)) for row in flat])
        return out.reshape(x.shape[:-1])

    def log_prob_and_grad(self, x):
        x = check_positions(x, self.dim)
        if self.vectorized or x.ndim == 1:
            # Returned as they come: hamiltonia.state checks them (a None made a float would
            # be a silent nan).
            return self._log_prob_and_grad(x)
        from hamiltonia.state import one_point

        flat = x.reshape(-1, self.dim)
        lps = np.empty(flat.shape[0])
        grads = np.empty_like(flat)
        for i, row in enumerate(flat):
            lps[i], grads[i] = one_point(self, "log_prob_and_grad", self._log_prob_and_grad(row),
                                         self.dim)  # fmt: skip
        return lps.reshape(x.shape[:-1]), grads.reshape(x.shape)

    def hvp(self, x, v):
        if self._hvp is None:
            raise NotImplementedError("this target was built without an hvp function")
        x = check_positions(x, self.dim)
        v = check_positions(v, self.dim, name="v")
        if self.vectorized or x.ndim == 1:
            return np.asarray(self._hvp(x, v), dtype=float)
        xb, vb = np.broadcast_arrays(x, v)
        flat_x, flat_v = xb.reshape(-1, self.dim), vb.reshape(-1, self.dim)
        out = np.array([self._hvp(a, b) for a, b in zip(flat_x, flat_v, strict=True)])
        return out.reshape(xb.shape)
