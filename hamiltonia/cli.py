"""The ``hamiltonia`` command line.

``hamiltonia list`` lists the registered samplers and targets (``--parts``: the samplers and
the parts by role, with their options); ``hamiltonia sample TARGET
--sampler NAME ...`` runs chains, prints a summary table and writes the run to a netCDF file.

Exit codes: 0 for a run that finished (its problems, such as divergences or a high
:math:`\\hat R`, are printed in a WARNINGS block below the summary); 2 for an error a user can
fix (an unknown name, a bad option, an output path that cannot take the run), printed on one
line; 130 (:data:`EXIT_INTERRUPTED`) for a run stopped by Ctrl-C, whose draws so far are
reported and, with ``--output``, saved for ``hamiltonia resume``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import sys
import textwrap
import warnings

__all__ = ["main"]


class _UsageError(Exception):
    pass


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (``(default 4)``), as with argparse's
    ``ArgumentDefaultsHelpFormatter``, except where there is no value to show: a default of
    ``None`` or ``False`` means "not given", and the option's help says what happens then."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (
            "%(default)" in text
            or not action.option_strings
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default %(default)s)"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise _UsageError(message)


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _seconds(text: str) -> float:
    """A number of seconds >= 0 (``inf``: never), for ``--checkpoint-seconds``."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _checkpoint_argument(parser) -> None:
    from hamiltonia.runner.run import CHECKPOINT_SECONDS

    parser.add_argument(
        "--checkpoint-seconds",
        type=_seconds,
        default=CHECKPOINT_SECONDS,
        metavar="SECONDS",
        help="seconds between checkpoints of --output, in warm-up as in sampling: a run "
        "killed loses at most this much work",
    )


