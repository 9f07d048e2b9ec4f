"""The version of hamiltonia, in one place: the package, its run files and its build read it."""

__version__ = "0.1.0"
