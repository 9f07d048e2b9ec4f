"""The :class:`Result` of a run: draws, statistics, summaries, ArviZ output, netCDF files."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hamiltonia import diagnostics
from hamiltonia.reducers import weighted_mean

__all__ = ["Result", "load"]

_LOG_WEIGHT = "log_weight"
#: The sample_stats variable of the gradients of the log density at the draws.
_GRADIENT = "gradient"


@dataclass
class Result:
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
        :class:`~hamiltonia.control_variates.ControlVariates`; ``None`` otherwise.
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
    sampler: str = ""
    target: str = ""
    warmup_seconds: float = 0.0
    sampling_seconds: float = 0.0
    attrs: dict = field(default_factory=dict)
    _target: object = field(default=None, repr=False, compare=False)
    _summary: tuple = field(default=None, repr=False, compare=False)

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
        loaded from a file, the registered target rebuilt from its name and parameters."""
        if self._target is None:
            from hamiltonia import targets

            params = self.attrs.get("target_params", {}) or {}
            self._target = targets.get(self.target, **params)
        return self._target

    def predict(self, X=None):
        """Posterior predictive of the target for rows ``X`` (its test split by default),
        importance weights applied: probabilities for classifiers, the predictive mean for
        regressions. Needs a target with a ``predict`` method."""
        target = self.get_target()
        if not hasattr(target, "predict"):
            raise TypeError(f"target {self.target!r} has no posterior predictive")
        return target.predict(self.draws, X, log_weights=self.log_weights)

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
        are independent (:mod:`hamiltonia.antithetic`)."""
        return [list(p) for p in self.attrs.get("antithetic_pairs", [])]

    def pair_summary(self):
        """Plain and antithetic estimates of the means, their standard errors, the pair
        correlation, the pair's ESS and the variance reduction (a pandas DataFrame; see
        :func:`hamiltonia.antithetic.pair_summary`). ``ValueError`` for a run without
        pairs."""
        if not self.pairs:
            raise ValueError(
                "this run has no antithetic pairs: sample with an 'a-' sampler (a-hmc, "
                "a-mhmc, a-s2hmc, a-NAME) or antithetic=True"
            )
        from hamiltonia.antithetic import pair_summary

        return pair_summary(self)

    def control_variate_summary(self, order: int | None = None, grads=None):
        """Plain and zero-variance control-variate estimates of the means, their standard
        errors and the variance reduction (a pandas DataFrame; see
        :func:`hamiltonia.control_variates.control_variate_summary`), over the pair
        estimates for an antithetic run and weighted for a shadow sampler; from the
        gradients the run kept (``control_variates=`` option) where it kept them."""
        from hamiltonia.control_variates import control_variate_summary

        return control_variate_summary(self, order, grads)

    def diagnose(self) -> list:
        """The problems of this run (divergences, :math:`\\hat R`, low ESS, E-BFMI, a
        collapsed step size, frozen chains) as :class:`hamiltonia.diagnose.Problem` records;
        empty for a healthy run. :func:`hamiltonia.sample` warns with the same messages."""
        from hamiltonia.diagnose import diagnose

        return diagnose(self, self.summary())

    def summary(self):
        """A table (pandas DataFrame) with one row per parameter.

        Columns: ``mean``, ``sd`` (with Bessel's correction, as ArviZ), ``mcse`` (standard
        error of the mean), ``ess_bulk``,
        ``ess_tail`` and ``r_hat``. With importance weights the mean and sd are weighted,
        ESS values are multiplied by the Kish factor :math:`\\text{ESS}_{\\text{IMP}}/N`, and
        the MCSE is the weighted sd over the square root of the weighted ESS of the mean.

        The table is computed once per set of draws (the rank normalisation of the ESS and
        :math:`\\hat R` sorts every parameter's draws) and a copy is returned.
        """
        key = (id(self.draws), self.draws.shape, id(self.log_weights))
        if self._summary is None or self._summary[0] != key:
            with warnings.catch_warnings():
                # Chains that never moved have no variance: ArviZ divides by zero and gives
                # nan or inf, which the table shows and diagnose() reports.
                warnings.filterwarnings("ignore", "divide by zero", RuntimeWarning)
                warnings.filterwarnings("ignore", "invalid value", RuntimeWarning)
                self._summary = (key, self._compute_summary())
        return self._summary[1].copy()

    def _compute_summary(self):
        import pandas as pd

        mean = self.mean()
        n_eff = self.draws.shape[0] * self.draws.shape[1]
        if self.log_weights is not None:
            n_eff = diagnostics.kish_ess(self.log_weights)
        # Bessel's correction (with the Kish size when weighted), as ArviZ's sd.
        var = weighted_mean((self.draws - mean) ** 2, self.log_weights)
        sd = np.sqrt(np.maximum(var, 0.0) * n_eff / max(n_eff - 1.0, 1e-300))
        ess_bulk = diagnostics.ess(self.draws, "bulk")
        ess_tail = diagnostics.ess(self.draws, "tail")
        if self.log_weights is None:
            mcse = diagnostics.mcse(self.draws, "mean")
        else:
            factor = n_eff / self.log_weights.size
            ess_bulk, ess_tail = ess_bulk * factor, ess_tail * factor
            mcse = sd / np.sqrt(diagnostics.ess(self.draws, "mean") * factor)
        return pd.DataFrame(
            {
                "mean": mean,
                "sd": sd,
                "mcse": mcse,
                "ess_bulk": ess_bulk,
                "ess_tail": ess_tail,
                "r_hat": diagnostics.rhat(self.draws),
            },
            index=pd.Index(self.names, name="parameter"),
        )

    def multivariate_ess(self, batch_size="sqroot") -> float:
        """Multivariate ESS, times the Kish factor when the draws are weighted."""
        return diagnostics.combined_ess(self.draws, self.log_weights, batch_size)

    # ------------------------------------------------------------------ ArviZ and files
    def to_datatree(self):
        """An ArviZ-compatible :class:`xarray.DataTree` with ``posterior`` and
        ``sample_stats`` groups (dimensions ``chain`` and ``draw``), one posterior variable
        per parameter. Run information is in the root's attributes."""
        from arviz_base import from_dict

        posterior = {name: self.draws[..., i] for i, name in enumerate(self.names)}
        sample_stats = dict(self.stats)
        if self.log_weights is not None:
            sample_stats[_LOG_WEIGHT] = self.log_weights
        dims = {}
        if self.gradients is not None:
            sample_stats[_GRADIENT] = self.gradients
            dims = {_GRADIENT: ["parameter"]}
        with warnings.catch_warnings():
            # A partial run (see ``sample(output=...)``) may hold fewer draws than chains.
            warnings.filterwarnings("ignore", message="Found chain dimension to be longer")
            tree = from_dict(
                {"posterior": posterior, "sample_stats": sample_stats},
                dims=dims,
                coords={"parameter": list(self.names)} if dims else None,
            )
        tree.attrs.update(
            {
                "hamiltonia_sampler": self.sampler,
                "hamiltonia_target": self.target,
                "hamiltonia_names": json.dumps(list(self.names)),
                "warmup_seconds": float(self.warmup_seconds),
                "sampling_seconds": float(self.sampling_seconds),
                "hamiltonia_attrs": json.dumps(self.attrs, default=str),
            }
        )
        return tree

    @classmethod
    def from_datatree(cls, tree) -> Result:
        """Rebuild a result from :meth:`to_datatree`'s output."""
        names = tuple(json.loads(tree.attrs["hamiltonia_names"]))
        post = tree["posterior"]
        draws = np.stack([np.asarray(post[name].values, dtype=float) for name in names], axis=-1)
        ss = tree["sample_stats"]
        own = (_LOG_WEIGHT, _GRADIENT)
        stats = {k: np.asarray(ss[k].values) for k in ss.data_vars if k not in own}
        log_weights = np.asarray(ss[_LOG_WEIGHT].values) if _LOG_WEIGHT in ss.data_vars else None
        gradients = np.asarray(ss[_GRADIENT].values) if _GRADIENT in ss.data_vars else None
        return cls(
            draws=draws,
            stats=stats,
            names=names,
            log_weights=log_weights,
            gradients=gradients,
            sampler=str(tree.attrs.get("hamiltonia_sampler", "")),
            target=str(tree.attrs.get("hamiltonia_target", "")),
            warmup_seconds=float(tree.attrs.get("warmup_seconds", 0.0)),
            sampling_seconds=float(tree.attrs.get("sampling_seconds", 0.0)),
            attrs=json.loads(tree.attrs.get("hamiltonia_attrs", "{}")),
        )

    def save(self, path) -> Path:
        """Write the run as netCDF-4 (ArviZ layout); returns the path."""
        path = Path(path)
        self.to_datatree().to_netcdf(path, engine="h5netcdf")
        return path

    def __repr__(self):
        return (
            f"Result(sampler={self.sampler!r}, target={self.target!r}, chains={self.n_chains}, "
            f"draws={self.n_draws}, dim={self.dim})"
        )


def load(path) -> Result:
    """Read a run written by :meth:`Result.save` or :func:`hamiltonia.sample`; a run still
    going on or interrupted is read from its checkpoints (``path.partial``, see
    :mod:`hamiltonia.runfile`), with ``attrs["complete"]`` false. A file that is not a
    readable run raises :class:`~hamiltonia.runfile.RunFileError` naming it."""
    import xarray as xr

    from hamiltonia.runfile import RunFileError, partial_dir, read_partial

    path = Path(path)
    if not path.exists():
        if partial_dir(path).is_dir():
            manifest, q, stats, log_weights, gradients = read_partial(path)
            attrs = dict(manifest.get("attrs", {}))
            attrs.update(complete=False, draws_done=int(manifest["draws_done"]))
            return Result(
                draws=q,
                stats=stats,
                names=tuple(manifest["names"]),
                log_weights=log_weights,
                gradients=gradients,
                sampler=str(manifest.get("sampler", "")),
                target=str(manifest.get("target", "")),
                warmup_seconds=float(manifest.get("warmup_seconds", 0.0)),
                sampling_seconds=float(manifest.get("sampling_seconds", 0.0)),
                attrs=attrs,
            )
        raise FileNotFoundError(f"no such run file: {path}")
    try:
        with xr.open_datatree(path, engine="h5netcdf") as tree:
            return Result.from_datatree(tree.load())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RunFileError(
            f"{path} is not a readable hamiltonia run file ({type(err).__name__}: {err})"
        ) from None
