"""The run file lives in modules of one job each (issue 48): the checkpoint folder's name and
its manifest in ``results.runfile_manifest``, the reading of an unfinished run back in
``results.runfile_reading``; ``results.runfile`` still gives every name it gave before, the
same objects as their new homes'. The writes stay in ``runfile``, where the tests that make
a disk full or kill a writer replace ``atomic_write`` and ``atomic_write_bytes``."""

from __future__ import annotations

from hamiltonia.results import runfile
from tests.moved import assert_re_exported

#: Each name ``runfile`` had before the split that moved (and that something imports), by
#: its new home.
HOMES = {
    "runfile_manifest": ["FORMAT", "checkpoint_folder", "has_checkpoints", "partial_dir",
                         "seal_manifest", "_digest", "_read_manifest"],
    "runfile_reading": ["PartialRun", "read_partial"],
}  # fmt: skip

#: ``runfile.__all__`` before the split: unchanged.
PUBLIC = ["PartialRun", "RunFile", "atomic_write", "atomic_write_bytes", "checked_file_path",
          "has_checkpoints", "partial_dir", "read_partial"]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.results.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.results.runfile", homes, PUBLIC)


def test_the_writes_stay_where_the_tests_replace_them():
    for fn in (runfile.atomic_write, runfile.atomic_write_bytes):
        assert fn.__module__ == "hamiltonia.results.runfile"
    assert runfile.RunFile.__module__ == "hamiltonia.results.runfile"
