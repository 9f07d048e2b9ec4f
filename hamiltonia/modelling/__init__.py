"""Writing a model: named, constrained parameters, their bijections, and the tracer that
turns a user's log density into compiled source with its gradient."""

from hamiltonia.modelling import constraints, parameters

__all__ = ["constraints", "parameters"]
