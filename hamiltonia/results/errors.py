"""What goes wrong with a run's output, as exceptions and warnings.

Every one names the path concerned and says what to do (the troubleshooting page lists each
message). They are ``OSError`` subclasses, so that code catching file errors catches them.
"""

from __future__ import annotations

__all__ = ["CheckpointWarning", "ForeignPathError", "OutputWriteError", "RunFileError"]


class RunFileError(OSError):
    """The output path cannot take this run, or an unfinished run cannot be read (the
    message names the path and what to do)."""


class ForeignPathError(RunFileError, FileExistsError):
    """A name that hamiltonia keeps for itself beside a user's output (``run.nc.partial``,
    ``run.nc.lock``, ``run.nc.tasks``, a reproduction's ``runs`` or ``cells``) is taken by
    something hamiltonia did not make: a file, a folder without hamiltonia's marker, or a
    symbolic link. It is refused before any work, and nothing there is read, written,
    followed or removed.

    Attributes
    ----------
    path : pathlib.Path
        The name that is taken.
    """

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = path


class OutputWriteError(RunFileError):
    """The finished run could not be written to its output (a full disk, a file-size limit,
    a folder gone): the run is not lost.

    Attributes
    ----------
    result : hamiltonia.Result or None
        The finished run, in memory: ``err.result.save(other_path)`` writes it elsewhere.
    path : pathlib.Path
        The output that could not be written.
    partial : pathlib.Path or None
        The unfinished run's folder, which holds the draws checkpointed so far
        (:func:`hamiltonia.resume` finishes it once there is space).
    reason : str
        Why the write failed (the message without the advice to a Python caller).
    """

    def __init__(self, message: str, path=None, result=None, partial=None):
        super().__init__(message)
        self.path = path
        self.result = result
        self.partial = partial
        self.reason = message


class CheckpointWarning(UserWarning):
    """A checkpoint could not be written (e.g. a full disk): the run goes on with its draws
    in memory, and the next checkpoint writes every draw not yet on disk."""
