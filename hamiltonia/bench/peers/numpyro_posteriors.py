"""The ten reference posteriors of :mod:`hamiltonia.posteriors` as NumPyro models.

Each is written as a NumPyro user writes a Stan program, with ``numpyro.sample`` sites, from
the same posteriordb program and the same vendored data
(:func:`hamiltonia.posteriors.load_data`) as the hamiltonia model of the same name, so that
the two sample the same density over the same constrained parameters:

* a flat prior of the Stan program (none written) is ``dist.ImproperUniform`` on the
  parameter's support, ``real<lower=0>`` a positive support;
* Stan's ``positive_ordered[K]`` is built as Stan (and the hamiltonia model) builds it: a
  ``K``-vector of positive steps (``<x>_steps``) and :math:`x = \\operatorname{cumsum}` of
  them, a ``numpyro.deterministic`` site, its prior a ``numpyro.factor`` (the map has unit
  Jacobian), so the unconstrained coordinates are the same as hamiltonia's;
* the hidden Markov models' forward algorithm is a :func:`jax.lax.scan` over time;
* a half Student-t prior (``mcycle_gp-accel_gp``) is the Student-t truncated at zero.

:data:`SITES` lists the sites a run reports, in the order of the hamiltonia model's
:attr:`~hamiltonia.Target.reported_names`, and :func:`reported_draws` flattens NumPyro's
samples to hamiltonia's element names (``beta[0]``), so that the same bulk ESS estimator and
:func:`hamiltonia.posteriors.compare` read both. Needs JAX with ``jax_enable_x64`` (set by
:func:`build`) and NumPyro (the ``bench`` extra); nothing is imported before :func:`build`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["SITES", "build", "forward_algorithm", "reported_draws"]

#: Per posterior, the sites a run reports (parameters, then deterministic quantities), in
#: the order of the hamiltonia model's reported names.
SITES: dict[str, tuple[str, ...]] = {
    "bball_drive_event_0-hmm_drive_0": (
        "theta1", "theta2", "phi_steps", "lambda_steps", "phi", "lambda",
    ),
    "hmm_example-hmm_example": ("theta1", "theta2", "mu_steps", "mu"),
    "gp_pois_regr-gp_regr": ("rho", "alpha", "sigma"),
    "mcycle_gp-accel_gp": (
        "Intercept", "sdgp_1", "lscale_1", "zgp_1",
        "Intercept_sigma", "sdgp_sigma_1", "lscale_sigma_1", "zgp_sigma_1",
    ),
    "kilpisjarvi_mod-kilpisjarvi": ("alpha", "beta", "sigma"),
    "kidiq-kidscore_momhsiq": ("beta", "sigma"),
    "kidiq_with_mom_work-kidscore_mom_work": ("beta", "sigma"),
    "mesquite-logmesquite_logvolume": ("beta", "sigma"),
    "nes1980-nes": ("beta", "sigma"),
    "sblri-blr": ("beta", "sigma"),
}  # fmt: skip


def _flat(support, shape: tuple = ()):
    """The improper flat prior of a Stan parameter declared without one."""
    import numpyro.distributions as dist

    return dist.ImproperUniform(support, (), shape)


def forward_algorithm(log_theta, emission):
    """:math:`\\log p(y_{1:T})` of an HMM by the forward recursion, a :func:`jax.lax.scan`
    over time (as :func:`hamiltonia.posteriors.latent.forward_algorithm`): ``log_theta``
    ``(K, K)``, row :math:`j` the log transition probabilities out of state :math:`j`;
    ``emission`` ``(T, K)``, :math:`\\log p(y_t \\mid k)`."""
    from jax import lax
    from jax.scipy.special import logsumexp

    def step(gamma, emitted):
        return logsumexp(gamma[:, None] + log_theta, axis=0) + emitted, None

    gamma, _ = lax.scan(step, emission[0], emission[1:])
    return logsumexp(gamma)


def _ordered(name: str, k: int):
    """Stan's ``positive_ordered[k] name``: positive steps and their cumulative sum."""
    import jax.numpy as jnp
    import numpyro
    from numpyro.distributions import constraints

    steps = numpyro.sample(f"{name}_steps", _flat(constraints.positive, (k,)))
    return numpyro.deterministic(name, jnp.cumsum(steps))


