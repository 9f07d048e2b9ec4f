"""The generated data of the 1-D regression example of Cobb and Jalaian (2021, §5.1, Fig. 1,
Table 1), the network of :func:`hamiltonia.targets.mlp.regression_1d`: a stand-in for the
simple 1-D data set of Izmailov et al. (2019) (:func:`regression_1d_data`,
:class:`Regression1DData`) and the paper's constants it is made with.

The data (GAP: generated here, not the original file)
-----------------------------------------------------
The paper uses "the simple 1D data set from Izmailov et al. (2019)", which hamiltorch
downloads as ``experiments/synthetic_regression/ckpts/data.npy`` of the repository
``wjmaddox/drbayes`` (EXTERNAL). That file is not available here (no network), and the code
that made it is not published. What the drbayes notebooks show (EXTERNAL,
``notebooks/toy_regression_final.ipynb``, ``subspace_inference/models/regression_net.py``):
``data.npy`` holds rows :math:`(x, y)` on the raw scale; :math:`y` was drawn from a "data
generator" network (``data_generator*.pt``, weights not published) of the ``ToyRegNet``
architecture, a ReLU network 2 → 200 → 50 → 50 → 50 → 1 on the features
:math:`(x/2, (x/2)^2)`, with :math:`x` shown on :math:`[-10, 10]`; the data have gaps
(hamiltorch: "nice gaps in the data where we can look at the model behaviour").
:func:`regression_1d_data` therefore generates a data set *of the same kind*, with
``numpy.random.default_rng(seed)`` (:data:`DATA_SEED`). Assumed, each an explicit choice:

1. :math:`N = 400` (the paper's 4 × 100).
2. :math:`x`: two clusters of 200 points, uniform on :math:`[-7, -3]` and on :math:`[3, 7]`
   (:data:`DATA_INTERVALS`), so there is a gap between them and room outside them; the
   original's cluster positions and sizes are unknown.
3. The noise-free function: a ``ToyRegNet`` with random weights, every weight and bias
   :math:`\\sim U(-1/\\sqrt{\\text{fan-in}}, 1/\\sqrt{\\text{fan-in}})` (PyTorch's default
   initialisation of ``nn.Linear``), on :math:`(x/2, (x/2)^2)`.
4. The noise: Gaussian, with the variance that makes the precision of the *standardised*
   noise equal to the paper's :math:`\\tau`, :math:`\\sigma^2 = \\widehat{\\operatorname{Var}}
   (f) / (\\tau - 1)` over the 400 inputs, so that :math:`\\tau` fits these data as it fitted
   the original (whose GP fit gave it).
5. The rows in random order (a permutation drawn from the same generator), so the 4
   consecutive subsets are random subsets, as a data loader shuffled once would give.

Then, as the notebook: :math:`x` and :math:`y` standardised with their mean and (population,
``ddof=0``) standard deviation, in float64 rather than float32.

References
----------
Cobb, A. D. and Jalaian, B. (2021), *Scaling Hamiltonian Monte Carlo inference for Bayesian
neural networks with symmetric splitting*, UAI, §5.1. Izmailov, P., Maddox, W. J.,
Kirichenko, P., Garipov, T., Vetrov, D. and Wilson, A. G. (2019), *Subspace inference for
Bayesian deep learning*, UAI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from hamiltonia._validation import check_int

__all__ = [
    "DATA_INTERVALS",
    "DATA_SEED",
    "GENERATOR_WIDTHS",
    "PAPER_N_OBS",
    "PAPER_TAU",
    "Regression1DData",
    "regression_1d_data",
]

#: The output precision of the hamiltorch split-HMC notebook (Cobb and Jalaian 2021, §5.1).
PAPER_TAU = 110.4439498986428
#: Training rows of the paper's example (4 subsets of 100).
PAPER_N_OBS = 400
#: Seed of :func:`regression_1d_data`.
DATA_SEED = 2019
#: Raw-scale intervals of the generated inputs (assumption 2 of the module docs).
DATA_INTERVALS = ((-7.0, -3.0), (3.0, 7.0))
#: Hidden widths of drbayes' ``ToyRegNet``, the generator's architecture (EXTERNAL).
GENERATOR_WIDTHS = (200, 50, 50, 50)


@dataclass(frozen=True)
class Regression1DData:
    """The generated 1-D data set (see the module docs, "The data").

    Attributes
    ----------
    x, y, f : ndarray of shape (N,)
        Raw inputs, targets and the noise-free generator's values.
    X : ndarray of shape (N, 1)
        Standardised inputs :math:`(x - \\bar x)/s_x`.
    Y : ndarray of shape (N,)
        Standardised targets :math:`(y - \\bar y)/s_y`.
    X_test : ndarray of shape (500, 1)
        The test grid on :math:`[-2, 2]` (standardised units).
    F_test : ndarray of shape (500,)
        The noise-free generator on the grid, in standardised units of :math:`y` (for
        plots: the truth the data were drawn from, beyond the data too).
    x_mean, x_scale, y_mean, y_scale : float
        The standardisation (population standard deviations).
    noise_scale : float
        The noise standard deviation on the raw scale.
    seed : int
        The seed of ``numpy.random.default_rng``.
    """

    x: np.ndarray
    y: np.ndarray
    f: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    X_test: np.ndarray
    F_test: np.ndarray
    x_mean: float
    x_scale: float
    y_mean: float
    y_scale: float
    noise_scale: float
    seed: int


def _generator(rng: np.random.Generator):
    """The data generator: a ``ToyRegNet`` (ReLU, 2 → 200 → 50 → 50 → 50 → 1) with
    PyTorch's default initialisation, on the features :math:`(x/2, (x/2)^2)`."""
    widths = (2, *GENERATOR_WIDTHS, 1)
    layers = []
    for fan_in, fan_out in pairwise(widths):
        bound = 1.0 / math.sqrt(fan_in)
        W = rng.uniform(-bound, bound, size=(fan_in, fan_out))
        layers.append((W, rng.uniform(-bound, bound, size=fan_out)))

    def f(x):
        h = np.stack([x / 2.0, (x / 2.0) ** 2], axis=-1)
        for W, b in layers[:-1]:
            h = np.maximum(h @ W + b, 0.0)
        W, b = layers[-1]
        return (h @ W + b)[:, 0]

    return f


