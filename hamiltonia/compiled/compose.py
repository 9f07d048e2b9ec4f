"""Composing the kernels of a sampler's parts into one compiled chain kernel.

Each part hands out its kernels as plain Python functions (see
:mod:`hamiltonia.compiled.roles`), which call other parts only through role names. This
module writes one small Python module per composition, in which

* every kernel function (and every plain-Python helper it calls) is copied from its source
  with the role names bound to the kernels of the parts that fill them, and
* each function is compiled with ``numba.njit(cache=True)``, and every one but the chain
  kernel with ``inline="always"``,

then imports it by name. Inlining at numba's level puts the parts into the chain loop as one
function: a call that is left to LLVM passes the kernel context (the parameter tuples ``PF``
and ``PI`` and the chain's arrays) by value and counts references to each of their arrays,
which made a leapfrog step on a 2-d target 2.5 times slower. Numba caches the result on disk
(measured; ``docs/compiled.rst``, "Caching": a closure over a part, or a part passed as an
argument, silently defeats the cache; an importable module does not). The module's file name
is a hash of its text, which holds the source of every part, and of the source files of the
compiled helpers it imports, so an edited part gives a new module and a stale kernel is never
served.

The generated modules live in ``<cache root>/kernels`` (``$HAMILTONIA_KERNEL_DIR``
overrides it; see :func:`hamiltonia.datasets.fetch.cache_root`).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import inspect
import os
import re
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hamiltonia.compiled.roles import (
    COMPOSED_ROLES,
    CONTEXT_FIELDS,
    ROLE_SIGNATURES,
    ROLE_SLOTS,
    SLOTS,
    Names,
    Role,
)
from hamiltonia.elementary import Elementary

__all__ = [
    "SAFE_FASTMATH",
    "CompositionError",
    "KernelSignatureError",
    "NameBindingError",
    "compose",
    "import_generated",
    "kernel_dir",
    "module_text",
]

#: NaN-safe fast-math: reassociation lets LLVM vectorise the sums; no flag that assumes
#: finite values ('nnan', 'ninf', 'nsz'), which would delete the divergence checks
#: (see "Fast-math and errors" in ``docs/compiled.rst``).
SAFE_FASTMATH = frozenset({"reassoc", "contract", "arcp"})
#: Options of every compiled function of a composition.
_FLAGS = ", ".join(repr(flag) for flag in sorted(SAFE_FASTMATH))
NJIT_OPTIONS = f"cache=True, nogil=True, error_model='numpy', fastmath={{{_FLAGS}}}"


class CompositionError(Exception):
    """A kernel cannot be composed (the message names the function and the reason)."""


class NameBindingError(CompositionError, LookupError):
    """A kernel reads a parameter, column or offset by a name that no part of the sampler
    declares (the message names the kernel, the part and the field): the part's bug, not a
    reason to fall back to the NumPy path."""


class KernelSignatureError(CompositionError):
    """A kernel takes the parameters of the old positional convention (``..., aux, PF,
    PI, ...``) in place of the kernel context ``ctx`` (the message names the part, the role
    and the signature to write): the part's bug, not a reason to fall back to the NumPy
    path."""


def kernel_dir() -> Path:
    """Folder of the generated kernel modules."""
    override = os.environ.get("HAMILTONIA_KERNEL_DIR", "").strip()
    if override:
        return Path(override).expanduser()
    from hamiltonia.datasets.fetch import cache_root

    return cache_root() / "kernels"


def _ident(text: str) -> str:
    return re.sub(r"\W", "_", text)


def _compiled_source(obj):
    """The Python function behind a numba dispatcher, cfunc or intrinsic (recognised
    without importing numba), else None."""
    if not (type(obj).__module__ or "").startswith("numba."):
        return None
    return getattr(obj, "py_func", None) or getattr(obj, "_defn", None)


def _is_number(obj) -> bool:
    return isinstance(obj, bool | int | float) or (
        type(obj).__module__ == "numpy" and hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0
    )


def _number(obj):
    return obj.item() if hasattr(obj, "item") else obj


class _Writer:
    """Collects the generated module: imports, constants and function definitions."""

    def __init__(self, roles: dict[str, Callable], names: dict | None = None,
                 parts: dict | None = None, device_calls=None,
                 streams: bool = False):  # fmt: skip
        self.roles = roles
        # The chain's generator is a state array (pcg64_stream): ctx.rng.METHOD(...) is
        # rewritten by GeneratorCalls.
        self.streams = streams or device_calls is not None
        # For the device (numba CUDA): every function a device function, compiled helpers
        # written from their Python source, and the calls the device has not rewritten by
        # device_calls (hamiltonia.compiled.device_compose.DeviceCalls).
        self.device_calls = device_calls
        self.device = device_calls is not None
        self.names = names or {}
        self.parts = parts or {}
        self.emitted: dict[tuple, str] = {}
        self.imports: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.functions: list[str] = []
        self.files: set[str] = set()
        self._role_done: set[str] = set()

    def role(self, name: str) -> str:
        if name in COMPOSED_ROLES:
            return self.composed_role(name)
        emitted = f"role_{name}"
        if name not in self._role_done:
            if name not in self.roles:
                raise CompositionError(f"no part of this sampler fills the role {name!r}")
            self._role_done.add(name)
            filler = self.roles[name]
            if _is_number(filler):
                # A flag: a module constant, so numba prunes the branches it guards.
                self.constants[emitted] = f"{emitted} = {_number(filler)!r}"
            else:
                self.function(filler, emitted, ROLE_SLOTS.get(name))
        return emitted

    def composed_role(self, name: str) -> str:
        """The name of the kernel the composer binds to a role no part fills
        (:data:`~hamiltonia.compiled.roles.COMPOSED_ROLES`): ``hamiltonian_energy`` is the
        ``target_energy`` role where the flag ``energy_reads_target`` is on (off where no part
        fills it), and otherwise a kernel that calls ``energy`` without the target."""
        if name in self.roles:
            raise CompositionError(
                f"the role {name!r} is bound by the composer, not filled by a part; fill "
                "'energy' (and, for an energy that reads the target, 'target_energy' and "
                "'energy_reads_target') instead"
            )
        reads = self.roles.get("energy_reads_target", False)
        if not _is_number(reads):
            raise CompositionError(
                f"the role 'energy_reads_target' is a flag (a number), got {reads!r}"
            )
        if _number(reads):
            return self.role("target_energy")
        from hamiltonia.compiled.chain import energy_without_target_kernel

        emitted = f"role_{name}"
        if name not in self._role_done:
            self._role_done.add(name)
            self.function(energy_without_target_kernel, emitted, COMPOSED_ROLES[name])
        return emitted

    def bind(self, obj, name: str, owner, slot: int | None = None) -> str | None:
        """The name under which global ``name`` of ``owner`` (a kernel of the part in
        ``slot``, or a helper it calls) is visible in the module."""
        if isinstance(obj, Role):
            return self.role(obj.name)
        if isinstance(obj, types.ModuleType):
            alias = "m_" + _ident(obj.__name__)
            self.imports[alias] = f"import {obj.__name__} as {alias}"
            return alias
        if isinstance(obj, Elementary):
            # On any backend in Python; NumPy's, which numba compiles, in a kernel.
            return f"{self.bind(np, 'numpy', owner, slot)}.{obj.name}"
        source = _compiled_source(obj)
        if source is not None and self.device:
            # A CPU dispatcher cannot be called from device code: its Python source is
            # written as a device function instead (an intrinsic has none).
            if not isinstance(source, types.FunctionType) or getattr(obj, "_defn", None):
                raise CompositionError(
                    f"{owner.__qualname__} calls {name}, a numba intrinsic, which has no "
                    "form for the device"
                )
            return self.bind(source, name, owner, slot)
        if source is not None:
            module, attr = source.__module__, source.__name__
            if getattr(sys.modules.get(module), attr, None) is not obj:
                raise CompositionError(
                    f"{owner.__qualname__} calls {name}, a compiled function that is not "
                    f"importable as {module}.{attr}"
                )
            alias = "d_" + _ident(f"{module}_{attr}")
            self.imports[alias] = f"from {module} import {attr} as {alias}"
            self.files.add(inspect.getsourcefile(sys.modules[module]) or module)
            return alias
        if isinstance(obj, types.FunctionType):
            # A helper is written once per part that calls it: its own.NAME are the
            # caller's parameters.
            key = (id(obj), slot)
            if key not in self.emitted:
                suffix = "" if slot is None else f"_{SLOTS[slot]}"
                emitted = "f_" + _ident(f"{obj.__module__}_{obj.__qualname__}") + suffix
                self.emitted[key] = emitted
                self.function(obj, emitted, slot)
            return self.emitted[key]
        if isinstance(obj, np.ndarray | type) and self.device:
            # A constant table (numba treats a global array as a constant) or a named
            # tuple's class, imported from where the kernel found it.
            module = owner.__module__
            if getattr(sys.modules.get(module), name, None) is not obj:
                raise CompositionError(
                    f"{owner.__qualname__} uses {name}, which is not importable from {module}"
                )
            alias = "g_" + _ident(f"{module}_{name}")
            self.imports[alias] = f"from {module} import {name} as {alias}"
            self.files.add(inspect.getsourcefile(sys.modules[module]) or module)
            return alias
        if _is_number(obj):
            alias = "c_" + _ident(f"{owner.__module__}_{name}")
            value = repr(_number(obj))
            if isinstance(obj, np.generic):
                # Its own type (a uint64 stays unsigned), not the int or float of its value.
                value = f"{self.bind(np, 'numpy', owner, slot)}.{obj.dtype.name}({value})"
            self.constants[alias] = f"{alias} = {value}"
            return alias
        raise CompositionError(
            f"kernel {owner.__module__}.{owner.__qualname__} uses the global {name!r} of type "
            f"{type(obj).__name__}; kernels may use modules, numbers, plain functions, compiled "
            "functions and roles"
        )

    def resolve(self, fn, slot, kind: str, path: list[str]) -> str:
        """The source text in place of ``kind.path`` (``own.rho``, ``part.refresh.rho``,
        ``column.lp``, ``offset.field_reversed``) in kernel ``fn`` of the part in ``slot``."""
        who = f"kernel {fn.__module__}.{fn.__qualname__}"
        spelled = ".".join([kind, *path])
        if kind == "part":
            if len(path) != 2 or path[0] not in SLOTS:
                raise NameBindingError(
                    f"{who} reads {spelled}; write part.SLOT.NAME with SLOT one of {SLOTS}"
                )
            slot, path = SLOTS.index(path[0]), path[1:]
            kind = "own"
        if len(path) != 1:
            raise NameBindingError(f"{who} reads {spelled}; write {kind}.NAME")
        name = path[0]
        if kind == "own":
            if slot is None:
                raise NameBindingError(
                    f"{who} reads {spelled}, but no part's kernel calls it (the chain "
                    "kernel's helpers have no own parameters): read part.SLOT.NAME"
                )
            if slot not in self.parts:
                raise NameBindingError(
                    f"{who} reads {spelled}, but this sampler has no {SLOTS[slot]} part"
                )
            key = ("param", slot, name)
            if key not in self.names:
                declared = sorted(k[2] for k in self.names if k[0] == "param" and k[1] == slot)
                raise NameBindingError(
                    f"{who} reads {spelled}, which the {self.parts[slot]} does not declare "
                    f"(its kernel parameters: {declared or 'none'})"
                )
            return self.names[key]
        key = (kind, name)
        if key not in self.names:
            what = "statistic" if kind == "column" else "auxiliary variable or workspace"
            known = sorted(k[1] for k in self.names if k[0] == kind)
            raise NameBindingError(
                f"{who} reads {spelled}, but no part of this sampler records the {what} "
                f"{name!r} (known: {known})"
            )
        return self.names[key]

    def check_signature(self, fn, node, emitted: str, slot: int | None) -> None:
        """Refuse a kernel written for the old positional convention, naming the part, the
        role and the signature to write."""
        names = [arg.arg for arg in (*node.args.posonlyargs, *node.args.args)]
        # The entry, and the chain template it runs, build the context from their arguments.
        template = fn.__module__ == "hamiltonia.compiled.chain"
        if emitted == "chain" or template or "PF" not in names or "PI" not in names:
            return
        role = emitted[len("role_") :] if emitted.startswith("role_") else None
        role = "adapt" if role and role.startswith("adapt_") else role
        who = self.parts.get(slot, f"{SLOTS[slot]} part") if slot is not None else "chain"
        kept = [n for n in names if n not in CONTEXT_FIELDS]
        if role in ROLE_SIGNATURES:
            what = f"fills the role {role!r} with"
            wanted = f"{fn.__name__}{ROLE_SIGNATURES[role]}"
        else:
            what = "is a helper of its kernels with"
            wanted = f"{fn.__name__}({', '.join(['ctx', *kept])})"
        raise KernelSignatureError(
            f"kernel {fn.__module__}.{fn.__qualname__} of the {who} {what} the old "
            f"signature ({', '.join(names)}): kernels take the kernel context first and no "
            f"longer {', '.join(n for n in CONTEXT_FIELDS if n in names)}; write "
            f"{wanted} and read ctx.aux, ctx.rng, ctx.stats, ctx.scratch, ctx.logp, "
            "ctx.fdata, ctx.idata, passing ctx on to the roles it calls "
            "(hamiltonia.compiled.roles)"
        )

    def function(self, fn: Callable, emitted: str, slot: int | None = None) -> None:
        if not isinstance(fn, types.FunctionType):
            raise CompositionError(f"a kernel must be a plain Python function, got {fn!r}")
        if fn.__closure__:
            raise CompositionError(
                f"kernel {fn.__qualname__} is a closure; kernels must be module-level "
                "functions (pass data through the part's parameters instead)"
            )
        try:
            source = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError) as err:
            raise CompositionError(
                f"the source of kernel {fn.__qualname__} is not available ({err})"
            ) from None
        tree = ast.parse(source)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise CompositionError(f"kernel {fn.__qualname__} is not a def statement")
        self.check_signature(fn, node, emitted, slot)
        node.decorator_list = []
        node.name = emitted
        node.returns = None
        local = set()
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            arg.annotation = None
            local.add(arg.arg)
        for extra in (node.args.vararg, node.args.kwarg):
            if extra is not None:
                extra.annotation = None
                local.add(extra.arg)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
                local.add(sub.id)
        writer = self

        class BindNames(ast.NodeTransformer):
            """``own.rho`` and its kin to the places the plan laid them out in."""

            def visit_Attribute(self, sub):
                path, base = [], sub
                while isinstance(base, ast.Attribute):
                    path.insert(0, base.attr)
                    base = base.value
                marker = None
                if isinstance(base, ast.Name) and base.id not in local:
                    marker = fn.__globals__.get(base.id)
                if not isinstance(marker, Names):
                    return self.generic_visit(sub)
                if not isinstance(sub.ctx, ast.Load):
                    raise NameBindingError(
                        f"kernel {fn.__qualname__} assigns to {ast.unparse(sub)}: parameters "
                        "are read-only in a kernel"
                    )
                # own.A.shape: the marker takes its name (part: the slot and the name), and
                # what follows is an attribute of the value.
                taken = 2 if marker._kind == "part" else 1
                text = writer.resolve(fn, slot, marker._kind, path[:taken])
                # The plan's places are in the parameter tuples, which the context carries.
                text = re.sub(r"\b(PF|PI)\[", r"ctx.\1[", text)
                if path[taken:]:
                    text = f"({text})." + ".".join(path[taken:])
                if "ctx." in text and "ctx" not in local:
                    raise NameBindingError(
                        f"kernel {fn.__qualname__} reads {ast.unparse(sub)} but has no "
                        "argument ctx: a kernel or helper that reads a parameter takes the "
                        "kernel context ctx (its first argument) and passes it on"
                    )
                return ast.copy_location(ast.parse(text, mode="eval").body, sub)

        if self.streams:
            calls = GeneratorCalls(self, fn)
            calls.visit(node)
            local |= calls.emitted  # already the module's names
        if self.device:
            calls = self.device_calls(self, fn)
            calls.visit(node)
            local |= calls.emitted
        BindNames().visit(node)
        mapping: dict[str, str] = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                name = sub.id
                if name in local or name in mapping:
                    continue
                if name in fn.__globals__:
                    mapping[name] = self.bind(fn.__globals__[name], name, fn, slot)
                elif hasattr(builtins, name):
                    continue
                else:
                    raise CompositionError(f"kernel {fn.__qualname__} uses undefined {name!r}")

        class Rename(ast.NodeTransformer):
            def visit_Name(self, sub):
                if isinstance(sub.ctx, ast.Load) and sub.id in mapping:
                    return ast.copy_location(ast.Name(mapping[sub.id], sub.ctx), sub)
                return sub

        Rename().visit(node)
        origin = f"# from {fn.__module__}.{fn.__qualname__}"
        if self.device:
            decorator = "cuda.jit" if emitted == "chain" else "cuda.jit(device=True)"
        else:
            options = NJIT_OPTIONS if emitted == "chain" else f"{NJIT_OPTIONS}, inline='always'"
            decorator = f"njit({options})"
        self.functions.append(f"{origin}\n@{decorator}\n{ast.unparse(node)}\n")


class GeneratorCalls(ast.NodeTransformer):
    """``ctx.rng.METHOD(...)`` as ``METHOD(ctx.rng, ...)`` of
    :data:`~hamiltonia.compiled.pcg64_stream.GENERATOR_METHODS`, where the chain's generator
    is its state array: the chain kernels, which then run a block of chains in one call (a
    ``numpy.random.Generator`` is one argument a chain), and the device's. The functions are
    imported, not copied, so that numba takes their CPU form where they have one."""

    def __init__(self, writer: _Writer, fn):
        self.writer = writer
        self.fn = fn
        self.emitted: set[str] = set()

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        base = func.value if isinstance(func, ast.Attribute) else None
        if not (
            isinstance(base, ast.Attribute) and base.attr == "rng"
            and isinstance(base.value, ast.Name) and base.value.id == "ctx"
        ):  # fmt: skip
            return node
        from hamiltonia.compiled import pcg64_stream

        method = pcg64_stream.GENERATOR_METHODS.get(func.attr)
        if method is None:
            raise CompositionError(
                f"kernel {self.fn.__module__}.{self.fn.__qualname__} calls ctx.rng."
                f"{func.attr}(), which the chain's generator does not have in compiled code "
                f"(it has {sorted(pcg64_stream.GENERATOR_METHODS)})"
            )
        alias = "r_" + method.__name__
        self.writer.imports[alias] = (
            f"from {pcg64_stream.__name__} import {method.__name__} as {alias}"
        )
        self.writer.files.add(pcg64_stream.__file__)
        node.func = ast.Name(alias, ast.Load())
        node.args.insert(0, base)
        self.emitted.add(alias)
        return node


def module_text(roles: dict[str, Callable], entry: Callable, names: dict | None = None,
                parts: dict | None = None, device_calls=None,
                streams: bool = False) -> tuple[str, set[str]]:  # fmt: skip
    """The generated module's source, with ``entry`` compiled as ``chain``, every role it
    reaches bound to ``roles`` and every name a kernel reads (``own.rho``...) to the place
    ``names`` gives (the plan's :class:`~hamiltonia.compiled.plan.Layout`; ``parts`` names
    the part in each slot, for errors); and the source files of the compiled helpers it
    imports. With ``device_calls`` (a transformer of a kernel's calls, built as
    ``device_calls(writer, kernel)``: :class:`~hamiltonia.compiled.device_compose.DeviceCalls`)
    the module is for numba CUDA: ``entry`` a kernel and every other function a device
    function (:mod:`hamiltonia.compiled.device_chain`). With ``streams`` (always on the
    device) the chain's generator is a state array (:class:`GeneratorCalls`)."""
    writer = _Writer(roles, names, parts, device_calls, streams)
    writer.function(entry, "chain")
    header = [
        '"""Generated by hamiltonia.compiled.compose: one composition of parts. Do not edit."""',
        "from numba import cuda" if writer.device else "from numba import njit",
        *sorted(writer.imports.values()),
        *sorted(writer.constants.values()),
    ]
    # Callees before callers is not needed (names resolve at compile time), but keep the
    # entry last for readers.
    body = [*writer.functions[1:], writer.functions[0]]
    return "\n".join(header) + "\n\n\n" + "\n\n".join(body), writer.files


