"""Example hamiltonia plugin: a ring target, a jittered-length HMC sampler and a
fourth-order integrator.

Nothing is registered on import: hamiltonia finds ``example-ring``, ``example-jittered-hmc``
and the integrator ``yoshida4`` through the entry points declared in this package's
``setup.cfg``.
"""

__version__ = "0.1.0"
