"""The executors, the worker side of their tasks and the tasks' folders live in modules of
one job each (issue 48); ``runner.executors`` still gives every name it gave before, the
same objects as their new homes', and what a worker is sent pickles by its new home."""

from __future__ import annotations

import pickle

from hamiltonia.runner import executors
from tests.moved import assert_re_exported

#: Each name ``executors`` had before the split that moved (and that something imports), by
#: its new home.
HOMES = {
    "task_worker": ["ChainTask", "POLL_SECONDS", "STOPPED", "TASK_LOCK_SECONDS", "TaskStopped",
                    "run_chain_task", "_checkpointed", "_dumps", "_pack_cause", "_run_pickled",
                    "_task_progress", "_unpack_cause"],
    "task_folders": ["STOP_FILE", "TASKS", "TEMP_PREFIX", "check_task_folder",
                     "remove_orphaned_task_folders", "remove_task_folder", "task_folder",
                     "_host"],
}  # fmt: skip

#: ``executors.__all__`` before the split: unchanged.
PUBLIC = ["ChainTask", "DaskExecutor", "Executor", "ProcessPool", "WorkerLostError",
          "make_executor", "run_chain_task"]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.runner.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.runner.executors", homes, PUBLIC)


def test_what_a_worker_is_sent_pickles_by_a_stable_path():
    for fn in (executors.run_chain_task, executors._run_pickled):
        assert pickle.loads(pickle.dumps(fn)) is fn
        assert fn.__module__ == "hamiltonia.runner.task_worker"
    assert executors.ChainTask.__module__ == "hamiltonia.runner.task_worker"