_LOADED: dict[str, types.ModuleType] = {}


def compose(roles: dict[str, Callable], entry: Callable, names: dict | None = None,
            parts: dict | None = None, streams: bool = False) -> Callable:  # fmt: skip
    """The compiled ``entry`` function of the composition ``roles`` (role name to kernel),
    with the names its kernels read bound as ``names`` says (see :func:`module_text`).

    The module is written once per distinct text (atomically, so concurrent processes
    agree) and imported by name, so numba's on-disk cache serves it to later processes.
    """
    text, files = module_text(roles, entry, names, parts, streams=streams)
    return import_generated(text, files, "hk_").chain


def generated_name(text: str, files=(), prefix: str = "hk_") -> str:
    """The module name :func:`import_generated` gives source ``text``: a hash of the text,
    numba's version and the source ``files`` it imports from."""
    import numba

    digest = hashlib.sha256(text.encode())
    digest.update(numba.__version__.encode())
    for file in sorted(files):
        try:
            digest.update(Path(file).read_bytes())
        except OSError:
            digest.update(file.encode())
    return prefix + digest.hexdigest()[:20]


def is_cached(text: str, files=(), prefix: str = "hk_") -> bool:
    """Whether numba's disk cache holds a compilation of the module of source ``text``
    (:func:`import_generated`), so that loading it takes no compile: an index file of it
    next to the module, or under ``NUMBA_CACHE_DIR``."""
    name = generated_name(text, files, prefix)
    if name in _LOADED:
        return True
    folders = [kernel_dir() / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        folders.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    pattern = f"{name}.*.nbi"
    return any(any(folder.rglob(pattern)) for folder in folders if folder.is_dir())


def import_generated(text: str, files=(), prefix: str = "hk_") -> types.ModuleType:
    """The module of source ``text``, written into :func:`kernel_dir` under a name hashing
    the text, numba's version and the source ``files`` it imports from, and imported."""
    from hamiltonia.compiled import inlining

    # Before numba first compiles the module's functions (on their first call).
    inlining.install()
    name = generated_name(text, files, prefix)
    if name in _LOADED:
        return _LOADED[name]
    folder = kernel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != text:
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(text)
        os.replace(tmp, path)
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    importlib.invalidate_caches()
    module = importlib.import_module(name)
    _LOADED[name] = module
    return module
