"""``hamiltonia reproduce epidemics-za``: the six SIR / SEIR change-point models of thesis 003,
chapter 6, sampled with NUTS, HMC and random-walk MH, compared by LOO (Table 6.2), with the
SIR-2 posterior beside the published one."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hamiltonia as hm
from hamiltonia.reproduce import Study, StudyReport, stop_if_interrupted
from hamiltonia.results.runfile import atomic_write

__all__ = ["PUBLISHED_LOO", "PUBLISHED_SIR2", "EpidemicsZA"]

MODELS = ("sir-cp0", "sir-cp1", "sir-cp2", "seir-cp0", "seir-cp1", "seir-cp2")
#: Sampler label -> (recipe, options).
SAMPLERS = {
    "NUTS": ("nuts", {}),
    "HMC": ("hmc", {"n_steps": 15, "metric": "diagonal"}),
    "MH": ("rwmh", {}),
}
#: Table 6.2: LOO ("lower is better", the deviance scale -2 elpd) and p_loo.
PUBLISHED_LOO = {
    "sir-cp2": (447.91, 10.36), "seir-cp1": (452.76, 11.60), "seir-cp0": (453.47, 15.90),
    "seir-cp2": (453.82, 11.26), "sir-cp1": (463.05, 7.92), "sir-cp0": (517.26, 4.26),
}  # fmt: skip
#: The SIR-2 HMC posterior (mean [interval]); change points as dates.
PUBLISHED_SIR2 = {
    "lambda[0]": (0.494, 0.406, 0.594), "lambda[1]": (0.098, 0.063, 0.145),
    "lambda[2]": (0.192, 0.129, 0.256), "mu": (0.149, 0.096, 0.202),
    "D": (6.829, 4.973, 8.596), "R0[0]": (3.315, 2.940, 4.229),
    "R0[1]": (0.656, 0.654, 0.673), "R0[2]": (1.288, 1.267, 1.343),
    "t[0]": ("2020-03-18", "2020-03-16", "2020-03-20"),
    "t[1]": ("2020-03-28", "2020-03-26", "2020-03-30"),
}  # fmt: skip
#: draws per chain (warm-up, draws) by scale and sampler.
SCALES = {
    "small": {"NUTS": (500, 1000), "HMC": (500, 1000), "MH": (2000, 5000)},
    "full": {"NUTS": (1000, 5000), "HMC": (1000, 5000), "MH": (1000, 5000)},
}
FIRST_DAY = dt.date(2020, 3, 5)


def _matches(run, chains: int, warmup: int, draws: int) -> bool:
    """Whether ``run`` has the chains, warm-up and draws this cell asks for."""
    attrs = run.attrs
    return (run.n_chains, attrs.get("warmup"), attrs.get("draws")) == (chains, warmup, draws)


def _problem(problem) -> str:
    """A run's problem (:class:`hamiltonia.diagnostics.checks.Problem`) in a few words: the
    check and its worst value, and the chains for the checks of chains."""
    text = f"{problem.check} {problem.value:.4g}"
    if problem.check in ("step_size", "frozen", "e_bfmi"):
        text += f" ({', '.join(problem.where)})"
    return text


def _label(model: str) -> str:
    kind, k = model.split("-cp")
    return f"{kind.upper()}-{k}"


def _date(days: float) -> str:
    day = FIRST_DAY + dt.timedelta(days=float(days))
    return day.strftime("%d %b")


class EpidemicsZA(Study):
    name = "epidemics-za"
    title = "Bayesian inference of COVID-19 spreading rates in South Africa"
    source = (
        "Mongwe (2022), thesis 003, chapter 6 (Table 6.2 and the SIR-2 posterior), after "
        "Dehning et al. (2020), Science 369"
    )

    def cells(self) -> list[str]:
        return [f"{_label(m)}/{s}" for m in MODELS for s in SAMPLERS]

    # ------------------------------------------------------------------ runs
    def _run_cell(self, cell, runs: Path, scale, chains, progress, log, sample_options):
        label, sampler = cell.split("/")
        model = MODELS[[_label(m) for m in MODELS].index(label)]
        recipe, options = SAMPLERS[sampler]
        warmup, draws = SCALES[scale][sampler]
        path = runs / f"{model}_{recipe}.nc"
        partial = path.with_name(path.name + ".partial")
        start = time.perf_counter()
        run = None
        if path.exists() and not partial.exists():
            held = hm.load(path)
            if held.attrs.get("complete", True) and _matches(held, chains, warmup, draws):
                log(f"{cell}: read back from {path}")
                return held
            log(f"{cell}: {path} holds another run; running the cell again")
        elif partial.exists():
            log(f"{cell}: continuing the interrupted run {path}")
            try:
                run = hm.resume(path, progress=progress, **sample_options)
            except (OSError, ValueError) as err:  # an unusable checkpoint: start again
                log(f"{cell}: cannot continue ({err}); running it again")
            if run is not None and not _matches(run, chains, warmup, draws):
                log(f"{cell}: the interrupted run had other settings; running it again")
                run = None
        if run is None:
            log(f"{cell}: {chains} chains x ({warmup} warm-up + {draws} draws)")
            if recipe == "rwmh" and sample_options.get("compiled") is None:
                # Random-walk MH has no compiled counterpart: the NumPy path, unannounced.
                sample_options = {**sample_options, "compiled": False}
            seed = 1000 + self.cells().index(cell)
            run = hm.sample(
                model, recipe, chains=chains, warmup=warmup, draws=draws, seed=seed,
                progress=progress, output=path, overwrite=True, **options, **sample_options,
            )  # fmt: skip
        # Ctrl-C returns the draws so far: the study stops, and a rerun continues the cell.
        stop_if_interrupted(run, cell, runs.parent)
        log(f"{cell}: done in {time.perf_counter() - start:.1f} s")
        return run

    def run(self, output: Path, *, scale: str, chains: int | None, only: list[str] | None,
            figures: bool, progress: bool, log: Callable[[str], None],
            sample_options: dict) -> StudyReport:  # fmt: skip
        import warnings

        from arviz_stats import loo

        output = Path(output)
        runs = output / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        chains = 4 if chains is None else chains
        cells = self.cells() if only is None else list(only)
        results, rows = {}, []
        for cell in cells:
            run = self._run_cell(cell, runs, scale, chains, progress, log, sample_options)
            # The run's problems (r_hat, divergences, a collapsed step size), the same for a
            # run read back as for a fresh one (which also warned), go in the report.
            said = [_problem(p) for p in run.diagnose()]
            with warnings.catch_warnings():
                # LOO's own warning (Pareto k) is reported in the table's k column.
                warnings.simplefilter("ignore", UserWarning)
                tree = run.to_datatree(log_likelihood=True)
                res = loo(tree, pointwise=True)
            results[cell] = (run, tree)
            post = tree["posterior"]
            core = [v for v in ("lambda", "sigma", "mu", "D", "I0", "E0", "t", "transient",
                                "sigma_obs") if v in post]  # fmt: skip
            flat = np.concatenate(
                [np.asarray(post[v].values).reshape(run.n_chains, run.n_draws, -1) for v in core],
                axis=-1,
            )
            khat = float(np.nanmax(np.asarray(res.pareto_k)))
            rows.append({
                "cell": cell, "elpd": float(res.elpd), "se": float(res.se), "p": float(res.p),
                "khat": khat, "rhat": float(np.max(hm.diagnostics.rhat(flat))),
                "ess": float(np.min(hm.diagnostics.ess(flat, "bulk"))),
                "div": int(np.sum(np.asarray(tree["sample_stats"]["diverging"].values)))
                if "diverging" in tree["sample_stats"] else 0,
                "seconds": float(run.warmup_seconds + run.sampling_seconds),
                "warnings": said,
            })  # fmt: skip
        files = []
        if figures and "SIR-2/NUTS" in results:
            files = self._figures(output, results["SIR-2/NUTS"])
        md, rst = self._report(rows, results, scale, chains, files, output)
        return StudyReport(markdown=md, rst=rst, files=files)

    # ------------------------------------------------------------------ report
    def _report(self, rows, results, scale, chains, files, output):
        lines = [f"# {self.title}", "", f"Source: {self.source}.", "",
                 f"Scale `{scale}`: {chains} chains per run; warm-up + draws per chain: "
                 + ", ".join(f"{s} {w} + {d}" for s, (w, d) in SCALES[scale].items()) + ".",
                 ""]  # fmt: skip
        lines += [
            "## Model comparison by LOO (Table 6.2)", "",
            "LOO is printed on the thesis's scale, the deviance-like LOOIC = -2 elpd_loo "
            "(lower is better; `arviz_stats.loo` gives elpd_loo, converted here: its "
            "standard error is doubled alike). p_loo is the effective number of parameters.",
            "",
            "| model | sampler | LOOIC (-2 elpd) | SE | p_loo | thesis LOO | thesis p_loo "
            "| max Pareto k | max R-hat | min bulk ESS | divergences | seconds |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for r in rows:
            label, sampler = r["cell"].split("/")
            model = MODELS[[_label(m) for m in MODELS].index(label)]
            pub = PUBLISHED_LOO[model]
            lines.append(
                f"| {label} | {sampler} | {-2 * r['elpd']:.2f} | {2 * r['se']:.2f} | "
                f"{r['p']:.2f} | {pub[0]:.2f} | {pub[1]:.2f} | {r['khat']:.2f} | "
                f"{r['rhat']:.3f} | {r['ess']:.0f} | {r['div']} | {r['seconds']:.1f} |"
            )
        troubled = [r for r in rows if r["warnings"]]
        if troubled:
            lines += ["", "A run with warnings did not converge, or not well: its LOO is not "
                      "to be trusted. The warnings (the check and its worst value: largest "
                      "R-hat, number of divergences, smallest ESS per chain, how many times the "
                      "step size fell in warm-up):", ""]  # fmt: skip
            lines += [f"- {r['cell']}: " + "; ".join(r["warnings"]) for r in troubled]
        nuts = [r for r in rows if r["cell"].endswith("/NUTS")]
        if nuts:
            ranked = sorted(nuts, key=lambda r: -r["elpd"])
            order = " < ".join(f"{r['cell'].split('/')[0]} ({-2 * r['elpd']:.1f})" for r in ranked)
            pub_order = " < ".join(_label(m) for m in PUBLISHED_LOO)
            lines += ["", f"Ranking by LOOIC (NUTS): {order}.", "",
                      f"Thesis ranking: {pub_order}.", ""]  # fmt: skip
        if "SIR-2/NUTS" in results or "SIR-2/HMC" in results:
            lines += ["## SIR with two change points: posterior", "",
                      "Mean [2.5 %, 97.5 % quantiles]; change points as dates (days after "
                      "5 March 2020 in `t`).", ""]  # fmt: skip
            cols = [c for c in ("SIR-2/NUTS", "SIR-2/HMC", "SIR-2/MH") if c in results]
            lines.append("| quantity | thesis (HMC) | " + " | ".join(cols) + " |")
            lines.append("|---|---|" + "---|" * len(cols))
            for name, pub in PUBLISHED_SIR2.items():
                cells = []
                for c in cols:
                    post = results[c][1]["posterior"]
                    block, _, idx = name.partition("[")
                    v = np.asarray(post[block].values)
                    v = v[..., int(idx[:-1])] if idx else v
                    m, lo, hi = v.mean(), np.quantile(v, 0.025), np.quantile(v, 0.975)
                    if block == "t":
                        cells.append(f"{_date(m)} ({m:.2f}) [{_date(lo)}, {_date(hi)}]")
                    else:
                        cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
                if isinstance(pub[0], str):
                    ptxt = f"{pub[0]} [{pub[1]}, {pub[2]}]"
                else:
                    ptxt = f"{pub[0]:.3f} [{pub[1]:.3f}, {pub[2]:.3f}]"
                lines.append(f"| {name} | {ptxt} | " + " | ".join(cells) + " |")
            lines.append("")
        if files:
            lines += ["## Figures", ""] + [f"- `{Path(f).relative_to(output)}`" for f in files]
            lines.append("")
        md = "\n".join(lines)
        rst = _markdown_to_rst(lines, self.title)
        return md, rst

    # ------------------------------------------------------------------ figures
    def _figures(self, output: Path, run_tree):
        from matplotlib.figure import Figure

        run, tree = run_tree
        post = tree["posterior"]
        folder = output / "figures"
        folder.mkdir(exist_ok=True)
        target = run.get_target()
        dates = [dt.date.fromisoformat(d) for d in target.cases.dates]
        pred = run.sample_posterior_predictive(seed=0)["new_cases"].reshape(-1, len(dates))
        fit = np.asarray(post["expected_cases"].values).reshape(-1, len(dates))
        files = []
        fig = Figure(figsize=(8, 4.5))
        ax = fig.subplots()
        ax.fill_between(dates, *np.quantile(pred, [0.025, 0.975], axis=0), alpha=0.2,
                        color="C0", label="posterior predictive 95 %")  # fmt: skip
        ax.fill_between(dates, *np.quantile(fit, [0.025, 0.975], axis=0), alpha=0.4,
                        color="C1", label="expected cases 95 %")  # fmt: skip
        ax.plot(dates, np.median(fit, axis=0), color="C1", label="expected cases (median)")
        ax.plot(dates, target.cases.new, "k.", label="reported new cases")
        ax.set_ylabel("daily new cases")
        ax.set_title("SIR with two change points (NUTS): fit and posterior predictive")
        ax.legend()
        fig.autofmt_xdate()
        files.append(folder / "sir2_cases.png")
        atomic_write(
            files[-1],
            lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight"),
        )
        lam = np.asarray(post["lambda_t"].values).reshape(-1, len(dates))
        fig = Figure(figsize=(8, 4))
        ax = fig.subplots()
        ax.fill_between(dates, *np.quantile(lam, [0.025, 0.975], axis=0), alpha=0.3)
        ax.plot(dates, np.median(lam, axis=0))
        ax.set_ylabel(r"spreading rate $\lambda_t$ (per day)")
        ax.set_title(r"$\lambda_t$ over time (median and 95 % band)")
        fig.autofmt_xdate()
        files.append(folder / "sir2_lambda_t.png")
        atomic_write(
            files[-1],
            lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight"),
        )
        t = np.asarray(post["t"].values).reshape(-1, 2)
        fig = Figure(figsize=(8, 3.5))
        ax = fig.subplots()
        for i, mean in enumerate(target.t_means):
            ax.hist(t[:, i], bins=60, density=True, alpha=0.6, label=f"t{i + 1} posterior")
            xs = np.linspace(mean - 4, mean + 4, 200)
            ax.plot(xs, np.exp(-0.5 * (xs - mean) ** 2) / math.sqrt(2 * math.pi), "k--",
                    lw=0.8, label="prior" if i == 0 else None)  # fmt: skip
        ax.set_xlabel("days after 5 March 2020 (13 = 18 March, 23 = 28 March)")
        ax.legend()
        ax.set_title("change points")
        files.append(folder / "sir2_change_points.png")
        atomic_write(
            files[-1],
            lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight"),
        )
        return files


def _markdown_to_rst(lines: list[str], title: str) -> list[str]:
    """The report as reStructuredText: a '-' section, sub-headings with '~', tables as
    list-tables."""
    out = [title, "-" * len(title), ""]
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# "):
            i += 1
            continue
        if line.startswith("## "):
            head = line[3:]
            out += [head, "~" * len(head), ""]
        elif line.startswith("|"):
            table = []
            while i < len(lines) and lines[i].startswith("|"):
                table.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out += [".. list-table::", "   :header-rows: 1", ""]
            for r, row in enumerate(t for n, t in enumerate(table) if n != 1):
                del r
                out.append("   * - " + row[0].replace("*", "\\*"))
                out += [f"     - {c.replace('*', chr(92) + '*')}" for c in row[1:]]
            out.append("")
            continue
        else:
            out.append(line.replace("`", "``"))
        i += 1
    return out
