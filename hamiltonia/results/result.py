"""The :class:`Result` of a run: draws, statistics, summaries, ArviZ output, netCDF files.

Its conversion to and from an ArviZ DataTree (:meth:`Result.to_datatree`,
:meth:`Result.from_datatree`) is in :mod:`hamiltonia.results.datatree`, which
:class:`Result` inherits it from; this module holds the run's record, its summaries and its
files (:meth:`Result.save`, :func:`load`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hamiltonia import diagnostics
from hamiltonia.diagnostics.summary import (
    DEFAULT_QUANTILES,
    check_quantiles,
    format_summary,
    summary_table,
)
from hamiltonia.diagnostics.weights import kish_factor
from hamiltonia.reducers.base import weighted_mean
from hamiltonia.results.datatree import (
    LOG_LIKELIHOOD_MAX_VALUES,  # noqa: F401 (moved to results.datatree)
    PREDICTIVE_GROUPS,  # noqa: F401 (moved to results.datatree)
    DataTreeConversion,
)

__all__ = ["DEFAULT_QUANTILES", "Result", "format_summary", "load"]


@dataclass
class Result(DataTreeConversion):
    """Draws and statistics of a multi-chain run.

    Attributes
    ----------
    draws : ndarray (chains, draws, dim)
        Post-warm-up draws.
    stats : dict of ndarray (chains, draws)
        ``accepted``, ``acceptance_rate``, ``energy``, ``diverging``, ``n_grad``,
        ``n_steps``, ``step_size`` and ``lp`` (the log density of the draw).
    names : tuple of str
        Parameter names.
    log_weights : ndarray (chains, draws) or None
        Log importance weights (shadow samplers), ``None`` for equally weighted draws.
    gradients : ndarray (chains, draws, dim) or None
        The gradient of the log density at each draw, kept by a run with
        :class:`~hamiltonia.reducers.control_variates.ControlVariates`; ``None`` otherwise.
    warmup_draws : ndarray (chains, warm-up draws, dim) or None
        The kept warm-up iterations of a run with ``save_warmup=True``; ``None`` otherwise.
    warmup_stats : dict of ndarray (chains, warm-up draws) or None
        Their statistics.
    sampler : str
        The sampler's registered name.
    target : str
        The target's registered name (or its class name).
    warmup_seconds : float
        Wall-clock time of warm-up (including step-size search).
    sampling_seconds : float
        Wall-clock time of the retained iterations.
    attrs : dict
        Run settings (seed entropy, numbers of warm-up iterations and draws, options).
    """

    draws: np.ndarray
    stats: dict
    names: tuple
    log_weights: np.ndarray | None = None
    gradients: np.ndarray | None = None
    warmup_draws: np.ndarray | None = None
    warmup_stats: dict | None = None
    sampler: str = ""
    target: str = ""
    warmup_seconds: float = 0.0
    sampling_seconds: float = 0.0
    attrs: dict = field(default_factory=dict)
    _target: object = field(default=None, repr=False, compare=False)
    _summary: tuple = field(default=None, repr=False, compare=False)
    _rank_diagnostics: tuple = field(default=None, repr=False, compare=False)
    _log_likelihood: dict | None = field(default=None, repr=False, compare=False)
    _observed: dict | None = field(default=None, repr=False, compare=False)
    #: The predictive groups drawn for this run (``prior``, ``prior_predictive``,
    #: ``posterior_predictive``), by group then variable: written by :meth:`to_datatree`.
    _predictive: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return self.draws.shape[0]

    @property
    def n_draws(self) -> int:
        """Retained draws per chain."""
        return self.draws.shape[1]

    @property
    def dim(self) -> int:
        """Number of parameters."""
        return self.draws.shape[2]

    @property
    def n_grad(self) -> int:
        """Gradient evaluations after warm-up, all chains together."""
        return int(np.sum(self.stats["n_grad"]))

    @property
    def n_divergent(self) -> int:
        """Divergent transitions after warm-up, all chains together."""
        return int(np.sum(self.stats["diverging"]))

    @property
    def acceptance_rate(self) -> float:
        """Mean acceptance statistic after warm-up."""
        return float(np.mean(self.stats["acceptance_rate"]))

    def get_target(self):
        """The target this run sampled: the object itself within the session, or, for a run
        loaded from a file, the registered target rebuilt from its name and parameters (a
        user's model cannot be rebuilt from a file: give it to :func:`load` as ``target=``)."""
        if self._target is None:
            from hamiltonia import targets

            if self.target not in targets.names():
                raise ValueError(
                    f"this run sampled {self.target!r}, which is not a registered target and "
                    "cannot be rebuilt from the file: load it with its model, "
                    "hm.load(path, target=model)"
                )
            params = self.attrs.get("target_params", {}) or {}
            self._target = targets.get(self.target, **params)
        return self._target

    def predict(self, X=None, *, seed=None):
        """The posterior predictive.

        For a target with a ``predict`` method (the data sets' regressions and
        classifiers): its prediction for rows ``X`` (its test split by default),
        importance weights applied: probabilities for classifiers, the predictive mean for
        regressions. For a model that simulates its observations (``Model(...,
        simulate=fn)``): :meth:`sample_posterior_predictive` with ``seed``."""
        target = self.get_target()
        if hasattr(target, "predict"):
            return target.predict(self.draws, X, log_weights=self.log_weights)
        if X is not None:
            raise TypeError(f"target {self.target!r} predicts no new rows X")
        return self.sample_posterior_predictive(seed)

    def sample_posterior_predictive(self, seed=None) -> dict:
        """One simulated data set per draw, :math:`\\tilde y^{(c,s)} \\sim p(y \\mid
        \\theta^{(c,s)})`, by observed variable, shape ``(chains, draws, ...)``; kept as the
        run's ``posterior_predictive`` group (:meth:`to_datatree`, :meth:`save`).

        Chain ``c`` draws with its own generator spawned from ``seed``; ``seed=None``
        derives them from the run's seed, so the same run gives the same predictive draws
        (:mod:`hamiltonia.modelling.predictive`). Needs a target that simulates its
        observations (``Model(..., simulate=fn)``).
        """
        from hamiltonia.modelling.predictive import chain_generators

        target = self.get_target()
        entropy = self.attrs.get("seed_entropy") if seed is None else None
        rngs = chain_generators(seed, self.n_chains, run_entropy=entropy)
        values = target.simulate_observations(self.draws, rngs)
        if values is None:
            raise TypeError(
                f"target {self.target!r} does not simulate its observations: give "
                "Model(..., simulate=fn), fn(params, rng) returning the observations by name"
            )
        self._predictive["posterior_predictive"] = values
        return values

    def sample_prior_predictive(self, draws: int | None = None, seed=None) -> dict:
        """Draws of the prior and, where the target simulates its observations, of the
        prior predictive, kept as the run's ``prior`` and ``prior_predictive`` groups:
        :func:`hamiltonia.sample_prior_predictive` with as many chains as the run and
        ``draws`` per chain (default the run's). Returns the ``prior_predictive`` group (by
        variable)."""
        from hamiltonia.modelling.predictive import prior_predictive_groups

        entropy = self.attrs.get("seed_entropy") if seed is None else None
        groups = prior_predictive_groups(self.get_target(), self.n_draws if draws is None
                                         else draws, self.n_chains, seed, entropy)  # fmt: skip
        self._predictive.update(groups)
        return groups.get("prior_predictive", {})

    def test_metrics(self) -> dict[str, float]:
        """Predictive metrics on the target's test split (accuracy, ROC AUC, precision,
        recall, F1 for classifiers; MSE, RMSE, MAE, R² for regressions)."""
        target = self.get_target()
        if not hasattr(target, "test_metrics"):
            raise TypeError(f"target {self.target!r} has no test metrics")
        return target.test_metrics(self.draws, log_weights=self.log_weights)

    def mean(self) -> np.ndarray:
        """Posterior mean of each parameter (importance weights applied)."""
        return weighted_mean(self.draws, self.log_weights)

    @property
    def pairs(self) -> list:
        """The antithetic pairs of chains ``[[0, 1], [2, 3], ...]``; empty when the chains
        are independent (:mod:`hamiltonia.reducers.antithetic`)."""
        return [list(p) for p in self.attrs.get("antithetic_pairs", [])]

    def pair_summary(self):
        """Plain and antithetic estimates of the means, their standard errors, the pair
        correlation, the pair's ESS and the variance reduction (a pandas DataFrame; see
        :func:`hamiltonia.reducers.antithetic.pair_summary`). ``ValueError`` for a run without
        pairs."""
        if not self.pairs:
            raise ValueError(
                "this run has no antithetic pairs: sample with an 'a-' sampler (a-hmc, "
                "a-mhmc, a-s2hmc, a-NAME) or antithetic=True"
            )
        from hamiltonia.reducers.antithetic import pair_summary

        return pair_summary(self)

    def control_variate_summary(self, order: int | None = None, grads=None):
        """Plain and zero-variance control-variate estimates of the means, their standard
        errors and the variance reduction (a pandas DataFrame; see
        :func:`hamiltonia.reducers.control_variates.control_variate_summary`), over the pair
        estimates for an antithetic run and weighted for a shadow sampler; from the
        gradients the run kept (``control_variates=`` option) where it kept them."""
        from hamiltonia.reducers.control_variates import control_variate_summary

        return control_variate_summary(self, order, grads)

    def diagnose(self) -> list:
        """The problems of this run (divergences, :math:`\\hat R`, low ESS, E-BFMI, a
        collapsed step size, frozen chains) as :class:`hamiltonia.diagnostics.checks.Problem`
        records;
        empty for a healthy run. :func:`hamiltonia.sample` warns with the same messages."""
        from hamiltonia.diagnostics.checks import diagnose

        return diagnose(self)

    def _convergence(self, decide: tuple | None = None) -> dict:
        """``r_hat``, ``ess_bulk`` and ``ess_tail`` per parameter, the columns of
        :meth:`summary` that :meth:`diagnose` reads: taken from the summary where it is
        computed, else computed alone (:func:`~hamiltonia.diagnostics.estimators.convergence`:
        one sort of each parameter's draws for the three, without the rest of the table) and
        kept for the same draws. Weighted draws get the summary's Kish factor.

        ``decide=(r_hat_max, ess_per_chain_min)``, for the checks of a finished run: where
        no exact values are kept, an :math:`\\hat R` or bulk ESS may instead be a bound on the
        right side of its threshold, which decides the check as the exact value would
        (:func:`~hamiltonia.diagnostics.estimators.screened_convergence`, a few passes over
        the draws instead of a sort); those the checks flag are exact.
        """
        key = (id(self.draws), self.draws.shape, id(self.log_weights))
        if self._summary is not None and self._summary[0][:3] == key:
            table = self._summary[1].iloc[: self.dim]
            return {c: table[c].to_numpy(dtype=float) for c in ("r_hat", "ess_bulk", "ess_tail")}
        factor = kish_factor(self.log_weights)
        exact = self._rank_diagnostics is not None and self._rank_diagnostics[0] == key
        if decide is not None and not exact:
            from hamiltonia.diagnostics.screening import screened_convergence

            r_hat_max, per_chain = decide
            ess_min = per_chain * self.n_chains / factor
            table, _ = screened_convergence(self.draws, r_hat_max, ess_min)
        elif exact:
            table = self._rank_diagnostics[1]
        else:
            from hamiltonia.diagnostics.univariate import convergence

            table = convergence(self.draws)
            self._rank_diagnostics = (key, table)
        table = {k: np.array(v, dtype=float, copy=True) for k, v in table.items()}
        table["ess_bulk"] = table["ess_bulk"] * factor
        table["ess_tail"] = table["ess_tail"] * factor
        return table

    def summary(self, quantiles=None, *, lp: bool = False, per_chain: bool = False):
        """A table (pandas DataFrame) with one row per parameter.

        Columns: ``mean``, ``sd`` (without Bessel's correction, as ArviZ), ``median`` and the
        ``quantiles`` (default :data:`DEFAULT_QUANTILES`, 5 % and 95 %: columns ``"5%"``,
        ``"95%"``), ``mcse`` (standard error of the mean), ``ess_bulk``, ``ess_tail`` and
        ``r_hat``, the diagnostics from :mod:`arviz_stats` with its defaults. With
        importance weights the mean, sd, median and quantiles are weighted, ESS values are
        multiplied by the Kish factor :math:`\\text{ESS}_{\\text{IMP}}/N`, and the MCSE is
        the delta method's for the self-normalised mean (the weights' correlation with each
        parameter included; see :func:`hamiltonia.diagnostics.summary.summary_table`). For a
        run in antithetic pairs the MCSE is that of the pairs
        (:func:`hamiltonia.diagnostics.pair_error.paired_mcse`: the chains of a pair are not
        independent); the ESS and :math:`\\hat R` stay the chains' own diagnostics. For a
        run whose momentum persists between iterations (a partial refresh,
        ``attrs["momentum_memory"] > 0``) the MCSE is ArviZ's of the means of short batches
        of each chain (:func:`hamiltonia.diagnostics.nonreversible.batched_mcse`: such a
        chain is not reversible, and its oscillating autocorrelations make ArviZ's MCSE up to
        1.9 times too large).

        ``lp=True`` adds a row ``lp`` for the log density of the draws (Stan's ``lp__``, and
        so named where a parameter is named ``lp``);
        ``per_chain=True`` gives one table per chain, stacked with a ``chain`` index level
        (its ESS that of the chain alone; :math:`\\hat R`, which compares chains, is nan).

        The table is computed once per set of draws (the rank normalisation of the ESS and
        :math:`\\hat R` sorts every parameter's draws) and a copy is returned.
        """
        quantiles = check_quantiles(DEFAULT_QUANTILES if quantiles is None else quantiles)
        if per_chain:
            import pandas as pd

            tables = [
                Result(
                    draws=self.draws[c : c + 1],
                    stats={k: v[c : c + 1] for k, v in self.stats.items()},
                    names=self.names,
                    log_weights=None if self.log_weights is None else self.log_weights[c : c + 1],
                    # A chain that keeps its momentum gets the batched MCSE alone too.
                    attrs={"momentum_memory": self.attrs.get("momentum_memory", 0.0)},
                ).summary(quantiles, lp=lp)
                for c in range(self.n_chains)
            ]
            return pd.concat(tables, keys=range(self.n_chains), names=["chain"])
        key = (id(self.draws), self.draws.shape, id(self.log_weights), quantiles, lp)
        if self._summary is None or self._summary[0] != key:
            draws, names = self.draws, self.names
            if lp and "lp" in self.stats:
                draws = np.concatenate([draws, self.stats["lp"][..., None]], axis=-1)
                # A parameter of that name keeps it; the log density takes Stan's.
                names = (*names, "lp__" if "lp" in names else "lp")
            table = summary_table(draws, names, self.log_weights, quantiles)
            if self.pairs:
                # Antithetic pairs are not independent chains: the mean's error is the
                # pairs' (hamiltonia.diagnostics.pair_error).
                from hamiltonia.diagnostics.pair_error import paired_mcse

                table["mcse"] = paired_mcse(draws, self.log_weights)
            elif self.attrs.get("momentum_memory", 0.0) > 0.0:
                # A kept momentum makes the chains oscillate, which ArviZ's sum of their
                # autocorrelations cuts short (hamiltonia.diagnostics.nonreversible).
                from hamiltonia.diagnostics.nonreversible import batched_mcse

                table["mcse"] = batched_mcse(draws, self.log_weights)
            self._summary = (key, table)
        return self._summary[1].copy()

    def print_summary(self, quantiles=None, *, file=None) -> None:
        """Print :meth:`summary` (with the ``lp`` row) rounded for reading, and the number of
        divergences, as NumPyro's ``print_summary`` does."""
        import sys

        out = sys.stdout if file is None else file
        print(format_summary(self.summary(quantiles, lp=True)), file=out)
        if "diverging" in self.stats:
            print(f"\nNumber of divergences: {self.n_divergent}", file=out)

    def multivariate_ess(self, batch_size="sqroot") -> float:
        """Multivariate ESS, times the Kish factor when the draws are weighted."""
        return diagnostics.combined_ess(self.draws, self.log_weights, batch_size)

    # ------------------------------------------------------------------ files
    def save(self, path, *, overwrite: bool = False) -> Path:
        """Write the run as netCDF-4 (ArviZ layout), atomically (a reader sees the old file
        or the whole new one); returns the path. An existing file is kept unless
        ``overwrite=True``: nothing computed is replaced unasked."""
        from hamiltonia._validation import check_flag
        from hamiltonia.results.runfile import atomic_write_bytes, checked_file_path

        check_flag(overwrite, "overwrite")
        path = checked_file_path(path, "path")
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
        return atomic_write_bytes(path, self.to_netcdf_bytes())

    def to_netcdf_bytes(self) -> memoryview:
        """The run as the bytes of a netCDF-4 file (what :meth:`save` writes).

        The file is made in memory and written with plain file writes: HDF5 writing
        straight to a disk that fills up crashed the process as it cleaned up (a
        segmentation fault, the run lost with it), where a plain write fails with an
        ``OSError`` that leaves the run in memory.
        """
        import contextlib
        import sys

        # With a distributed Client current, xarray guards the write with a cluster-wide
        # lock keyed by the target, which an in-memory buffer cannot be; the draws are
        # numpy arrays, so dask has nothing to schedule here.
        dask = sys.modules.get("dask")
        scheduler = (
            contextlib.nullcontext() if dask is None else dask.config.set(scheduler="synchronous")
        )
        with scheduler:
            return self.to_datatree().to_netcdf(None, engine="h5netcdf")

    def __repr__(self):
        return (
            f"Result(sampler={self.sampler!r}, target={self.target!r}, chains={self.n_chains}, "
            f"draws={self.n_draws}, dim={self.dim})"
        )


def load(path, *, target=None, unfinished: bool | None = None) -> Result:
    """Read a run written by :meth:`Result.save` or :func:`hamiltonia.sample`; a run still
    going on or interrupted is read from its checkpoints (``path.partial``, see
    :mod:`hamiltonia.results.runfile`), with ``attrs["complete"]`` false. A file that is not a
    readable run raises :class:`~hamiltonia.results.errors.RunFileError` naming it.

    ``target`` is the run's target, for a run of a user's model (which a file cannot
    rebuild): its log likelihood, predictive draws and prediction then work on the loaded
    run. A registered target is rebuilt from the file when first needed.

    ``unfinished`` says which run to read when both exist: a complete run at ``path`` and an
    unfinished one in its checkpoints (a run with ``overwrite=True`` that was interrupted
    leaves the file it was to replace untouched). ``None`` (default) reads the file and
    warns that the unfinished run is there; ``True`` reads the unfinished run (what
    :func:`hamiltonia.resume` continues); ``False`` the file, silently."""
    from hamiltonia._validation import check_flag
    from hamiltonia.results.runfile import has_checkpoints, partial_dir

    unfinished = check_flag(unfinished, "unfinished", allow_none=True)
    where = Path(path).expanduser()
    pending = has_checkpoints(where)
    if unfinished and not pending:
        raise FileNotFoundError(f"no unfinished run at {where} (no {partial_dir(where).name})")
    if pending and unfinished is None and where.exists():
        warnings.warn(
            f"{where} holds a complete run, and an unfinished one that was to replace it is "
            f"in {partial_dir(where)}: this is the complete run. Read the other with "
            f"load(path, unfinished=True), or continue it with hamiltonia resume {where}",
            UserWarning,
            stacklevel=2,
        )
    result = _load(where, unfinished=bool(unfinished and pending))
    if target is not None:
        _check_target_matches(result, target)
        result._target = target
    return result


def _check_target_matches(result: Result, target) -> None:
    """Refuse, naming both, a ``target`` whose reported parameters are not the run's."""
    names = tuple(getattr(target, "reported_names", ()))
    if names != tuple(result.names):
        raise ValueError(
            f"target= reports {len(names)} values ({', '.join(names[:4])}...) but the run "
            f"holds {len(result.names)} ({', '.join(result.names[:4])}...): it is not the "
            "model this run sampled"
        )


def _load(path, unfinished: bool = False) -> Result:
    import xarray as xr

    from hamiltonia.results.runfile import RunFileError, partial_dir, read_partial
    from hamiltonia.results.vetting import check_run_file

    path = Path(path).expanduser()
    if unfinished or not path.exists():
        if partial_dir(path).is_dir():
            part = read_partial(path)
            manifest = part.manifest
            attrs = dict(manifest.get("attrs", {}))
            attrs.update(complete=False, draws_done=int(manifest["draws_done"]))
            return Result(
                draws=part.draws,
                stats=part.stats,
                names=tuple(manifest["names"]),
                log_weights=part.log_weights,
                gradients=part.gradients,
                warmup_draws=part.warmup_draws,
                warmup_stats=part.warmup_stats,
                sampler=str(manifest.get("sampler", "")),
                target=str(manifest.get("target", "")),
                warmup_seconds=float(manifest.get("warmup_seconds", 0.0)),
                sampling_seconds=float(manifest.get("sampling_seconds", 0.0)),
                attrs=attrs,
            )
        raise FileNotFoundError(f"no such run file: {path}")
    if path.is_dir():
        raise RunFileError(f"{path} is a folder, not a run file; give the file's path")
    try:
        # Before any reader opens it: a file sent by someone else may point elsewhere or
        # declare more than memory holds.
        check_run_file(path)
        with xr.open_datatree(path, engine="h5netcdf") as tree:
            return Result.from_datatree(tree.load())
    except RunFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RunFileError(
            f"{path} is not a readable hamiltonia run file: {err} (hamiltonia reads the "
            "ArviZ DataTree "
            "files it writes and any with a posterior group of (chain, draw, ...) variables)"
        ) from None
