"""Compiling a machine's kernels before its first run (``hamiltonia compile``).

numba compiles a sampler's chain kernel on the first run that needs it, and caches it on
disk, keyed to the machine (its processor and numba's version): every later run, in any
process, loads it in a fraction of a second, and one chain kernel serves every target and
model (each is called through a log density of one signature). On a fresh machine the first
run pays the compilation instead: NUTS's chain kernel takes about 8 s of one core (of a
first run of eight schools of 9.5 s, against 0.5 s once it is cached; measured), and the
checks of a long run (:data:`~hamiltonia.diagnostics.estimators.COMPILED_MIN_SIZE` numbers
or more) about 7 s more. pip runs nothing after an install, so a Docker image, a cluster's
setup script or a CI job with a cached home folder runs ``hamiltonia compile`` once after
``pip install`` (or calls :func:`prebuild`). A model's own code is compiled at its first
use as before, and cached by its structure.

The kernels are compiled by short runs on small built-in targets, so they are exactly those
a run of the same sampler with its default options uses; a run with other options (a dense
metric, another integrator) composes another kernel, compiled at its first use. numba's
cache is keyed to the processor it compiled on (its name and features): kernels compiled
on one machine serve machines of the same processor, and another one compiles its own
(``NUMBA_CPU_NAME=generic``, set for both, makes code for any x86-64 processor, at some
cost in speed). They are written under ``HAMILTONIA_CACHE`` (by default the user's cache
folder, :func:`hamiltonia.datasets.fetch.cache_root`) and ``HAMILTONIA_KERNEL_DIR``: an
image built by one user for another sets them to a folder both can read.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_SAMPLERS", "Prebuilt", "diagnostic_kernels", "prebuild"]

#: The samplers :func:`prebuild` compiles by default: the default sampler.
DEFAULT_SAMPLERS = ("nuts",)
#: The target a sampler's kernel is compiled on: a small one (a split sampler needs one with
#: rows of data).
_TARGETS = {"split-hmc": "linear-regression"}
_TARGET = "gaussian-d10"


@dataclass(frozen=True)
class Prebuilt:
    """One item :func:`prebuild` compiled (or loaded from the cache, where it was there).

    Attributes
    ----------
    what : str
        ``"sampler NAME"``, ``"calls"`` (the calls of a compiled log density from Python)
        or ``"diagnostics"`` (the checks' kernels of a long run).
    seconds : float
        The time it took.
    compiled : bool
        False for a sampler that has no compiled path (it runs in NumPy: nothing to
        compile).
    """

    what: str
    seconds: float
    compiled: bool = True


def diagnostic_kernels() -> None:
    """Compile (or load) the kernels of a long run's diagnostics and end-of-run checks,
    each for the arguments a run gives it, by computing them once on draws at the
    compiled size."""
    from hamiltonia.diagnostics import checks, estimators, rank_estimators

    size = estimators.COMPILED_MIN_SIZE
    x = np.random.default_rng(0).normal(size=(2, size // 4 + 1, 2))
    estimators.screened_convergence(x, 1.01, 200.0)
    estimators.convergence(x)  # by blocks of quantities (hamiltonia.diagnostics.batched)
    estimators.extremes(x)
    checks.e_bfmi(x[..., 0], compiled=True)
    # One quantity at a time: a very long run's road, and the runaway check's R-hat.
    quantity = rank_estimators._Quantity(x[..., 0])
    quantity.rhat(), quantity.ess_bulk(), quantity.ess_tail(0.89), quantity.ess_mean()


def _check_writable() -> None:
    """Both folders of compiled kernels can be written: else numba would keep them for this
    process only (the package's own in a temporary folder), and a pre-build would do
    nothing for the next."""
    import tempfile

    from hamiltonia._numba_cache import package_cache_dir
    from hamiltonia.compiled.compose import kernel_dir

    for folder, variable in ((package_cache_dir(), "HAMILTONIA_CACHE"),
                             (str(kernel_dir()), "HAMILTONIA_KERNEL_DIR")):  # fmt: skip
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as err:
            raise OSError(
                f"cannot write the kernel cache folder {folder} ({err.strerror or err}); "
                f"point {variable} to a folder this user can write"
            ) from None


def _calls() -> None:
    from hamiltonia import targets
    from hamiltonia.compiled.calls import at_point, at_rows

    target = targets.get(_TARGET)
    kernel = target.numba_kernel()
    q = np.zeros((3, target.dim))
    grad = np.empty_like(q)
    at_point(kernel.function, q[0], grad[0], kernel.fdata, kernel.idata)
    at_rows(kernel.function, q, np.empty(3), grad, kernel.fdata, kernel.idata)


def prebuild(samplers=DEFAULT_SAMPLERS, *, diagnostics: bool = True) -> list[Prebuilt]:
    """Compile the kernels that a first run needs into numba's disk cache (module docs).

    Parameters
    ----------
    samplers : sequence of str
        Registered sampler names (``hamiltonia list``); each one's chain kernel, with its
        default options, is compiled by a run of 2 chains of 20 warm-up iterations and 20
        draws.
    diagnostics : bool
        Also compile the kernels of a long run's diagnostics (:func:`diagnostic_kernels`).

    Returns
    -------
    list of Prebuilt
        What was compiled, in order, and how long each took (a fraction of a second where
        the cache already held it).

    Raises
    ------
    KeyError
        An unknown sampler name (the message lists the registered ones), before anything
        is compiled.
    OSError
        A cache folder that cannot be written (the kernels would be compiled for this
        process only), before anything is compiled.
    """
    from hamiltonia import samplers as registered
    from hamiltonia.runner.run import sample

    names = [samplers] if isinstance(samplers, str) else list(samplers)
    for name in names:
        registered.options(name)  # an unknown name is an error before any work
    _check_writable()
    done = []
    for name in names:
        began = time.perf_counter()
        with warnings.catch_warnings():
            # A run this short warns of its low ESS; it is not a run anyone reads.
            warnings.simplefilter("ignore")
            result = sample(_TARGETS.get(name, _TARGET), name, chains=2, warmup=20,
                            draws=20, seed=0, progress=False)  # fmt: skip
        done.append(Prebuilt(f"sampler {name}", time.perf_counter() - began,
                             bool(result.attrs.get("compiled"))))  # fmt: skip
    began = time.perf_counter()
    _calls()
    done.append(Prebuilt("calls", time.perf_counter() - began))
    if diagnostics:
        began = time.perf_counter()
        diagnostic_kernels()
        done.append(Prebuilt("diagnostics", time.perf_counter() - began))
    return done