def _compiled_arguments(parser, default: str) -> None:
    """``--compiled`` / ``--no-compiled``: ``compiled=True`` / ``False`` (neither: ``None``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--compiled",
        dest="compiled",
        action="store_true",
        default=None,
        help="require the compiled path (an error names the part that has no compiled "
        f"counterpart); default: {default}",
    )
    group.add_argument(
        "--no-compiled",
        dest="compiled",
        action="store_false",
        default=None,
        help="run the NumPy path (silences the warning that a part has no compiled counterpart)",
    )


def _parse_options(pairs) -> dict:
    options = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise _UsageError(f"--option expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        key = key.strip().replace("-", "_")
        value = _parse_value(value.strip())
        if key in options and options[key] != value:
            raise _UsageError(f"option {key} is given twice, as {options[key]!r} and {value!r}")
        options[key] = value
    return options


#: Exit code of a run that was interrupted (Ctrl-C) and returned partial draws, as a shell
#: reports a process stopped by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hamiltonia", description="Hamiltonian Monte Carlo research framework")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    lp = sub.add_parser("list", help="list registered samplers and targets")
    lp.add_argument(
        "--parts",
        action="store_true",
        help="list the samplers and the parts they compose, by role, each with its options "
        "(default: the samplers and the targets)",
    )
    sub.add_parser("datasets", help="list the data sets: mirrored, cached or missing")
    sp = sub.add_parser("sample", help="run chains on a target and print a summary")
    sp.add_argument("target", help="registered target name (see 'hamiltonia list')")
    sp.add_argument("--sampler", default="nuts", help="registered sampler name")
    sp.add_argument("--chains", type=int, default=4, help="number of chains")
    sp.add_argument(
        "--warmup",
        type=int,
        default=1000,
        help="warm-up iterations per chain, which adapt the step size (and metric) and are "
        "not kept",
    )
    sp.add_argument("--draws", type=int, default=1000, help="sampling iterations per chain")
    sp.add_argument("--thin", type=int, default=1, help="keep one iteration in THIN")
    sp.add_argument(
        "--save-warmup", action="store_true", help="keep the warm-up draws in --output too"
    )
    sp.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the chains' random numbers (default: fresh entropy, recorded in the run)",
    )
    sp.add_argument(
        "--step-size",
        type=float,
        default=None,
        help="fixed step size (default: adapted by dual averaging during warm-up)",
    )
    sp.add_argument(
        "--n-steps",
        type=int,
        default=None,
        help="integration steps per trajectory (default: the sampler's; 15 for hmc, the "
        "target's research length for the research presets)",
    )
    sp.add_argument(
        "--target-accept",
        type=float,
        default=None,
        help="acceptance statistic the step-size adaptation aims at (default: the sampler's; "
        "0.8 for hmc and nuts)",
    )
    sp.add_argument(
        "--option",
        "-O",
        action="append",
        metavar="KEY=VALUE",
        help="any other sampler option, e.g. -O max_tree_depth=12, or -O rho=0.9 with "
        "--sampler hmc (repeatable)",
    )
    sp.add_argument(
        "--target-option",
        "-T",
        action="append",
        metavar="KEY=VALUE",
        help="a target parameter, e.g. -T dim=7 (repeatable)",
    )
    _compiled_arguments(sp, "compiled where every part allows it, else the NumPy path with a "
                        "warning naming the part")  # fmt: skip
    _executor_arguments(sp)
    sp.add_argument(
        "--output",
        "-o",
        default=None,
        help="write the run to this netCDF file, as it is made (default: not written)",
    )
    sp.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    _checkpoint_argument(sp)
    sp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    rp = sub.add_parser(
        "resume", help="continue an interrupted run written with --output (in warm-up or after)"
    )
    rp.add_argument("path", help="the run file")
    rp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _checkpoint_argument(rp)
    _compiled_arguments(rp, "the path the run ran on")
    _executor_arguments(rp)
    pp = sub.add_parser("plot", help="draw a diagnostic plot of a run file")
    pp.add_argument("path", help="the run file (netCDF, from --output or Result.save)")
    pp.add_argument("--kind", default="trace", help="trace, rank, pair or energy")
    pp.add_argument(
        "--var",
        action="append",
        metavar="NAME",
        help="a parameter or block to show (repeatable; default: the first 8)",
    )
    pp.add_argument("--output", "-o", required=True, help="the image file (.png, .pdf, .svg)")
    pp.add_argument("--overwrite", action="store_true", help="replace an existing image")
    _reproduce_arguments(sub)
    from hamiltonia.runner.prebuild import DEFAULT_SAMPLERS

    cp = sub.add_parser(
        "compile",
        help="compile the kernels of a first run into the cache, once per machine (after "
        "pip install: a Docker image, a cluster's setup)",
    )
    cp.add_argument(
        "samplers",
        nargs="*",
        metavar="SAMPLER",
        help=f"samplers whose chain kernels to compile (default: {', '.join(DEFAULT_SAMPLERS)})",
    )
    cp.add_argument("--all", action="store_true", help="every registered sampler")
    cp.add_argument(
        "--no-diagnostics",
        action="store_true",
        help="leave the kernels of a long run's checks to their first use",
    )
    # Everything after "bench" goes to hamiltonia.bench.main (its options start with "-",
    # which this subparser must not interpret: hence the prefix character it never sees).
    bp = sub.add_parser(
        "bench",
        help="benchmark against NumPyro, BlackJAX and mici (see 'hamiltonia bench -h')",
        add_help=False,
        prefix_chars="\0",
    )
    bp.add_argument("bench_args", nargs="*")
    return parser


def _reproduce_arguments(sub) -> None:
    rp = sub.add_parser(
        "reproduce",
        help="rerun a published experiment: published beside reproduced (see --list)",
    )
    rp.add_argument("name", nargs="?", help="the experiment (see --list), or a .toml file")
    rp.add_argument("--list", action="store_true", help="list the experiments and exit")
    rp.add_argument(
        "--scale",
        default="small",
        choices=("small", "full"),
        help="small: minutes on two cores; full: the publication's protocol",
    )
    rp.add_argument(
        "--chains",
        type=int,
        default=None,
        help="chains per cell (default: the protocol's at this --scale)",
    )
    rp.add_argument(
        "--only",
        action="append",
        metavar="TARGET/SAMPLER",
        help="run only this cell, by the labels of the published table (repeatable)",
    )
    rp.add_argument(
        "--output",
        "-o",
        default=None,
        help="folder of the runs, report and figures (default reproduction/NAME-SCALE); "
        "run again with the same folder to continue an interrupted reproduction",
    )
    rp.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a folder holding another reproduction (its runs and cells are removed)",
    )
    rp.add_argument(
        "--no-rerun",
        action="store_true",
        help="refuse, rather than recompute, a cell in --output that does not match this run "
        "(made by other code, for another definition or with other settings, or edited)",
    )
    rp.add_argument("--no-figures", action="store_true", help="write no figures")
    rp.add_argument(
        "--docs-page",
        metavar="PATH",
        default=None,
        help="with folders of finished reproductions as arguments, write the documentation's "
        "reStructuredText page from them instead of running anything",
    )
    rp.add_argument("folders", nargs="*", help=argparse.SUPPRESS)
    _compiled_arguments(rp, "compiled where every part allows it")
    _executor_arguments(rp)
    rp.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def _cmd_reproduce(args, out) -> int:
    from hamiltonia import reproduce

    if args.list:
        for name in reproduce.experiment_names():
            experiment = reproduce.load_experiment(name)
            cells = len(experiment.cells())
            print(f"{name:<16} {experiment.title} [{experiment.source}; {cells} cells]", file=out)
        for name in reproduce.study_names():
            study = reproduce.get_study(name)
            where = f"plugin {reproduce.study.registry.source(name)}"
            cells = f"{len(study.cells())} cells; " if study.cells() else ""
            print(f"{name:<16} {study.title} [{study.source}; {cells}{where}]", file=out)
        return 0
    if args.docs_page is not None:
        folders = ([args.name] if args.name else []) + list(args.folders)
        if not folders:
            raise _UsageError("--docs-page needs the folders of finished reproductions")
        # The page is checked before any folder is read.
        reproduce.check_docs_page(args.docs_page, overwrite=args.overwrite)
        # A plugin study's folder gives its own section; a shipped experiment's is rebuilt.

        def skipped(line: str) -> None:
            # A cell that does not match is left off the page, and named here.
            print(f"hamiltonia: {line}", file=sys.stderr)

        reproductions = [
            lines if (lines := reproduce.load_study_report(f)) is not None
            else reproduce.load_reproduction(f, log=skipped)
            for f in folders
        ]  # fmt: skip
        path = reproduce.write_docs_page(reproductions, args.docs_page, overwrite=args.overwrite)
        print(f"wrote {path}", file=out)
        return 0
    if not args.name:
        raise _UsageError("give an experiment name (see 'hamiltonia reproduce --list')")
    if args.folders:
        raise _UsageError(f"unexpected arguments {args.folders}")
    shipped = reproduce.experiment_names()
    if args.name not in shipped and args.name in reproduce.study_names():
        if args.no_rerun:
            raise _UsageError(
                f"--no-rerun applies to a shipped experiment's cells; the study {args.name!r} "
                "reads back its own runs"
            )
        return _run_study(args, out)
    if args.name not in shipped and not args.name.endswith(".toml"):
        raise _UsageError(
            f"no experiment {args.name!r}: choose one of {shipped + reproduce.study_names()} "
            "(hamiltonia reproduce --list) or give a .toml file"
        )
    experiment = reproduce.load_experiment(args.name)
    only = None
    if args.only:
        only = []
        for item in args.only:
            target, sep, sampler = item.partition("/")
            if not sep or (target, sampler) not in {
                (t.label, s.label) for t, s in experiment.cells()
            }:
                cells = ", ".join(f"{t.label}/{s.label}" for t, s in experiment.cells())
                raise _UsageError(f"--only {item!r} is not a cell of {experiment.name}: {cells}")
            only.append((target, sampler))
    folder = args.output
    if folder is None:
        # The default folder's parent is made here; a folder the user names must have one.
        os.makedirs("reproduction", exist_ok=True)
        folder = os.path.join("reproduction", f"{experiment.name}-{args.scale}")
    result = reproduce.run_experiment(
        experiment, scale=args.scale, chains=args.chains, output=folder, overwrite=args.overwrite,
        no_rerun=args.no_rerun, executor=args.executor, scheduler=args.scheduler,
        workers=args.workers,
        compiled=args.compiled, progress=not args.no_progress, only=only,
        log=lambda line: print(line, file=sys.stderr),
    )  # fmt: skip
    written = reproduce.write_report(result, figures=not args.no_figures)
    print(reproduce.markdown(result), file=out)
    print("wrote " + ", ".join(str(p) for p in written), file=out)
    return 0


def _run_study(args, out) -> int:
    """``hamiltonia reproduce NAME`` for a plugin's study (:mod:`hamiltonia.reproduce.study`)."""
    from hamiltonia import reproduce

    study = reproduce.get_study(args.name)
    reproduce.check_study_options(study, args.scale, args.chains, args.only, not args.no_figures)
    folder = args.output
    if folder is None:
        os.makedirs("reproduction", exist_ok=True)
        folder = os.path.join("reproduction", f"{study.name}-{args.scale}")
    report, written = reproduce.run_study(
        study, folder, scale=args.scale, chains=args.chains, only=args.only,
        overwrite=args.overwrite, figures=not args.no_figures,
        progress=not args.no_progress, log=lambda line: print(line, file=sys.stderr),
        compiled=args.compiled, executor=args.executor, scheduler=args.scheduler,
        workers=args.workers,
    )  # fmt: skip
    print(report.markdown, file=out)
    print("wrote " + ", ".join(str(p) for p in written), file=out)
    return 0