def _normal_lpdf(x, mu, sigma):
    import numpyro.distributions as dist

    return dist.Normal(mu, sigma).log_prob(x)


def _regression(data: dict, name: str) -> Callable:
    """The six linear regressions (:mod:`hamiltonia.posteriors.regression`)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    real, positive = constraints.real, constraints.positive
    if name == "kidiq-kidscore_momhsiq":
        x = np.stack([np.ones_like(data["mom_hs"]), data["mom_hs"], data["mom_iq"]], axis=1)
        y = data["kid_score"]
    elif name == "kidiq_with_mom_work-kidscore_mom_work":
        work = data["mom_work"]
        x = np.stack([np.ones(len(work))] + [(work == w).astype(float) for w in (2, 3, 4)], 1)
        y = data["kid_score"]
    elif name == "mesquite-logmesquite_logvolume":
        volume = np.log(data["diam1"] * data["diam2"] * data["canopy_height"])
        x, y = np.stack([np.ones_like(volume), volume], axis=1), np.log(data["weight"])
    elif name == "nes1980-nes":
        age = data["age_discrete"]
        x = np.stack([np.ones(len(age)), data["real_ideo"], data["race_adj"],
                      *[(age == a).astype(float) for a in (2, 3, 4)],
                      data["educ1"], data["gender"], data["income"]], axis=1)  # fmt: skip
        y = data["partyid7"]
    elif name == "sblri-blr":
        x, y = data["X"], data["y"]
    else:
        raise KeyError(name)
    x, y = jnp.asarray(x, dtype=float), jnp.asarray(y, dtype=float)

    def model():
        if name == "sblri-blr":
            beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([x.shape[1]]).to_event(1))
            sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
        else:
            beta = numpyro.sample("beta", _flat(real, (x.shape[1],)))
            prior = dist.HalfCauchy(2.5) if name == "kidiq-kidscore_momhsiq" else _flat(positive)
            sigma = numpyro.sample("sigma", prior)
        numpyro.sample("y", dist.Normal(x @ beta, sigma), obs=y)

    return model


def _kilpisjarvi(data: dict) -> Callable:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    x, y = jnp.asarray(data["x"], dtype=float), jnp.asarray(data["y"], dtype=float)

    def model():
        alpha = numpyro.sample("alpha", dist.Normal(data["pmualpha"], data["psalpha"]))
        beta = numpyro.sample("beta", dist.Normal(data["pmubeta"], data["psbeta"]))
        sigma = numpyro.sample("sigma", _flat(constraints.positive))
        numpyro.sample("y", dist.Normal(alpha + beta * x, sigma), obs=y)

    return model


def _hmm_example(data: dict) -> Callable:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    y, k = jnp.asarray(data["y"], dtype=float), int(data["K"])

    def model():
        theta1 = numpyro.sample("theta1", dist.Dirichlet(jnp.ones(k)))  # Stan's flat simplex
        theta2 = numpyro.sample("theta2", dist.Dirichlet(jnp.ones(k)))
        mu = _ordered("mu", k)
        numpyro.factor("mu_prior", _normal_lpdf(mu[0], 3.0, 1.0) + _normal_lpdf(mu[1], 10.0, 1.0))
        emission = _normal_lpdf(y[:, None], mu, 1.0)
        log_theta = jnp.log(jnp.stack([theta1, theta2]))
        numpyro.factor("y", forward_algorithm(log_theta, emission))

    return model


def _bball(data: dict) -> Callable:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    u, v = jnp.asarray(data["u"], dtype=float), jnp.asarray(data["v"], dtype=float)
    alpha, k = jnp.asarray(data["alpha"], dtype=float), int(data["K"])

    def model():
        theta1 = numpyro.sample("theta1", dist.Dirichlet(alpha[0]))
        theta2 = numpyro.sample("theta2", dist.Dirichlet(alpha[1]))
        phi, lam = _ordered("phi", k), _ordered("lambda", k)
        prior = sum(_normal_lpdf(rate[0], 0.0, 1.0) + _normal_lpdf(rate[1], 3.0, 1.0)
                    for rate in (phi, lam))  # fmt: skip
        numpyro.factor("rates_prior", prior)
        emission = (dist.Exponential(phi).log_prob(u[:, None])
                    + dist.Exponential(lam).log_prob(v[:, None]))  # fmt: skip
        log_theta = jnp.log(jnp.stack([theta1, theta2]))
        numpyro.factor("uv", forward_algorithm(log_theta, emission))

    return model


def _gp_regr(data: dict) -> Callable:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    x, y = np.asarray(data["x"], dtype=float), jnp.asarray(data["y"], dtype=float)
    sq_dist = jnp.asarray((x[:, None] - x[None, :]) ** 2)
    eye = jnp.eye(len(x))

    def model():
        rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
        alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        cov = alpha**2 * jnp.exp(-0.5 * sq_dist / rho**2) + sigma * eye  # sigma, as in Stan
        chol = jnp.linalg.cholesky(cov)
        numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(len(x)), scale_tril=chol), obs=y)

    return model


def _mcycle(data: dict) -> Callable:
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    y = jnp.asarray(data["Y"], dtype=float)
    basis, basis_sigma = jnp.asarray(data["Xgp_1"]), jnp.asarray(data["Xgp_sigma_1"])
    slambda = jnp.asarray(data["slambda_1"][:, 0])
    slambda_sigma = jnp.asarray(data["slambda_sigma_1"][:, 0])

    def gp(suffix: str, phi, sl, n: int, intercept):
        sdgp = numpyro.sample(
            f"sdgp{suffix}", dist.TruncatedDistribution(dist.StudentT(3.0, 0.0, 36.0), low=0.0)
        )
        lscale = numpyro.sample(f"lscale{suffix}", dist.InverseGamma(1.124909, 0.0177))
        zgp = numpyro.sample(f"zgp{suffix}", dist.Normal(0.0, 1.0).expand([n]).to_event(1))
        spd = sdgp**2 * np.sqrt(2.0 * np.pi) * lscale * jnp.exp(-0.5 * lscale**2 * sl**2)
        return intercept + phi @ (jnp.sqrt(spd) * zgp)

    def model():
        intercept = numpyro.sample("Intercept", dist.StudentT(3.0, -13.0, 36.0))
        mu = gp("_1", basis, slambda, int(data["NBgp_1"]), intercept)
        intercept_sigma = numpyro.sample("Intercept_sigma", dist.StudentT(3.0, 0.0, 10.0))
        log_sigma = gp("_sigma_1", basis_sigma, slambda_sigma, int(data["NBgp_sigma_1"]),
                       intercept_sigma)  # fmt: skip
        numpyro.sample("Y", dist.Normal(mu, jnp.exp(log_sigma)), obs=y)

    return model


def build(name: str) -> Callable:
    """The NumPyro model (a function of no arguments) of posterior ``name`` with its
    vendored data. Turns on JAX's float64 (``jax_enable_x64``), as hamiltonia samples in
    float64."""
    import jax

    from hamiltonia.posteriors import load_data

    if name not in SITES:
        raise KeyError(f"no NumPyro model of {name!r}; there are {', '.join(SITES)}")
    jax.config.update("jax_enable_x64", True)
    data = load_data(name)
    special = {
        "bball_drive_event_0-hmm_drive_0": _bball,
        "hmm_example-hmm_example": _hmm_example,
        "gp_pois_regr-gp_regr": _gp_regr,
        "mcycle_gp-accel_gp": _mcycle,
        "kilpisjarvi_mod-kilpisjarvi": _kilpisjarvi,
    }
    if name in special:
        return special[name](data)
    return _regression(data, name)


def reported_draws(name: str, samples: dict) -> tuple[tuple[str, ...], np.ndarray]:
    """hamiltonia's element names and the draws ``(chains, draws, len(names))`` of NumPyro's
    ``samples`` (``mcmc.get_samples(group_by_chain=True)``) of posterior ``name``'s
    :data:`SITES`, in the order of the hamiltonia model's reported names."""
    from hamiltonia.modelling.parameters import element_names

    names, columns = [], []
    for site in SITES[name]:
        value = np.asarray(samples[site], dtype=float)
        shape = value.shape[2:]
        names.extend(element_names(site, shape))
        columns.append(value.reshape(*value.shape[:2], -1))
    return tuple(names), np.concatenate(columns, axis=-1)
