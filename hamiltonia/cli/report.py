"""The report that ``hamiltonia sample`` and ``hamiltonia resume`` print after a run: the
summary, the checks against exact moments, the sampler's statistics, the variance
reductions and the WARNINGS block."""

from __future__ import annotations

import sys
import textwrap

from hamiltonia.cli.parser import EXIT_INTERRUPTED


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
_REDUCTION_FORMATS = {
    "eta": "{:.3f}",
    "dof": "{:.0f}",
    "ess_pair": "{:.0f}",
    "reduction": "{:,.1f}",
}


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
    # A run's own reduction, not the method's: where the pairs met early the pair mean is
    # that precise in this run, but across runs the variance falls far less (the errors are
    # heavy-tailed: docs/variance_reduction.rst, "Error bars of antithetic pairs").
    print(
        f"eta (max over parameters) {table['eta'].max():.3f}; this run's median reduction "
        f"{table['reduction'].median():,.1f} (its own error bars: replicated runs gain far "
        "less, at twice the cost of the primary chains)",
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