#: Width of ``hamiltonia list``'s lines: a description longer than the rest of the line
#: continues on the next, under the descriptions.
LIST_WIDTH = 100


def _cmd_compile(args, out) -> int:
    import hamiltonia as hm
    from hamiltonia._numba_cache import package_cache_dir
    from hamiltonia.compiled.compose import kernel_dir
    from hamiltonia.runner.prebuild import DEFAULT_SAMPLERS, prebuild

    if args.all and args.samplers:
        raise _UsageError("give sampler names or --all, not both")
    names = hm.samplers.names() if args.all else args.samplers or list(DEFAULT_SAMPLERS)
    done = prebuild(names, diagnostics=not args.no_diagnostics)
    print(f"kernels compiled (or loaded, where cached) in {package_cache_dir()} and "
          f"{kernel_dir()}:", file=out)  # fmt: skip
    width = max(len(item.what) for item in done)
    for item in done:
        note = "" if item.compiled else "  (no compiled path: it runs in NumPy)"
        print(f"  {item.what:<{width}}  {item.seconds:6.1f} s{note}", file=out)
    return 0


def _registries(parts: bool) -> list:
    """``(title, registry)`` of ``hamiltonia list``: the samplers and the targets, or with
    ``--parts`` the samplers and the part registries by role."""
    from hamiltonia import samplers, targets

    if not parts:
        return [("samplers", samplers.registry), ("targets", targets.registry)]
    from hamiltonia import (
        hamiltonians,
        integrators,
        reducers,
        refresh,
        structures,
        trajectories,
        tuners,
    )

    roles = (hamiltonians, integrators, structures, refresh, trajectories, tuners, reducers)
    titles = ("hamiltonians", "integrators", "structures", "refreshes", "trajectories",
              "tuners", "reducers")  # fmt: skip
    return [("samplers", samplers.registry)] + [
        (title, module.registry) for title, module in zip(titles, roles, strict=True)
    ]


