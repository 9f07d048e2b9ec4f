"""A data target's potential split into components over subsets of its rows (split HMC).

Cobb and Jalaian (2021, §3.2) split the potential of a posterior over i.i.d. data into
:math:`M` components, one per disjoint subset :math:`(X_m, Y_m)` of the rows, each taking an
equal share of the prior:

.. math::

    U(\\omega) = \\sum_{m=1}^{M} U_m(\\omega), \\qquad
    U_m(\\omega) = -\\frac{\\log p(\\omega)}{M} - \\ell_m(\\omega), \\qquad
    \\ell_m(\\omega) = \\log p(Y_m \\mid X_m, \\omega).

A split integrator (:mod:`hamiltonia.integrators.data_split`) kicks the momentum with one
component's gradient at a time, so only one subset's intermediate arrays exist at once and
the memory of a gradient falls roughly as :math:`1/M`; the Metropolis test still uses the
whole :math:`U`, which :class:`SplitTarget` also evaluates subset by subset.

The subsets are consecutive, equal-sized (to one row) chunks of the training rows, fixed for
the whole run (the seed's and hamiltorch's mini-batches, materialised once).

A data target takes part by being a :class:`RowTarget`: it evaluates the log likelihood of a
range of its rows plus a share of its log prior. Its compiled form is a kernel that follows
the component convention of :class:`~hamiltonia.compiled.NumbaTarget` (``components`` > 0:
``idata[0]`` selects the component, ``-1`` the whole density), which
:func:`component_idata` lays out.

References
----------
Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
neural networks with symmetric splitting*, UAI, §3.2 and Algorithm 1. Neal, R. M. (2011),
*MCMC using Hamiltonian dynamics*, §5.1 (splitting over data subsets).
"""

from __future__ import annotations

import numpy as np

from hamiltonia._validation import check_int
from hamiltonia.targets.base import Target

__all__ = [
    "RowTarget",
    "SplitTarget",
    "check_n_splits",
    "component_idata",
    "split_boundaries",
    "split_target",
]


def check_n_splits(n_splits, n_rows: int) -> int:
    """``n_splits`` as an int in ``1..n_rows``, or a :class:`ValueError` naming the
    parameter and the valid range (a float, even 2.0, is refused: a count of subsets)."""
    return check_int(n_splits, f"n_splits (the number of data subsets, at most the {n_rows} rows)",
                     minimum=1, maximum=n_rows)  # fmt: skip


def split_boundaries(n_rows: int, n_splits: int) -> np.ndarray:
    """Row boundaries :math:`0 = r_0 < r_1 < \\dots < r_M = N` of ``n_splits`` consecutive
    subsets whose sizes differ by at most one (the first ``N mod M`` one row larger)."""
    n_splits = check_n_splits(n_splits, n_rows)
    size, extra = divmod(n_rows, n_splits)
    sizes = np.full(n_splits, size, dtype=np.int64)
    sizes[:extra] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def component_idata(boundaries, base_idata) -> np.ndarray:
    """The ``idata`` of a component kernel: ``[-1, M, r_0 .. r_M, *base_idata]``.

    ``idata[0]`` selects the component (``-1``: the whole density, which the chain's own
    calls see); a split integrator's kernel writes the component into a private copy
    before each call, so chains running in parallel never share the selection."""
    boundaries = np.asarray(boundaries, dtype=np.int64)
    head = np.array([-1, boundaries.size - 1], dtype=np.int64)
    return np.concatenate([head, boundaries, np.asarray(base_idata, dtype=np.int64)])


class RowTarget:
    """A target whose log density is a sum over i.i.d. rows plus a log prior.

    A subclass provides

    * ``n_obs``: the number of training rows :math:`N`;
    * :meth:`rows_log_prob_and_grad`: :math:`\\sum_{i \\in [a, b)} \\ell_i(\\omega) + s
      \\log p(\\omega)` and its gradient, for positions of shape ``(..., D)``. With
      ``(0, N, 1.0)`` it must be the target's ``log_prob_and_grad``, the same floating-point
      operations included, so that one split is the plain target bit for bit;
    * for the compiled path, ``row_kernels`` = ``(module, whole, split)``: the names of two
      kernels of the module, the whole density and the density split into components (see
      :mod:`hamiltonia.targets.logistic_kernel` for the pattern: both call one row function
      that holds the maths), with ``_kernel_data()`` (``fdata``) and ``_kernel_sizes()``
      (the whole kernel's ``idata``). Without them the target runs on the NumPy path. A
      ``device_log_prob`` in the module is the whole density's form for the fused GPU chain
      (:attr:`~hamiltonia.compiled.targets.NumbaTarget.device_function`).
    """

    #: ``(module, whole kernel, split kernel)``, or ``None``: no compiled form.
    row_kernels: tuple[str, str, str] | None = None
    # The kernel is built from the subclass's row kernels: the class naming them provides it;
    # the rows' density is the density too.
    kernel_attributes = ("numba_kernel", "row_kernels")
    numeric_methods = (*Target.numeric_methods, "rows_log_prob_and_grad")

    def rows_log_prob_and_grad(self, x, start: int, stop: int, prior_share: float):
        raise NotImplementedError

    def _row_kernel(self, which: int):
        import importlib

        return getattr(importlib.import_module(self.row_kernels[0]), self.row_kernels[which])

    def numba_kernel(self):
        """The whole density's compiled kernel (``None`` without ``row_kernels``)."""
        if self.row_kernels is None:
            return None
        import importlib

        from hamiltonia.compiled.targets import NumbaTarget

        # The module's device_log_prob, where it has one, is the density's form for the
        # fused GPU chain (NumbaTarget.device_function).
        device = getattr(importlib.import_module(self.row_kernels[0]), "device_log_prob", None)
        return NumbaTarget.build(
            self._row_kernel(1), self._kernel_data(), self._kernel_sizes(), device_function=device
        )

    def split_numba_kernel(self, boundaries):
        """The kernel of the density split at the row ``boundaries`` into components
        (``None`` without ``row_kernels``)."""
        if self.row_kernels is None:
            return None
        from hamiltonia.compiled.targets import NumbaTarget

        idata = component_idata(boundaries, self._kernel_sizes())
        return NumbaTarget.build(
            self._row_kernel(2), self._kernel_data(), idata, components=len(boundaries) - 1
        )


