"""The command line."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.cli import EXIT_INTERRUPTED, main


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("hmc", "mala", "rwmh", "banana", "gaussian-d10", "funnel-d25"):
        assert f"  {name} " in out
    assert "samplers:" in out and "targets:" in out


PART_ROLES = ("samplers", "hamiltonians", "integrators", "structures", "refreshes",
              "trajectories", "tuners", "reducers")  # fmt: skip


def test_list_parts(capsys, monkeypatch):
    """``hamiltonia list --parts``: every registered part by role, with its options, a part
    registered in the process (as a plugin's) among them; no targets."""

    def heavy(target, mass: float = 4.0):
        """A Euclidean Hamiltonian of a heavier mass (a test plugin's)."""

    monkeypatch.setattr(hm.hamiltonians.registry, "_extra", dict(hm.hamiltonians.registry._extra))
    hm.hamiltonians.register("zz-heavy", heavy)
    assert main(["list", "--parts"]) == 0
    out = capsys.readouterr().out
    titles = [line[:-1] for line in out.splitlines() if not line.startswith(" ")]
    assert titles == list(PART_ROLES)
    assert max(len(line) for line in out.splitlines()) <= 100
    for raw in (":math:", "``", "\\", ":class:", "`"):
        assert raw not in out, raw
    entries = _listing(out)
    assert "banana" not in entries  # targets are not parts
    for name in ("hmc", "nuts", "euclidean", "random-mass", "leapfrog", "research", "partial",
                 "no-u-turn", "dual-averaging", "windowed-metric", "antithetic"):  # fmt: skip
        assert name in entries, name
        assert " Options: " in entries[name], name
    assert entries["zz-heavy"] == (
        "A Euclidean Hamiltonian of a heavier mass (a test plugin's). Options: mass."
    )
    assert entries["random-mass"].endswith("Options: mass_volatility, metric.")
    assert entries["dual-averaging"].endswith(
        "Options: target_accept, gamma, t0, kappa, initial_step_size, find_initial, pool_chains."
    )
    assert entries["full"].endswith("Options: none.")
    assert entries["partial"].endswith(". Options: rho.")  # the sentence cut at ':' ends
    assert "hamiltonian, tuners." in entries["hmc"]
    assert entries["s2hmc"].endswith("Options: those of hmc.")
    assert entries["as2hmc"].endswith("Options: those of nuts.")
    # Without --parts, the samplers and the targets as before.
    assert main(["list"]) == 0
    plain = capsys.readouterr().out
    assert "targets:" in plain and "hamiltonians:" not in plain and "Options:" not in plain


def _listing(out: str) -> dict[str, str]:
    """``hamiltonia list``'s entries, name to description (its wrapped lines joined)."""
    entries: dict[str, str] = {}
    name = None
    for line in out.splitlines():
        if not line.startswith("  "):
            continue  # "samplers:", "targets:"
        if not line.startswith("   "):
            name, _, text = line.strip().partition("  ")
            entries[name] = text.strip()
        else:
            entries[name] += " " + line.strip()
    return entries


def test_list_prints_plain_whole_sentences(capsys, monkeypatch):
    import re

    def recipe(target, **options):
        """A sampler with :math:`\\hat H` and :math:`\\rho = 0.7` in its first sentence, as
        in :class:`~hamiltonia.Result` and :func:`hamiltonia.sample`, e.g. ``rho=0.9`` (see
        Mongwe et al. 2021). A second sentence.

        A second paragraph."""

    monkeypatch.setattr(hm.samplers.registry, "_extra", dict(hm.samplers.registry._extra))
    hm.samplers.register("zz-test", recipe)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    # No reStructuredText markup reaches the terminal.
    for raw in (":math:", "``", "\\", ":class:", ":func:", ":meth:", "`"):
        assert raw not in out, raw
    entries = _listing(out)
    assert entries["zz-test"] == (
        "A sampler with H\u0302 and \u03c1 = 0.7 in its first sentence, as in Result and "
        "hamiltonia.sample, e.g. rho=0.9 (see Mongwe et al. 2021)."
    )
    # Every description is a whole sentence, not the docstring's first line: ps2hmc's first
    # sentence runs over three lines of its docstring.
    assert all(text.endswith(".") for text in entries.values()), entries
    assert entries["ps2hmc"].endswith("(the thesis's; the PS2HMC paper uses 0.9, rho=0.9).")
    assert entries["phmc"].endswith("p' = \u03c1 p + \u221a(1 - \u03c1^2) u with \u03c1 = 0.7, "
                                     "the momentum negated on rejection.")  # fmt: skip
    assert not re.search(r"[,;:(]$", entries["a-mhmc"])


def test_sample_prints_summary_and_writes_the_run(capsys, tmp_path):
    path = tmp_path / "run.nc"
    code = main(
        [
            "sample",
            "banana",
            "--sampler",
            "hmc",
            "--chains",
            "2",
            "--warmup",
            "200",
            "--draws",
            "200",
            "--seed",
            "0",
            "--output",
            str(path),
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    for column in ("mean", "sd", "mcse", "ess_bulk", "ess_tail", "r_hat"):
        assert column in out
    for line in ("acceptance rate", "divergences", "gradient evaluations", "seconds", "exact"):
        assert line in out
    run = hm.load(path)
    assert run.draws.shape == (2, 200, 2)
    # The file holds the run the same seed gives in Python.
    again = hm.sample("banana", "hmc", chains=2, warmup=200, draws=200, seed=0, progress=False)
    np.testing.assert_array_equal(run.draws, again.draws)


def test_sampler_and_target_options(capsys):
    code = main(
        [
            "sample",
            "gaussian",
            "-T",
            "dim=3",
            "--sampler",
            "hmc",
            "--n-steps",
            "4",
            "--step-size",
            "0.2",
            "-O",
            "metric=[1.0, 2.0, 0.5]",
            "-O",
            "n_steps_jitter=0",
            "--chains",
            "1",
            "--warmup",
            "10",
            "--draws",
            "20",
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "x3" in out and "gradient evaluations 80" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["sample", "banan"], "did you mean 'banana'"),
        (["sample", "banana", "--sampler", "hcm"], "did you mean 'hmc'"),
        (["sample", "banana", "-O", "foo=1"], "unknown option 'foo'"),
        (["sample", "banana", "--step-size", "-1"], "step_size"),
        (["sample", "banana", "--chains", "0"], "chains"),
        (["sample", "banana", "--chains", "two"], "--chains"),
        (["sample", "banana", "-O", "novalue"], "KEY=VALUE"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(capsys, argv, fragment):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("hamiltonia: error:") and fragment in err
    assert "\n" not in err and "Traceback" not in err


def test_console_script_runs_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "hamiltonia.cli", "sample", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "unknown target 'nope'" in proc.stderr


def test_done_criterion_banana_hmc_seed_0(capsys):
    """`hamiltonia sample banana --sampler hmc --seed 0` (4 chains, 1000 + 1000): R-hat below
    1.01 and the means agree with the exact ones (z-scores on the MCSE)."""
    from hamiltonia.testing import Z_THRESHOLD

    assert main(["sample", "banana", "--sampler", "hmc", "--seed", "0", "--no-progress"]) == 0
    capsys.readouterr()
    run = hm.sample("banana", "hmc", seed=0, progress=False)
    summary = run.summary()
    assert summary["r_hat"].max() < 1.01
    z = (summary["mean"] - hm.targets.get("banana").exact_moments.mean) / summary["mcse"]
    assert np.all(np.abs(z) < Z_THRESHOLD)


def test_datasets_command(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HAMILTONIA_DATA", str(tmp_path))  # an empty mirror
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "german" in out and "missing" in out and str(tmp_path) in out


def test_sample_prints_test_metrics_and_relevance(capsys):
    import hamiltonia.datasets as ds

    if any(ds.status()[n] == "missing" for n in ("pima", "audit")):
        pytest.skip("data sets not available (set HAMILTONIA_DATA)")
    short = ["--chains", "2", "--warmup", "100", "--draws", "100", "--seed", "0",
             "--no-progress", "--n-steps", "10"]  # fmt: skip
    assert main(["sample", "blr-pima", "--sampler", "hmc", *short]) == 0
    out = capsys.readouterr().out
    assert "test-set metrics" in out and "roc_auc" in out
    assert main(["sample", "blr-ard-audit", "--sampler", "hmc", *short]) == 0
    out = capsys.readouterr().out
    assert "feature relevance" in out and " 1. " in out


def test_resume_command(capsys, tmp_path, monkeypatch):
    from hamiltonia.runner import loop

    original = loop.Recorder.record

    def interrupt_once(self, *args, **kw):
        original(self, *args, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop.Recorder, "record", interrupt_once)
    path = tmp_path / "run.nc"
    # The CLI reports the interruption in its own block (no Python warning on top).
    args = ["sample", "banana", "--chains", "2", "--warmup", "50", "--draws", "300", "--seed",
            "1", "--output", str(path), "--no-progress"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", hm.InterruptedRunWarning)
        assert main(args) == EXIT_INTERRUPTED  # an interrupted run does not exit 0
    assert "INTERRUPTED after" in capsys.readouterr().out
    monkeypatch.setattr(loop.Recorder, "record", original)
    assert hm.load(path).attrs["complete"] is False
    capsys.readouterr()
    assert main(["resume", str(path), "--no-progress"]) == 0
    assert "2 chains x 300 draws" in capsys.readouterr().out
    assert hm.load(path).attrs["complete"] is True
    assert main(["resume", str(path)]) == 2  # nothing left to resume: one-line error
    assert "complete run" in capsys.readouterr().err


def test_ctrl_c_during_the_report_says_the_run_was_saved(capsys, tmp_path, monkeypatch):
    def interrupt(self, *args, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(hm.Result, "summary", interrupt)
    path = tmp_path / "run.nc"
    args = ["sample", "banana", "--chains", "1", "--warmup", "20", "--draws", "20",
            "--output", str(path), "--no-progress"]  # fmt: skip
    assert main(args) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert f"the run is saved in {path}" in err and "nothing was saved" not in err
    assert hm.load(path).attrs["complete"] is True


def test_a_reader_that_closes_the_pipe_ends_the_listing_quietly(capsys, monkeypatch):
    # `hamiltonia list | head`: the write end of a pipe whose reader has gone.
    read, write = os.pipe()
    os.close(read)
    closed = os.fdopen(write, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", closed)
    try:
        assert main(["list"]) == 0
    finally:
        monkeypatch.undo()
        closed.close()
    assert "Broken pipe" not in capsys.readouterr().err


def _help(command: str) -> str:
    from hamiltonia.cli import _build_parser

    sub = _build_parser()._subparsers._group_actions[0].choices[command]
    return " ".join(sub.format_help().split())


def test_sample_help_shows_each_option_and_its_default():
    text = _help("sample")
    for shown in (
        "--chains CHAINS number of chains (default 4)",
        "--warmup WARMUP warm-up iterations per chain",
        "--draws DRAWS sampling iterations per chain (default 1000)",
        "--sampler SAMPLER registered sampler name (default nuts)",
        "--thin THIN keep one iteration in THIN (default 1)",
        "--seed SEED seed of the chains' random numbers (default: fresh entropy",
    ):
        assert shown in text, shown
    warmup = text.split("--warmup WARMUP warm-up")[1].split("--draws DRAWS sampling")[0]
    assert "(default 1000)" in warmup
    # "not given" is not a value: no "(default None)" or "(default False)".
    assert "(default None)" not in text and "(default False)" not in text


#: Options that do nothing unless given (repeatable additions, a mode): no default to state.
NO_DEFAULT = ("option", "target_option", "only", "var", "docs_page")


def _subcommands():
    from hamiltonia.cli import _build_parser

    choices = _build_parser()._subparsers._group_actions[0].choices
    return {name: sub for name, sub in choices.items() if name != "bench"}  # bench: its own -h


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_option_has_help_and_a_default_value_is_shown(command):
    import argparse

    parser = _subcommands()[command]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if not action.option_strings or argparse.SUPPRESS in (action.help, action.default):
            continue  # positional arguments, -h
        option = action.option_strings[0]
        assert action.help, f"{command} {option} has no help"
        if action.default not in (None, False):
            assert f"(default {action.default})" in text, f"{command} {option}"
        elif action.nargs != 0 and not action.required and action.dest not in NO_DEFAULT:
            # Options without a value to show say what happens when they are not given.
            assert "default" in action.help, f"{command} {option}"


@pytest.mark.parametrize("command", ["sample", "resume"])
def test_checkpoint_seconds_is_an_option_with_its_default_shown(command):
    assert "--checkpoint-seconds SECONDS" in _help(command)
    assert "(default 60.0)" in _help(command)


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
@pytest.mark.parametrize("command", [["sample", "banana"], ["resume", "run.nc"]])
def test_a_bad_checkpoint_interval_is_refused_naming_the_option(capsys, command, value):
    assert main([*command, "--checkpoint-seconds", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hamiltonia: error: argument --checkpoint-seconds:")
    assert ">= 0" in err and "\n" not in err


def test_checkpoint_seconds_reaches_sample_and_resume(capsys, tmp_path, monkeypatch):
    """--checkpoint-seconds 0 checkpoints every warm-up chunk: Ctrl-C in warm-up keeps it,
    the CLI says where it is, and `hamiltonia resume` continues it to the uninterrupted
    run."""
    from hamiltonia.results.runfile import RunFile
    from hamiltonia.runner.run import WarmupInterrupted
    from hamiltonia.tuners.adaptation import WindowedMetric

    writes = []
    append = RunFile.append

    def counted(self, q, stats, log_weights, meta, *args, **kw):
        writes.append(meta["attrs"].get("warmup_done"))
        return append(self, q, stats, log_weights, meta, *args, **kw)

    def interrupt(self, sampler, chain):
        raise KeyboardInterrupt

    monkeypatch.setattr(RunFile, "append", counted)
    monkeypatch.setattr(WindowedMetric, "end_window", interrupt)
    path = tmp_path / "run.nc"
    args = ["sample", "banana", "--chains", "2", "--warmup", "200", "--draws", "100",
            "--seed", "4", "--output", str(path), "--no-progress"]  # fmt: skip
    assert main([*args, "--checkpoint-seconds", "0"]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    # Written after the search, then after every compiled chunk up to the window's end.
    assert writes[0] == 0 and len(writes) > 3 and writes == sorted(writes)
    done = hm.load(path).attrs["warmup_done"]
    assert f"interrupted after {done} of 200 warm-up iterations; saved in {path}" in err
    assert f"hamiltonia resume {path}" in err and "nothing was saved" not in err
    monkeypatch.undo()
    assert main(["resume", str(path), "--no-progress", "--checkpoint-seconds", "1e9"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"continued {path} from warm-up iteration {done} of 200\n")
    assert "2 chains x 100 draws" in out
    full = hm.sample("banana", chains=2, warmup=200, draws=100, seed=4, progress=False)
    np.testing.assert_array_equal(hm.load(path).draws, full.draws)
    # Without checkpoints in warm-up (--checkpoint-seconds inf) only the first is written.
    writes.clear()
    monkeypatch.setattr(RunFile, "append", counted)
    monkeypatch.setattr(WindowedMetric, "end_window", interrupt)
    with pytest.raises(WarmupInterrupted):
        hm.sample("banana", chains=2, warmup=200, draws=100, seed=4, progress=False,
                  output=tmp_path / "other.nc", checkpoint_seconds=float("inf"))  # fmt: skip
    assert writes[:1] == [0] and len(writes) == 2  # the first, and the one at the interrupt


# --compiled / --no-compiled: the path a run takes, why, and advice in the CLI's own words.

SHORT_RUN = ["--chains", "2", "--warmup", "30", "--draws", "30", "--seed", "0", "--no-progress"]
PATH_LINE = "path                 "


@pytest.mark.parametrize("command", ["sample", "resume"])
def test_compiled_and_no_compiled_are_options(command):
    text = _help(command)
    assert "[--compiled | --no-compiled]" in text
    assert "--no-compiled run the NumPy path" in text


def test_compiled_and_no_compiled_exclude_each_other(capsys):
    assert main(["sample", "banana", "--compiled", "--no-compiled"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--no-compiled: not allowed with argument --compiled" in err and "\n" not in err


@pytest.mark.parametrize(
    ("flags", "compiled", "reason"),
    [
        (["--no-compiled"], False, "numpy: --no-compiled was asked"),
        (["--compiled"], True, "compiled: every part has a compiled counterpart"),
        ([], True, "compiled: every part has a compiled counterpart"),
    ],
    ids=["no-compiled", "compiled", "automatic"],
)
def test_the_path_option_reaches_the_run_and_the_summary_names_it(capsys, tmp_path, flags,
                                                                    compiled, reason):  # fmt: skip
    path = tmp_path / "run.nc"
    args = ["sample", "banana", "--sampler", "hmc", *SHORT_RUN, "--output", str(path), *flags]
    with warnings.catch_warnings():
        warnings.simplefilter("error", hm.FallbackWarning)  # hmc on the banana compiles
        assert main(args) == 0
    out = capsys.readouterr().out
    run = hm.load(path)
    assert run.attrs["compiled"] is compiled and run.attrs["path_reason"] == reason
    shown = "compiled" if compiled else "NumPy"
    assert f"\n{PATH_LINE}{shown} ({reason.split(': ', 1)[1]})\n" in out


def test_compiled_for_a_sampler_that_cannot_is_a_one_line_error_naming_the_part(capsys):
    assert main(["sample", "banana", "--sampler", "rwmh", "--compiled", *SHORT_RUN]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err == (
        "hamiltonia: error: --compiled was asked but sampler RandomWalkMetropolis has no "
        "compiled counterpart"
    )
    assert captured.out == ""


def test_the_fallback_warning_gives_the_cli_option(capsys):
    assert main(["sample", "banana", "--sampler", "rwmh", *SHORT_RUN]) == 0
    captured = capsys.readouterr()
    reason = "sampler RandomWalkMetropolis has no compiled counterpart"
    assert (
        f"hamiltonia: warning: running on the NumPy path (slower): {reason}; pass "
        "--no-compiled to silence this\n"
    ) in captured.err
    assert "compiled=False" not in captured.err and "Traceback" not in captured.err
    assert f"\n{PATH_LINE}NumPy ({reason})\n" in captured.out
    # --no-compiled silences it, and says why the NumPy path ran.
    assert main(["sample", "banana", "--sampler", "rwmh", "--no-compiled", *SHORT_RUN]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert f"\n{PATH_LINE}NumPy (--no-compiled was asked)\n" in captured.out
    # From Python the advice is the keyword again.
    with pytest.warns(hm.FallbackWarning, match=r"; pass compiled=False to silence this$"):
        hm.sample("banana", "rwmh", chains=1, warmup=10, draws=10, seed=0, progress=False)
    with pytest.raises(ValueError, match=r"^compiled=True but sampler RandomWalkMetropolis"):
        hm.sample("banana", "rwmh", chains=1, warmup=10, draws=10, progress=False, compiled=True)


def _interrupted_cli_run(capsys, monkeypatch, path, *flags):
    """`hamiltonia sample banana --output path` stopped (Ctrl-C) after its first block."""
    from hamiltonia.runner import loop

    original = loop.Recorder.record

    def interrupt_once(self, *args, **kw):
        original(self, *args, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(loop.Recorder, "record", interrupt_once)
    args = ["sample", "banana", "--sampler", "hmc", "--chains", "2", "--warmup", "30",
            "--draws", "300", "--seed", "1", "--output", str(path), "--no-progress",
            *flags]  # fmt: skip
    assert main(args) == EXIT_INTERRUPTED
    monkeypatch.setattr(loop.Recorder, "record", original)
    capsys.readouterr()


def test_resume_keeps_the_path_unless_told(capsys, tmp_path, monkeypatch):
    kept = tmp_path / "kept.nc"
    _interrupted_cli_run(capsys, monkeypatch, kept, "--no-compiled")
    assert hm.load(kept).attrs["path_reason"] == "numpy: --no-compiled was asked"
    assert main(["resume", str(kept), "--no-progress"]) == 0
    reason = "kept from the run it continues: --no-compiled was asked"
    assert f"\n{PATH_LINE}NumPy ({reason})\n" in capsys.readouterr().out
    run = hm.load(kept)
    assert run.attrs["compiled"] is False and run.attrs["path_reason"] == f"numpy: {reason}"
    told = tmp_path / "told.nc"
    _interrupted_cli_run(capsys, monkeypatch, told)
    assert hm.load(told).attrs["compiled"] is True
    assert main(["resume", str(told), "--no-progress", "--no-compiled"]) == 0
    assert f"\n{PATH_LINE}NumPy (--no-compiled was asked)\n" in capsys.readouterr().out
    run = hm.load(told)
    assert run.attrs["compiled"] is False
    assert run.attrs["path_reason"] == "numpy: --no-compiled was asked"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-O", "step_size=0.1", "--step-size", "0.2"], "step_size is given twice"),
        (["-O", "n_steps=3", "-O", "n_steps=4"], "option n_steps is given twice"),
    ],
)
def test_an_option_given_twice_with_two_values_is_refused(capsys, flags, message):
    assert main(["sample", "banana", "--sampler", "hmc", "--no-progress", *flags]) == 2
    assert message in capsys.readouterr().err


def test_s_is_short_for_sampler():
    from hamiltonia.cli.parser import _build_parser

    args = _build_parser().parse_args(["sample", "banana", "-s", "hmc"])
    assert args.sampler == "hmc"
