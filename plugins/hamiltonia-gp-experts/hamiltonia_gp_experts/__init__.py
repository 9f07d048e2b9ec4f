"""Products of Gaussian-process experts with shared hyperparameters (Cohen, Mbuvha, Marwala and
Deisenroth, "Healing products of Gaussian process experts", ICML 2020; Mongwe 2022, thesis,
ch. 5), with the shared kernel hyperparameters sampled by hamiltonia.

Nothing is registered on import: hamiltonia finds the target ``gp-experts`` and the study
``gp-experts`` through the entry points of this package's ``setup.cfg``.

* :mod:`hamiltonia_gp_experts.targets`: the summed expert log marginal likelihood (eq. 5.4).
* :mod:`hamiltonia_gp_experts.aggregation`: the experts' predictions, the weights and the
  rules PoE, gPoE, BCM, rBCM and barGP, the posterior mixture and the metrics.
* :mod:`hamiltonia_gp_experts.study`: ``hamiltonia reproduce gp-experts``.
"""

__version__ = "0.1.0"
