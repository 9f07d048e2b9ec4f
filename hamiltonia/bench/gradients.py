"""The cost of one gradient of a user's model (issue 53): ``python -m hamiltonia.bench.gradients``.

Five models, each written three ways with the same mathematics, data and unconstrained
coordinates (a positive parameter moved as its logarithm, the log-Jacobian added):
**logistic**, Bayesian logistic regression on German credit (1,000 rows, 24 standardised
features and an intercept, coefficients :math:`N(0, 10^2)`: the built-in
:class:`~hamiltonia.targets.logistic.LogisticRegression`'s posterior); **linear**, a linear
regression on 5,000 simulated rows and 25 features, :math:`w_j \\sim N(0, 10^2)`, noise
scale :math:`\\sigma \\sim \\text{half-}N(0, 1)`; **eight-schools**, non-centred, as
:mod:`hamiltonia.bench.models`; **ar**, an AR(3) over 500 simulated steps (:math:`c \\sim
N(0, 10^2)`, :math:`\\phi_k \\sim N(0, 1)`, :math:`\\sigma \\sim \\text{half-}N(0, 1)`); **gp**, a
GP regression on 50 simulated points, squared-exponential kernel, length scale
:math:`\\sim \\text{LogNormal}(0, 1)`, amplitude :math:`\\sim \\text{half-}N(0, 2^2)`, noise
:math:`\\sim \\text{half-}N(0, 1)`. The three ways:

1. **as written**: a :class:`hamiltonia.Model`, ``logp`` in ``autograd.numpy`` as a user
   writes it (``p["beta"] @ X.T``, a Python loop over time, ``anp.linalg.cholesky``), built
   with the default backend: its generated numba function (``model.numba_kernel()``) is
   timed, or its row says why it did not compile.
2. **hand-written**: a numba function of the same signature ``f(q, grad_out, fdata,
   idata)``, with loops (the logistic regression's is the built-in target's kernel);
   ``tests/bench/test_gradients_bench.py`` checks each against the model.
3. **NumPyro**: ``numpyro.sample`` sites, the data passed as arguments as ``MCMC.run``
   passes them; minus ``numpyro.infer.util.potential_energy`` at the same unconstrained
   point, through ``jax.value_and_grad`` (float64).

Timing: ns per gradient at a fixed unconstrained point, each call's input depending on the
previous call's output, as in a trajectory. The numba functions are called from a numba loop
through the first-class function pointer the chain kernel calls
(:func:`hamiltonia.bench.micro.gradient_seconds`, ``chained=True``: the "Overhead"
measurement of ``python -m hamiltonia.bench``); NumPyro's from a jitted ``lax.fori_loop``:
neither pays Python's dispatch. Each is the best of ``--repeats`` loops of about
``--budget`` seconds, then the best over ``--rounds`` rounds; in a round hamiltonia's two
and NumPyro's run in two fresh processes, pinned to one core (``--core``) with one thread
for BLAS, numba and XLA (``--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``). Columns: the costs, the model as written over the two
others, the issue's bars (at most 1.3 times the hand-written, at most NumPyro's), whether
the gradients agree. ``--output``: ``.rst``, a list-table, else markdown. NumPyro needs the
extra ``bench``. ``python -m hamiltonia.bench models`` prints this table first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np

from hamiltonia.modelling.linalg_special import cholesky_or_nan

__all__ = ["HAND_BAR", "MODELS", "NUMPYRO_BAR", "hand_kernel", "main", "measure_hamiltonia",
           "model_data", "numpyro_logp", "point", "render", "user_model"]  # fmt: skip

MODELS = ("logistic", "linear", "eight-schools", "ar", "gp")
#: The issue's bars: the model as written at most this times the hand-written gradient...
HAND_BAR = 1.3
#: ... and at most this times NumPyro's.
NUMPYRO_BAR = 1.0
PRIOR_SD = 10.0  # of the regressions' coefficients and the AR's constant
N_ROWS, N_COLS = 5000, 25  # the linear regression's data
LAGS, STEPS = 3, 500  # the AR(K)
N_GP, JITTER = 50, 1e-8  # the GP's points; added to its covariance's diagonal
#: The blocks of each model, in the order of its unconstrained vector: name, shape.
SHAPES = {"logistic": (("alpha", ()), ("beta", (24,))), "linear": (("w", (N_COLS,)), ("sigma", ())),
          "eight-schools": (("mu", ()), ("tau", ()), ("eta", (8,))),
          "ar": (("c", ()), ("phi", (LAGS,)), ("sigma", ())),
          "gp": (("ell", ()), ("amp", ()), ("sigma", ()))}  # fmt: skip
_MARK = "@@gradients@@"
_THREADS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _load() -> str:
    """The 1-minute load average (other processes share the cores)."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown"