def regression_1d_data(seed: int = DATA_SEED, n_obs: int = PAPER_N_OBS) -> Regression1DData:
    """Generate the 1-D regression data (GAP: a data set of the kind of Izmailov et al.
    (2019), not their file; the assumptions are listed in the module docs).

    The same ``seed`` gives the same data on every platform NumPy's ``default_rng`` runs on.

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng`` (default :data:`DATA_SEED`).
    n_obs : int
        Training rows (default 400), split evenly between the two clusters.
    """
    seed = check_int(seed, "seed")
    n_obs = check_int(n_obs, "n_obs", minimum=len(DATA_INTERVALS) + 1)
    rng = np.random.default_rng(seed)
    generator = _generator(rng)
    sizes = np.full(len(DATA_INTERVALS), n_obs // len(DATA_INTERVALS))
    sizes[: n_obs % len(DATA_INTERVALS)] += 1
    x = np.concatenate([rng.uniform(lo, hi, size=m)
                        for (lo, hi), m in zip(DATA_INTERVALS, sizes, strict=True)])  # fmt: skip
    x = x[rng.permutation(n_obs)]
    f = generator(x)
    # Noise whose standardised precision is the paper's tau: sigma^2 / (Var f + sigma^2) = 1/tau.
    noise_scale = math.sqrt(float(np.var(f)) / (PAPER_TAU - 1.0))
    y = f + noise_scale * rng.standard_normal(n_obs)
    x_mean, x_scale = float(np.mean(x)), float(np.std(x))
    y_mean, y_scale = float(np.mean(y)), float(np.std(y))
    grid = np.linspace(-2.0, 2.0, 500)
    return Regression1DData(
        x=x,
        y=y,
        f=f,
        X=((x - x_mean) / x_scale)[:, None],
        Y=(y - y_mean) / y_scale,
        X_test=grid[:, None],
        F_test=(generator(x_mean + x_scale * grid) - y_mean) / y_scale,
        x_mean=x_mean,
        x_scale=x_scale,
        y_mean=y_mean,
        y_scale=y_scale,
        noise_scale=noise_scale,
        seed=seed,
    )
