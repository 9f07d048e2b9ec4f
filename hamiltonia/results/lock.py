"""The lock of a run's output: one writer at a time, refused at the start rather than mid-run.

The lock is an ``fcntl.flock`` on ``output.lock``: the kernel releases it when its holder
dies, so a lock is never stale and never needs to be broken. Where ``flock`` does not exist
the lock file is created exclusively and holds its owner's process id; one whose owner is
dead is taken over. Either way the file is opened only as
:func:`hamiltonia.results.owned.open_lock_file` allows: never through a link, never a file
that is not a hamiltonia lock.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from hamiltonia.results.errors import RunFileError
from hamiltonia.results.owned import lock_owner, lock_text, open_lock_file

__all__ = ["OutputLock", "lock_path", "pid_alive"]


def lock_path(path) -> Path:
    """The lock file of the output ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def pid_alive(pid: int) -> bool:
    """Whether the process ``pid`` is alive (a zombie is not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has died but is not yet reaped (Linux; elsewhere ``False``)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line[stat_line.rfind(")") + 2 :].startswith("Z")


def _read_pid(fd: int) -> int:
    try:
        return lock_owner(os.pread(fd, 64, 0)) or 0
    except OSError:
        return 0


def _same_file(fd: int, path: Path) -> bool:
    try:
        ours, current = os.fstat(fd), os.lstat(path)
    except FileNotFoundError:
        return False
    return (ours.st_ino, ours.st_dev) == (current.st_ino, current.st_dev)


class OutputLock:
    """The lock of the output ``path`` (held from :meth:`take` to :meth:`release`)."""

    def __init__(self, path):
        self.output = Path(path)
        self.path = lock_path(path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def check(self) -> None:
        """Refuse, before any work, a lock name taken by something that is not a hamiltonia
        lock (:class:`~hamiltonia.results.errors.ForeignPathError`); nothing is made."""
        try:
            fd = open_lock_file(self.path, create=False)
        except FileNotFoundError:
            return
        os.close(fd)

    def _busy(self, owner: int) -> RunFileError:
        who = f"pid {owner}, " if owner else ""
        return RunFileError(
            f"output {self.output} is being written by another process ({who}lock "
            f"{self.path}); wait for it or choose another output"
        )

    def take(self, timeout: float = 0.0) -> None:
        """Take the lock, waiting up to ``timeout`` seconds for another process that holds
        it (0: refuse at once)."""
        if os.name != "posix":
            self._take_exclusive(timeout)
            return
        import fcntl

        deadline = time.monotonic() + max(float(timeout), 0.0)
        while True:
            fd = open_lock_file(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                owner = _read_pid(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise self._busy(owner) from None
            # The previous holder unlinks the lock as it lets go: if that happened between
            # our open and our flock, we hold a file nobody else will look at. Try again.
            if not _same_file(fd, self.path):
                os.close(fd)
                continue
            # For the message of a second writer only: the flock is the lock.
            os.ftruncate(fd, 0)
            os.pwrite(fd, lock_text(os.getpid()), 0)
            self._fd = fd
            return

    def _take_exclusive(self, timeout: float) -> None:
        """Where ``flock`` does not exist: a lock file created exclusively, holding the
        pid; one whose process is dead is taken over."""
        deadline = time.monotonic() + max(float(timeout), 0.0)
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666)
            except FileExistsError:
                fd = open_lock_file(self.path, create=False)  # a lock's, or refused
                owner = _read_pid(fd)
                os.close(fd)
                if owner and not pid_alive(owner):
                    self.path.unlink(missing_ok=True)
                    continue
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise self._busy(owner) from None
            os.write(fd, lock_text(os.getpid()))
            self._fd = fd
            return

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        if self._fd is not None:
            # Unlinked while still held, so that no one can take a lock on this file after
            # we let go and believe it is the current one; only if it is still ours.
            if _same_file(self._fd, self.path):
                self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