def model_data(name: str) -> dict[str, np.ndarray]:
    """The data of model ``name``: German credit, or simulated with a fixed seed."""
    rng = np.random.default_rng(53)
    if name == "logistic":  # as hamiltonia.bench.models loads it
        from hamiltonia import datasets

        data = datasets.load("german", test_fraction=0.0, standardize=True)
        return {"X": np.asarray(data.X_train, float), "y": np.asarray(data.y_train, float)}
    if name == "linear":
        X = rng.normal(size=(N_ROWS, N_COLS))
        return {"X": X, "y": X @ rng.normal(size=N_COLS) + 0.5 * rng.normal(size=N_ROWS)}
    if name == "eight-schools":
        return {"y": np.array([28.0, 8, -3, 7, -1, 1, 18, 12]),
                "sigma": np.array([15.0, 10, 16, 11, 9, 11, 10, 18])}  # fmt: skip
    if name == "ar":
        y = rng.normal(size=STEPS)
        for t in range(LAGS, STEPS):
            y[t] += 0.3 + 0.5 * y[t - 1] - 0.2 * y[t - 2] + 0.1 * y[t - 3]
        return {"y": y}
    x = np.sort(rng.uniform(0.0, 10.0, N_GP))
    return {"y": np.sin(x) + 0.3 * rng.normal(size=N_GP), "d2": (x[:, None] - x) ** 2}


def point(name: str, seed: int = 0) -> np.ndarray:
    """A fixed unconstrained point of model ``name`` (the timings' point for ``seed=0``)."""
    dim = sum(int(np.prod(shape)) for _, shape in SHAPES[name])
    return 0.1 * np.random.default_rng(seed).normal(size=dim)


# ----------------------------------------------------------------------- 1. as written
def user_model(name: str, backend: str | None = None):
    """Model ``name`` as a user writes it: a :class:`hamiltonia.Model` over named,
    constrained blocks with a ``logp`` in ``autograd.numpy`` (module docs)."""
    import autograd.numpy as anp
    from autograd.scipy.linalg import solve_triangular

    import hamiltonia as hm

    d = model_data(name)
    X, y = d.get("X"), d["y"]
    if name == "logistic":

        def logp(p):
            z = p["alpha"] + p["beta"] @ X.T
            prior = -0.5 * (p["alpha"] ** 2 + anp.sum(p["beta"] ** 2)) / PRIOR_SD**2
            return prior + anp.sum(y * z - anp.logaddexp(0.0, z))

        blocks = {"alpha": hm.real(), "beta": hm.real(X.shape[1])}
    elif name == "linear":

        def logp(p):
            w, sigma = p["w"], p["sigma"]
            r = y - X @ w
            lik = -0.5 * anp.sum(r**2) / sigma**2 - len(y) * anp.log(sigma)
            return lik - 0.5 * anp.sum(w**2) / PRIOR_SD**2 - 0.5 * sigma**2

        blocks = {"w": hm.real(N_COLS), "sigma": hm.positive()}
    elif name == "eight-schools":
        sigma = d["sigma"]

        def logp(p):
            theta = p["mu"] + p["tau"] * p["eta"]
            prior = -0.5 * (p["mu"] / 5) ** 2 - anp.log1p((p["tau"] / 5) ** 2)
            return prior - 0.5 * anp.sum(p["eta"] ** 2) - 0.5 * anp.sum(((y - theta) / sigma) ** 2)

        blocks = {"mu": hm.real(), "tau": hm.positive(), "eta": hm.real(8)}
    elif name == "ar":

        def logp(p):
            c, phi, sigma = p["c"], p["phi"], p["sigma"]
            lp = -0.5 * c**2 / PRIOR_SD**2 - 0.5 * anp.sum(phi**2) - 0.5 * sigma**2
            for t in range(LAGS, len(y)):
                mu = c + sum(phi[k] * y[t - 1 - k] for k in range(LAGS))
                lp = lp - 0.5 * ((y[t] - mu) / sigma) ** 2
            return lp - (len(y) - LAGS) * anp.log(sigma)

        blocks = {"c": hm.real(), "phi": hm.real(LAGS), "sigma": hm.positive()}
    else:
        d2 = d["d2"]

        def logp(p):
            ell, amp, sigma = p["ell"], p["amp"], p["sigma"]
            K = amp**2 * anp.exp(-0.5 * d2 / ell**2) + (sigma**2 + JITTER) * anp.eye(len(y))
            L = anp.linalg.cholesky(K)
            a = solve_triangular(L, y, lower=True)
            lik = -0.5 * anp.sum(a**2) - anp.sum(anp.log(anp.diag(L)))
            prior = -0.5 * anp.log(ell) ** 2 - anp.log(ell) - 0.5 * (amp / 2) ** 2
            return lik + prior - 0.5 * sigma**2

        blocks = {"ell": hm.positive(), "amp": hm.positive(), "sigma": hm.positive()}
    return hm.Model(logp, blocks, backend=backend)


