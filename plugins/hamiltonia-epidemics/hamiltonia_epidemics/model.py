"""SIR and SEIR models with 0, 1 or 2 change points of the spreading rate (Mongwe 2022,
thesis 003, chapter 6, after Dehning et al. 2020), as :class:`hamiltonia.Model` targets.

The maths is in the plugin's README. Two implementations of one density:

* ``logp`` / ``log_likelihood`` / ``generated`` below, written with ``autograd.numpy`` and
  vectorised over draws (the delay as an interpolation matrix): the reference, the
  ArviZ groups and the Hessian-vector product;
* :mod:`hamiltonia_epidemics.kernel`: the same density with a hand-written adjoint in numba,
  which the sampler uses (the compiled path; :meth:`EpidemicModel.log_prob_and_grad`).

The kernel is a measured optimisation: on ``sir-cp2`` a log density and gradient at 4 chains
take 23 µs against autograd's 38 ms (1600 times), and hamiltonia's numba backend cannot
generate the gradient itself (the delay indexes the days by the value of D). The tests hold
the two to agreement within 1e-9 (relative) at random points of every model.
"""

from __future__ import annotations

import datetime as dt
import math

import autograd.numpy as anp
import numpy as np

import hamiltonia as hm
from hamiltonia.targets.base import check_setting, with_setting
from hamiltonia.targets.model import Model
from hamiltonia_epidemics import kernel as _k
from hamiltonia_epidemics.data import LAST_DAY, Cases, load_cases

__all__ = [
    "CHANGE_POINTS",
    "EpidemicModel",
    "seir_cp0",
    "seir_cp1",
    "seir_cp2",
    "sir_cp0",
    "sir_cp1",
    "sir_cp2",
]

#: Dates of the change points' prior means (Table 6.1).
CHANGE_POINTS = ("2020-03-18", "2020-03-28")
#: South Africa's population (about 59 million; the thesis does not state N).
POPULATION = 59e6
#: Days simulated before the first observed day (Dehning et al.'s ``diff_data_sim``).
LEAD_DAYS = 16
PERIODS = ("initial", "after_t1", "after_t2")

_P = _k.PRIORS


def _lognormal(x, median, sd):
    return (
        -anp.log(x)
        - math.log(sd)
        - 0.5 * math.log(2 * math.pi)
        - ((anp.log(x) - math.log(median)) ** 2) / (2 * sd * sd)
    )


def _halfcauchy(x, beta):
    return math.log(2 / (math.pi * beta)) - anp.log1p((x / beta) ** 2)


def _normal(x, mean, sd):
    return -0.5 * ((x - mean) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi)


_T_CONST = (
    math.lgamma((_P["nu"] + 1) / 2) - math.lgamma(_P["nu"] / 2) - 0.5 * math.log(_P["nu"] * math.pi)
)