def _options(registry, name: str) -> tuple[str, ...] | None:
    """The options of the factory of ``name``; ``None`` where its signature cannot be read."""
    try:
        names = tuple(registry.options(name))
        if registry.accepts_any(name):
            names += ("any keyword",)
    except (TypeError, ValueError):
        return None
    return names


def _options_texts(registry, names) -> dict[str, str]:
    """Name to `` Options: a, b.``: the factory's keyword options. Recipes with the options
    of another (the presets of hmc and of nuts) name it, the shortest name of those with the
    same options, rather than repeat the list."""
    options = {name: _options(registry, name) for name in names}
    first: dict[tuple, str] = {}
    for name in sorted(names, key=lambda n: (len(n), n)):
        if options[name]:
            first.setdefault(options[name], name)
    texts = {}
    for name, own in options.items():
        if own is None:
            texts[name] = ""
        elif own and first[own] != name:
            texts[name] = f" Options: those of {first[own]}."
        else:
            texts[name] = f" Options: {', '.join(own) or 'none'}."
    return texts


def _cmd_list(out, parts: bool = False) -> int:
    for title, registry in _registries(parts):
        print(f"{title}:", file=out)
        described = registry.describe()  # the first sentences, as plain text
        width = max((len(n) for n in described), default=0)
        indent = " " * (width + 4)
        options = _options_texts(registry, described) if parts else {}
        for name, text in described.items():
            if parts:
                # A first sentence cut before a display (``...:``) ends here.
                text = (text[:-1] + "." if text.endswith(":") else text) + options[name]
            line = textwrap.fill(f"  {name:<{width}}  {text}", LIST_WIDTH,
                                 subsequent_indent=indent, break_on_hyphens=False,
                                 break_long_words=False)  # fmt: skip
            print(line.rstrip(), file=out)
    return 0


