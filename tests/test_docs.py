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
import doctest
import io
import os
import re
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
