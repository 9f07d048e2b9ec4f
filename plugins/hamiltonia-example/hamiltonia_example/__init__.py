"""Example hamiltonia plugin: a ring target and a jittered-length HMC sampler.

Nothing is registered on import: hamiltonia finds ``example-ring`` and
``example-jittered-hmc`` through the entry points declared in this package's ``setup.cfg``.
"""

__version__ = "0.1.0"
