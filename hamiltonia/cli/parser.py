"""The ``hamiltonia`` command line's parser: its commands and options, and the usage error
that a command raises for a user's mistake (exit code 2)."""

from __future__ import annotations

import argparse
import ast


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
    sp.add_argument("-s", "--sampler", default="nuts", help="registered sampler name")
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
