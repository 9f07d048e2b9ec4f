"""The generated gradients' module split by its jobs (issue 48) keeps its old import path:
:mod:`hamiltonia.modelling.adjoint_source` still exports what it exported, and the rules and
code helpers a user may extend ``RULES`` with, as the objects of the modules that hold them."""

from __future__ import annotations

import hamiltonia.modelling.adjoint_array_rules as array_rules
import hamiltonia.modelling.adjoint_emitter as emitter
import hamiltonia.modelling.adjoint_rules as rules
import hamiltonia.modelling.adjoint_source as source


def test_adjoint_source_exports_what_it_did():
    """What it exported, and ``rolled_loops`` (issue 50) and ``tall_matrices`` (issue 53),
    added since."""
    assert sorted(source.__all__) == ["RULES", "SourceFunction", "gradient_source",
                                      "rolled_loops", "supported_functions",
                                      "tall_matrices"]  # fmt: skip
    assert source.SourceFunction is emitter.SourceFunction


def test_the_rules_and_helpers_are_importable_from_the_old_path():
    for home in (rules, array_rules):
        for name in home.__all__:
            assert getattr(source, name) is getattr(home, name), name
    for name in ("broadcast_code", "reshape_code", "sum_axis_code", "unbroadcast_code"):
        assert getattr(source, name) is getattr(emitter, name), name
