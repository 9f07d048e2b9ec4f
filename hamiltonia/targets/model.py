"""A user's model: a log density over named, constrained parameter blocks.

.. code-block:: python

    import autograd.numpy as np
    import hamiltonia as hm

    y = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
    sigma = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])

    def logp(p):                       # eight schools, non-centred
        theta = p["mu"] + p["tau"] * p["eta"]
        return (-0.5 * (p["mu"] / 5) ** 2 - np.log1p((p["tau"] / 5) ** 2)
                - 0.5 * np.sum(p["eta"] ** 2) - 0.5 * np.sum(((y - theta) / sigma) ** 2))

    model = hm.Model(logp, {"mu": hm.real(), "tau": hm.positive(),
                            "eta": hm.real(8, dims="school")})
    result = hm.sample(model)          # result.posterior["eta"]: (chain, draw, school)

By default ``logp`` is compiled by numba with a generated gradient, so that the whole chain
runs compiled; a ``logp`` numba cannot compile runs with autograd, with a warning saying why.
The sampler moves in the unconstrained space of :class:`~hamiltonia.ParameterLayout`; the
target's log density there is

.. math::

    \\log p(z) = \\texttt{logp}(T(z)) + \\log\\lvert\\det J_T(z)\\rvert,

with :math:`T` the blocks' constraints (:mod:`hamiltonia.modelling.constraints`). On the
autograd backend the gradient and the Hessian-vector product come from autograd; ``logp``
gets every block with the chains as
leading axes when it accepts them (found out on three test points), and otherwise one chain
at a time, which a :class:`~hamiltonia.targets.base.RowByRowWarning` announces with its cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from hamiltonia.modelling.constraints import Real
from hamiltonia.modelling.parameters import (
    ParameterLayout,
    axis_names,
    check_names,
    element_names,
)
from hamiltonia.targets.base import FunctionTarget, Target
from hamiltonia.targets.logp_backends import jax_functions, numba_or_autograd

__all__ = ["Model"]


def _as_dict(out, default) -> dict:
    """``out`` by name: a mapping as it is, else under ``default``, a name, or a function
    naming it (:meth:`Model._observations`)."""
    if callable(default):
        return dict(default(out))
    return dict(out) if isinstance(out, Mapping) else {default: out}


def _one_per_point(lp, z):
    """``lp``, the value of the user's ``logp`` at the positions ``z`` (..., dim), checked: a
    number per position. Anything else is the user's bug, named here rather than deep in
    autograd (``lp`` may be an autograd box or a JAX tracer, which have shapes)."""
    if lp is None or isinstance(lp, str | bytes | dict | list | tuple):
        raise TypeError(
            f"logp returned {type(lp).__name__}; it must return the log density, a number"
        )
    shape, want = tuple(np.shape(lp)), tuple(np.shape(z)[:-1])
    if shape != want:
        raise ValueError(
            f"logp returned shape {shape} for positions of shape {want or 'one point'}; it "
            "must return one number per position (did a sum miss its axis, or is a term "
            "not summed?)"
        )
    return lp


class Model(FunctionTarget):
    """A target from a log density over named blocks (module docs).

    Parameters
    ----------
    logp : callable
        ``logp(params) -> float``: the log density (up to a constant) of the constrained
        blocks ``params[name]``, written with ``autograd.numpy``. Priors and likelihood
        together; the Jacobians of the constraints are added by the model.
    params : mapping of str to Param
        The blocks, e.g. ``{"mu": hm.real(), "tau": hm.positive(), "w": hm.simplex(3)}``.
    log_likelihood : callable, optional
        ``log_likelihood(params)``: the log likelihood of each observation, an array of
        shape ``(n_obs,)`` (or a dict of them by observed variable): the ArviZ
        ``log_likelihood`` group, for ``arviz_stats.loo``.
    observed_data : mapping, optional
        The observations by name: the ArviZ ``observed_data`` group.
    generated : callable, optional
        ``generated(params) -> {name: array}``: quantities derived from each draw (as
        NumPyro's ``deterministic`` sites), reported after the parameters.
    simulate : callable, optional
        ``simulate(params, rng) -> {name: array}``: observations simulated from the
        likelihood at one set of constrained parameters, with a
        :class:`numpy.random.Generator`: the posterior predictive
        (:meth:`Result.sample_posterior_predictive
        <hamiltonia.Result.sample_posterior_predictive>`) and, with ``prior``, the prior
        predictive (:func:`hamiltonia.sample_prior_predictive`;
        :mod:`hamiltonia.modelling.predictive`).
    prior : callable, optional
        ``prior(rng) -> {block: value}``: one draw of every block from the prior (the
        distributions that ``logp``'s prior terms are the densities of), constrained.
    coords : mapping, optional
        Labels of the named dimensions (``dims=`` of the blocks, ``generated_dims`` and
        ``observed_dims``), e.g. ``{"school": ["A", ..., "H"]}``.
    observed_dims : mapping, optional
        Dimension names of each observed variable, e.g. ``{"y": ["school"]}``: the dims
        of its ``observed_data``, ``log_likelihood`` and predictive variables.
    vectorized : bool or None
        Whether the functions accept blocks with the chains as leading axes; ``None``
        finds out.
    backend : {None, "numba", "autograd", "jax"}
        ``None`` (default): ``"numba"`` where numba compiles ``logp``, else ``"autograd"``
        with a :class:`~hamiltonia.targets.base.CompileWarning` giving numba's reason
        (the backend used is the attribute ``backend``); also, at once, where the compile
        would take longer than the budget
        (:data:`~hamiltonia.modelling.compile_budget.COMPILE_BUDGET_SECONDS`, predicted from
        the recorded size, as of a Python loop over many data points).
        ``"autograd"``: the gradient from autograd, on the NumPy path. ``"numba"``: the
        same ``logp`` (written with ``autograd.numpy``), recorded once and compiled by numba
        with a generated reverse-mode gradient (:mod:`hamiltonia.modelling.user_target`), so
        that the whole chain, NUTS included, runs compiled (over the compile budget too,
        after a ``CompileWarning`` that says how long it may take); ``log_likelihood`` and
        ``generated`` stay on autograd. ``"jax"`` (as :meth:`Target.from_jax
        <hamiltonia.Target.from_jax>`): the functions take one point and are written with
        ``jax.numpy``; JAX compiles them, maps them over the chains and differentiates
        them.
    """

    def __init__(
        self,
        logp: Callable,
        params: Mapping,
        *,
        log_likelihood: Callable | None = None,
        observed_data: Mapping | None = None,
        generated: Callable | None = None,
        simulate: Callable | None = None,
        prior: Callable | None = None,
        coords: Mapping | None = None,
        generated_dims: Mapping | None = None,
        observed_dims: Mapping | None = None,
        vectorized: bool | None = None,
        backend: str | None = None,
    ):
        for label, fn in (("logp", logp), ("log_likelihood", log_likelihood),
                          ("generated", generated), ("simulate", simulate),
                          ("prior", prior)):  # fmt: skip
            if fn is not None and not callable(fn):
                raise TypeError(f"{label} must be callable, got {type(fn).__name__}")
        if vectorized is not None and not isinstance(vectorized, bool):
            raise ValueError(f"vectorized must be True, False or None, got {vectorized!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.layout = layout = ParameterLayout(params)
        self._user_logp = logp
        xp = _namespace(backend)

        def log_density(z):
            values, log_jac = layout.constrain(z, xp)
            return _one_per_point(logp(values), z) + log_jac

        kernel = None
        if backend == "jax":
            # Traced in float64 first, so that float32 data (jnp arrays made before JAX's
            # 64-bit mode was on) are named with the fix (logp_backends.check_float64),
            # before the probe fails on them with JAX's dtype message.
            log_prob, lp_grad, hvp = jax_functions(log_density, layout.dim)
            _probe(logp, layout)
            vectorized = True
        else:
            _probe(logp, layout)
            log_prob, lp_grad, hvp, vectorized, kernel, backend = numba_or_autograd(
                log_density, layout.dim, vectorized, "logp", backend
            )
        #: The backend the model runs with: for ``backend=None``, ``"numba"`` or, where
        #: numba cannot compile ``logp``, ``"autograd"``.
        self.backend = backend
        self.compiled_callback = backend == "jax"
        names = [
            n if isinstance(p.constraint, Real) else f"{n}__unconstrained"
            for name, p in layout.params.items()
            for n in element_names(name, p.unconstrained_shape if p.shape else ())
        ]
        super().__init__(log_prob, lp_grad, layout.dim, names, hvp=hvp, vectorized=vectorized,
                         numba_target=kernel)  # fmt: skip
        self._coords = {str(k): list(v) for k, v in (coords or {}).items()}
        self._observed = None if observed_data is None else {
            str(k): np.asarray(v) for k, v in observed_data.items()
        }  # fmt: skip
        self._log_likelihood = log_likelihood
        self._simulate = simulate
        self._prior = prior
        self._generated = generated
        self._generated_blocks: list = []
        if generated is not None:
            self._generated_blocks = self._describe_generated(generated_dims or {})
        self._reported = layout.names + tuple(
            n for name, shape, _ in self._generated_blocks for n in element_names(name, shape)
        )
        self._observed_dims = self._check_observed_dims(observed_dims or {})
        # Names first: a dimension named twice in one variable would otherwise be reported
        # as a size mismatch by the coords check.
        self._check_group_names()
        self._check_coords(generated_dims or {})

    def _check_group_names(self) -> None:
        """Names each ArviZ group can hold apart: the posterior's (blocks and generated
        quantities) and the observations' (``observed_data``, ``log_likelihood`` and the
        predictive groups) each checked on their own (:func:`check_names`), and no
        posterior variable named as an observed one (the run's variables take their dims
        by name, in every group)."""
        posterior = [("parameter", n, p.shape, p.dims) for n, p in self.layout.params.items()]
        posterior += [("generated quantity", *block) for block in self._generated_blocks]
        check_names(posterior)
        observed = [("observed variable", name, np.shape(value), self._observed_dims.get(name))
                    for name, value in (self._observed or {}).items()]  # fmt: skip
        check_names(observed)
        observed_names = {name for _, name, *_ in observed}
        shared = [(kind, name) for kind, name, *_ in posterior if name in observed_names]
        if shared:
            kind, name = shared[0]
            raise ValueError(
                f"{kind} {name!r} has the name of an observed variable; rename one (the "
                "observations' predictive draws take their name)"
            )

    def _check_observed_dims(self, observed_dims: Mapping) -> dict:
        """``observed_dims`` as ``{name: [dim, ...]}``, each naming an observed variable (of
        ``observed_data``, when given) with one dimension name per axis."""
        out = {}
        for name, dims in observed_dims.items():
            dims = [dims] if isinstance(dims, str) else list(dims)
            if not all(isinstance(d, str) for d in dims):
                raise ValueError(f"observed_dims[{name!r}] must be dimension names, got {dims!r}")
            if self._observed is not None:
                if name not in self._observed:
                    raise ValueError(
                        f"observed_dims names {name!r}, which observed_data does not hold (it "
                        f"holds {sorted(self._observed)})"
                    )
                shape = np.shape(self._observed[name])
                if len(dims) != len(shape):
                    raise ValueError(
                        f"observed_dims[{name!r}] names {len(dims)} dimensions for an "
                        f"observation of shape {shape}"
                    )
            out[str(name)] = dims
        return out

    def _check_coords(self, generated_dims: Mapping) -> None:
        """Every named dimension has one size, its labels (``coords``) that many, and every
        ``coords`` and ``generated_dims`` entry names something the model has: checked now,
        not when the draws are written out."""
        unknown = sorted(set(map(str, generated_dims)) - {b[0] for b in self._generated_blocks})
        if unknown:
            raise ValueError(
                f"generated_dims names {unknown}, which generated does not return (it returns "
                f"{[b[0] for b in self._generated_blocks]})"
            )
        sizes: dict[str, tuple[int, str]] = {}
        observed = [
            [name, list(np.shape(self._observed[name])), dims]
            for name, dims in self._observed_dims.items()
            if self._observed is not None
        ]
        for name, shape, dims in self.blocks + observed:
            for dim, size in zip(dims, shape, strict=True) if dims else ():
                if dim in sizes and sizes[dim][0] != size:
                    raise ValueError(
                        f"dimension {dim!r} has {sizes[dim][0]} entries in {sizes[dim][1]!r} "
                        f"but {size} in {name!r}"
                    )
                sizes.setdefault(dim, (size, name))
        # The observations' dims without observed_data: named, of a size only log_likelihood
        # will tell, so their labels are not counted here.
        unsized = {d for dims in self._observed_dims.values() for d in dims} - set(sizes)
        for dim, labels in self._coords.items():
            if dim in unsized:
                continue
            if dim not in sizes:
                raise ValueError(
                    f"coords labels the dimension {dim!r}, which no block has (named "
                    f"dimensions: {sorted(sizes) or 'none; give dims= to a block'})"
                )
            if len(labels) != sizes[dim][0]:
                raise ValueError(
                    f"coords gives {len(labels)} labels for the dimension {dim!r}, which has "
                    f"{sizes[dim][0]} entries (in {sizes[dim][1]!r})"
                )

    # ------------------------------------------------------------------ reporting
    def _per_draw(self, fn: Callable, values: dict, batch: tuple, default: str) -> dict:
        """``fn`` at each draw of the blocks ``values`` (leading axes ``batch``): one call
        on the batch when ``fn`` accepts it, else draw by draw."""
        n = int(np.prod(batch, dtype=int))
        flat = {k: np.reshape(v, (n, *np.shape(v)[len(batch) :])) for k, v in values.items()}
        if self.backend == "jax":
            # A function of one point, mapped over the draws by JAX.
            mapped = self.__dict__.setdefault("_jax_mapped", {})
            if id(fn) not in mapped:  # traced and compiled once per function
                mapped[id(fn)] = _jax_vmap(fn)
            out = _as_dict(mapped[id(fn)](flat), default)
        elif n >= 3 and self._batches(fn, flat):
            out = _as_dict(fn(flat), default)
        else:
            rows = [_as_dict(fn({k: v[i] for k, v in flat.items()}), default) for i in range(n)]
            out = {k: np.stack([np.asarray(r[k], dtype=float) for r in rows]) for k in rows[0]}
        return {k: np.reshape(np.asarray(v, dtype=float), batch + np.shape(v)[1:])
                for k, v in out.items()}  # fmt: skip

    def _batches(self, fn: Callable, flat: dict) -> bool:
        """Whether ``fn`` gives on the first three draws as a batch what it gives on each."""
        cache = self.__dict__.setdefault("_batch_ok", {})
        if id(fn) not in cache:
            sample = {k: v[:3] for k, v in flat.items()}
            try:
                with np.errstate(all="ignore"):
                    batch = _as_dict(fn(sample), "value")
                    rows = [_as_dict(fn({k: v[i] for k, v in sample.items()}), "value")
                            for i in range(3)]  # fmt: skip
                cache[id(fn)] = batch.keys() == rows[0].keys() and all(
                    np.shape(batch[k]) == (3, *np.shape(rows[0][k]))
                    and np.allclose(
                        np.asarray(batch[k], dtype=float),
                        np.stack([np.asarray(r[k], dtype=float) for r in rows]),
                        equal_nan=True,
                    )
                    for k in batch
                )
            except Exception:
                cache[id(fn)] = False
        return cache[id(fn)]

    def _describe_generated(self, dims: Mapping) -> list:
        values, _ = self.layout.constrain(np.zeros(self.layout.dim))
        out = _as_dict(self._generated(values), "generated")
        blocks = []
        for name, value in out.items():
            if name in self.layout.params:
                raise ValueError(f"generated quantity {name!r} has the name of a parameter")
            try:
                shape = np.asarray(value, dtype=float).shape
            except (TypeError, ValueError):
                raise TypeError(
                    f"generated returned {value!r} for {name!r}; generated quantities must "
                    "be numbers or arrays of numbers"
                ) from None
            blocks.append([name, shape, axis_names(dims.get(name), shape)])
        return blocks

    def constrain(self, x):
        x = np.asarray(x, dtype=float)
        values, _ = self.layout.constrain(x)
        return self._report(values, x.shape[:-1])

    def _report(self, values: dict, batch: tuple) -> np.ndarray:
        """The reported values ``batch + (len(reported_names),)`` of the constrained blocks
        ``values``: the blocks, then the generated quantities computed from them."""
        flat = self.layout.flatten(values, batch)
        if self._generated is None:
            return flat
        extra = self._per_draw(self._generated, values, batch, "generated")
        parts = [flat] + [
            np.reshape(extra[name], (*batch, int(np.prod(shape, dtype=int))))
            for name, shape, _ in self._generated_blocks
        ]
        return np.concatenate(parts, axis=-1)

    def unconstrain(self, values, chains: int = 1):
        if isinstance(values, Mapping):
            return self.layout.unconstrain(values, (chains,))
        return super().unconstrain(values, chains)

    @property
    def reported_names(self):
        return self._reported

    @property
    def blocks(self):
        own = [[n, list(p.shape), None if p.dims is None else list(p.dims)]
               for n, p in self.layout.params.items()]  # fmt: skip
        extra = [[n, list(s), None if d is None else list(d)] for n, s, d in self._generated_blocks]
        return own + extra

    @property
    def coords(self):
        return dict(self._coords)

    @property
    def observed_dims(self):
        return {k: list(v) for k, v in self._observed_dims.items()}

    def pointwise_log_likelihood(self, draws):
        if self._log_likelihood is None:
            return None
        draws = np.asarray(draws, dtype=float)
        values = self.layout.unflatten(draws[..., : self.layout.size])
        return self._per_draw(self._log_likelihood, values, draws.shape[:-1],
                              self._observations("log_likelihood"))  # fmt: skip

    def _observations(self, who: str) -> Callable:
        """What names the result of ``who`` (``log_likelihood``, ``simulate``) by observed
        variable: one array takes the name of the only observed variable, so that ArviZ
        gives it that variable's dims and pairs it with its observations
        (:func:`~hamiltonia.modelling.predictive.name_observations`)."""
        from hamiltonia.modelling.predictive import name_observations

        known = self._observed is not None
        observed = tuple(self._observed if known else self._observed_dims)
        return lambda out: name_observations(out, observed, who, known=known)

    @property
    def observed_data(self):
        return None if self._observed is None else dict(self._observed)

    def simulate_observations(self, draws, rngs):
        if self._simulate is None:
            return None
        from hamiltonia.modelling.predictive import simulate_per_draw

        draws = np.asarray(draws, dtype=float)
        values = self.layout.unflatten(draws[..., : self.layout.size])
        return simulate_per_draw(self._simulate, values, rngs, self._observations("simulate"),
                                 "simulate")  # fmt: skip

    def prior_draws(self, n: int, rngs) -> np.ndarray:
        """``n`` draws per generator of ``rngs`` from the prior (``prior=``), as reported
        values, shape ``(len(rngs), n, len(reported_names))`` (generated quantities
        included): each block as the prior returned it, checked against its shape and the
        closure of its constraint's support (:meth:`_prior_block`), not sent through the
        unconstrained space and back."""
        if self._prior is None:
            raise ValueError(
                "this model has no prior simulator: give Model(..., prior=fn), fn(rng) "
                "returning a draw of every block from the prior"
            )
        chains = len(rngs)
        rows = []
        for rng in rngs:
            for _ in range(n):
                out = self._prior(rng)
                if not isinstance(out, Mapping) or set(out) != set(self.layout.params):
                    got = sorted(out) if isinstance(out, Mapping) else type(out).__name__
                    raise ValueError(
                        f"prior must return a value for every block "
                        f"{sorted(self.layout.params)}, got {got}"
                    )
                rows.append(out)
        values = {}
        for name, param in self.layout.params.items():
            values[name] = np.reshape(self._prior_block(name, param, rows, n),
                                      (chains, n, *param.shape))  # fmt: skip
        # The draws as the prior gave them: through the unconstrained space and back, a
        # draw on a bound (a Dirichlet's exact zeros) would be refused or moved, and one
        # close to it (1e-300) rounded.
        return self._report(values, (chains, n))

    def _prior_block(self, name: str, param, rows: list, n: int) -> np.ndarray:
        """Block ``name`` of the prior's draws ``rows`` (``n`` per chain), stacked, each
        checked: numbers, of the block's shape, in the closure of its support (a draw on a
        bound is a draw rounded there); a ValueError names the chain and draw that fail."""
        block = []
        for i, row in enumerate(rows):
            where = f"chain {i // n}, draw {i % n}"
            try:
                value = np.asarray(row[name], dtype=float)
            except (TypeError, ValueError):
                raise ValueError(
                    f"prior returned {row[name]!r:.80} for {name!r} ({where}); it must return "
                    "numbers or arrays of numbers"
                ) from None
            if value.shape != tuple(param.shape):
                raise ValueError(
                    f"prior returned shape {value.shape} for {name!r} ({where}), whose shape "
                    f"is {tuple(param.shape)}"
                )
            constraint = param.constraint
            if name in self.layout.reads:  # bounds of the other blocks of this draw
                read = {k: np.asarray(row[k], dtype=float) for k in self.layout.reads[name]}
                constraint = self.layout.constraint_at(name, read)
            if not np.all(constraint.contains_closure(value)):
                raise ValueError(
                    f"prior returned a draw of {name!r} outside its support (it must be "
                    f"{param.constraint.description}) at {where}: {value.tolist()!r:.120}; "
                    "check the prior's distribution against the block's constraint"
                )
            block.append(value)
        return np.stack(block)

    def __repr__(self):
        return f"Model({', '.join(self.layout.params)}; dim={self.dim})"


#: How a model's gradient is taken: autograd (NumPy code), numba (the same NumPy code,
#: compiled with a generated gradient) or JAX (``jax.numpy`` code); ``None``, numba where
#: it compiles, else autograd.
BACKENDS = (None, "numba", "autograd", "jax")


def _probe(logp: Callable, layout: ParameterLayout) -> None:
    """Call ``logp`` once, on the blocks at the centre of the unconstrained space, so that a
    bug in it (a shape that does not broadcast, a misspelled block) is shown as the user's
    error with the blocks it got, before any backend traces or compiles it (where the same
    error surfaces many frames deep in autograd's or numba's machinery)."""
    centre = np.zeros(layout.dim)
    values, _ = layout.constrain(centre)
    try:
        with np.errstate(all="ignore"):
            value = logp(values)
    except Exception as err:
        shapes = ", ".join(f"{name} {np.shape(v)}" for name, v in values.items())
        err.add_note(
            f"hamiltonia: logp raised this when called with one point, the blocks (by name, "
            f"with their shapes): {shapes}. With several chains each block gets the chains as "
            "leading axes."
        )
        raise
    _one_per_point(value, centre)


def _namespace(backend: str):
    if backend == "jax":
        import jax.numpy as jnp

        return jnp
    import autograd.numpy as anp

    return anp


def _jax_vmap(fn: Callable):
    import jax

    return jax.jit(jax.vmap(fn))


Target.named_model = Model
