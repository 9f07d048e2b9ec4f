"""Sphinx configuration for the hamiltonia documentation."""

from __future__ import annotations

import importlib
import os
import re
import sys

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

# Build from a source checkout even when the package is not installed.
sys.path.insert(0, os.path.abspath(".."))

import hamiltonia

# -- Project -------------------------------------------------------------------------------

project = "hamiltonia"
author = "the hamiltonia developers"
copyright = "the hamiltonia developers"
version = hamiltonia.__version__
release = hamiltonia.__version__

# -- General -------------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.autosummary",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
default_role = "py:obj"
pygments_style = "sphinx"

# -- autodoc / autosummary -------------------------------------------------------------------

autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "show-inheritance": True,
    "member-order": "bysource",
}
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_inherit_docstrings = True
autosummary_generate = False  # tables only; every object is documented by hand in api.rst

# -- napoleon (NumPy style) ------------------------------------------------------------------

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_include_init_with_doc = False
napoleon_use_rtype = False
napoleon_use_ivar = True
# The abstract parts state their obligations under a "Contract" heading; render it like
# "Notes" (a rubric with the section's own title) instead of a stray RST section title.
napoleon_custom_sections = ["Contract"]

# -- HTML -----------------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"hamiltonia {release}"
html_static_path: list[str] = []
html_theme_options = {
    "description": "A composable framework for Hamiltonian Monte Carlo research",
    "fixed_sidebar": True,
}


# -- Cross-references to re-exported names ---------------------------------------------------
#
# Each object is documented once, in the module that defines it (or, for the few names whose
# defining module is an implementation detail, in the package that exports it). Docstrings
# refer to objects by the names users import (``hamiltonia.hamiltonians.ShadowHamiltonian``,
# ``hamiltonia.samplers.Sampler``, ``hamiltonia.Target`` ...). This handler resolves such a
# name to wherever the same Python object is documented, so every spelling links.

# id(object) -> (object, documented name); the object is kept so that its id stays unique.
_documented_by_id: dict[int, tuple[object, str]] | None = None


def _import_dotted(name: str):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _documented_objects(env) -> dict[int, tuple[object, str]]:
    global _documented_by_id
    if _documented_by_id is None:
        _documented_by_id = {}
        for name, entry in env.get_domain("py").objects.items():
            if entry.aliased or entry.objtype == "module":
                continue
            obj = _import_dotted(name)
            if obj is not None and not isinstance(obj, int | float | str | tuple):
                _documented_by_id.setdefault(id(obj), (obj, name))
    return _documented_by_id


def _resolve_reexport(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    candidates = [target]
    modname = node.get("py:module")
    if modname and not target.startswith("hamiltonia"):
        candidates.insert(0, f"{modname}.{target}")
    for candidate in candidates:
        if not candidate.startswith("hamiltonia"):
            continue
        obj = _import_dotted(candidate)
        if obj is None:
            continue
        found = _documented_objects(env).get(id(obj))
        if found is None or found[0] is not obj or found[1] == candidate:
            continue
        documented = found[1]
        domain = env.get_domain("py")
        newnode = node.deepcopy()
        newnode["reftarget"] = documented
        newnode["py:module"] = None
        newnode["py:class"] = None
        return domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], documented, newnode, contnode
        )
    return None


# NumPy-style types such as ``ndarray (chains, dim)`` or ``sequence of (name, kind)`` become
# cross-references word by word; these placeholder words are not objects, and would otherwise
# match several attributes (``dim``, ``Dataset.name``, ``DatasetInfo.kind`` ...).
_SHAPE_AXES = frozenset({"chains", "draws", "dim", "name", "kind"})


class _UnlinkShapeAxes(SphinxPostTransform):
    default_priority = 5  # before the references are resolved

    def run(self, **kwargs):
        for node in list(self.document.findall(addnodes.pending_xref)):
            if (
                node.get("refdomain") == "py"
                and node.get("refspecific")
                and node.get("reftarget") in _SHAPE_AXES
            ):
                node.replace_self(node.children or [nodes.Text(node["reftarget"])])


# napoleon renders "a, b : type" in an Attributes section (as :ivar: fields) as one garbled
# entry; Parameters sections handle it. Before napoleon runs, split such an attribute entry
# into one entry per name, each with the same type and description.
_SECTION_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_COMBINED_ENTRY = re.compile(r"^(\s*)(\w+(?:\s*,\s*\w+)+)\s+:\s+(.*)$")


def _split_combined_attributes(app, what, name, obj, options, lines):
    out: list[str] = []
    in_attributes = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _SECTION_UNDERLINE.match(lines[i + 1]) and line.strip():
            in_attributes = line.strip() == "Attributes"
            out.extend(lines[i : i + 2])
            i += 2
            continue
        match = _COMBINED_ENTRY.match(line) if in_attributes else None
        if match is None:
            out.append(line)
            i += 1
            continue
        indent, names, type_ = match.groups()
        body = []
        j = i + 1
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > len(indent)
        ):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            j -= 1
            body.pop()
        for single in (n.strip() for n in names.split(",")):
            out.append(f"{indent}{single} : {type_}")
            out.extend(body)
        i = j
    lines[:] = out


# A section title in a module docstring whose underline is shorter than the title is a
# docutils warning; lengthen such underlines (hamiltonia/targets/bnn.py has one, a character
# short). Only lines of one repeated punctuation character directly under a text line count.
_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")


def _lengthen_short_underlines(app, what, name, obj, options, lines):
    for i in range(1, len(lines)):
        title, under = lines[i - 1], lines[i]
        if (
            _UNDERLINE.match(under)
            and title.strip()
            and not _UNDERLINE.match(title)
            and len(under.rstrip()) < len(title.rstrip())
        ):
            lines[i] = under.rstrip() + under.strip()[0] * (
                len(title.rstrip()) - len(under.rstrip())
            )


def _reset_cache(app, env, docnames):
    global _documented_by_id
    _documented_by_id = None


def setup(app):
    app.connect("env-before-read-docs", _reset_cache)
    app.connect("missing-reference", _resolve_reexport)
    app.add_post_transform(_UnlinkShapeAxes)
    app.connect("autodoc-process-docstring", _split_combined_attributes, priority=400)
    app.connect("autodoc-process-docstring", _lengthen_short_underlines, priority=400)
