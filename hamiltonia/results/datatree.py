"""The conversion of a run's :class:`~hamiltonia.results.result.Result` to and from an ArviZ
:class:`xarray.DataTree`, as NumPyro's converter gives it (the layout of the netCDF files a
run writes): its draws by variable (named blocks with their dims), the ``sample_stats``, the
pointwise ``log_likelihood`` and ``observed_data`` its target supplies, the kept warm-up and
the predictive groups (:data:`PREDICTIVE_GROUPS`); and back, from such a tree or from any
ArviZ DataTree with a ``posterior`` group (another library's run).

:class:`DataTreeConversion` holds these methods of :class:`~hamiltonia.Result` (which
inherits them); it has no data of its own and reads the result's fields.
"""

from __future__ import annotations

import json
import warnings
from typing import Self

import numpy as np

__all__ = ["LOG_LIKELIHOOD_MAX_VALUES", "PREDICTIVE_GROUPS", "DataTreeConversion"]

_LOG_WEIGHT = "log_weight"
#: The sample_stats variable of the gradients of the log density at the draws.
_GRADIENT = "gradient"
#: The ArviZ groups of predictive draws a run may hold (hamiltonia.modelling.predictive).
PREDICTIVE_GROUPS = ("prior", "prior_predictive", "posterior_predictive")

#: Most numbers (chains x draws x observations) the log_likelihood group holds unasked.
LOG_LIKELIHOOD_MAX_VALUES = 50_000_000


