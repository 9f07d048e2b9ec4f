"""Interrupting a run as Ctrl-C would, at a chosen stored block (shared by the tests)."""


def interrupted(monkeypatch, after_records: int, run):
    """Call ``run()`` with the recorder raising KeyboardInterrupt (as Ctrl-C would) after
    ``after_records`` stored blocks, then restore the recorder; returns ``run()``'s result."""
    from hamiltonia import run as run_module

    original = run_module._Recorder.record
    calls = {"n": 0}

    def interrupt(self, *args, **kw):
        original(self, *args, **kw)
        if self.checkpoint is None:  # the warm-up's recorder (save_warmup): not a stored block
            return
        calls["n"] += 1
        if calls["n"] == after_records:
            raise KeyboardInterrupt

    monkeypatch.setattr(run_module._Recorder, "record", interrupt)
    try:
        return run()
    finally:
        monkeypatch.setattr(run_module._Recorder, "record", original)
