"""Run a script in a fresh Python process: for what only a new process shows (which modules
an action imports, what it compiles)."""

import subprocess
import sys


def printed_by(script: str) -> list[str]:
    """The words ``script`` prints when run by this Python in a new process (which must
    succeed)."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
