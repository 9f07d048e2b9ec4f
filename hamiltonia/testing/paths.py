"""Both-paths agreement: the NumPy path and the compiled path give the same draws.

Each part's maths is written once and runs on the vectorised NumPy path and in the compiled
chain kernel, and both paths draw from the same per-chain ``numpy.random.Generator`` streams
(DESIGN.md, "Functional core, object shell"). So the same sampler, target and seed, run with
``compiled=False`` and with ``compiled=True`` through :func:`hamiltonia.sample`, must give
the same draws up to rounding, and the same discrete outcomes (accept decisions, tree
depths, divergences, gradient counts) exactly. A part whose compiled kernel computes
something else than its Python method fails this check at once, at the size of a step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PATHS_ATOL", "assert_paths_agree"]

#: The default tolerance of :func:`assert_paths_agree` (see there for why).
PATHS_ATOL = 1e-9


def _compare(name: str, a, b, atol: float, rtol: float) -> None:
    """``a`` (NumPy path) and ``b`` (compiled path): equal when discrete (bool, int),
    within ``atol + rtol |b|`` when floating point."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{name}: shape {a.shape} on the NumPy path, {b.shape} compiled"
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        mismatch = np.argwhere(a != b)
        assert mismatch.size == 0, (
            f"{name} differs between the paths at {len(mismatch)} places, first at index "
            f"{tuple(int(i) for i in mismatch[0])}: NumPy {a[tuple(mismatch[0])]}, compiled "
            f"{b[tuple(mismatch[0])]}"
        )
        return
    np.testing.assert_allclose(
        a, b, rtol=rtol, atol=atol, err_msg=f"{name}: the NumPy path and the compiled path differ"
    )


def assert_paths_agree(
    target: Any,
    sampler: Any = "nuts",
    *,
    atol: float = PATHS_ATOL,
    rtol: float | None = None,
    stats: bool | tuple[str, ...] = True,
    device: str | None = None,
    **sample_kwargs: Any,
):
    """Run ``sampler`` on ``target`` on both paths and assert that they agree.

    :func:`hamiltonia.sample` runs twice with the same arguments, ``compiled=False`` then
    ``compiled=True`` (``progress=False`` unless given). Then

    * the draws agree to ``atol``: :math:`|x^\\text{NumPy} - x^\\text{compiled}| \\le
      \\text{atol}` elementwise;
    * every statistic both runs record agrees: exactly when it is discrete (``accepted``,
      ``diverging``, ``n_grad``, ``n_steps``, ``tree_depth``, fixed-point counts...), and
      floating-point ones (``energy``, ``lp``, ``acceptance_rate``, ``step_size``...)
      within :math:`\\text{atol} + \\text{rtol}\\,|b|`;
    * the importance weights (``log_weights``), the kept gradients (``gradients``) and the
      kept warm-up (``warmup_draws``, ``warmup_stats``) agree the same way when the run has
      them.

    **The tolerance.** The two paths compute the same maths in a different order: NumPy
    uses SIMD ``exp``/``log`` and pairwise (blocked) sums over a row, the compiled kernels
    loop element by element and let LLVM contract ``a * b + c`` into fused multiply-adds.
    Each operation therefore differs in its last bit (a relative :math:`10^{-16}`), and a
    chain carries and amplifies that difference from iteration to iteration (a trajectory
    is a smooth map with a Lipschitz constant above one). Over a *short* run (tens of
    iterations of a few steps, a fixed step size) on a well-conditioned target it stays
    around :math:`10^{-12}` to :math:`10^{-10}`, hence the default :data:`PATHS_ATOL`
    :math:`= 10^{-9}`. A difference in the maths (a wrong sign, a missing factor, another
    random number) shows at the size of a step, :math:`10^{-3}` to :math:`10^{-1}`, at
    once. A longer run, a chaotic target or an adapted step size (dual averaging feeds
    the difference back into every later step) needs a larger ``atol``, to be given
    explicitly with the reason.

    Parameters
    ----------
    target : Target or str
        The target (or its registered name).
    sampler : str or Sampler
        As :func:`hamiltonia.sample` takes it (default ``"nuts"``, as there). Give a fixed
        ``step_size`` (and ``warmup=0``) unless warm-up itself is under test.
    atol : float
        Absolute tolerance (default :data:`PATHS_ATOL`).
    rtol : float, optional
        Relative tolerance of the floating-point statistics and weights (default ``atol``:
        an energy of :math:`10^3` then agrees to :math:`10^{-6}`); the draws use ``atol``
        alone.
    stats : bool or tuple of str
        Which statistics to compare: all that both runs record (``True``, the default),
        none (``False``), or the names given.
    device : str, optional
        Compare the compiled path on the CPU with the compiled path on this device
        (``"cuda"``: :mod:`hamiltonia.compiled.device_chain`) instead of the NumPy path with
        the compiled one: the check that a part runs on the GPU as it does on the CPU (its
        kernels are the same functions, so the two differ by the CPU's fused
        multiply-adds and reassociated sums alone).
    **sample_kwargs
        Passed to :func:`hamiltonia.sample` for both runs (``chains``, ``warmup``,
        ``draws``, ``seed``, ``step_size``, ``initial``, sampler options...).

    Returns
    -------
    numpy_run, compiled_run : Result
        The two runs, for further checks.
    """
    import hamiltonia as hm

    if "compiled" in sample_kwargs:
        raise ValueError("assert_paths_agree runs both paths: do not pass compiled=")
    rtol = atol if rtol is None else rtol
    sample_kwargs.setdefault("progress", False)
    if device is None:
        numpy_run, compiled_run = (
            hm.sample(target, sampler, compiled=compiled, **sample_kwargs)
            for compiled in (False, True)
        )
        assert numpy_run.attrs["compiled"] is False and compiled_run.attrs["compiled"] is True
        paths = "the NumPy path and the compiled path"
    else:
        numpy_run, compiled_run = (
            hm.sample(target, sampler, compiled=True, device=where, **sample_kwargs)
            for where in ("cpu", device)
        )
        paths = f"the compiled path on the CPU and on {device!r}"
    np.testing.assert_allclose(
        numpy_run.draws,
        compiled_run.draws,
        rtol=0,
        atol=atol,
        err_msg=f"draws: {paths} differ",
    )
    for name in ("log_weights", "gradients", "warmup_draws"):
        a, b = getattr(numpy_run, name), getattr(compiled_run, name)
        assert (a is None) == (b is None), f"{name}: recorded on one path only"
        if a is not None:
            _compare(name, a, b, atol, rtol)
    groups = [("stats", numpy_run.stats, compiled_run.stats)]
    if numpy_run.warmup_stats is not None and compiled_run.warmup_stats is not None:
        groups.append(("warmup_stats", numpy_run.warmup_stats, compiled_run.warmup_stats))
    for group, a, b in groups:
        if stats is False:
            break
        names = sorted(set(a) & set(b)) if stats is True else list(stats)
        for name in names:
            assert name in a and name in b, f"statistic {name!r} is not recorded on both paths"
            _compare(f"{group}[{name!r}]", a[name], b[name], atol, rtol)
    return numpy_run, compiled_run
