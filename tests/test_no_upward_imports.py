"""No module of the package imports the package itself (issue 48): ``hamiltonia/__init__``
is the public namespace, built on top of every part, so a module that reads ``hm.sample`` or
``hm.targets`` through it depends on everything above it and runs back up to the namespace
it is itself a part of (the import graph of ``tests/test_layout.py`` leaves the top-level
``hamiltonia`` out, so it cannot see this).

The rule, checked on every module's code at any depth (a function's lazy import included;
docstrings and comments are not code, so their examples are free):

* forbidden: ``import hamiltonia``, ``import hamiltonia as hm``, ``import hamiltonia.x``
  (it binds the name ``hamiltonia``; write ``import hamiltonia.x as x``), and
  ``from hamiltonia import NAME`` (or a relative ``from . import NAME`` resolving to the
  package) where ``NAME`` is one of the namespace's own names (``sample``, ``Model``,
  ``__version__``...) rather than a subpackage or submodule;
* allowed: ``from hamiltonia import samplers`` and ``from hamiltonia.runner.run import
  sample``: the subpackage or module that defines the name.

The package's clients may use its public API as a user does: the command line
(``hamiltonia.cli``, and a ``__main__`` should one come), the test kit for users
(``hamiltonia.testing``), the benchmarks (``hamiltonia.bench``) and the reproduction of the
research (``hamiltonia.reproduce``). They are the top of ``tests/test_layout.py``'s
``LAYERS``, above everything, and the namespace imports none of them (checked below), so
their imports of it cannot run back up. ``hamiltonia.plots``, also in the top layer, is not
exempt: the namespace imports it.
"""

from __future__ import annotations

import ast

from tests.test_layout import PACKAGE, _modules

#: The package's clients (module docstring): a module or package directly under
#: ``hamiltonia`` by name.
CLIENTS = ("cli", "__main__", "testing", "bench", "reproduce")


def _is_submodule(name: str) -> bool:
    """Whether ``hamiltonia.NAME`` is a module or subpackage (not a name of the namespace)."""
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def upward_imports(source: str, module: str, is_package: bool) -> list[str]:
    """The imports of the top-level package in ``source`` (the code of ``module``), each as
    ``line: statement``."""
    found = []
    base = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                whole = alias.name == "hamiltonia"
                binds_package = alias.name.startswith("hamiltonia.") and alias.asname is None
                if whole or binds_package:
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
                    break
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                parts = base.split(".")
                parent = parts[: len(parts) - node.level + 1]
                origin = ".".join([*parent, origin] if origin else parent)
            if origin != "hamiltonia":
                continue
            if any(alias.name == "*" or not _is_submodule(alias.name) for alias in node.names):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _is_client(module: str) -> bool:
    return module.split(".")[1] in CLIENTS if module.count(".") else False


def test_no_module_imports_the_package_itself():
    offenders = []
    for module, path in _modules().items():
        if module == "hamiltonia" or _is_client(module):
            continue
        for line in upward_imports(path.read_text(), module, path.name == "__init__.py"):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    assert offenders == [], "\n".join(offenders)


def test_the_namespace_imports_none_of_the_clients():
    """The clients' exemption holds only while the namespace does not import them."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hamiltonia"):
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    reached = sorted(name for name in imported if name.count(".") and name.split(".")[1] in CLIENTS)
    assert reached == []


def test_the_check_sees_every_form():
    def seen(source, module="hamiltonia.runner.prebuild", is_package=False):
        return [line.partition(": ")[2] for line in upward_imports(source, module, is_package)]

    def inside(statement):
        return f'def f():\n    """>>> import hamiltonia as hm"""\n    {statement}\n'

    assert seen(inside("import hamiltonia as hm")) == ["import hamiltonia as hm"]
    assert seen(inside("import hamiltonia")) == ["import hamiltonia"]
    assert seen(inside("import hamiltonia.samplers")) == ["import hamiltonia.samplers"]
    assert seen(inside("from hamiltonia import sample")) == ["from hamiltonia import sample"]
    assert seen(inside("from hamiltonia import samplers, Model")) == [
        "from hamiltonia import samplers, Model"
    ]
    assert seen(inside("from hamiltonia import *")) == ["from hamiltonia import *"]
    assert seen(inside("from .. import sample")) == ["from .. import sample"]
    assert seen("from . import sample", "hamiltonia.cli") == ["from . import sample"]
    assert seen("from . import sample", "hamiltonia.runner", is_package=True) == []
    # Allowed: subpackages and modules, by name or by path; a docstring's example.
    for fine in (
        "from hamiltonia import samplers, targets",
        "from hamiltonia import backend as array_backend",
        "from hamiltonia.runner.run import sample",
        "import hamiltonia.samplers as registered",
        "from .. import samplers",
        "from . import run",
        '""">>> import hamiltonia as hm"""',
    ):
        assert seen(inside(fine)) == [], fine
