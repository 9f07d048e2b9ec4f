"""Hostile trees at the names hamiltonia derives from a user's output, and snapshots that
show whether any byte outside the output changed.

Shared by the property test (:mod:`tests.results.test_owned`) and the red-team script
(``python -m tests.red_team``). A *tree* is what a user may have left at a derived name
(``run.nc.partial``, ``run.nc.lock``, ``run.nc.tasks``, a reproduction's ``runs``...): a
file, a folder of their files, a symbolic link to a file or a folder they care about (kept
in ``precious/``, outside the output's folder), a link to nothing, a hard link to one of
their files, a named pipe.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import warnings
from pathlib import Path

#: What can stand at a derived name; "nothing" leaves the name free.
KINDS = (
    "nothing",
    "file",
    "empty-folder",
    "folder-with-files",
    "folder-with-subfolder",
    "link-to-file",
    "link-to-folder",
    "dangling-link",
    "hard-link",
    "fifo",
)


def precious(root: Path) -> Path:
    """A folder of the user's files that links may point at: ``root/precious`` with a file
    and a folder holding a file."""
    place = root / "precious"
    if not place.exists():
        (place / "folder").mkdir(parents=True)
        (place / "file.txt").write_bytes(b"the user's own file\n")
        (place / "folder" / "notes.txt").write_bytes(b"the user's notes\n")
    return place


def plant(path: Path, kind: str, root: Path) -> None:
    """Put a tree of ``kind`` at ``path`` (``root`` holds the precious files)."""
    keep = precious(root)
    if kind == "nothing":
        return
    if kind == "file":
        path.write_bytes(b"a file of the user's\n")
    elif kind == "empty-folder":
        path.mkdir()
    elif kind == "folder-with-files":
        path.mkdir()
        (path / "results.csv").write_bytes(b"1,2,3\n")
        (path / "manifest.json").write_bytes(b'{"the user": "wrote this"}')
    elif kind == "folder-with-subfolder":
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "data.bin").write_bytes(b"\x00\x01\x02")
    elif kind == "link-to-file":
        path.symlink_to(keep / "file.txt")
    elif kind == "link-to-folder":
        path.symlink_to(keep / "folder", target_is_directory=True)
    elif kind == "dangling-link":
        path.symlink_to(root / "nowhere")
    elif kind == "hard-link":
        os.link(keep / "file.txt", path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        raise ValueError(kind)


def snapshot(root: Path, skip=()) -> dict:
    """Every entry under ``root`` (links not followed) by relative path: its kind, and its
    content's digest or its link's target; the names in ``skip`` (relative paths) are left
    out. Equal snapshots: nothing there was written, removed, created or retargeted."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if rel in skip:
                continue
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                seen[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), info.st_ino)
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("folder",)
            else:
                seen[rel] = ("special", stat.S_IFMT(info.st_mode))
    return seen


def changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line each."""
    lines = []
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) != after.get(rel):
            lines.append(f"{rel}: {before.get(rel)} -> {after.get(rel)}")
    return lines


def unfinished_run(path: Path) -> None:
    """An interrupted run of ``path`` that resume continues: stopped (Ctrl-C) just after
    its second checkpoint."""
    import hamiltonia as hm
    from hamiltonia.results import runfile
    from hamiltonia.runner.run import WarmupInterrupted

    original, calls = runfile.RunFile.append, {"n": 0}

    def stop_after_second(self, *args, **kwargs):
        done = original(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return done

    runfile.RunFile.append = stop_after_second
    try:
        with warnings.catch_warnings(), contextlib.suppress(WarmupInterrupted):
            warnings.simplefilter("ignore")
            hm.sample("banana", "hmc", output=path, chains=2, warmup=20, draws=400, seed=5,
                      progress=False, checkpoint_seconds=0.0)  # fmt: skip
    finally:
        runfile.RunFile.append = original
    assert hm.load(path, unfinished=True).attrs["complete"] is False