def _cmd_datasets(out) -> int:
    import os

    from hamiltonia import datasets

    state = datasets.status()
    descriptions = datasets.describe()
    width = max(len(n) for n in state)
    mirror = os.environ.get("HAMILTONIA_DATA")
    print(f"mirror (HAMILTONIA_DATA): {mirror or 'not set'}", file=out)
    for name in datasets.names():
        print(f"  {name:<{width}}  {state[name]:<8}  {descriptions[name]}", file=out)
    return 0


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


def _cmd_plot(args, out) -> int:
    from pathlib import Path

    from hamiltonia.plots import KINDS, plot
    from hamiltonia.results import load
    from hamiltonia.results.runfile import RunFileError, atomic_write, checked_file_path

    if args.kind not in KINDS:
        raise _UsageError(f"--kind must be one of {', '.join(sorted(KINDS))}, got {args.kind!r}")
    try:
        # Never a folder, a device, a pipe or a socket, whatever --overwrite says.
        image = checked_file_path(Path(args.output), "--output")
    except RunFileError as err:
        raise _UsageError(str(err)) from None
    if image.exists() and not args.overwrite:
        raise _UsageError(f"{image} exists; pass --overwrite to replace it")
    figure = plot(load(args.path), args.kind, args.var)
    suffix = image.suffix.lstrip(".") or "png"
    try:
        atomic_write(image, lambda tmp: figure.savefig(tmp, format=suffix, dpi=120))
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)  # main() called again in one process would keep every figure
    print(f"wrote {image}", file=out)
    return 0


def _executor_arguments(parser) -> None:
    parser.add_argument(
        "--executor",
        default=None,
        choices=("threads", "processes", "dask"),
        help="where the sampling iterations run (default: threads, in this process)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        help="a Dask scheduler's address (tcp://...); implies --executor dask (default: a "
        "local cluster for --executor dask)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of --executor processes (default: one per core) or of the "
        "local Dask cluster (default: 2)",
    )


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


def _path_line(attrs) -> str:
    """``compiled (why)`` or ``NumPy (why)``, from a run's ``compiled`` and ``path_reason``."""
    path = "compiled" if attrs.get("compiled") else "NumPy"
    reason = str(attrs.get("path_reason", ""))
    why = reason.split(": ", 1)[1] if ": " in reason else reason
    return f"{path} ({why})" if why else path


def _report(result, target, output, out) -> int:
    try:
        return _print_report(result, target, output, out)
    except KeyboardInterrupt:
        # The run is over: what it made is in ``output`` (sample() wrote it before
        # returning), so say where, not that nothing was saved.
        where = f"the run is saved in {output}" if output else "no --output, nothing was saved"
        print(f"hamiltonia: interrupted while printing the report; {where}", file=sys.stderr)
        return EXIT_INTERRUPTED


