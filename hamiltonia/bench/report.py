"""The benchmark's report: the run matrix's comparison with the best peer, the goals met or
not, and the tables, rendered as markdown or as the documentation's Sphinx page."""

from __future__ import annotations

DASH = "–"


def _fmt(value, digits: int = 3) -> str:
    """Significant-figure formatting with thousands separators; ``–`` for missing."""
    if value is None:
        return DASH
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    value = float(value)
    if value != value:  # nan
        return DASH
    if value in (float("inf"), float("-inf")):
        return "inf"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    if magnitude >= 1e-3:
        decimals = max(digits - 1 - int(f"{magnitude:e}".split("e")[1]), 0)
        return f"{value:,.{decimals}f}"
    return f"{value:.{digits - 1}e}"


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return lines


def _sampler_label(record: dict) -> str:
    if record.get("sampler", "hmc") == "hmc":
        return f"HMC L={record.get('n_steps')}"
    return str(record.get("sampler", "")).upper()


def _main_table(records: list[dict]) -> list[str]:
    header = [
        "target", "sampler", "library", "variant", "ESS bulk min", "ESS tail min", "mESS",
        "ESS/s", "ESS/grad", "grads/draw", "µs/grad", "warm-up s", "sampling s", "compile s",
        "peak RSS MB", "accept", "R-hat max", "div", "step size", "load 1m",
    ]  # fmt: skip
    rows = []
    for r in records:
        if "error" in r:
            rows.append(
                [r.get("target"), _sampler_label(r), r.get("library"), r.get("variant"),
                 f"failed: {r['error']}"] + [DASH] * (len(header) - 5)
            )  # fmt: skip
            continue
        rows.append(
            [
                r["target"], _sampler_label(r), r["library"], r["variant"], r["ess_bulk"],
                r["ess_tail"], r["mess"], r["ess_per_s"], r["ess_per_grad"],
                r["grads_per_draw"], r["us_per_grad"], r["warmup_s"], r["sampling_s"],
                r["compile_s"], r["peak_rss_mb"], r["accept"], r["rhat"], r["divergences"],
                r["step_size"], _load(r),
            ]
        )  # fmt: skip
    return _table(header, rows)


def _load(record: dict) -> str:
    load = record.get("load_1m")
    return DASH if not load else f"{load[0]:.1f}-{load[1]:.1f}"


def compare(records: list[dict]) -> list[dict]:
    """Per target and sampler: hamiltonia with a diagonal metric (what the peers adapt), on
    all cores and pinned to one, against the peer run with the best min-bulk ESS/s."""
    rows = []
    order = [r["target"] for r in records]
    keys = sorted(
        {(r["target"], r.get("sampler", "hmc")) for r in records if "error" not in r},
        key=lambda k: order.index(k[0]),
    )
    for target, sampler in keys:
        ok = [
            r
            for r in records
            if "error" not in r and r["target"] == target and r.get("sampler", "hmc") == sampler
        ]
        ours = [
            r
            for r in ok
            if r["library"] == "hamiltonia"
            and r["variant"].startswith("diag")
            and not r.get("cpus")
        ]
        pinned = [
            r for r in ok if r["library"] == "hamiltonia" and r["variant"].startswith("diag")
            and r.get("cpus")
        ]  # fmt: skip
        peers = [r for r in ok if r["library"] != "hamiltonia"]
        if not ours:
            continue
        best = max(peers, key=lambda r: r["ess_per_s"], default=None)
        h = ours[0]
        one = pinned[0] if pinned else None
        rows.append(
            {
                "target": target,
                "sampler": _sampler_label(h),
                "ours": h,
                "one_core": one,
                "best": best,
                "ratio": None if best is None else h["ess_per_s"] / best["ess_per_s"],
                "ratio_one_core": None
                if best is None or one is None
                else one["ess_per_s"] / best["ess_per_s"],
            }
        )
    return rows


