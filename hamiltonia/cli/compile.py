"""``hamiltonia compile``: compile the kernels of a first run into the cache."""

from __future__ import annotations

from hamiltonia.cli.parser import _UsageError


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
