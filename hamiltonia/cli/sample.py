"""``hamiltonia sample`` and ``hamiltonia resume``: run chains (or continue a run) with the
command line's warnings and advice, and what a user is told when the finished run could
not be written."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

from hamiltonia.cli.parser import _parse_options, _UsageError
from hamiltonia.cli.report import _report


def _cmd_sample(args, out) -> int:

    import hamiltonia as hm

    options = _parse_options(args.option)
    for key, value in (
        ("step_size", args.step_size),
        ("n_steps", args.n_steps),
        ("target_accept", args.target_accept),
    ):
        if value is not None:
            if key in options and options[key] != value:
                flag = "--" + key.replace("_", "-")
                raise _UsageError(
                    f"{key} is given twice, as {flag} {value!r} and -O {key}={options[key]!r}"
                )
            options[key] = value
    target = hm.targets.get(args.target, **_parse_options(args.target_option))
    with _quiet_run_warnings(), _cli_spelling():
        result = hm.sample(
            target,
            sampler=args.sampler,
            chains=args.chains,
            warmup=args.warmup,
            draws=args.draws,
            thin=args.thin,
            save_warmup=args.save_warmup,
            executor=args.executor,
            scheduler=args.scheduler,
            workers=args.workers,
            seed=args.seed,
            progress=not args.no_progress,
            output=args.output,
            overwrite=args.overwrite,
            checkpoint_seconds=args.checkpoint_seconds,
            compiled=args.compiled,
            **options,
        )
    return _report(result, target, args.output, out)


def _cmd_resume(args, out) -> int:
    import hamiltonia as hm

    # Where the run had stopped, in warm-up or after some of its draws, said after the run
    # (an error in it is one line of its own); its draws are not kept meanwhile.
    previous = hm.load(args.path)
    done = previous.attrs.get("warmup_done")
    if done is not None:
        where = f"warm-up iteration {done} of {previous.attrs.get('warmup', '?')}"
    else:
        thin = previous.attrs.get("thin", 1)
        where = f"draw {previous.n_draws} of {previous.attrs.get('draws', 0) // thin}"
    del previous
    with _quiet_run_warnings(), _cli_spelling():
        result = hm.resume(args.path, progress=not args.no_progress, executor=args.executor,
                           scheduler=args.scheduler, workers=args.workers,
                           checkpoint_seconds=args.checkpoint_seconds,
                           compiled=args.compiled)  # fmt: skip
    print(f"continued {args.path} from {where}\n", file=out)
    return _report(result, result.get_target(), args.path, out)


def _cli_spelling():
    """The advice of the path's messages in this command line's options."""
    from hamiltonia.runner.loop import Spelling, spelled

    return spelled(Spelling(required="--compiled was asked", numpy="--no-compiled"))


@contextlib.contextmanager
def _quiet_run_warnings():
    """The run's problems and an interruption are printed in the report's own block; a fall
    back to the NumPy path is one line on stderr as it happens (the report's ``path`` line
    says it again)."""
    from hamiltonia.diagnostics.checks import SamplingWarning
    from hamiltonia.runner.loop import FallbackWarning
    from hamiltonia.runner.run import InterruptedRunWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        warnings.simplefilter("ignore", InterruptedRunWarning)
        show = warnings.showwarning

        def one_line(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, FallbackWarning):
                print(f"hamiltonia: warning: {message}", file=sys.stderr)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = one_line
        yield


def _rescue(err) -> str:
    """What a command-line user is told when the finished run could not be written: the run
    in memory (a Python caller's ``err.result``) is saved in the temporary folder, and the
    checkpoints, where there are any, let ``hamiltonia resume`` write the file later."""
    import tempfile
    from pathlib import Path

    message = err.reason
    if err.result is not None:
        name = Path(err.path).name if err.path is not None else "run.nc"
        try:
            # A new file of its own (made exclusively): the shared temporary folder may hold
            # anything, a link included, at a name that can be guessed.
            fd, made = tempfile.mkstemp(prefix=f"{name}.rescued-", suffix=".nc")
            os.close(fd)
            rescue = Path(made)
            err.result.save(rescue, overwrite=True)
        except OSError as again:
            rescue = Path(tempfile.gettempdir()) / f"{name}.rescued-*.nc"
            message += f". The run could not be saved in {rescue} either ({again})"
        else:
            message += f". The finished run is saved in {rescue} instead"
    if err.partial is not None:
        message += (
            f"; its checkpoints are in {err.partial}: `hamiltonia resume {err.path}` "
            "finishes the file once there is space"
        )
    return message