def _compare_table(rows: list[dict]) -> list[str]:
    header = [
        "target", "sampler", "hamiltonia ESS/s", "hamiltonia 1 core ESS/s", "best peer",
        "peer ESS/s", "ratio", "ratio 1 core", "hamiltonia µs/grad", "1 core µs/grad",
        "peer µs/grad", "R-hat hamiltonia / peer",
    ]  # fmt: skip
    out = []
    for c in rows:
        h, b, one = c["ours"], c["best"], c["one_core"]
        out.append(
            [
                c["target"], c["sampler"], h["ess_per_s"],
                None if one is None else one["ess_per_s"],
                DASH if b is None else f"{b['library']} ({b['variant']})",
                None if b is None else b["ess_per_s"], c["ratio"], c["ratio_one_core"],
                h["us_per_grad"], None if one is None else one["us_per_grad"],
                None if b is None else b["us_per_grad"],
                f"{h['rhat']:.2f} / " + (DASH if b is None else f"{b['rhat']:.2f}"),
            ]
        )  # fmt: skip
    return _table(header, out)


def _overhead_table(rows: list[dict]) -> list[str]:
    header = [
        "target", "D", "L", "path", "per step, identity (ns)", "per step, diagonal (ns)",
        "one gradient (ns)", "one gradient, chained (ns)", "ratio identity",
        "ratio diagonal", "ratio identity vs chained",
    ]  # fmt: skip
    body = []
    for r in rows:
        if "error" in r:
            body.append([r["target"], DASH, DASH, f"failed: {r['error']}"] + [DASH] * 7)
            continue
        chained = r.get("grad_chained_s")
        body.append(
            [
                r["target"], r["dim"], r["n_steps"], r["path"], r["step_s"] * 1e9,
                None if r["step_diag_s"] is None else r["step_diag_s"] * 1e9, r["grad_s"] * 1e9,
                None if chained is None else chained * 1e9, r["ratio"], r["ratio_diag"],
                r.get("ratio_chained"),
            ]
        )  # fmt: skip
    return _table(header, body)


def _chains_table(rows: list[dict]) -> list[str]:
    paths = list(dict.fromkeys(r["path"] for r in rows))
    counts = list(dict.fromkeys(r["chains"] for r in rows))
    header = ["chains"]
    for p in paths:
        header += [f"{p} wall s", f"{p} ratio", f"{p} sampling s", f"{p} sampling ratio"]
    body = []
    for c in counts:
        line = [c]
        for p in paths:
            base = next(r for r in rows if r["path"] == p and r["chains"] == counts[0])
            row = next(r for r in rows if r["path"] == p and r["chains"] == c)
            line += [
                row["wall_s"],
                row["wall_s"] / base["wall_s"],
                row["sampling_s"],
                row["sampling_s"] / base["sampling_s"],
            ]
        body.append(line)
    return _table(header, body)


def _memory_limit(m: dict) -> float:
    return 2 * m["draws_mb"] + 200


def _memory_table(m: dict) -> list[str]:
    if "error" in m:
        return [f"memory run failed: {m['error']}"]
    header = [
        "target", "chains x draws", "path", "draws array MB", "RSS before run MB",
        "peak RSS MB", "growth MB", "limit 2 x draws + 200 MB", "wall s",
    ]  # fmt: skip
    growth = m["peak_rss_mb"] - m["rss_before_mb"]
    row = [
        m["target"], f"{m['chains']} x {m['draws']:,}", m["path"], m["draws_mb"],
        m["rss_before_mb"], m["peak_rss_mb"], growth, _memory_limit(m), m["wall_s"],
    ]  # fmt: skip
    return _table(header, [row])


def _compile_table(rows: list[dict]) -> list[str]:
    header = ["target", "numba cache", "first call s", "compile s (first - second call)"]
    body = []
    for label, r in rows:
        if "error" in r:
            body.append([r.get("target"), label, f"failed: {r['error']}", DASH])
        else:
            body.append([r["target"], label, r["first_call_s"], r["compile_s"]])
    return _table(header, body)


#: Targets of the NUTS speed goal (issue 9): ESS/s at least twice NumPyro's sequential NUTS.
NUTS_SPEED_TARGETS = ("banana", "gaussian-d100", "blr-pima", "blr-german")


