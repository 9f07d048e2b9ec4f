"""The result's module split by its jobs (issue 48) keeps its old import path: the
:class:`~hamiltonia.Result` stays in :mod:`hamiltonia.results.result` (pickles name it
there), with its conversion to and from a DataTree inherited from
:mod:`hamiltonia.results.datatree`."""

from __future__ import annotations

import pickle

import hamiltonia.results.datatree as datatree
import hamiltonia.results.result as result


def test_result_exports_what_it_did():
    assert sorted(result.__all__) == ["DEFAULT_QUANTILES", "Result", "format_summary", "load"]
    assert result.Result.__module__ == "hamiltonia.results.result"
    for name in ("LOG_LIKELIHOOD_MAX_VALUES", "PREDICTIVE_GROUPS"):
        assert getattr(result, name) is getattr(datatree, name)


def test_result_has_the_conversion_methods():
    assert issubclass(result.Result, datatree.DataTreeConversion)
    for name in ("variables", "log_likelihood", "to_datatree", "_pointwise_within_limit"):
        assert getattr(result.Result, name) is getattr(datatree.DataTreeConversion, name)
    conversion = datatree.DataTreeConversion
    assert result.Result.from_datatree.__func__ is conversion.from_datatree.__func__
    assert pickle.loads(b"chamiltonia.results.result\nResult\n.") is result.Result