def _print_report(result, target, output, out) -> int:
    import numpy as np
    import pandas as pd

    from hamiltonia.diagnostics.checks import diagnose
    from hamiltonia.diagnostics.summary import column_format, format_table
    from hamiltonia.results import format_summary

    summary = result.summary()
    with pd.option_context("display.max_rows", 200, "display.width", 120):
        print(format_summary(result.summary(lp=True)), file=out)
    exact = target.exact_moments
    if exact is not None:
        z = (summary["mean"] - exact.mean) / summary["mcse"]
        check = pd.DataFrame(
            {"mean": summary["mean"], "exact": exact.mean, "mcse": summary["mcse"], "z": z}
        )
        print("\nagainst the exact means (z = (mean - exact) / mcse):", file=out)
        # The mean and the exact mean in the summary's format, to be read side by side.
        spread = column_format(summary["sd"])
        print(format_table(check, {"mean": spread, "exact": spread, "z": "{:.2f}"}), file=out)
    if hasattr(target, "test_metrics"):
        try:
            metrics = result.test_metrics()
        except ImportError as err:
            print(f"\ntest metrics unavailable: {err}", file=out)
        else:
            print("\ntest-set metrics (posterior predictive):", file=out)
            for name, value in metrics.items():
                print(f"  {name:<10} {value:.4f}", file=out)
    if hasattr(target, "feature_relevance"):
        ranking = target.feature_relevance(result.draws, log_weights=result.log_weights)
        label = getattr(target, "relevance_label", "relevance")
        print(f"\nfeature relevance ({label}):", file=out)
        width = max(len(name) for name, _ in ranking)
        for rank, (name, value) in enumerate(ranking, start=1):
            print(f"  {rank:>2}. {name:<{width}}  {value:.4f}", file=out)
    stats = result.stats
    print(
        f"\nsampler {result.sampler} on {result.target}: {result.n_chains} chains x "
        f"{result.n_draws} draws after {result.attrs.get('warmup', '?')} warm-up"
        + (f" (thinned: one iteration in {thin})" if (thin := result.attrs.get("thin", 1)) > 1
           else ""),
        file=out,
    )  # fmt: skip
    print(f"path                 {_path_line(result.attrs)}", file=out)
    print(f"acceptance rate      {result.acceptance_rate:.3f}", file=out)
    print(
        f"step size (per chain) {np.array2string(stats['step_size'][:, -1], precision=4)}", file=out
    )
    print(f"divergences          {result.n_divergent}", file=out)
    if "tree_depth" in stats:
        depth = stats["tree_depth"]
        print(f"tree depth           mean {np.mean(depth):.2f}, max {int(np.max(depth))}", file=out)
    if "fixed_point_iterations" in stats:
        print(
            f"fixed points         {np.mean(stats['fixed_point_iterations']):.2f} iterations "
            f"per draw, {int(np.sum(stats['fixed_point_failures']))} not converged",
            file=out,
        )
    if result.log_weights is not None:
        from hamiltonia.diagnostics.weights import kish_ess

        n = result.log_weights.size
        kish = kish_ess(result.log_weights)
        print(
            f"importance weights   Kish ESS {kish:.0f} of {n} draws (factor {kish / n:.3f}; "
            "the summary is weighted and its ESS scaled by it)",
            file=out,
        )
    print(f"gradient evaluations {result.n_grad}", file=out)
    if result.n_chains > 1:
        print(f"max r_hat            {np.max(summary['r_hat']):.4f}", file=out)
    else:
        print("max r_hat            - (one chain: r_hat compares chains)", file=out)
    if result.pairs:
        _print_pairs(result, out)
    if result.gradients is not None:
        _print_control_variates(result, out)
    print(
        f"seconds              {result.warmup_seconds:.3g} warm-up (with any compiling), "
        f"{result.sampling_seconds:.3g} sampling",
        file=out,
    )
    problems = diagnose(result, summary)
    if problems:
        print(f"\nWARNINGS ({len(problems)}): the draws may not represent the posterior", file=out)
        for problem in problems:
            print(textwrap.fill(problem.message, 100, initial_indent="  - ",
                                subsequent_indent="    "), file=out)  # fmt: skip
    if not result.attrs.get("complete", True):
        where = f"; continue with `hamiltonia resume {output}`" if output else ""
        print(f"\nINTERRUPTED after {result.n_draws} draws per chain{where}", file=out)
        return EXIT_INTERRUPTED
    if output:
        print(f"wrote {output}", file=out)
    return 0