class SplitTarget(Target):
    """``target`` with its potential split into ``n_splits`` components over its rows.

    The log density and its gradient are the target's (summed subset by subset, so their
    memory falls with :math:`M` too); :meth:`component_log_prob_and_grad` gives
    :math:`-U_m` and :math:`-\\nabla U_m` for one subset. With ``n_splits=1`` it is the
    target itself.

    Parameters
    ----------
    target : RowTarget
        A data target (logistic regression, the Bayesian neural networks, a linear
        regression...).
    n_splits : int
        :math:`M`, from 1 to the number of training rows.
    """

    def __init__(self, target, n_splits):
        if not isinstance(target, RowTarget):
            raise TypeError(
                f"target {type(target).__name__} has no rows to split (a split target needs "
                "a data target that evaluates a range of its rows, hamiltonia.targets.split."
                "RowTarget)"
            )
        if isinstance(target, SplitTarget):
            raise TypeError("target is already split; split the data target once")
        self.base = target
        self.n_splits = check_n_splits(n_splits, int(target.n_obs))
        self.boundaries = split_boundaries(int(target.n_obs), self.n_splits)
        super().__init__(target.dim, target.names)
        # What a data target reports and predicts is the base's.
        for attr in ("research_n_steps", "research_field_strength", "research_mass_volatility",
                     "description"):  # fmt: skip
            if hasattr(target, attr):
                setattr(self, attr, getattr(target, attr))

    @property
    def n_components(self) -> int:
        return self.n_splits

    @property
    def n_obs(self) -> int:
        return int(self.base.n_obs)

    def component_rows(self, m: int) -> tuple[int, int]:
        """The rows ``[start, stop)`` of subset ``m`` (from 0)."""
        if not 0 <= m < self.n_splits:
            raise IndexError(f"component must be in 0..{self.n_splits - 1}, got {m}")
        return int(self.boundaries[m]), int(self.boundaries[m + 1])

    def component_log_prob_and_grad(self, x, m: int):
        """:math:`(-U_m(x), -\\nabla U_m(x))`: the log likelihood of subset ``m`` plus
        :math:`1/M` of the log prior."""
        start, stop = self.component_rows(m)
        return self.base.rows_log_prob_and_grad(x, start, stop, 1.0 / self.n_splits)

    def log_prob_and_grad(self, x):
        if self.n_splits == 1:
            return self.base.log_prob_and_grad(x)
        lp, grad = self.component_log_prob_and_grad(x, 0)
        for m in range(1, self.n_splits):
            lp_m, grad_m = self.component_log_prob_and_grad(x, m)
            lp, grad = lp + lp_m, grad + grad_m
        return lp, grad

    def log_prob(self, x):
        if self.n_splits == 1:
            return self.base.log_prob(x)
        return self.log_prob_and_grad(x)[0]

    @property
    def has_hvp(self) -> bool:
        return self.base.has_hvp

    def hvp(self, x, v):
        return self.base.hvp(x, v)

    @property
    def kernel_targets(self) -> tuple:
        # The kernel is the base's, split.
        return (self, *self.base.kernel_targets)

    def numba_kernel(self):
        kernel = self.base.split_numba_kernel(self.boundaries)
        if kernel is not None and kernel.components != self.n_splits:
            raise ValueError(
                f"{type(self.base).__name__}.split_numba_kernel gave {kernel.components} "
                f"components for {self.n_splits} splits"
            )
        return kernel

    # What the results and the predictive checks read are the base target's.
    @property
    def constrains(self) -> bool:
        return self.base.constrains

    def constrain(self, x):
        return self.base.constrain(x)

    def initial_point(self, rng):
        return self.base.initial_point(rng)

    def unconstrain(self, values, chains: int = 1):
        return self.base.unconstrain(values, chains)

    @property
    def reported_names(self):
        return self.base.reported_names

    @property
    def blocks(self):
        return self.base.blocks

    @property
    def coords(self):
        return self.base.coords

    def pointwise_log_likelihood(self, draws):
        return self.base.pointwise_log_likelihood(draws)

    @property
    def observed_data(self):
        return self.base.observed_data

    @property
    def exact_moments(self):
        return self.base.exact_moments

    def __getattr__(self, name):
        # predict, metrics, test data...: the data target's own (only reached for names
        # this class does not define).
        if name.startswith("_") or name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def __repr__(self) -> str:
        return f"SplitTarget({self.base!r}, n_splits={self.n_splits})"


def split_target(target, n_splits) -> SplitTarget:
    """``target`` split into ``n_splits`` components (a :class:`SplitTarget` already split
    that many ways is returned as it is)."""
    if isinstance(target, SplitTarget):
        if target.n_splits == check_n_splits(n_splits, target.n_obs):
            return target
        return SplitTarget(target.base, n_splits)
    return SplitTarget(target, n_splits)