# ----------------------------------------------------------------------- 2. hand-written
def _linear(q, grad, fdata, idata):  # pragma: no cover - compiled
    """The linear regression: ``fdata`` = [y (N), X by columns (D x N)], ``idata`` = [N, D],
    ``q`` = [w (D), log sigma]. The products run along the rows, four columns a pass."""
    n, d = idata[0], idata[1]
    s = q[d]
    inv, sigma2 = math.exp(-2.0 * s), math.exp(2.0 * s)
    r = fdata[:n].copy()  # the residuals y - X w
    last = d - d % 4
    for j in range(0, last, 4):
        x = fdata[n + j * n : n + (j + 4) * n].reshape((4, n))
        w0, w1, w2, w3 = q[j], q[j + 1], q[j + 2], q[j + 3]
        for i in range(n):
            r[i] -= x[0, i] * w0 + x[1, i] * w1 + x[2, i] * w2 + x[3, i] * w3
    for j in range(last, d):
        x, w0 = fdata[n + j * n : n + (j + 1) * n], q[j]
        for i in range(n):
            r[i] -= x[i] * w0
    ss = r @ r
    for j in range(0, last, 4):
        x = fdata[n + j * n : n + (j + 4) * n].reshape((4, n))
        s0 = s1 = s2 = s3 = 0.0
        for i in range(n):
            ri = r[i]
            s0, s1 = s0 + x[0, i] * ri, s1 + x[1, i] * ri
            s2, s3 = s2 + x[2, i] * ri, s3 + x[3, i] * ri
        grad[j], grad[j + 1], grad[j + 2], grad[j + 3] = s0, s1, s2, s3
    for j in range(last, d):
        grad[j] = fdata[n + j * n : n + (j + 1) * n] @ r
    ww = 0.0
    for k in range(d):
        ww += q[k] * q[k]
        grad[k] = grad[k] * inv - q[k] / PRIOR_SD**2
    grad[d] = ss * inv - n - sigma2 + 1.0
    return -0.5 * ss * inv - n * s - 0.5 * ww / PRIOR_SD**2 - 0.5 * sigma2 + s


def _schools(q, grad, fdata, idata):  # pragma: no cover - compiled
    """Eight schools: ``fdata`` = [y (J), sigma (J)], ``idata`` = [J], ``q`` = [mu,
    log tau, eta (J)]."""
    n = idata[0]
    mu, z, tau = q[0], q[1], math.exp(q[1])
    u = tau / 5.0
    lp = -0.5 * (mu / 5.0) ** 2 - math.log1p(u * u) + z
    g_mu, g_tau = -mu / 25.0, -0.4 * u / (1.0 + u * u)
    for j in range(n):
        eta, sd = q[2 + j], fdata[n + j]
        r = (fdata[j] - mu - tau * eta) / sd
        a = r / sd  # d lp / d theta_j
        lp -= 0.5 * (eta * eta + r * r)
        g_mu += a
        g_tau += a * eta
        grad[2 + j] = tau * a - eta
    grad[0], grad[1] = g_mu, g_tau * tau + 1.0
    return lp