def nuts_goals(records: list[dict]) -> list[list]:
    """The NUTS goals against NumPyro's NUTS, side by side in this run: ESS per gradient
    within +-20 % (the same algorithm; the trees agree at a fixed step size and metric, so a
    gap is the warm-up's), and min-bulk ESS/s at least 2x NumPyro's sequential variant."""
    ok = [r for r in records if "error" not in r and r.get("sampler") == "nuts"]

    def pick(target, library, variant):
        return next(
            (r for r in ok if r["target"] == target and r["library"] == library
             and r["variant"].startswith(variant) and not r.get("cpus")),
            None,
        )  # fmt: skip

    targets = list(dict.fromkeys(r["target"] for r in ok))
    pairs = [(t, pick(t, "hamiltonia", "diag"), pick(t, "numpyro", "sequential")) for t in targets]
    pairs = [(t, h, n) for t, h, n in pairs if h is not None and n is not None]
    if not pairs:
        return [["(5) NUTS against NumPyro's NUTS", None, "NumPyro's NUTS did not run"]]
    out = []
    ratios = {t: h["ess_per_grad"] / n["ess_per_grad"] for t, h, n in pairs}
    out.append(
        ["(5) NUTS ESS/grad within +-20 % of NumPyro's (sequential)",
         all(0.8 <= v <= 1.2 for v in ratios.values()),
         "; ".join(f"{t} {v:.2f}x" for t, v in ratios.items())]
    )  # fmt: skip
    speed = {t: h["ess_per_s"] / n["ess_per_s"] for t, h, n in pairs if t in NUTS_SPEED_TARGETS}
    if speed:
        missing = [t for t in NUTS_SPEED_TARGETS if t not in speed]
        numbers = "; ".join(f"{t} {v:.2f}x" for t, v in speed.items())
        if missing:
            numbers += f" (not measured: {', '.join(missing)})"
        out.append(["(6) NUTS min-bulk ESS/s >= 2 x NumPyro's sequential NUTS",
                    not missing and all(v >= 2 for v in speed.values()), numbers])  # fmt: skip
    return out


def goals(report: dict) -> list[list]:
    """The issue's four performance goals, evaluated on this run: (goal, met, numbers)."""
    out = []
    over = {r["target"]: r for r in report.get("overhead", []) if "error" not in r}
    wanted = ["gaussian-d10", "gaussian-d100", "banana", "blr-german"]
    have = [t for t in wanted if t in over]
    if have:
        met = all(over[t]["ratio"] <= 1.5 for t in have)
        numbers = ", ".join(f"{t} {over[t]['ratio']:.2f}x ({over[t]['path']})" for t in have)
        if len(have) < len(wanted):
            numbers += f" (not measured: {', '.join(t for t in wanted if t not in have)})"
        out.append(["(1) per step <= 1.5 x one compiled gradient (identity metric)", met, numbers])
    cmp_rows = [
        c for c in report.get("compare", []) if c["best"] is not None and c["sampler"] != "NUTS"
    ]
    if cmp_rows:
        met = all(c["ratio"] >= 1 for c in cmp_rows)
        parts = []
        for c in cmp_rows:
            text = f"{c['target']} {c['ratio']:.2f}x"
            if c["ratio_one_core"] is not None:
                text += f" ({c['ratio_one_core']:.2f}x on 1 core)"
            text += f" vs {c['best']['library']} {c['best']['variant']}"
            if max(c["ours"]["rhat"], c["best"]["rhat"]) > 1.1:
                text += " [R-hat > 1.1: not converged, ESS/s is noise]"
            parts.append(text)
        numbers = "; ".join(parts)
        out.append(["(2) hamiltonia diagonal min-bulk ESS/s >= best peer (fixed-L HMC)", met,
                    numbers])  # fmt: skip
    else:
        out.append(["(2) ESS/s >= best peer", None, "no peer ran"])
    out.extend(nuts_goals(report.get("records", [])))
    chains = report.get("chains", [])
    for path in ("compiled", "numpy"):
        rows = {r["chains"]: r for r in chains if r["path"] == path}
        if 1 in rows and 64 in rows:
            ratio = rows[64]["wall_s"] / rows[1]["wall_s"]
            samp = rows[64]["sampling_s"] / rows[1]["sampling_s"]
            out.append(
                [f"(3) 64 chains <= 8 x 1 chain wall, gaussian-d100 ({path})", ratio <= 8,
                 f"{ratio:.1f}x wall ({samp:.1f}x sampling phase only)"]
            )  # fmt: skip
    m = report.get("memory")
    if m and "error" not in m:
        growth = m["peak_rss_mb"] - m["rss_before_mb"]
        limit = _memory_limit(m)
        out.append(
            [f"(4) memory of {m['chains']} x {m['draws']:,} {m['target']} draws < 2 x draws "
             "array + 200 MB", growth < limit,
             f"growth {growth:.0f} MB (peak RSS {m['peak_rss_mb']:.0f} MB incl. imports) vs "
             f"limit {limit:.0f} MB; draws array {m['draws_mb']:.1f} MB"]
        )  # fmt: skip
    return out