class EpidemicModel(Model):
    """SIR (``kind="sir"``) or SEIR (``"seir"``) with ``change_points`` in {0, 1, 2}.

    Parameters
    ----------
    kind : {"sir", "seir"}
    change_points : int
    cases : Cases
        Daily new cases (:func:`hamiltonia_epidemics.data.load_cases`).
    population : float
        N.
    lead_days : int
        Days simulated before the first observed day (the infections there are reported
        inside the window after the delay D).
    """

    def __init__(self, kind: str, change_points: int, cases: Cases, *,
                 population: float = POPULATION, lead_days: int = LEAD_DAYS):  # fmt: skip
        if kind not in ("sir", "seir"):
            raise ValueError(f"kind must be 'sir' or 'seir', got {kind!r}")
        if change_points not in (0, 1, 2):
            raise ValueError(f"change_points must be 0, 1 or 2, got {change_points!r}")
        population = float(population)
        if not math.isfinite(population) or population <= 1:
            raise ValueError(f"population must be a finite number > 1, got {population!r}")
        if isinstance(lead_days, bool) or not isinstance(lead_days, int) or lead_days < 1:
            raise ValueError(f"lead_days must be an int >= 1, got {lead_days!r}")
        self.kind, self.change_points, self.cases = kind, change_points, cases
        self.population, self.lead_days = population, lead_days
        k, seir = change_points, kind == "seir"
        y = np.asarray(cases.new, dtype=float)
        T, L = len(y), lead_days
        start = dt.date.fromisoformat(cases.dates[0])
        #: Prior means of the change points, in days since the first observed day.
        self.t_means = [float((dt.date.fromisoformat(d) - start).days) for d in CHANGE_POINTS]
        params = {"lambda": hm.positive(k + 1, dims="period")}
        if seir:
            params["sigma"] = hm.positive()
        params.update(mu=hm.positive(), D=hm.positive(), I0=hm.positive())
        if seir:
            params["E0"] = hm.positive()
        if k:
            params["t"] = hm.real(k, dims="change_point")
            params["transient"] = hm.positive(k, dims="change_point")
        params["sigma_obs"] = hm.positive()
        self.n_sim = n = L + T
        tau = np.arange(n) - L
        pos = np.arange(n, dtype=float)
        obs_pos = L + np.arange(T, dtype=float)
        t_means = np.array(self.t_means[:k])

        def ramp_integral(u):
            # The integral of clip(v, 0, 1) from -inf to u.
            return anp.where(u <= 0.0, 0.0, anp.where(u >= 1.0, u - 0.5, 0.5 * u * u))

        def rates(p):
            # Day tau's rate is the mean over [tau, tau + 1] of the continuous-time ramps.
            lam = p["lambda"]
            out = lam[..., 0:1] + 0.0 * tau
            for i in range(k):
                t_i, d_i = p["t"][..., i : i + 1], p["transient"][..., i : i + 1]
                ramp = d_i * (
                    ramp_integral((tau + 1 - t_i) / d_i) - ramp_integral((tau - t_i) / d_i)
                )
                out = out + (lam[..., i + 1 : i + 2] - lam[..., i : i + 1]) * ramp
            return out  # (..., n)

        def expected(p):
            lam_s = rates(p)
            I_ = p["I0"]
            E = p["E0"] if seir else 0.0 * I_
            S = population - I_ - E
            xs = []
            for s in range(n):
                f = lam_s[..., s] * S * I_ / population
                if seir:
                    g = p["sigma"] * E
                    S, E, I_ = S - f, E + f - g, I_ * (1 - p["mu"]) + g
                    xs.append(g)
                else:
                    S, I_ = S - f, I_ * (1 - p["mu"]) + f
                    xs.append(f)
            x = anp.stack(xs, axis=-1)  # (..., n)
            where = obs_pos - p["D"][..., None]  # (..., T)
            if isinstance(x, np.ndarray):  # plain values (reporting): gather, O(T) per draw
                below = np.floor(where).astype(np.int64)
                w = where - below
                padded = np.concatenate([np.zeros((*x.shape[:-1], 1)), x], axis=-1)
                a = np.take_along_axis(padded, np.clip(below + 1, 0, n), axis=-1)
                b = np.take_along_axis(padded, np.clip(below + 2, 0, n), axis=-1)
                return (1.0 - w) * a + w * b, lam_s
            # traced by autograd: the same interpolation as a matrix of hat functions
            weights = anp.maximum(0.0, 1.0 - anp.abs(pos - where[..., None]))  # (..., T, n)
            return anp.sum(weights * x[..., None, :], axis=-1), lam_s

        def log_likelihood(p):
            C, _ = expected(p)
            scale = p["sigma_obs"][..., None] * anp.sqrt(C + 1.0)
            r = (y - C) / scale
            nu = _P["nu"]
            return _T_CONST - anp.log(scale) - 0.5 * (nu + 1) * anp.log1p(r * r / nu)

        def log_prior(p):
            lam = p["lambda"]
            lp = _lognormal(lam[..., 0], _P["lambda_median"], _P["lambda_sigma"][0])
            for i in range(1, k + 1):
                lp = lp + _lognormal(lam[..., i], _P["lambda_median"], _P["lambda_sigma"][i])
            if seir:
                lp = lp + _lognormal(p["sigma"], _P["sigma_median"], _P["sigma_sigma"])
                lp = lp + _halfcauchy(p["E0"], _P["E0_scale"])
            lp = lp + _lognormal(p["mu"], _P["mu_median"], _P["mu_sigma"])
            lp = lp + _lognormal(p["D"], _P["D_median"], _P["D_sigma"])
            lp = lp + _halfcauchy(p["I0"], _P["I0_scale"])
            for i in range(k):
                lp = lp + _normal(p["t"][..., i], t_means[i], _P["t_sd"])
                lp = lp + _lognormal(p["transient"][..., i], _P["transient_median"],
                                     _P["transient_sigma"])  # fmt: skip
            return lp + _halfcauchy(p["sigma_obs"], _P["sigma_obs_scale"])

        def logp(p):
            return log_prior(p) + anp.sum(log_likelihood(p), axis=-1)

        def generated(p):
            C, lam_s = expected(p)
            return {
                "R0": p["lambda"] / p["mu"][..., None],
                "lambda_t": lam_s[..., L:],
                "expected_cases": C,
            }

        def simulate(p, rng):
            C, _ = expected(p)
            noise = rng.standard_t(_P["nu"], size=np.shape(C))
            return {"new_cases": C + p["sigma_obs"] * np.sqrt(C + 1.0) * noise}

        def prior(rng):
            def ln(median, sd, size=None):
                return np.exp(rng.normal(math.log(median), sd, size))

            def hc(beta):
                return abs(beta * rng.standard_cauchy())

            out = {"lambda": np.array([ln(_P["lambda_median"], _P["lambda_sigma"][i])
                                       for i in range(k + 1)])}  # fmt: skip
            if seir:
                out["sigma"] = ln(_P["sigma_median"], _P["sigma_sigma"])
            out["mu"] = ln(_P["mu_median"], _P["mu_sigma"])
            out["D"] = ln(_P["D_median"], _P["D_sigma"])
            out["I0"] = hc(_P["I0_scale"])
            if seir:
                out["E0"] = hc(_P["E0_scale"])
            if k:
                out["t"] = rng.normal(t_means, _P["t_sd"])
                out["transient"] = ln(_P["transient_median"], _P["transient_sigma"], k)
            out["sigma_obs"] = hc(_P["sigma_obs_scale"])
            return out

        self.expected = expected
        self.log_prior = log_prior
        self.log_likelihood_fn = log_likelihood
        coords = {"period": list(PERIODS[: k + 1]), "date": list(cases.dates)}
        if k:
            coords["change_point"] = [f"t{i + 1}" for i in range(k)]
        super().__init__(
            logp, params, log_likelihood=lambda p: {"new_cases": log_likelihood(p)},
            observed_data={"new_cases": y}, generated=generated, simulate=simulate,
            prior=prior, coords=coords,
            generated_dims={"R0": ["period"], "lambda_t": ["date"], "expected_cases": ["date"]},
            observed_dims={"new_cases": ["date"]},
            vectorized=True, backend="autograd",
        )  # fmt: skip
        from hamiltonia.compiled import NumbaTarget

        self._fdata = np.concatenate([[population], [*self.t_means, 0.0, 0.0][:2], y])
        self._idata = np.array([int(seir), k, T, L], dtype=np.int64)
        self._numba_target = NumbaTarget.build(_k.epidemic_kernel, self._fdata, self._idata)
        self.backend = "numba"
        label = f"{kind.upper()} with {k} change point{'s' if k != 1 else ''}"
        self.description = (
            f"{label}: South Africa's daily new COVID-19 cases {cases.dates[0]}..{cases.dates[-1]} "
            f"(N = {population:.3g}), Student-t likelihood (Mongwe 2022, ch. 6)"
        )

    def numba_kernel(self):
        # The kernel built above computes this class's density (which the methods below
        # evaluate through it): a kernel of its own, not the Model's of its logp.
        return self._numba_target

    # The sampler's density: the compiled kernel (one implementation for both paths).
    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        flat = np.ascontiguousarray(x.reshape(-1, self.dim))
        lp, grad = _k.batch_log_prob_and_grad(flat, self._fdata, self._idata)
        return lp.reshape(x.shape[:-1]), grad.reshape(x.shape)

    def log_prob(self, x):
        return self.log_prob_and_grad(x)[0]

    def initial_point(self, rng):
        """A start near the priors' medians (each unconstrained coordinate jittered by
        U(-0.5, 0.5)), not hamiltonia's U(-2, 2): exp(2) makes the spreading rates 3 per day
        and the epidemic explode, a region where chains have been seen to stick."""
        med = {"lambda": np.full(self.change_points + 1, _P["lambda_median"]),
               "sigma": _P["sigma_median"], "mu": _P["mu_median"], "D": _P["D_median"],
               "I0": _P["I0_scale"], "E0": _P["E0_scale"],
               "t": np.array(self.t_means[: self.change_points]),
               "transient": np.full(self.change_points, _P["transient_median"]),
               "sigma_obs": _P["sigma_obs_scale"]}  # fmt: skip
        z = self.layout.unconstrain({n: med[n] for n in self.layout.params}, (1,))[0]
        return z + rng.uniform(-0.5, 0.5, size=z.shape)

    def reference_log_prob_and_grad(self, x):
        """The same density and gradient from the autograd implementation."""
        return Model.log_prob_and_grad(self, x)

    def __repr__(self):
        return f"EpidemicModel({self.kind!r}, change_points={self.change_points}, dim={self.dim})"


