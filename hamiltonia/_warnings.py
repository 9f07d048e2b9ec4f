"""Warnings that point at the user's line.

A warning raised deep in the package (a model built, a run started) is about the user's call,
so it is attributed to the first frame outside the package: the line that built the model or
started the run, whatever the depth of the package's own calls between. A fixed
``stacklevel`` is right for one call path only and reads ``sys:1`` on a deeper one.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_at_user"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` made in :func:`warn_at_user`'s caller's
    caller... : the first frame whose file is not in the package (``1`` is
    :func:`warn_at_user` itself)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn_at_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line (module docs)."""
    warnings.warn(message, category, stacklevel=_user_stacklevel())
