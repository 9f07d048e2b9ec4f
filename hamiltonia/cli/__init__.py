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

import os
import sys

from hamiltonia.cli.compile import _cmd_compile
from hamiltonia.cli.listing import _cmd_datasets, _cmd_list
from hamiltonia.cli.parser import EXIT_INTERRUPTED, _build_parser, _UsageError
from hamiltonia.cli.plot import _cmd_plot
from hamiltonia.cli.reproduction import _cmd_reproduce
from hamiltonia.cli.sample import _cmd_resume, _cmd_sample, _rescue

__all__ = ["main"]


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
