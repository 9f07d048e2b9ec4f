"""``hamiltonia reproduce gp-experts``: the 1-D study of Fig. 5.3 and a Table 5.1-style
comparison of the aggregation rules on scikit-learn's diabetes data, with the shared
hyperparameters sampled by NUTS (predictions averaged over the draws) and fitted by L-BFGS
(the publication's point estimate).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

import hamiltonia as hm
from hamiltonia.reproduce.study import Study, StudyReport, stop_if_interrupted
from hamiltonia.results.runfile import atomic_write, atomic_write_bytes
from hamiltonia_gp_experts import aggregation as agg
from hamiltonia_gp_experts.targets import (
    GPExperts,
    make_partition,
    synthetic_1d,
    synthetic_function,
)

__all__ = ["SCALES", "GPExpertsStudy"]

#: What each scale runs: NUTS chains, warm-up and draws per chain, the draws the predictions
#: average over, the points per expert of the 1-D study, the diabetes splits.
SCALES = {
    "small": {"chains": 2, "warmup": 300, "draws": 300, "predict_draws": 60,
              "ppe": (3, 5, 10, 20), "splits": 1},
    "full": {"chains": 4, "warmup": 1000, "draws": 1000, "predict_draws": 200,
             "ppe": (3, 5, 10, 20), "splits": 5},
}  # fmt: skip

#: The rules in the order of the publication's Table 5.1 (and the exact W2 barycenter).
TABLE_METHODS = ("BAR_var", "gPoE_var", "rBCM_diff_entr", "rBCM_var", "BCM", "gPoE_unif", "PoE",
                 "BAR_var_W2")  # fmt: skip

SYNTHETIC_T = 15.0  # Fig. 5.3
DIABETES_T = 100.0  # Table 5.1
DIABETES_PPE = 20  # not stated for Table 5.1
PARTITION_NAMES = {"random": "random", "kmeans": "K-means"}


def _sample(target, path: Path, spec, chains, seed, progress, sample_options, problems, log):
    """The NUTS run saved at ``path``, read back if it is there and has these settings;
    its problems (:meth:`hamiltonia.Result.diagnose`: r_hat, divergences, ...) are appended
    to ``problems`` as ``(run file, message)`` for the report.

    An interrupted run is run again from its start: the target is built from arrays, which
    a run file does not hold, so :func:`hamiltonia.resume` cannot rebuild it."""
    run, reused = None, True
    partial = path.with_name(path.name + ".partial")
    if path.exists() and not partial.exists():
        held = hm.load(path, target=target)
        wanted = (chains, spec["warmup"], spec["draws"])
        if (held.n_chains, held.attrs.get("warmup"), held.attrs.get("draws")) == wanted:
            run = held
        else:
            log(f"{path.name}: holds a run with other settings; running it again")
    elif partial.exists():
        log(f"{path.name}: interrupted before; running it again (its target cannot be rebuilt)")
    if run is None:
        with warnings.catch_warnings():
            # Its problems go in the report, from diagnose() below, as for a run read back.
            warnings.simplefilter("ignore", hm.SamplingWarning)
            run = hm.sample(
                target, "nuts", chains=chains, warmup=spec["warmup"], draws=spec["draws"],
                seed=seed, progress=progress, output=path, overwrite=True, **sample_options,
            )  # fmt: skip
        reused = False
        # Ctrl-C returns the draws so far: the study stops rather than report on them.
        stop_if_interrupted(run, path.stem, path.parent.parent)
    problems += [(path.name, p.message) for p in run.diagnose()]
    return run, reused


def _thin(run, n):
    """``n`` draws (log hyperparameters) spread over the chains' draws."""
    draws = np.log(np.asarray(run.draws, float).reshape(-1, run.dim))
    idx = np.linspace(0, len(draws) - 1, min(n, len(draws))).round().astype(int)
    return draws[idx]