class DataTreeConversion:
    """The methods of :class:`~hamiltonia.Result` that convert a run to and from an ArviZ
    :class:`xarray.DataTree` (module docs), and give its draws by variable and its pointwise
    log likelihood."""

    def variables(self, *, warmup: bool = False) -> dict:
        """The draws (or with ``warmup`` the kept warm-up draws) by variable: each named
        block (a model's parameters and generated quantities) as one array of shape
        ``(chains, draws) + shape``; one scalar variable per name for a target without
        blocks."""
        draws = self.warmup_draws if warmup else self.draws
        if draws is None:
            raise ValueError("the run kept no warm-up draws: sample with save_warmup=True")
        blocks = self.attrs.get("blocks")
        if not blocks:
            return {name: draws[..., i] for i, name in enumerate(self.names)}
        from hamiltonia.modelling.parameters import split_blocks

        return split_blocks(draws, blocks)

    def _dims(self, dims=None) -> dict:
        out = {}
        for name, _shape, block_dims in self.attrs.get("blocks") or []:
            if block_dims:
                out[name] = list(block_dims)
        for name, obs_dims in (self.attrs.get("observed_dims") or {}).items():
            out[name] = list(obs_dims)
        out.update({k: list(v) for k, v in (dims or {}).items()})
        return out

    def log_likelihood(self) -> dict | None:
        """The pointwise log likelihood at each draw by observed variable, shape
        ``(chains, draws, n_obs)``, from the run's target (or the file); ``None`` when the
        target reports none."""
        if self._log_likelihood is not None:
            return self._log_likelihood
        try:
            target = self.get_target()
        except (KeyError, ValueError, TypeError):
            return None
        values = target.pointwise_log_likelihood(self.draws)
        if values is not None:
            self._log_likelihood = {k: np.asarray(v, dtype=float) for k, v in values.items()}
        return self._log_likelihood

    def _observed_data(self) -> dict | None:
        if self._observed is not None:
            return self._observed
        try:
            return self.get_target().observed_data
        except (KeyError, ValueError, TypeError):
            return None

    @property
    def posterior(self):
        """The ``posterior`` group (an :class:`xarray.Dataset`): ``result.posterior["theta"]``
        has dimensions ``(chain, draw, ...)``."""
        return self.to_datatree(log_likelihood=False)["posterior"].to_dataset()

    def to_datatree(self, *, coords=None, dims=None, log_likelihood=None):
        """An ArviZ :class:`xarray.DataTree`, as NumPyro's converter gives it.

        Groups: ``posterior`` (one variable per named block, with its dims, or per
        parameter), ``sample_stats`` (ArviZ names: ``diverging``, ``energy``, ``lp``,
        ``tree_depth``, ``n_steps``, ``step_size``, ``acceptance_rate``, ...), where the
        target supplies them ``log_likelihood`` (pointwise, for ``arviz_stats.loo``) and
        ``observed_data``, and for a run with ``save_warmup=True`` ``warmup_posterior`` and
        ``warmup_sample_stats``. The root's attributes hold ``inference_library`` and its
        version and the run's settings.

        Parameters
        ----------
        coords, dims : dict, optional
            Labels of dimensions and the dimensions of variables, over those the target
            declared.
        log_likelihood : bool or None
            Include the ``log_likelihood`` group: ``None`` (default) when the target
            supplies it and it holds at most :data:`LOG_LIKELIHOOD_MAX_VALUES` numbers (else
            with a warning), ``True`` always, ``False`` never.
        """
        from arviz_base import from_dict

        from hamiltonia._version import __version__

        data = {"posterior": self.variables()}
        sample_stats = dict(self.stats)
        if self.log_weights is not None:
            sample_stats[_LOG_WEIGHT] = self.log_weights
        all_dims = self._dims(dims)
        if self.gradients is not None:
            sample_stats[_GRADIENT] = self.gradients
            all_dims[_GRADIENT] = ["unconstrained_parameter"]
        data["sample_stats"] = sample_stats
        if self.warmup_draws is not None and self.warmup_draws.shape[1]:
            data["warmup_posterior"] = self.variables(warmup=True)
            data["warmup_sample_stats"] = dict(self.warmup_stats)
        if log_likelihood is not False:
            values = self._log_likelihood or self._pointwise_within_limit(bool(log_likelihood))
            if values:
                data["log_likelihood"] = values
        observed = self._observed_data()
        if observed:
            data["observed_data"] = observed
        data.update(self._predictive)
        all_coords = dict(self.attrs.get("coords") or {})
        all_coords.update(coords or {})
        with warnings.catch_warnings():
            # A partial run (see ``sample(output=...)``) may hold fewer draws than chains.
            warnings.filterwarnings("ignore", message="Found chain dimension to be longer")
            tree = from_dict(data, dims=all_dims or None, coords=all_coords or None,
                             save_warmup="warmup_posterior" in data)  # fmt: skip
        tree.attrs.update(
            {
                "inference_library": "hamiltonia",
                "inference_library_version": __version__,
                "hamiltonia_sampler": self.sampler,
                "hamiltonia_target": self.target,
                "hamiltonia_names": json.dumps(list(self.names)),
                "warmup_seconds": float(self.warmup_seconds),
                "sampling_seconds": float(self.sampling_seconds),
                "hamiltonia_attrs": json.dumps(self.attrs, default=str),
            }
        )
        return tree

    def _pointwise_within_limit(self, forced: bool):
        try:
            target = self.get_target()
        except (KeyError, ValueError, TypeError):
            return None
        observed = target.observed_data or {}
        n_obs = sum(int(np.size(v)) for v in observed.values()) or None
        size = self.n_chains * self.n_draws * (n_obs or 1)
        if not forced and n_obs is not None and size > LOG_LIKELIHOOD_MAX_VALUES:
            warnings.warn(
                f"the log_likelihood group would hold {size:,} numbers (chains x draws x "
                f"{n_obs:,} observations); it is left out: pass log_likelihood=True to "
                "to_datatree to include it",
                UserWarning,
                stacklevel=3,
            )
            return None
        return self.log_likelihood()

    @classmethod
    def from_datatree(cls, tree) -> Self:
        """Rebuild a result from :meth:`to_datatree`'s output, or from any ArviZ DataTree
        with a ``posterior`` group (another library's run: its variables become blocks;
        statistics it lacks stay absent)."""
        if "posterior" not in tree.children:
            raise ValueError("it has no posterior group")
        post = tree["posterior"]
        if "hamiltonia_names" not in tree.attrs:
            return cls._from_foreign(tree)
        names = tuple(json.loads(tree.attrs["hamiltonia_names"]))
        attrs = json.loads(tree.attrs.get("hamiltonia_attrs", "{}"))
        draws = _group_draws(post, names, attrs.get("blocks"))
        ss = tree["sample_stats"]
        own = (_LOG_WEIGHT, _GRADIENT)
        stats = {k: np.asarray(ss[k].values) for k in ss.data_vars if k not in own}
        log_weights = np.asarray(ss[_LOG_WEIGHT].values) if _LOG_WEIGHT in ss.data_vars else None
        gradients = np.asarray(ss[_GRADIENT].values) if _GRADIENT in ss.data_vars else None
        result = cls(
            draws=draws,
            stats=stats,
            names=names,
            log_weights=log_weights,
            gradients=gradients,
            sampler=str(tree.attrs.get("hamiltonia_sampler", "")),
            **_warmup_groups(tree, names, attrs.get("blocks")),
            target=str(tree.attrs.get("hamiltonia_target", "")),
            warmup_seconds=float(tree.attrs.get("warmup_seconds", 0.0)),
            sampling_seconds=float(tree.attrs.get("sampling_seconds", 0.0)),
            attrs=attrs,
        )
        result._read_groups(tree)
        return result

    def _read_groups(self, tree) -> None:
        if "log_likelihood" in tree.children:
            ll = tree["log_likelihood"]
            self._log_likelihood = {k: np.asarray(ll[k].values) for k in ll.data_vars}
        if "observed_data" in tree.children:
            od = tree["observed_data"]
            self._observed = {k: np.asarray(od[k].values) for k in od.data_vars}
        for group in PREDICTIVE_GROUPS:
            if group in tree.children:
                values = tree[group]
                self._predictive[group] = {k: np.asarray(values[k].values)
                                           for k in values.data_vars}  # fmt: skip

    @classmethod
    def _from_foreign(cls, tree) -> Self:
        from hamiltonia.modelling.parameters import element_names

        post = tree["posterior"]
        blocks, columns, names = [], [], []
        coords = {}
        for name in post.data_vars:
            var = post[name]
            if var.dims[:2] != ("chain", "draw"):
                raise ValueError(
                    f"posterior variable {name!r} has dims {var.dims}, not (chain, draw, ...)"
                )
            shape = tuple(var.shape[2:])
            blocks.append([str(name), list(shape), [str(d) for d in var.dims[2:]] or None])
            columns.append(np.asarray(var.values, dtype=float).reshape((*var.shape[:2], -1)))
            names.extend(element_names(str(name), shape))
            for d in var.dims[2:]:
                if d in post.coords:
                    coords[str(d)] = post.coords[d].values.tolist()
        stats = {}
        if "sample_stats" in tree.children:
            ss = tree["sample_stats"]
            stats = {str(k): np.asarray(ss[k].values) for k in ss.data_vars
                     if ss[k].dims[:2] == ("chain", "draw")}  # fmt: skip
        result = cls(
            draws=np.concatenate(columns, axis=-1),
            stats=stats,
            names=tuple(names),
            sampler=str(tree.attrs.get("inference_library", "")),
            attrs={"blocks": blocks, "coords": coords, "foreign": True},
        )
        result._read_groups(tree)
        return result


def _group_draws(group, names, blocks) -> np.ndarray:
    """The draws array of a posterior-like group written by :meth:`Result.to_datatree`."""
    if blocks:
        return np.concatenate(
            [np.asarray(group[name].values, dtype=float).reshape((*group[name].shape[:2], -1))
             for name, _, _ in blocks],
            axis=-1,
        )  # fmt: skip
    return np.stack([np.asarray(group[name].values, dtype=float) for name in names], -1)


def _warmup_groups(tree, names, blocks) -> dict:
    if "warmup_posterior" not in tree.children:
        return {}
    ss = tree["warmup_sample_stats"] if "warmup_sample_stats" in tree.children else None
    return {
        "warmup_draws": _group_draws(tree["warmup_posterior"], names, blocks),
        "warmup_stats": {} if ss is None else {k: np.asarray(ss[k].values) for k in ss.data_vars},
    }
