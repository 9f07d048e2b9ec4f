"""Docstrings as plain text: the first sentence of a part's docstring, its reStructuredText
markup spelt out, as ``hamiltonia list`` and the registries' ``describe()`` show it (a
description cut at a line's end stops mid-sentence, and ``:math:`` shown raw reads as noise).
"""

from __future__ import annotations

import re

__all__ = ["first_sentence", "plain"]


# Plain-text spellings of the LaTeX in :math:`...` roles (commands without an argument).
_LATEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ",
    "nu": "ν", "pi": "π", "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ",
    "omega": "ω", "Omega": "Ω", "ell": "ℓ", "nabla": "∇", "partial": "∂", "infty": "∞",
    "sim": "~", "approx": "≈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠",
    "times": "×", "cdot": "·", "pm": "±", "leftarrow": "←", "rightarrow": "→", "to": "→",
    "in": "∈", "mid": "|", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋",
    "top": "ᵀ", "sum": "Σ", "prod": "Π", "quad": " ", "qquad": " ",
}  # fmt: skip
#: Commands whose argument is printed as it is (``\mathcal N`` -> ``N``).
_LATEX_FONTS = ("mathcal", "mathbb", "mathrm", "mathbf", "operatorname", "text", "textrm")
_LATEX_ACCENTS = {"hat": "\u0302", "tilde": "\u0303", "bar": "\u0304"}
_LATEX_GROUP = r"\{([^{}]*)\}"


def _latex_text(math: str) -> str:
    r"""The LaTeX of a ``:math:`` role as plain text: ``\rho`` -> ``ρ``, ``\hat H`` -> ``Ĥ``,
    ``\sqrt{1 - \rho^2}`` -> ``√(1 - ρ^2)``, ``L_{max}`` -> ``L_max``."""

    def grouped(text: str) -> str:
        # One token (ρ^2, -1, L) needs no parentheses as an argument, a sum does.
        return text if re.fullmatch(r"-?[\w.^ᵀ\u0302\u0303']+", text) else f"({text})"

    def symbol(match) -> str:
        return _LATEX_SYMBOLS.get(match[1], match[0])

    text = re.sub(r"\\[,;:!]", lambda m: "" if m[0] == "\\!" else " ", math)
    text = re.sub(r"\\([{}])", r"\1", text)
    text = re.sub(r"\^\\top\b", "ᵀ", text)
    # A prefix operator: written against its operand, apart from what precedes it.
    text = re.sub(r"\\(nabla|partial)\s*", lambda m: " " + _LATEX_SYMBOLS[m[1]], text)
    text = re.sub(r"\\([A-Za-z]+)", symbol, text)
    font = "|".join(_LATEX_FONTS)
    text = re.sub(rf"\\(?:{font})\s*(?:{_LATEX_GROUP}|(\w))", lambda m: m[1] or m[2], text)
    for accent, mark in _LATEX_ACCENTS.items():
        # \hat H -> H followed by the combining accent (Ĥ).
        text = re.sub(rf"\\{accent}\s*(?:\{{(\w)\}}|(\w))", rf"\1\2{mark}", text)
    text = re.sub(rf"\\t?frac\s*{_LATEX_GROUP}\s*{_LATEX_GROUP}",
                  lambda m: f"{grouped(m[1])}/{grouped(m[2])}", text)  # fmt: skip
    text = re.sub(rf"\\sqrt\s*{_LATEX_GROUP}", lambda m: "√" + grouped(m[1]), text)
    text = re.sub(rf"([_^]){_LATEX_GROUP}", lambda m: m[1] + grouped(m[2]), text)
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)  # any other command: its name
    text = re.sub(r"\s+", " ", text.replace("{", "").replace("}", ""))
    return re.sub(r"([(/\[]) ", r"\1", text).strip()


def plain(text: str) -> str:
    """reStructuredText inline markup as plain text: roles (``:math:`` spelt out, a
    cross-reference as its title or last name), ````literals````, emphasis, links and
    citations."""
    text = re.sub(r":math:`([^`]*)`", lambda m: _latex_text(m[1]), text)
    # :class:`~a.b.C` -> C, :func:`a.b.f` -> a.b.f, :meth:`title <a.b.C.m>` -> title.
    text = re.sub(
        r":[\w:.-]+:`([^`<]*?)\s*(?:<[^`>]*>)?`",
        lambda m: m[1].lstrip("!").split(".")[-1] if m[1].startswith(("~", "!~")) else m[1],
        text,
    )
    text = re.sub(r"``(.+?)``", r"\1", text)
    text = re.sub(r"`([^`<]*?)\s*<[^`>]*>`__?", r"\1", text)  # `title <url>`_
    text = re.sub(r"`([^`]+)`_*", r"\1", text)
    text = re.sub(r"\[([\w.-]+)\]_", r"[\1]", text)
    text = re.sub(r"\*\*(\S(?:.*?\S)?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


#: Words a period ends without ending the sentence.
_ABBREVIATIONS = ("al", "e.g", "i.e", "cf", "eq", "eqs", "fig", "vs", "approx", "resp")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, as plain text: a description
    cut at a line's end would stop mid-sentence."""
    paragraph = plain(" ".join((doc or "").strip().split("\n\n")[0].split()))
    depth = 0
    for i, char in enumerate(paragraph):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if char not in ".!?" or depth > 0 or not re.match(r"\s+[A-Z]", paragraph[i + 1 :]):
            continue
        word = re.search(r"([\w.]+)$", paragraph[:i])
        if word and word[1].lower() in _ABBREVIATIONS:
            continue
        return paragraph[: i + 1]
    return paragraph
