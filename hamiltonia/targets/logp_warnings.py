"""The warnings of a target built from a user's log density (:meth:`Target.from_logp
<hamiltonia.targets.base.Target.from_logp>`, :class:`hamiltonia.Model`): one evaluated one
chain at a time (:class:`RowByRowWarning`), one numba cannot compile (:class:`CompileWarning`).

Both are re-exported by :mod:`hamiltonia.targets.base` and by the top-level package
(``hm.RowByRowWarning``, ``hm.CompileWarning``).
"""

from __future__ import annotations

__all__ = ["CompileWarning", "RowByRowWarning"]


class RowByRowWarning(UserWarning):
    """A log density that does not accept a batch of positions is evaluated one chain at a
    time (slower); the message gives the cost measured and the way out."""


class CompileWarning(UserWarning):
    """A log density that numba cannot compile runs with autograd on the NumPy path
    (slower); the message says why, and ``backend="autograd"`` silences it."""
