"""The ``>>>`` examples of the documentation run and print what the pages show.

Every page ``docs/*.rst`` holding ``>>>`` examples runs through :func:`doctest.testfile`
(one test per page, ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``), in a temporary working folder
(examples write files such as ``banana.nc``) and with ``docs/examples`` on ``sys.path``
(modules that a page includes and imports, as a reader's script imports a module next to it).
Names a page registers with ``hm.samplers.register`` are forgotten after the page.

Numbers that come out of a sampler depend on the last bits of floating-point arithmetic,
which differ between CPUs (NumPy's SIMD ``exp`` differs between AVX2 and AVX-512, and a
chain amplifies any rounding difference). An output that differs from the page therefore
still passes when it differs *only in its numbers* (same text, same structure, same number of
numbers); anything else — a renamed column, a changed message, a different type — fails. Set
``HAMILTONIA_DOCS_EXACT=1`` to require the numbers too (done when the pages are regenerated).

Examples that need the real data sets sit between the RST comments
``.. doctest-requires-data`` and ``.. doctest-requires-data-end`` (Sphinx renders nothing for
them). When a data set is missing (as ``hamiltonia datasets`` reports it) those regions are
blanked before the page is parsed, so the other examples of the page still run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import doctest
import io
import itertools
import os
import re
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.glob("*.rst") if ">>>" in p.read_text(encoding="utf-8"))
OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
DATA_BEGIN = ".. doctest-requires-data"
DATA_END = ".. doctest-requires-data-end"
# The CI's mirror (see .ci/run), used when HAMILTONIA_DATA is not set.
DEFAULT_MIRROR = REPO.parent / "shared" / "data"


_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class _Checker(doctest.OutputChecker):
    """Exact (with the page's flags) or, unless ``HAMILTONIA_DOCS_EXACT``, equal once every
    number is masked (see the module docstring)."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        if os.environ.get("HAMILTONIA_DOCS_EXACT"):
            return False
        return super().check_output(_NUMBER.sub("#", want), _NUMBER.sub("#", got), optionflags)


def without_data_examples(text: str) -> str:
    """``text`` with the lines of every data-dependent region blanked (line numbers kept)."""
    lines = text.split("\n")
    inside = False
    for i, line in enumerate(lines):
        marker = line.strip()
        if marker == DATA_BEGIN:
            inside = True
        elif marker == DATA_END:
            inside = False
        if inside:
            lines[i] = ""
    return "\n".join(lines)


class _Parser(doctest.DocTestParser):
    """A doctest parser that drops the data-dependent regions when ``skip_data``."""

    def __init__(self, skip_data: bool):
        self.skip_data = skip_data

    def parse(self, string, name="<string>"):
        if self.skip_data:
            string = without_data_examples(string)
        return super().parse(string, name)


def _data_available(monkeypatch) -> bool:
    """Whether every registered data set can be read without a download."""
    from hamiltonia import datasets
    from hamiltonia.datasets import fetch

    if not os.environ.get(fetch.ENV_MIRROR, "").strip() and DEFAULT_MIRROR.is_dir():
        monkeypatch.setenv(fetch.ENV_MIRROR, str(DEFAULT_MIRROR))
        if "missing" in datasets.status().values():
            monkeypatch.delenv(fetch.ENV_MIRROR)
    return "missing" not in datasets.status().values()


def test_markers_are_paired():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        marks = [line.strip() for line in text.split("\n")]
        begins, ends = marks.count(DATA_BEGIN), marks.count(DATA_END)
        assert begins == ends, f"{page.name}: {begins} {DATA_BEGIN} but {ends} {DATA_END}"


def test_there_are_pages_with_examples():
    assert {"quickstart.rst", "concepts.rst", "compiled.rst"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_examples(page, tmp_path, monkeypatch):
    import hamiltonia as hm

    data = _data_available(monkeypatch)
    monkeypatch.chdir(tmp_path)
    # Names a page registers for its process (hm.samplers.register) stay on that page.
    for registry in (hm.samplers.registry, hm.targets.registry):
        monkeypatch.setattr(registry, "_extra", dict(registry._extra))
    monkeypatch.syspath_prepend(str(DOCS / "examples"))
    text = page.read_text(encoding="utf-8")
    test = _Parser(skip_data=not data).get_doctest(text, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(checker=_Checker(), optionflags=OPTIONFLAGS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{page.name}: no examples ran"
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} examples failed in docs/{page.name}"
        + ("" if data else " (data-dependent examples skipped: no data)")
        + f":\n{out.getvalue()}"
    )


# --------------------------------------------------------------------- shown command output
#
# Every output a page shows comes from the program. A ``.. code-block:: console`` block runs:
# each ``$ COMMAND`` line followed by output lines is run here and its output compared with
# the page's as the ``>>>`` examples are (``...`` elides, numbers may differ unless
# HAMILTONIA_DOCS_EXACT; a command without output lines is an instruction, not run). The
# ``.. code-block:: text`` blocks (and ``::`` literal blocks) are each in one of the tables
# below: regenerated and compared, checked as the output of a named generator, or shown to
# be no program output at all; a block in none of them fails test_every_shown_block_is_known.

#: Pages checked elsewhere or by their own means: the reproduction pages are written by
#: ``hamiltonia reproduce --docs-page``.
OWN_PAGES = ("reproduction.rst", "reproduction_results.rst")


@dataclasses.dataclass(frozen=True)
class Block:
    """A literal block of a page: its language (``console``, ``text``, ``literal`` for
    ``::``), its 1-based line, its dedented text and whether it needs the data sets."""

    page: str
    line: int
    language: str
    text: str
    data: bool

    @property
    def key(self) -> tuple[str, str]:
        """The page and the start of the block's first line, how the tables name a block."""
        return self.page, self.text.strip().split("\n")[0][:40]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block:: (\w+)\s*$")


def blocks(page: Path) -> list[Block]:
    """The literal blocks of ``page`` (``code-block`` directives and ``::`` paragraphs)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found, data, i = [], False, 0
    while i < len(lines):
        line, marker = lines[i], lines[i].strip()
        data = True if marker == DATA_BEGIN else False if marker == DATA_END else data
        directive = _DIRECTIVE.match(line)
        literal = line.rstrip().endswith("::") and not marker.startswith("..")
        if not (directive or literal):
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            j += 1
        body = textwrap.dedent("\n".join(lines[i + 1 : j])).strip("\n")
        language = directive.group(2) if directive else "literal"
        found.append(Block(page.name, i + 1, language, body, data))
        i = j
    return found


def _all_blocks() -> list[Block]:
    return [b for p in sorted(DOCS.glob("*.rst")) if p.name not in OWN_PAGES for b in blocks(p)]


def commands(block: Block) -> list[tuple[str, str]]:
    """``(command, shown output)`` for every ``$`` line of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in block.text.split("\n"):
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return [(command, "\n".join(shown).strip("\n")) for command, shown in out]


def _shows_output(block: Block) -> bool:
    return block.language == "console" and any(shown for _, shown in commands(block))


#: Console blocks too slow for the default run (a fresh process compiling its kernels).
SLOW_BLOCKS = {("compiled.rst", "$ cat first_call.py")}

CONSOLE_BLOCKS = [b for b in _all_blocks() if _shows_output(b)]


#: Wall-clock times, never the same twice: masked on both sides, even when exact.
_TIMINGS = (
    (re.compile(r"(?m)^(\s*seconds\s+).*$"), r"\1(time)"),  # the report's "seconds" line
    (re.compile(r"(?m)^[\d.]+ s, "), "(time) s, "),
    (re.compile(r"[\d.]+ ms per gradient"), "(time) ms per gradient"),
)


def _compare(want: str, got: str, where: str) -> None:
    checker = _Checker()
    want, got = want.strip() + "\n", got.strip() + "\n"
    for timing, mask in _TIMINGS:
        want, got = timing.sub(mask, want), timing.sub(mask, got)
    if not checker.check_output(want, got, OPTIONFLAGS):
        example = doctest.Example(where, want)
        pytest.fail(f"{where}: the page shows another output than the program's:\n"
                    + checker.output_difference(example, got, OPTIONFLAGS))  # fmt: skip


def _run_python_code(code: str) -> str:
    """What ``python -c CODE`` prints: here the warnings it raises, as Python shows them."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    return "".join(
        warnings.formatwarning(w.message, w.category, w.filename, w.lineno, "") for w in caught
    )


def _run_command(command: str, shown: str, env: dict, paths: dict, cwd: Path) -> str:
    """The output of one ``$`` command of a page, run here (``hamiltonia`` in this process),
    with the environment variables ``env`` that the block exported and its paths standing
    for ``paths[path]``."""
    import shlex
    import subprocess
    import sys

    argv = shlex.split(command, comments=True)
    if argv[0] == "hamiltonia":
        from hamiltonia.cli import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(argv[1:])
        return out.getvalue()
    if argv[:2] == ["python", "-c"]:
        return _run_python_code(argv[2])
    if argv[0] == "python" and argv[-1].endswith(".py"):
        # A fresh process, as the page's: stderr and stdout in the order they were written.
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=cwd, env={**os.environ, **env},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              check=False)  # fmt: skip
        return proc.stdout
    if argv[0] == "cat" and len(argv) == 2:
        # The page shows the file a later command runs: it is written from the page.
        (cwd / argv[1]).write_text(shown + "\n", encoding="utf-8")
        return shown
    if argv[0] == "ls" and len(argv) == 2:
        return "\n".join(sorted(os.listdir(paths.get(argv[1], argv[1]))))
    pytest.fail(f"no way to run {command!r}: teach tests/test_docs.py._run_command")


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=[pytest.mark.slow] if b.key in SLOW_BLOCKS else [], id=b.id)
     for b in CONSOLE_BLOCKS],
)  # fmt: skip
def test_console_output(block, tmp_path, monkeypatch):
    """Each command of the block prints what the page shows."""
    data = _data_available(monkeypatch)
    if block.data and not data:
        pytest.skip("needs the data sets (hamiltonia datasets reports missing files)")
    monkeypatch.chdir(tmp_path)
    env: dict[str, str] = {}
    paths: dict[str, str] = {}  # the path the page shows -> the one the command uses
    for command, shown in commands(block):
        if command.startswith("export "):
            for assignment in command.split("#")[0].split()[1:]:
                name, _, value = assignment.partition("=")
                if name == "HAMILTONIA_DATA":
                    if not data:
                        pytest.skip("needs the data mirror")
                    real = os.environ["HAMILTONIA_DATA"]
                else:
                    # The page's folders (/tmp/fresh) stand for fresh ones of this test.
                    real = str(tmp_path / Path(value).name)
                monkeypatch.setenv(name, real)
                env[name], paths[value] = real, real
            continue
        if not shown:
            continue
        got = _run_command(command, shown, env, paths, tmp_path)
        for value, real in paths.items():
            got = got.replace(real, value)
        _compare(shown, got, f"docs/{block.id} $ {command}")


def test_there_are_console_outputs():
    shown = {b.key for b in CONSOLE_BLOCKS}
    assert ("quickstart.rst", "$ hamiltonia list") in shown
    assert any(page == "troubleshooting.rst" and first.startswith("$ hamiltonia sample funnel")
               for page, first in shown)  # fmt: skip


# ------------------------------------------------------------ messages and other text blocks


def _messages(run) -> list[str]:
    """``Category: message`` for every warning ``run()`` raises, and for its exception."""
    import warnings

    found = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        try:
            run()
        except Exception as err:  # the message is what is compared
            found.append(f"{type(err).__name__}: {err}")
    return [f"{w.category.__name__}: {w.message}" for w in caught] + found


def _funnel_runs() -> list[str]:
    """The warnings of the two funnel runs of troubleshooting.rst's first section (the short
    run of its ``python -c`` and the default run of its ``hamiltonia sample``)."""
    import hamiltonia as hm

    return _messages(
        lambda: hm.sample("funnel-d25", chains=2, warmup=100, draws=100, seed=0, progress=False)
    ) + _messages(lambda: hm.sample("funnel-d25", seed=6, progress=False))


def _code_above(block: Block) -> list[str]:
    """The warnings (and exception) of the ``python`` block right above ``block``."""
    import autograd.numpy as anp
    import numpy as np

    import hamiltonia as hm

    page = blocks(DOCS / block.page)
    above = page[page.index(block) - 1]
    assert above.language == "python", f"{block.id}: no python block above"
    namespace = {"hm": hm, "np": np, "anp": anp}  # imported earlier on the page
    return _messages(lambda: exec(compile(above.text, block.page, "exec"), namespace))


def _tree_depth_runs() -> list[str]:
    import hamiltonia as hm

    return _messages(lambda: hm.sample("banana", chains=2, warmup=200, draws=200, seed=1,
                                       max_tree_depth=3, progress=False))  # fmt: skip


def _devnull_output() -> list[str]:
    import hamiltonia as hm

    return _messages(lambda: hm.sample("banana", output="/dev/null", progress=False))


#: Text blocks that show messages of the program, and what regenerates them.
MESSAGES = {
    ("troubleshooting.rst", "SamplingWarning: 2 divergent transitions"): _funnel_runs,
    ("troubleshooting.rst", "SamplingWarning: r_hat above 1.01 for 12"): _funnel_runs,
    ("troubleshooting.rst", "SamplingWarning: bulk ESS below 100 per "): _funnel_runs,
    ("troubleshooting.rst", "SamplingWarning: E-BFMI below 0.3 in cha"): _funnel_runs,
    ("troubleshooting.rst", "SamplingWarning: the step size collapsed"): _code_above,
    ("troubleshooting.rst", "SamplingWarning: 200 divergent transitio"): _code_above,
    ("troubleshooting.rst", "FallbackWarning: running on the NumPy pa"): _code_above,
    ("troubleshooting.rst", "RowByRowWarning: logp is evaluated one c"): _code_above,
    ("troubleshooting.rst", "RunFileError: output /dev/null is a char"): _devnull_output,
    ("troubleshooting.rst", "SamplingWarning: 183 of 400 iterations a"): _tree_depth_runs,
    ("troubleshooting.rst", "SamplingWarning: the fixed trajectory le"): _code_above,
}

#: Text blocks whose content is generated by a program that writes the page (or the block),
#: checked by test_generated_blocks_have_the_generators_format.
GENERATED = {
    ("benchmarks.rst", "# hamiltonia benchmark"): "python -m hamiltonia.bench --output",
    ("magnetic.rst", "| target | sampler | L | gradients / ite"): "hamiltonia bench family",
}

#: Literal blocks that show no output of the program, and why.
NOT_OUTPUT = {
    ("cluster.rst", "import hamiltonia as hm"): "code",
    ("cluster.rst", "hamiltonia sample blr-german --chains 64"): "commands, no output shown",
    ("cluster.rst", "head$    dask scheduler                 "): "commands, no output shown",
    ("cluster.rst", "from dask.distributed import Client"): "code",
    ("cluster.rst", "from hamiltonia.runner.executors import "): "code",
    ("design.rst", "hamiltonia/"): "a map of the package, drawn by hand",
    ("design.rst", "chains    NumPy path    compiled chain, "):
        "a measurement (timings of one machine) reported as a table, not a command's output",
    ("split.rst", 'hm.sample("bnn-protein", "split-hmc", sc'): "code and a command",
    ("variance_reduction.rst", "hamiltonia sample blr-heart --sampler a-"): "commands",
    # Messages of situations no page sets up (another process's lock, a full disk, an edited
    # checkpoint, a crafted file, a Ctrl-C, models that cannot be recorded): quoted,
    # abridged (N, M, "..."), with the situation described in the text around them.
    ("troubleshooting.rst", "TraceError: sort has no compiled derivat"): "quoted messages",
    ("troubleshooting.rst", "interrupted after N of M draws per chain"): "a message's pattern",
    ("troubleshooting.rst", "RunFileError: output run.nc is being wri"): "quoted message",
    ("troubleshooting.rst", "CheckpointWarning: a checkpoint of run.n"): "quoted message",
    ("troubleshooting.rst", "OutputWriteError: the finished run could"): "quoted message",
    ("troubleshooting.rst", "RunFileError: run.nc.partial/manifest.js"): "quoted messages",
    ("troubleshooting.rst", "RunFileError: run.nc is not a readable h"): "quoted message",
    ("troubleshooting.rst", "RunFileError: run.nc is refused unread: "): "quoted messages",
    ("troubleshooting.rst", "RunFileError: run.nc is not a regular fi"): "quoted messages",
    ("troubleshooting.rst", "RunFileError: run.nc cannot be read here"): "quoted messages",
    ("troubleshooting.rst", "ForeignPathError: run.nc.partial is a fo"): "quoted messages",
    ("troubleshooting.rst", "Banana / HMC: out/cells/Banana__HMC.json"): "quoted messages",
    ("troubleshooting.rst", "hamiltonia: error: --no-rerun: 3 cells i"): "quoted messages",
    ("troubleshooting.rst", "hamiltonia: out/cells/Banana__PHMC.json "): "quoted messages",
    ("troubleshooting.rst", "ForeignPathError: out/runs is a symbolic"): "quoted messages",
    ("troubleshooting.rst", "ForeignPathError: out/runs was written b"): "quoted messages",
    # The stuck chain's restart and the collapsed search's redraw, cut short:
    # tests/tuners/test_stuck_chains.py checks them.
    ("troubleshooting.rst", "SamplingWarning: warm-up restarted 1 of "): "quoted message",
    ("troubleshooting.rst", "SamplingWarning: the step-size search be"): "quoted message",
}  # fmt: skip


def test_every_shown_block_is_known():
    """A new output on a page is checked: a console block runs, a text block is regenerated
    (MESSAGES) or generated (GENERATED), or it is listed as no output (NOT_OUTPUT)."""
    known = set(MESSAGES) | set(GENERATED) | set(NOT_OUTPUT)
    unknown = [
        b.id for b in _all_blocks() if b.language in ("text", "literal") and b.key not in known
    ]
    assert not unknown, f"text blocks of unknown origin (add them to a table): {unknown}"
    present = {b.key for b in _all_blocks()}
    stale = sorted(k for k in known if k not in present)
    assert not stale, f"tables name blocks the pages no longer have: {stale}"


_MESSAGE_START = re.compile(r"^[A-Z]\w*(?:Warning|Error): ", re.M)


@pytest.mark.parametrize("key", sorted(MESSAGES), ids=lambda key: f"{key[0]}:{key[1][:24]}")
def test_shown_messages_are_the_programs(key, tmp_path, monkeypatch):
    """Each message of the block is one the program gives in the situation the page shows
    (the lines wrapped for reading; a line ``...`` stands for more messages)."""
    monkeypatch.chdir(tmp_path)
    block = next(b for b in _all_blocks() if b.key == key)
    produce = MESSAGES[key]
    produced = produce(block) if produce is _code_above else produce()
    text = "\n".join(line for line in block.text.split("\n") if line.strip() != "...")
    starts = [m.start() for m in _MESSAGE_START.finditer(text)] + [len(text)]
    shown = [text[a:b].strip() for a, b in itertools.pairwise(starts)]
    assert shown, f"{block.id}: no message found"
    checker = _Checker()

    def masked(text: str) -> str:
        for timing, mask in _TIMINGS:
            text = timing.sub(mask, text)
        return text + "\n"

    for message in shown:
        want = masked(message)
        matches = [got for got in produced if checker.check_output(want, masked(got), OPTIONFLAGS)]
        assert matches, (
            f"docs/{block.id} shows a message the program does not give:\n{message}\n\n"
            "it gives:\n" + "\n".join(produced)
        )


def _block(key) -> Block:
    return next(b for b in _all_blocks() if b.key == key)


def test_the_benchmark_page_is_the_benchmarks_rendering():
    """docs/benchmarks.rst is written by ``python -m hamiltonia.bench --output``: its
    introduction is the renderer's, and its tables have the renderer's columns."""
    from hamiltonia.bench import core

    text = (DOCS / "benchmarks.rst").read_text(encoding="utf-8")
    found = re.search(r"Generated on\s+(.+?) on (.+?) \((\d+) cores\)\.", text, re.S)
    assert found, "benchmarks.rst: no 'Generated on ... on ... (N cores).' line"
    date, cpu, cores = " ".join(found[1].split()), found[2], found[3]
    intro = core.RST_INTRO.format(date=date, cpu=cpu, cores=cores)
    assert " ".join(text.split()).startswith(" ".join(intro.split()))
    body = _block(("benchmarks.rst", "# hamiltonia benchmark")).text.split("\n")
    header = core._main_table([])[0]
    assert body[body.index("## Runs") + 2] == header


def test_the_family_table_is_the_benchmarks_rendering():
    """The table of magnetic.rst is ``hamiltonia bench family``'s: rendering its numbers again
    with :func:`hamiltonia.bench.family.family_table` gives the same text."""
    from hamiltonia.bench.family import family_table

    lines = _block(("magnetic.rst", "| target | sampler | L | gradients / ite")).text.split("\n")
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        keys = ("target", "sampler", "n_steps", "grad_per_iteration", "us_per_iteration",
                "ratio", "ess_bulk", "ess_per_s", "step_size", "accept")  # fmt: skip
        row = dict(zip(keys, cells, strict=True))
        row.update({k: float(row[k]) for k in keys[3:]})
        rows.append(row)
    assert family_table(rows) == lines


#: Docstrings known to hold such an escape, to be mended in their own files (the test fails
#: when one is mended and still listed, so the list only shrinks).
KNOWN_ESCAPES: set[str] = set()


def test_docstrings_hold_no_control_characters():
    """A backslash in a docstring that is not raw is an escape: ``:math:`\\tilde H``` written
    with one backslash holds a TAB and ``ilde H``, which the API pages show raw. Every
    docstring of the package is free of such characters (double the backslash or use r)."""
    import ast

    bad = []
    for path in sorted((REPO / "hamiltonia").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = [tree] + [n for n in ast.walk(tree) if isinstance(
            n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]  # fmt: skip
        for node in nodes:
            doc = ast.get_docstring(node, clean=False) or ""
            found = re.search(r"[\t\b\f\a\v\r]\w*", doc)
            where = f"{path.relative_to(REPO)}:{getattr(node, 'name', 'module')}"
            if found and where not in KNOWN_ESCAPES:
                bad.append(f"{where}: {found[0]!r}")
            elif where in KNOWN_ESCAPES and not found:
                bad.append(f"{where} is mended: drop it from KNOWN_ESCAPES")
    assert not bad, "docstrings with an escape where a backslash was meant:\n" + "\n".join(bad)
