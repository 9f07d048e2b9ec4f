"""A run's results: the :class:`Result` (draws, statistics, summaries, ArviZ output, netCDF
files) and the run file that holds a run in progress (:mod:`hamiltonia.results.runfile`)."""

from hamiltonia.results.result import DEFAULT_QUANTILES, Result, format_summary, load

__all__ = ["DEFAULT_QUANTILES", "Result", "format_summary", "load"]