NOTES = """\
Notes on method:

* Every matrix run is one fresh Python process (`python -m hamiltonia.bench._worker`), so that
  peak RSS (`VmHWM` of `/proc/self/status`, which includes the library's imports, JAX's too;
  not `ru_maxrss`, which Linux carries over from the parent across fork + exec) and the
  first-call time belong to that run alone.
* ESS: rank-normalised bulk and tail ESS (ArviZ), minimum over parameters. mESS: batch means
  (Vats et al.), undefined (–) when there are no more batches than dimensions (D >= 32 at
  1,000 draws). ESS/s = min bulk ESS / sampling-phase seconds; ESS/grad = min bulk ESS /
  gradient evaluations of the sampling phase (all chains); µs/grad = sampling seconds /
  gradient evaluations.
* hamiltonia: two identical `hamiltonia.sample` calls in the process (same seed, same draws); the
  second is reported, and compile s = first-call wall - second-call wall (importing numba and
  loading the kernels from numba's cache, or compiling them when the cache is cold; the
  "compile" table shows a cold cache). The compiled path is used wherever the target has a
  numba kernel (variant "compiled"), the NumPy path otherwise. It runs the chains on threads,
  one per core; the peers' runs here are mostly single-threaded (NumPyro sequential and mici
  by construction), so hamiltonia's diagonal-metric run is repeated pinned to one core
  (`sched_setaffinity`, variant "1 core"), and the comparison shows both.
* NumPyro: `HMC(num_steps=L, trajectory_length=None)` (without `trajectory_length=None` NumPyro
  ignores the adapted step size). It re-jits on every `warmup`/`run` call, so warm-up and
  sampling run twice with the same keys and the second pass is reported minus the JAX compile
  events inside it (tracing, lowering, persistent-cache loads); compile s = first pass - that.
* BlackJAX: `window_adaptation` + `hmc`, vmapped over chains, compiled ahead of time
  (`jit(...).lower(...).compile()`); compile s = the two AOT compiles.
* mici: `StaticMetropolisHMC` with dual averaging and a diagonal (online variance) metric on its
  windowed stager, pooled over chains, chains sequential; warm-up and sampling are two
  `sample_chains` calls. Its gradient is the hamiltonia target's NumPy `log_prob_and_grad`.
* Same problem everywhere: the JAX log densities are built from the hamiltonia target's own data
  (banana observations as sufficient statistics, Gaussian scales, German design matrix and
  labels), float64; all libraries start from the same uniform(-2, 2) points; target acceptance
  0.8; NumPyro and BlackJAX adapt per chain, mici and hamiltonia pool the metric over chains.
* Fixed-L HMC with an adapted step size resonates on the Gaussians and mixes badly on German
  credit; the funnel defeats every diagonal-metric sampler (see its R-hat above). Compare
  ESS/s where R-hat is near 1, and treat ratios under about 1.5x on sub-second phases as noise.
* Overhead: one chain of the composed chain kernel (`hamiltonia.compiled.chain.run_chain`:
  momentum, leapfrog, accept, output; no adaptation) per gradient evaluation made, against
  the target's compiled `log_prob_and_grad` called in a numba loop through the same function
  pointer; best of several repeats; "chained" makes each call's input depend on the
  previous output, as in a trajectory, so that consecutive calls cannot overlap in the CPU
  (latency, not throughput).
  Chains: wall of a whole `sample` call (warm-up included), identity metric.
* load 1m: the machine's 1-minute load average at the start and end of a run; with 2 cores,
  values well above 1 mean other processes competed for the CPU during that run.
* Memory: one process; a short call first loads numba and the kernels, then RSS is read, then
  the long run; growth = peak RSS - RSS before the run."""