def _ar(q, grad, fdata, idata):  # pragma: no cover - compiled
    """The AR(K): ``fdata`` = y (T), ``idata`` = [T, K], ``q`` = [c, phi (K), log sigma].
    A regression on the lagged series: each loop runs along time, where it vectorises."""
    steps, lags = idata[0], idata[1]
    m, c, s = steps - lags, q[0], q[lags + 1]
    inv, sigma2 = math.exp(-2.0 * s), math.exp(2.0 * s)
    e = fdata[lags:steps] - c  # the innovations y_t - c - sum_k phi_k y_(t-1-k)
    for k in range(lags):
        lagged, phi = fdata[lags - 1 - k : steps - 1 - k], q[1 + k]
        for t in range(m):
            e[t] -= phi * lagged[t]
    ss = g_c = 0.0
    for t in range(m):
        ss += e[t] * e[t]
        g_c += e[t]
    pp = 0.0
    for k in range(lags):
        lagged, total = fdata[lags - 1 - k : steps - 1 - k], 0.0
        for t in range(m):
            total += e[t] * lagged[t]
        pp += q[1 + k] * q[1 + k]
        grad[1 + k] = total * inv - q[1 + k]
    grad[0] = g_c * inv - c / PRIOR_SD**2
    grad[lags + 1] = ss * inv - m - sigma2 + 1.0
    return -0.5 * c * c / PRIOR_SD**2 - 0.5 * pp - 0.5 * sigma2 - 0.5 * ss * inv - m * s + s


def _gp(q, grad, fdata, idata):  # pragma: no cover - compiled
    """The GP: ``fdata`` = [squared distances (n x n), y (n)], ``idata`` = [n], ``q`` =
    [log ell, log amp, log sigma]. The gradient is :math:`\\tfrac12 \\operatorname{tr}((\\alpha
    \\alpha^\\top - K^{-1}) \\partial K)`, :math:`\\alpha = K^{-1} y`, :math:`K^{-1} = L^{-\\top}
    L^{-1}`."""
    n = idata[0]
    d2, y = fdata[: n * n].reshape((n, n)), fdata[n * n : n * n + n]
    ell2, amp2, sigma2 = math.exp(2.0 * q[0]), math.exp(2.0 * q[1]), math.exp(2.0 * q[2])
    e = np.empty((n, n))  # amp^2 exp(-d2 / (2 ell^2)), symmetric
    for i in range(n):
        for j in range(i + 1):
            e[i, j] = e[j, i] = amp2 * math.exp(-0.5 * d2[i, j] / ell2)
    k = e.copy()
    for i in range(n):
        k[i, i] += sigma2 + JITTER
    low = cholesky_or_nan(k)
    if not math.isfinite(low[0, 0]):
        grad[:] = np.nan
        return np.nan
    inv = np.zeros((n, n))  # L^-1, row by row (contiguous)
    a = np.empty(n)  # L^-1 y
    logdet = 0.0
    for i in range(n):
        row = inv[i]
        row[i] = 1.0
        total = y[i]
        for m in range(i):
            lim = low[i, m]
            total -= lim * a[m]
            for j in range(m + 1):
                row[j] -= lim * inv[m, j]
        scale = 1.0 / low[i, i]
        for j in range(i + 1):
            row[j] *= scale
        a[i] = total * scale
        logdet += math.log(low[i, i])
    alpha = np.dot(a, inv)  # K^-1 y = L^-T a
    kinv = np.dot(inv.T, inv)
    g_ell = g_amp = g_sigma = aa = 0.0
    for i in range(n):
        aa += a[i] * a[i]
        g_sigma += alpha[i] * alpha[i] - kinv[i, i]
        for j in range(n):
            w = (alpha[i] * alpha[j] - kinv[i, j]) * e[i, j]
            g_amp += w
            g_ell += w * d2[i, j]
    # The priors and log-Jacobians (+ q): LogNormal(0, 1) (whose -log ell the Jacobian
    # cancels), half-N(0, 2^2), half-N(0, 1).
    grad[0] = 0.5 * g_ell / ell2 - q[0]
    grad[1] = g_amp - 0.25 * amp2 + 1.0
    grad[2] = sigma2 * g_sigma - sigma2 + 1.0
    prior = -0.5 * q[0] * q[0] - 0.125 * amp2 + q[1] - 0.5 * sigma2 + q[2]
    return -0.5 * aa - logdet + prior


