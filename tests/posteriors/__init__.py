"""Tests of the reference-posterior suite (hamiltonia.posteriors)."""