def render_markdown(report: dict) -> str:
    """The report as markdown: machine, settings, the tables."""
    info, settings = report["machine"], report["settings"]
    mem = f", {info['memory_gb']:.0f} GiB RAM" if info.get("memory_gb") else ""
    lines = [
        "# hamiltonia benchmark",
        "",
        f"* date: {info['date']}",
        f"* machine: {info['cpu']}, {info['cores']} cores{mem}, {info['os']}",
        f"* versions: python {info['python']}, hamiltonia {info['hamiltonia']}, "
        f"numpy {info['numpy']}, numba {info['numba']}, jax {info['jax']} "
        f"(jaxlib {info['jaxlib']}), numpyro {info['numpyro']}, blackjax {info['blackjax']}, "
        f"mici {info['mici']}",
        f"* settings: {settings['chains']} chains, {settings['warmup']:,} warm-up, "
        f"{settings['draws']:,} draws, seed {settings['seed']}, target acceptance 0.8, "
        f"diagonal metric for the peers{' (--quick)' if settings['quick'] else ''}",
    ]
    if report.get("load"):
        lines.append(
            "* 1-minute load average at start / end: "
            + " / ".join(f"{x:.2f}" for x in report["load"])
            + " (other processes share this machine; see the load column)"
        )
    for peer, state in report["peers"].items():
        lines.append(f"* {peer}: {state}")
    lines += ["", "## Runs", ""]
    lines += _main_table(report["records"])
    if report.get("compare"):
        lines += ["", "## hamiltonia (diagonal metric) against the best peer", ""]
        lines += _compare_table(report["compare"])
    if report.get("overhead"):
        lines += ["", "## Overhead: compiled HMC per leapfrog step against one gradient", ""]
        lines += _overhead_table(report["overhead"])
    if report.get("chains"):
        s = report["chains_settings"]
        lines += [
            "",
            f"## Chains: {s['target']}, HMC L={s['n_steps']}, {s['warmup']:,} warm-up + "
            f"{s['draws']:,} draws, identity metric ({s['cores']} cores)",
            "",
        ]
        lines += _chains_table(report["chains"])
    if report.get("memory"):
        lines += ["", "## Memory", ""]
        lines += _memory_table(report["memory"])
    if report.get("compile"):
        lines += ["", "## First call in a fresh process (hamiltonia)", ""]
        lines += _compile_table(report["compile"])
    table = goals(report)
    if table:
        lines += ["", "## Goals", ""]
        lines += _table(["goal", "met", "numbers"], table)
    lines += ["", NOTES, ""]
    return "\n".join(lines)


RST_INTRO = """\
Benchmarks
==========

hamiltonia against NumPyro, BlackJAX and mici on the seed targets (fixed-length HMC, 4 chains,
1,000 warm-up and 1,000 draws, same data, same priors, float64), plus hamiltonia's own
overheads. This page is generated by the benchmark itself; rerun it with

.. code-block:: bash

   pip install -e '.[bench]'
   python -m hamiltonia.bench --output docs/benchmarks.rst

(``--quick`` for a smoke test, ``--targets`` and ``--peers`` to choose; ``--output FILE.md``
writes markdown.) Peers that are not installed are skipped and listed as such. Generated on
{date} on {cpu} ({cores} cores).

.. code-block:: text

"""


def render_rst(report: dict) -> str:
    """The report as a Sphinx page: an introduction, then the markdown in a text block."""
    info = report["machine"]
    body = render_markdown(report)
    indented = "\n".join(("   " + line) if line else "" for line in body.splitlines())
    return (
        RST_INTRO.format(date=info["date"], cpu=info["cpu"], cores=info["cores"]) + indented + "\n"
    )