def hand_kernel(name: str):
    """The hand-written :class:`~hamiltonia.compiled.NumbaTarget` of model ``name``."""
    from hamiltonia.compiled.targets import NumbaTarget

    d = model_data(name)
    if name == "logistic":
        from hamiltonia.targets.logistic import LogisticRegression

        return LogisticRegression(d["X"], d["y"], prior_scale=PRIOR_SD).numba_kernel()
    if name == "linear":
        return NumbaTarget.build(_linear, np.append(d["y"], d["X"].T), d["X"].shape)
    if name == "eight-schools":
        return NumbaTarget.build(_schools, np.append(d["y"], d["sigma"]), [d["y"].size])
    if name == "ar":
        return NumbaTarget.build(_ar, d["y"], [STEPS, LAGS])
    return NumbaTarget.build(_gp, np.append(d["d2"], d["y"]), [N_GP])


# ----------------------------------------------------------------------- 3. NumPyro
def _numpyro_program(name: str):
    """NumPyro's program of model ``name`` and its data arguments."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    d = {k: jnp.asarray(v) for k, v in model_data(name).items()}
    sample, normal, half = numpyro.sample, dist.Normal, dist.HalfNormal
    if name == "logistic":

        def program(X, y):
            alpha = sample("alpha", normal(0.0, PRIOR_SD))
            beta = sample("beta", normal(0.0, PRIOR_SD).expand([X.shape[1]]).to_event(1))
            sample("y", dist.Bernoulli(logits=alpha + X @ beta), obs=y)

        return program, (d["X"], d["y"])
    if name == "linear":

        def program(X, y):
            w = sample("w", normal(0.0, PRIOR_SD).expand([X.shape[1]]).to_event(1))
            sample("y", normal(X @ w, sample("sigma", half(1.0))), obs=y)

        return program, (d["X"], d["y"])
    if name == "eight-schools":

        def program(y, sd):
            mu, tau = sample("mu", normal(0.0, 5.0)), sample("tau", dist.HalfCauchy(5.0))
            with numpyro.plate("school", 8):
                eta = sample("eta", normal(0.0, 1.0))
                sample("y", normal(mu + tau * eta, sd), obs=y)

        return program, (d["y"], d["sigma"])
    if name == "ar":  # vectorised, as a JAX user writes it: mu = c + lags @ phi

        def program(lagged, now):
            c = sample("c", normal(0.0, PRIOR_SD))
            phi = sample("phi", normal(0.0, 1.0).expand([LAGS]).to_event(1))
            sample("y", normal(c + lagged @ phi, sample("sigma", half(1.0))), obs=now)

        y = d["y"]
        lagged = jnp.stack([y[LAGS - 1 - k : STEPS - 1 - k] for k in range(LAGS)], axis=-1)
        return program, (lagged, y[LAGS:])

    def program(d2, y):
        ell, amp = sample("ell", dist.LogNormal(0.0, 1.0)), sample("amp", half(2.0))
        noise = sample("sigma", half(1.0)) ** 2 + JITTER
        K = amp**2 * jnp.exp(-0.5 * d2 / ell**2) + noise * jnp.eye(y.shape[0])
        sample("y", dist.MultivariateNormal(jnp.zeros(y.shape[0]), covariance_matrix=K), obs=y)

    return program, (d["d2"], d["y"])


def numpyro_logp(name: str):
    """``(logp, args)``: NumPyro's log density of model ``name`` as a function
    ``logp(q, args)`` of the flat unconstrained vector (minus ``potential_energy``: the
    model's up to a constant), and the data arguments."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from numpyro.infer.util import potential_energy

    program, args = _numpyro_program(name)
    names, shapes = zip(*SHAPES[name], strict=True)
    cuts = np.cumsum([math.prod(shape) for shape in shapes])[:-1].tolist()

    def logp(q, args):
        blocks = zip(names, shapes, jax.numpy.split(q, cuts), strict=True)
        return -potential_energy(program, args, {}, {k: v.reshape(s) for k, s, v in blocks})

    return logp, args


def _numpyro_seconds(name: str, q: np.ndarray, repeats: int, budget: float):
    """Seconds per chained call of NumPyro's jitted value and gradient, and both at ``q``."""
    import jax
    import jax.numpy as jnp

    from hamiltonia.bench.micro import _best_of

    logp, args = numpyro_logp(name)
    value_and_grad = jax.value_and_grad(logp)

    @jax.jit
    def loop(q, eps, n, args):
        def body(_, carry):  # the next input depends on this output, as in a trajectory
            q, total = carry
            lp, grad = value_and_grad(q, args)
            return q + eps * grad, total + lp

        return jax.lax.fori_loop(0, n, body, (q, jnp.zeros(())))

    q = jnp.asarray(q)
    lp, grad = jax.jit(value_and_grad)(q, args)

    def run(n):
        jax.block_until_ready(loop(q, 0.0, n, args))
        return n

    return _best_of(run, 100, repeats, budget), float(lp), np.asarray(grad).tolist()


# ----------------------------------------------------------------------- measuring
def measure_hamiltonia(name: str, *, repeats: int = 5, budget: float = 0.2) -> dict:
    """The model as written (built with the default backend) and the hand-written gradient
    of model ``name``: ns per chained call, and both log densities and gradients at
    :func:`point`. ``written_error`` says why a model did not compile."""
    from hamiltonia.bench.micro import gradient_seconds

    q = point(name)

    def ns(kernel) -> float:
        return 1e9 * gradient_seconds(kernel, q, chained=True, repeats=repeats, budget=budget)

    hand = hand_kernel(name)
    hand_lp, hand_grad = hand.evaluate(q)
    out = {"model": name, "dim": q.size, "hand_lp": hand_lp, "hand_grad": hand_grad.tolist()}
    out["hand_ns"] = ns(hand)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = user_model(name)
    kernel = model.numba_kernel() if model.backend == "numba" else None
    if kernel is None:
        why = "; ".join(str(w.message).splitlines()[0] for w in caught) or "no compiled kernel"
        return {**out, "written_error": f"{model.backend} backend: {why}"}
    lp, grad = kernel.evaluate(q)
    return {**out, "lp": lp, "grad": grad.tolist(), "written_ns": ns(kernel)}


def _worker(side: str, names: list[str], repeats: int, budget: float, core: int | None) -> int:
    """One process's measurements, a line of JSON per model (``--one``)."""
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    for name in names:
        try:
            if side == "numpyro":
                seconds, lp, grad = _numpyro_seconds(name, point(name), repeats, budget)
                record = {"numpyro_ns": 1e9 * seconds, "numpyro_lp": lp, "numpyro_grad": grad}
            else:
                record = measure_hamiltonia(name, repeats=repeats, budget=budget)
        except Exception as err:  # a row, not a crash
            record = {f"{side}_error": f"{type(err).__name__}: {err}"}
        print(_MARK + json.dumps({**record, "model": name}), flush=True)
    return 0


def _in_process(side: str, names: list[str], args) -> dict[str, dict]:
    """:func:`_worker`'s records from a fresh process, with one thread everywhere."""
    env = {**os.environ, **dict.fromkeys(_THREADS, "1"), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {_XLA}".strip()}  # fmt: skip
    command = [sys.executable, "-m", "hamiltonia.bench.gradients", "--one", side, *names,
               "--repeats", str(args.repeats), "--budget", str(args.budget)]  # fmt: skip
    command += [] if args.core is None else ["--core", str(args.core)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    lines = [ln[len(_MARK) :] for ln in done.stdout.splitlines() if ln.startswith(_MARK)]
    records = {r["model"]: r for r in map(json.loads, lines)}
    why = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
    return {name: records.get(name, {"model": name, f"{side}_error": why}) for name in names}


def _same(r: dict) -> str:
    """Whether the hand-written gradient and log density, and NumPyro's gradient (its log
    density differs by a constant), are the model's at the point."""
    if "grad" not in r:
        return "–"
    differ = []
    for who, lp, grad in (("hand-written", r.get("hand_lp"), r.get("hand_grad")),
                          ("NumPyro", None, r.get("numpyro_grad"))):  # fmt: skip
        if grad is None:
            continue
        got, want = np.asarray(grad), np.asarray(r["grad"])
        if lp is not None:
            got, want = np.append(got, lp), np.append(want, r["lp"])
        if not np.allclose(got, want, rtol=1e-8, atol=1e-10 * (1 + np.max(np.abs(want)))):
            differ.append(who)
    return "no: " + ", ".join(differ) if differ else "yes"


def _cell(value: float | None, why: str | None) -> str:
    """A time, or why it is missing (on one line, without the table's bars)."""
    if value:
        return f"{value:,.0f}"
    if not why or why == "not run":
        return why or "–"
    return "failed: " + " ".join(why.split()).replace("|", "/")[:160]


def render(records: list[dict], fmt: str = "md") -> str:
    """The table of ``records`` (:func:`measure_hamiltonia`'s, with NumPyro's
    ``numpyro_ns``, ``numpyro_grad`` and ``numpyro_lp`` where it ran): markdown, or a
    reStructuredText list-table for ``fmt="rst"``."""
    header = ["model", "dim", "as written ns", "hand-written ns", "NumPyro ns",
              "written / hand", "written / NumPyro", f"≤ {HAND_BAR}× hand",
              "≤ NumPyro", "same gradient"]  # fmt: skip
    rows = []
    for r in records:
        written, hand, peer = r.get("written_ns"), r.get("hand_ns"), r.get("numpyro_ns")
        ratios = [written / base if written and base else None for base in (hand, peer)]
        failed = r.get("hamiltonia_error")
        row = [r["model"], str(r.get("dim", "–")),
               _cell(written, r.get("written_error") or failed), _cell(hand, failed),
               _cell(peer, r.get("numpyro_error", "not run"))]  # fmt: skip
        row += ["–" if v is None else f"{v:.2f}" for v in ratios]
        row += ["–" if v is None else "yes" if v <= bar else "no"
                for v, bar in zip(ratios, (HAND_BAR, NUMPYRO_BAR), strict=True)]  # fmt: skip
        rows.append([*row, _same(r)])
    if fmt == "rst":
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for row in [header, *rows]:
            lines += [f"   * - {row[0]}", *(f"     - {cell}" for cell in row[1:])]
        return "\n".join(lines)
    lines = ["| " + " | ".join(row) + " |" for row in [header, *rows]]
    return "\n".join([lines[0], "|" + "---|" * len(header), *lines[1:]])


def main(argv=None) -> int:
    """``python -m hamiltonia.bench.gradients``: measure, print the table, optionally
    write it (module docs)."""
    parser = argparse.ArgumentParser(prog="python -m hamiltonia.bench.gradients")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--repeats", type=int, default=5, help="timed loops per round")
    parser.add_argument("--budget", type=float, default=0.2, help="seconds of one timed loop")
    last = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    parser.add_argument("--core", type=int, default=last, help="the core (default the last)")
    parser.add_argument("--no-numpyro", action="store_true", help="hamiltonia's columns only")
    parser.add_argument("--output", "-o", help="also write the table (.rst: a list-table)")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return _worker(args.one[0], args.one[1:], args.repeats, args.budget, args.core)
    from hamiltonia.results.runfile import RunFileError, atomic_write_bytes, checked_file_path

    try:  # before the runs: never a folder, a device or a pipe
        path = args.output and checked_file_path(args.output, "--output")
    except RunFileError as err:
        parser.error(str(err))
    peer = not args.no_numpyro and all(importlib.util.find_spec(m) for m in ("jax", "numpyro"))
    if not (peer or args.no_numpyro):
        print("NumPyro or JAX is not installed: its column is left out", file=sys.stderr)
    sides = ["hamiltonia", "numpyro"] if peer else ["hamiltonia"]
    best, load = {name: {} for name in args.models}, _load()
    for round_ in range(args.rounds):
        for side in sides:
            print(f"round {round_ + 1} of {args.rounds}: {side}", file=sys.stderr, flush=True)
            for name, record in _in_process(side, args.models, args).items():
                for key, value in record.items():  # the fastest of each, the rest once
                    keep = key.endswith("_ns") and key in best[name]
                    best[name][key] = min(best[name][key], value) if keep else value
    from hamiltonia.bench.machine import machine_info

    info = machine_info()
    footer = (f"{info['date']}, {info['cpu']}, {info['cores']} cores (core {args.core}), "
              f"{args.rounds} rounds, 1-minute load average {load} / {_load()}")  # fmt: skip
    text = render(list(best.values()))
    print(f"{text}\n\n{footer}", flush=True)
    if path:
        rst = path.suffix == ".rst"
        content = render(list(best.values()), "rst") if rst else text
        atomic_write_bytes(path, f"{content}\n\n{footer}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
