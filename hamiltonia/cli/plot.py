"""``hamiltonia plot``: a diagnostic plot of a run file, written to an image."""

from __future__ import annotations

from hamiltonia.cli.parser import _UsageError


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
