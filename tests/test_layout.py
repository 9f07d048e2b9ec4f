"""The package's layout is the class diagram (issue 27): no import cycles between modules, and
none between the packages (every import, a function's lazy one included, goes from a higher
layer to a lower one)."""

from __future__ import annotations

import ast
from pathlib import Path

import hamiltonia

PACKAGE = Path(hamiltonia.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["hamiltonia", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Every hamiltonia name ``module`` imports, at any depth of its code."""
    names = set()
    base = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                parent = base.split(".")[: len(base.split(".")) - node.level + 1]
                origin = ".".join([*parent, origin] if origin else parent)
            names.update(f"{origin}.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("hamiltonia.")}


def _graph(key) -> dict[str, set[str]]:
    """The import graph, its nodes mapped by ``key`` (a module to itself or its package);
    the top-level ``hamiltonia`` (the public namespace, importing everything) is left out."""
    modules = _modules()

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        for name in _imports(path, module, path.name == "__init__.py"):
            target = resolve(name)
            a, b = key(module), key(target) if target else None
            if b and a != b and "hamiltonia" not in (a, b):
                graph.setdefault(a, set()).add(b)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_module_imports_itself_back():
    assert _cycles(_graph(lambda m: m)) == []


def test_the_packages_are_layered():
    """Between packages too, imports go one way: the part packages do not import the runner,
    the results do not import the runner, the composer does not import the reducers..."""
    graph = _graph(_package)
    cycles = _cycles(graph)
    detail = {p: sorted(graph[p] & set(c)) for c in cycles for p in c}
    assert cycles == [], detail


def test_the_checks_see_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The layers of docs/design.rst's diagram, from the top; a package imports only packages
#: below it (the private helpers ``_validation``, ``_system``, ``_version``, ``_warnings``,
#: ``_text`` and ``_numba_cache`` are the bottom layer, and ``_numba_cache`` may read
#: ``datasets``' cache folder).
LAYERS = [
    "cli", "reproduce", "plots", "bench", "testing", "posteriors", "runner", "results",
    "samplers", "reducers", "tuners", "hamiltonians", "integrators", "refresh", "trajectories",
    "structures", "targets", "modelling", "diagnostics", "compiled", "state", "elementary",
    "backend", "registry", "_numba_cache", "datasets", "_validation", "_system", "_version",
    "_warnings", "_text",
]  # fmt: skip


def test_imports_go_down_the_documented_layers():
    graph = _graph(_package)
    rank = {f"hamiltonia.{name}": i for i, name in enumerate(LAYERS)}
    unlisted = sorted({p for p in graph} - set(rank))
    assert unlisted == [], f"packages missing from the layers: {unlisted}"
    upward = sorted(
        f"{a} -> {b}" for a, targets in graph.items() for b in targets if rank[b] < rank[a]
    )
    assert upward == []
