"""Interrupting a run as Ctrl-C would, at a chosen stored block (shared by the tests)."""


def interrupted(monkeypatch, after_records: int, run):
    """Call ``run()`` with the recorder raising KeyboardInterrupt (as Ctrl-C would) after
    ``after_records`` stored blocks, then restore the recorder; returns ``run()``'s result."""
    from hamiltonia.runner import loop

    original = loop.Recorder.record
    calls = {"n": 0}

    def interrupt(self, *args, **kw):
        original(self, *args, **kw)
        if self.checkpoint is None:  # the warm-up's recorder (save_warmup): not a stored block
            return
        calls["n"] += 1
        if calls["n"] == after_records:
            raise KeyboardInterrupt

    monkeypatch.setattr(loop.Recorder, "record", interrupt)
    try:
        return run()
    finally:
        monkeypatch.setattr(loop.Recorder, "record", original)


class Killed(BaseException):
    """A kill, simulated: raised from inside a checkpoint write, before it writes anything,
    and from every write after it, so that the run stops with its file as the last complete
    checkpoint left it (no handler can save more, as after SIGKILL)."""


def killed_at_checkpoint(monkeypatch, stop, run):
    """Call ``run()`` with each checkpoint write raising :class:`Killed` from the first one
    for which ``stop(meta)`` is true (``meta``: the manifest it would write), then restore
    the writer; the file then holds the checkpoint before it."""
    from hamiltonia.results.runfile import RunFile

    original = RunFile.append
    killed = {"now": False}

    def append(self, q, stats, log_weights, meta, *args, **kw):
        killed["now"] = killed["now"] or stop(meta)
        if killed["now"]:
            raise Killed
        return original(self, q, stats, log_weights, meta, *args, **kw)

    monkeypatch.setattr(RunFile, "append", append)
    try:
        run()
    except Killed:
        pass
    else:
        raise AssertionError("the run finished before the kill")
    finally:
        monkeypatch.setattr(RunFile, "append", original)


def in_warmup_from(iteration: int):
    """A ``stop`` for :func:`killed_at_checkpoint`: the first checkpoint at or after warm-up
    iteration ``iteration`` (or after warm-up)."""

    def stop(meta) -> bool:
        done = meta["attrs"].get("warmup_done")
        return done is None or done >= iteration

    return stop
