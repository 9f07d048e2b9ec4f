"""``hamiltonia reproduce``: rerun a published experiment or a plugin's study, list them, or
write the documentation's page from finished reproductions."""

from __future__ import annotations

import os
import sys

from hamiltonia.cli.parser import _UsageError


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