#: How the columns of a reduction table (hamiltonia.reducers.base.reduction_table) print;
#: the other columns (estimates) get one format each from their values.
_REDUCTION_FORMATS = {"eta": "{:.3f}", "ess_pair": "{:.0f}", "reduction": "{:,.1f}"}


def _reduction_text(table) -> str:
    """A plain-against-reduced table as text, one number format per column."""
    from hamiltonia.diagnostics.summary import format_table

    return format_table(table, _REDUCTION_FORMATS)


def _print_pairs(result, out) -> None:
    """The antithetic pairs' estimates beside the primary chains'
    (hamiltonia.reducers.antithetic)."""
    table = result.pair_summary()
    print(
        f"\nantithetic pairs ({len(result.pairs)}): the pair mean against the primary chains "
        "alone; reduction = (plain mcse / pair mcse)^2",
        file=out,
    )
    print(_reduction_text(table), file=out)
    print(
        f"eta (max over parameters) {table['eta'].max():.3f}; median reduction "
        f"{table['reduction'].median():,.1f} at twice the cost of the primary chains",
        file=out,
    )


def _print_control_variates(result, out) -> None:
    """The zero-variance control-variate estimates beside the plain ones
    (hamiltonia.reducers.control_variates), from the gradients the run kept."""
    order = int(result.attrs.get("control_variates", 1))
    table = result.control_variate_summary(order)
    print(
        f"\ncontrol variates (order {order}): the controlled mean against the plain one; "
        "reduction = (plain mcse / mcse)^2",
        file=out,
    )
    print(_reduction_text(table), file=out)
    print(f"median reduction {table['reduction'].median():,.1f}", file=out)


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


def main(argv=None) -> int:
    """Entry point of the ``hamiltonia`` console script."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "list":
            return _cmd_list(sys.stdout, parts=args.parts)
        if args.command == "datasets":
            return _cmd_datasets(sys.stdout)
        if args.command == "sample":
            return _cmd_sample(args, sys.stdout)
        if args.command == "resume":
            return _cmd_resume(args, sys.stdout)
        if args.command == "plot":
            return _cmd_plot(args, sys.stdout)
        if args.command == "reproduce":
            return _cmd_reproduce(args, sys.stdout)
        if args.command == "compile":
            return _cmd_compile(args, sys.stdout)
        if args.command == "bench":
            from hamiltonia import bench

            return bench.main(args.bench_args)
        parser.print_help()
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (``hamiltonia list | head``): it has what it wanted.
        # Python would report the failed flush of stdout at exit; point stdout elsewhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as err:
        from hamiltonia.reproduce.execute import ReproductionInterrupted
        from hamiltonia.runner.run import WarmupInterrupted

        if isinstance(err, ReproductionInterrupted):
            print(f"hamiltonia: {err}", file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(err, WarmupInterrupted):
            # Stopped in warm-up with --output: the warm-up so far is saved.
            print(
                f"hamiltonia: interrupted after {err.done} of {err.warmup} warm-up iterations; "
                f"saved in {err.path}: continue with `hamiltonia resume {err.path}`",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        # Before the first draw (without --output) there is nothing to return or save (after
        # it, sample() returns the draws so far and the report says INTERRUPTED).
        print("hamiltonia: interrupted before the first draw; nothing was saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (_UsageError, ValueError, TypeError, KeyError, OSError) as err:
        from hamiltonia.results.runfile import OutputWriteError

        if isinstance(err, OutputWriteError):
            print(f"hamiltonia: error: {_rescue(err)}", file=sys.stderr)
            return 2
        message = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        print(f"hamiltonia: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