_DOC = """{label}: South Africa's daily new confirmed COVID-19 cases (thesis 003, ch. 6).

    Parameters
    ----------
    end : str
        Last observed day, ISO (default 2020-04-20, the thesis's); the first is 2020-03-05.
    population : float
        N (default 59e6; the thesis does not state it).
    lead_days : int
        Days simulated before the first observed day (default 16, Dehning et al.'s).
    setting : {{"default", "paper"}}
        Both are the thesis's model with the open decisions taken from Dehning et al.
        (2020), as the plugin's README describes.
    """


def _factory(kind: str, k: int):
    def factory(end: str = LAST_DAY, population: float = POPULATION,
                lead_days: int = LEAD_DAYS, setting: str = "default") -> EpidemicModel:  # fmt: skip
        check_setting(setting)
        model = EpidemicModel(kind, k, load_cases(end), population=population,
                              lead_days=lead_days)  # fmt: skip
        return with_setting(model, setting)

    name = f"{kind}_cp{k}"
    factory.__name__ = factory.__qualname__ = name
    label = f"{kind.upper()} with {k} change point{'s' if k != 1 else ''}"
    factory.__doc__ = _DOC.format(label=label)
    return factory


sir_cp0 = _factory("sir", 0)
sir_cp1 = _factory("sir", 1)
sir_cp2 = _factory("sir", 2)
seir_cp0 = _factory("seir", 0)
seir_cp1 = _factory("seir", 1)
seir_cp2 = _factory("seir", 2)