def _scores(target, thetas, X_test, y_test, T, methods=TABLE_METHODS):
    """NLPD and RMSE of each method: of the mixture over ``thetas`` (the densities
    averaged), or of the single Gaussian for one ``theta``."""
    out = {}
    for method in methods:
        means, variances = agg.predict(target, thetas, X_test, method, T=T)
        m, _ = agg.mixture_moments(means, variances)
        out[method] = {
            "nlpd": agg.nlpd_mixture(y_test, means, variances),
            "rmse": agg.rmse(y_test, m),
        }
    return out


def _md_table(rows, header):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _rst_table(rows, header):
    cols = [header, *rows]
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(header))]
    rule = " ".join("=" * w for w in widths)
    fmt = lambda r: " ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return [rule, fmt(header), rule, *[fmt(r) for r in rows], rule]


class GPExpertsStudy(Study):
    """The GP-experts study (module docs)."""

    name: ClassVar[str] = "gp-experts"
    title: ClassVar[str] = "Healing products of GP experts, hyperparameters sampled by NUTS"
    source: ClassVar[str] = (
        "Cohen, Mbuvha, Marwala and Deisenroth, ICML 2020 (Mongwe 2022, thesis, ch. 5): "
        "Fig. 5.3 and Table 5.1"
    )

    def cells(self) -> list[str]:
        cells = []
        for ppe in SCALES["full"]["ppe"]:
            cells += [f"synthetic-{ppe}/NUTS", f"synthetic-{ppe}/L-BFGS"]
        for part in ("random", "kmeans"):
            cells += [f"diabetes-{part}/NUTS", f"diabetes-{part}/L-BFGS"]
        return cells

    # ---------------------------------------------------------------- synthetic
    def _synthetic(self, output, spec, chains, only, figures, progress, log, sample_options):
        X, y, _ = synthetic_1d(300, seed=0)
        X_test, y_test, _ = synthetic_1d(500, seed=1)
        # a second test set over [-7, 7]: the gap and beyond the data, where the rules differ
        rng = np.random.default_rng(2)
        X_wide = rng.uniform(-7.0, 7.0, size=(500, 1))
        y_wide = synthetic_function(X_wide[:, 0]) + 0.2 * rng.normal(size=500)
        full = GPExperts(X, y, [np.arange(len(y))])
        full_fit = agg.fit_lbfgs(full)
        full_mean, full_var = agg.full_gp_predict(X, y, full_fit.theta, X_test)
        noise = np.exp(full_fit.theta[-1])
        wide_mean, wide_var = agg.full_gp_predict(X, y, full_fit.theta, X_wide)
        results = {
            "full_gp": {"nlpd": agg.nlpd(y_test, full_mean, full_var + noise),
                        "rmse": agg.rmse(y_test, full_mean)},
            "full_gp_wide": {"nlpd": agg.nlpd(y_wide, wide_mean, wide_var + noise),
                             "rmse": agg.rmse(y_wide, wide_mean)},
        }  # fmt: skip
        bands = {}
        for ppe in spec["ppe"]:
            want = [c for c in (f"synthetic-{ppe}/NUTS", f"synthetic-{ppe}/L-BFGS")
                    if only is None or c in only]  # fmt: skip
            if not want:
                continue
            target = GPExperts(X, y, make_partition(X, points_per_expert=ppe, seed=ppe))
            fit = agg.fit_lbfgs(target)
            entry = {"experts": target.n_experts, "lbfgs_theta": fit.theta.tolist(),
                     "lbfgs_n_grad": fit.n_grad}  # fmt: skip
            if f"synthetic-{ppe}/L-BFGS" in want:
                entry["lbfgs"] = _scores(target, fit.theta, X_test, y_test, SYNTHETIC_T)
                entry["lbfgs_wide"] = _scores(target, fit.theta, X_wide, y_wide, SYNTHETIC_T)
            thetas = None
            if f"synthetic-{ppe}/NUTS" in want:
                log(f"synthetic-{ppe}/NUTS: {target.n_experts} experts")
                run, reused = _sample(target, output / "runs" / f"synthetic-{ppe}.nc", spec,
                                      chains, 100 + ppe, progress, sample_options,
                                      self._problems, log)  # fmt: skip
                thetas = _thin(run, spec["predict_draws"])
                summary = run.summary()
                entry["nuts"] = _scores(target, thetas, X_test, y_test, SYNTHETIC_T)
                entry["nuts_wide"] = _scores(target, thetas, X_wide, y_wide, SYNTHETIC_T)
                entry["posterior"] = {
                    name: [float(summary.loc[name, "mean"]), float(summary.loc[name, "sd"]),
                           float(summary.loc[name, "r_hat"])]
                    for name in target.reported_names
                }  # fmt: skip
                entry["n_grad"] = run.n_grad
                log(f"synthetic-{ppe}/NUTS: done{' (read back)' if reused else ''}")
            results[f"ppe{ppe}"] = entry
            bands[ppe] = (target, thetas if thetas is not None else fit.theta[None])
        files = []
        if figures and bands:
            files.append(self._figure(output, X, y, full_fit.theta, bands))
        return results, files

    def _figure(self, output, X, y, full_theta, bands):
        # A Figure without pyplot: the user's backend (a notebook's) is left alone.
        from matplotlib.figure import Figure

        methods = ("gPoE_var", "BAR_var", "rBCM_diff_entr", "rBCM_var", "BCM", "PoE")
        grid = np.linspace(-7, 7, 400)[:, None]
        fm, fv = agg.full_gp_predict(X, y, full_theta, grid)
        fv = fv + np.exp(full_theta[-1])
        fig = Figure(figsize=(3.2 * len(bands), 11))
        axes = fig.subplots(len(methods), len(bands), sharex=True, sharey=True, squeeze=False)
        for col, (ppe, (target, thetas)) in enumerate(sorted(bands.items(), reverse=True)):
            for row, method in enumerate(methods):
                ax = axes[row, col]
                means, variances = agg.predict(target, thetas, grid, method, T=SYNTHETIC_T)
                m, v = agg.mixture_moments(means, variances)
                ax.fill_between(grid[:, 0], fm - 2 * np.sqrt(fv), fm + 2 * np.sqrt(fv),
                                color="0.8", label="full GP ±2 sd")  # fmt: skip
                ax.fill_between(grid[:, 0], m - 2 * np.sqrt(v), m + 2 * np.sqrt(v),
                                color="C0", alpha=0.35, label=f"{method} ±2 sd")  # fmt: skip
                ax.plot(grid[:, 0], m, "C0", lw=1)
                ax.plot(grid[:, 0], synthetic_function(grid[:, 0]), "k--", lw=0.7)
                ax.plot(X[:, 0], y, ".", ms=1.5, color="C3")
                ax.set_ylim(-4, 4)
                if row == 0:
                    ax.set_title(f"{ppe} points per expert")
                if col == 0:
                    ax.set_ylabel(method)
        fig.tight_layout()
        path = output / "gp-experts-bands.png"
        atomic_write(path, lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=110))
        return path

    # ---------------------------------------------------------------- diabetes
    def _diabetes(self, output, spec, chains, only, progress, log, sample_options):
        from sklearn.datasets import load_diabetes

        Xall, yall = load_diabetes(return_X_y=True)
        results = {}
        for part in ("random", "kmeans"):
            want = [c for c in (f"diabetes-{part}/NUTS", f"diabetes-{part}/L-BFGS")
                    if only is None or c in only]  # fmt: skip
            if not want:
                continue
            per_split = []
            for split in range(spec["splits"]):
                rng = np.random.default_rng(1000 + split)
                perm = rng.permutation(len(yall))
                n_test = len(yall) // 10
                test, train = perm[:n_test], perm[n_test:]
                mx, sx = Xall[train].mean(0), Xall[train].std(0)
                my, sy = yall[train].mean(), yall[train].std()
                X, y = (Xall[train] - mx) / sx, (yall[train] - my) / sy
                X_test, y_test = (Xall[test] - mx) / sx, (yall[test] - my) / sy
                parts = make_partition(X, points_per_expert=DIABETES_PPE, partition=part,
                                       seed=split)  # fmt: skip
                target = GPExperts(X, y, parts)
                fit = agg.fit_lbfgs(target)
                entry = {"lbfgs_theta": fit.theta.tolist(), "experts": target.n_experts}
                if f"diabetes-{part}/L-BFGS" in want:
                    entry["lbfgs"] = _scores(target, fit.theta, X_test, y_test, DIABETES_T)
                if f"diabetes-{part}/NUTS" in want:
                    label = f"diabetes-{part}-split{split}"
                    log(f"{label}/NUTS: {target.n_experts} experts")
                    run, _ = _sample(target, output / "runs" / f"{label}.nc", spec, chains,
                                     2000 + split, progress, sample_options,
                                     self._problems, log)  # fmt: skip
                    thetas = _thin(run, spec["predict_draws"])
                    entry["nuts"] = _scores(target, thetas, X_test, y_test, DIABETES_T)
                    log(f"{label}/NUTS: done")
                per_split.append(entry)
            results[part] = per_split
        return results

    # ---------------------------------------------------------------- run
    def run(
        self,
        output: Path,
        *,
        scale: str,
        chains: int | None,
        only: list[str] | None,
        figures: bool,
        progress: bool,
        log: Callable[[str], None],
        sample_options: dict,
    ) -> StudyReport:
        output = Path(output)
        (output / "runs").mkdir(parents=True, exist_ok=True)
        spec = SCALES[scale]
        chains = spec["chains"] if chains is None else chains
        sample_options = dict(sample_options or {})
        self._problems = []
        synthetic, files = self._synthetic(output, spec, chains, only, figures, progress, log,
                                           sample_options)  # fmt: skip
        diabetes = self._diabetes(output, spec, chains, only, progress, log, sample_options)
        for where, message in self._problems:
            log(f"{where}: warning: {message}")
        data = {"scale": scale, "chains": chains, "synthetic": synthetic, "diabetes": diabetes,
                "warnings": [list(p) for p in self._problems]}  # fmt: skip
        data_path = output / "gp-experts-results.json"
        atomic_write_bytes(data_path, json.dumps(data, indent=1).encode())  # never half written
        files.append(data_path)
        markdown, rst = self._report(data, spec, [f.name for f in files if f.suffix == ".png"])
        return StudyReport(markdown=markdown, rst=rst, files=files)

    # ---------------------------------------------------------------- report
    @staticmethod
    def _cell(scores, method):
        if scores is None:
            return "–"
        s = scores[method]
        return f"{s['nlpd']:.3f} ({s['rmse']:.3f})"

    def _report(self, data, spec, figures):
        md = [f"# {self.title}", "", f"Source: {self.source}.", "",
              f"Scale {data['scale']!r}: NUTS with {data['chains']} chains, "
              f"{spec['warmup']} warm-up and {spec['draws']} draws each; the predictions "
              f"average {spec['predict_draws']} draws (a mixture: the NLPD averages the "
              "densities over the draws, the RMSE is that of the mixture's mean). L-BFGS: "
              "scipy, maxiter 200, from lengthscale = variances = 1, as the authors' code. "
              "Entries are mean NLPD (RMSE) of y; lower is better.", ""]  # fmt: skip
        rst_sections = []
        syn = data["synthetic"]
        rows = []
        for key, entry in syn.items():
            if not key.startswith("ppe"):
                continue
            for wide in ("", "_wide"):
                for est in ("nuts", "lbfgs"):
                    if est + wide not in entry:
                        continue
                    cells = [self._cell(entry[est + wide], m) for m in TABLE_METHODS]
                    rows.append(
                        [
                            f"{key[3:]} ({entry['experts']})",
                            "[-7, 7]" if wide else "data",
                            "NUTS" if est == "nuts" else "L-BFGS",
                            *cells,
                        ]
                    )
        header = ["points/expert (experts)", "test set", "hyperparameters", *TABLE_METHODS]
        if rows:
            fg = syn["full_gp"]
            md += [f"## Synthetic 1-D study (Fig. 5.3: 300 points, T = {SYNTHETIC_T:g})", "",
                   "Data: `synthetic_1d` (inputs on [-5, -0.5] and [1.5, 5], y = sin 2x + "
                   "0.5 sin 0.7x + 0.1x + N(0, 0.2²)); the authors' repository does not hold "
                   "their 1-D generator. Test sets: 500 fresh points from the data's "
                   "distribution (\"data\") and 500 uniform on [-7, 7] (\"[-7, 7]\": the gap "
                   "and beyond the data, where the rules differ). Random partition. Full GP "
                   f"(L-BFGS): {fg['nlpd']:.3f} ({fg['rmse']:.3f}) on data, "
                   f"{syn['full_gp_wide']['nlpd']:.3f} ({syn['full_gp_wide']['rmse']:.3f}) on "
                   "[-7, 7].", "",
                   *_md_table(rows, header), ""]  # fmt: skip
            rst_sections.append(("Synthetic 1-D study (Fig. 5.3)", rows, header))
            post = [[f"{k[3:]}", name, f"{v[0]:.3g}", f"{v[1]:.2g}", f"{v[2]:.3f}"]
                    for k, e in syn.items() if k.startswith("ppe") and "posterior" in e
                    for name, v in e["posterior"].items()]  # fmt: skip
            if post:
                md += ["Posterior of the shared hyperparameters (NUTS):", "",
                       *_md_table(post, ["points/expert", "parameter", "mean", "sd", "r_hat"]),
                       ""]  # fmt: skip
        drows = []
        for part, splits in data["diabetes"].items():
            for est in ("nuts", "lbfgs"):
                got = [s[est] for s in splits if est in s]
                if not got:
                    continue
                mean = {m: {k: float(np.mean([g[m][k] for g in got])) for k in ("nlpd", "rmse")}
                        for m in TABLE_METHODS}  # fmt: skip
                drows.append([PARTITION_NAMES[part], "NUTS" if est == "nuts" else "L-BFGS",
                              *[self._cell(mean, m) for m in TABLE_METHODS]])  # fmt: skip
        if drows:
            dheader = ["partition", "hyperparameters", *TABLE_METHODS]
            md += [f"## Diabetes (scikit-learn; Table 5.1's layout, T = {DIABETES_T:g})", "",
                   f"442 points, 10 inputs, standardised on the training part; "
                   f"{spec['splits']} random 90/10 split(s), {DIABETES_PPE} points per expert "
                   "(not stated for Table 5.1), single lengthscale (the authors' default).", "",
                   *_md_table(drows, dheader), ""]  # fmt: skip
            rst_sections.append(("Diabetes (Table 5.1 layout)", drows, dheader))
        for fig in figures:
            md += [f"![aggregated predictive bands against the full GP]({fig})", ""]
        md += ["## Published orderings", "", *self._orderings(data), ""]
        warned = [f"- {where}: {message}" for where, message in data.get("warnings", [])]
        if warned:
            md += ["## Runs with warnings", "", *warned, ""]
        rst = [self.title, "-" * len(self.title), "", f"Source: {self.source}.", ""]
        for title, rows_, header_ in rst_sections:
            rst += [title, "~" * len(title), "", *_rst_table(rows_, header_), ""]
        rst += ["Published orderings", "~" * 19, "", *self._orderings(data), ""]
        if warned:
            rst += ["Runs with warnings", "~" * 18, "", *warned, ""]
        return "\n".join(md), rst

    @staticmethod
    def _orderings(data):
        """Whether gPoE_var and BAR_var have the best NLPD of the table's rules, per row."""
        lines = []
        rivals = ("rBCM_diff_entr", "rBCM_var", "BCM", "gPoE_unif", "PoE")
        for key, entry in data["synthetic"].items():
            if not key.startswith("ppe"):
                continue
            for est in ("nuts", "lbfgs", "nuts_wide", "lbfgs_wide"):
                if est not in entry:
                    continue
                s = entry[est]
                best = min(s[m]["nlpd"] for m in ("gPoE_var", "BAR_var"))
                worse = [m for m in rivals if s[m]["nlpd"] < best]
                where = "test set [-7, 7]" if est.endswith("_wide") else "test set data"
                how = "NUTS" if est.startswith("nuts") else "L-BFGS"
                lines.append(
                    f"- synthetic, {key[3:]} points per expert, {how}, {where}: "
                    + (
                        "gPoE_var/BAR_var best NLPD"
                        if not worse
                        else f"beaten by {', '.join(worse)}"
                    )
                )
        return lines
