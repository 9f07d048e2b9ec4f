"""Benchmarks: hamiltonia against NumPyro, BlackJAX and mici, and hamiltonia's own overheads.

``python -m hamiltonia.bench`` (or ``hamiltonia bench``) runs fixed-length HMC on banana,
gaussian-d100, funnel-d25 and blr-german with every installed peer (4 chains, 1,000 warm-up,
1,000 draws, same data and priors, float64, target acceptance 0.8), each run in a fresh
process, then times hamiltonia's compiled kernel per leapfrog step against one gradient,
the cost of 1 to 64 chains, and the memory of a long run, and prints markdown tables.
Options: ``--quick``, ``--targets``, ``--peers`` (``none`` for hamiltonia alone),
``--output FILE`` (``.rst`` gives a Sphinx page). Peers are imported only to run them; a
missing one is reported, not an error (:func:`detect_peers`).
"""

from hamiltonia.bench.core import main
from hamiltonia.bench.peers import detect_peers

__all__ = ["detect_peers", "main"]
