"""numba's on-disk cache serves the composed chain kernel to a second process, and an
edited part (or a helper it calls, in another file) never gets a stale kernel."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import hamiltonia

PART = """
import numpy as np
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import draw_momentum
from hamiltonia.refresh.momentum import MomentumRefresh
from scaled_helper import scale


def scaled_refresh_kernel(ctx, q, p, grad, lp, eps):
    draw_momentum(ctx, q, p)
    for i in range(p.shape[0]):
        p[i] = scale(p[i])


class ScaledRefresh(MomentumRefresh):
    def refresh(self, hamiltonian, state, rngs, step_size=None):
        return state.with_momentum(scale(hamiltonian.sample_momentum(rngs, state.aux)))

    def compiled(self, dim):
        return PartKernels({"refresh": scaled_refresh_kernel}, params={"flip_on_reject": 0})
"""

HELPER = "def scale(x):\n    return {factor} * x\n"

SCRIPT = """
import hamiltonia as hm
from hamiltonia.compiled import plan_for
from scaled_part import ScaledRefresh

target = hm.targets.get("banana")
sampler = hm.HamiltonianSampler(
    hm.EuclideanHamiltonian(target), hm.StaticLength(5), refresh=ScaledRefresh(), step_size=0.1
)
plan = plan_for(sampler)
run = hm.sample(target, sampler, chains=1, warmup=0, draws=20, seed=0, progress=False,
                compiled=True)
stats = plan.chain_kernel.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()), repr(run.draws[0, -1, 0]))
"""


def _run(tmp_path, env):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    hits, misses, value = out.stdout.split()
    return int(hits), int(misses), value


def _environment(tmp_path):
    return {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "HAMILTONIA_KERNEL_DIR": str(tmp_path / "kernels"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
    }


def test_second_process_hits_the_cache_and_edits_are_never_stale(tmp_path):
    (tmp_path / "scaled_part.py").write_text(textwrap.dedent(PART))
    (tmp_path / "scaled_helper.py").write_text(HELPER.format(factor=1.0))
    env = _environment(tmp_path)
    first = _run(tmp_path, env)
    second = _run(tmp_path, env)
    assert first[:2] == (0, 1)  # composed, compiled and written
    assert second[:2] == (1, 0)  # loaded from the cache, not compiled
    assert first[2] == second[2]
    # Edit the helper the part's kernel calls (another file): the composition is new, so
    # it is compiled again and the result follows the edit.
    (tmp_path / "scaled_helper.py").write_text(HELPER.format(factor=0.5))
    edited = _run(tmp_path, env)
    assert edited[:2] == (0, 1)
    assert edited[2] != first[2]
    # The same edited source from a clean cache gives the same draws: nothing stale.
    fresh_env = {**env, "NUMBA_CACHE_DIR": str(tmp_path / "numba2"),
                 "HAMILTONIA_KERNEL_DIR": str(tmp_path / "kernels2")}  # fmt: skip
    assert _run(tmp_path, fresh_env)[2] == edited[2]


MODEL_SCRIPT = """
import sys
import autograd.numpy as np
import hamiltonia as hm

y = np.linspace(0.0, 1.0, 5) * float(sys.argv[1])
power = int(sys.argv[2])


def logp(p):
    return -0.5 * np.sum((y - p["mu"]) ** power) - p["s"] ** 2 + np.log(p["s"])


model = hm.Model(logp, {"mu": hm.real(), "s": hm.positive()}, backend="numba")
kernel = model.numba_kernel()
print(kernel.function.cache_hits, repr(float(kernel.evaluate(np.array([0.3, -0.2]))[0])))
"""


def test_a_compiled_model_is_cached_by_its_structure_not_its_data(tmp_path):
    """The code generated for a user's model is cached on disk: a second process compiles
    nothing, new data of the same shapes reuse it (and are used), and a model that
    computes something else gets code of its own."""
    env = {**os.environ, "HAMILTONIA_KERNEL_DIR": str(tmp_path / "kernels")}

    def run(scale, power):
        out = subprocess.run([sys.executable, "-c", MODEL_SCRIPT, str(scale), str(power)],
                             env=env, capture_output=True, text=True, check=True)  # fmt: skip
        hits, value = out.stdout.split()
        return int(hits), float(value)

    hits, first = run(1.0, 2)
    assert hits == 0
    hits, other_data = run(3.0, 2)
    assert hits == 1 and other_data != first
    hits, _ = run(1.0, 4)
    assert hits == 0
    assert len(list((tmp_path / "kernels").glob("hg_*.py"))) == 2


# --- numba's caches of the package's own functions (issue 26) -------------------------------

PACKAGE = Path(hamiltonia.__file__).resolve().parent

#: Calls every function of the package that numba compiles with ``cache=True``: the njit
#: helpers and ufuncs of ``compiled.special``, a built-in target's ``cfunc`` and a
#: benchmark loop; prints how many of them numba loaded from its cache.
OWN_SCRIPT = """
import sys

import numpy as np

import hamiltonia as hm

assert hm.__file__.startswith(sys.argv[1]), hm.__file__  # the copy, not the checkout
from hamiltonia.bench import micro
from hamiltonia.modelling import special

z = np.linspace(-3.0, 3.0, 8)
special.softplus_sigmoid(z, np.empty(8), np.empty(8), np.empty(8), np.empty(8, np.int64))
special.lgamma(z + 4.0)
special.digamma(z + 4.0)
kernel = hm.targets.get("banana").numba_kernel()
micro._gradient_loop(kernel.function, np.zeros(2), np.empty(2), kernel.fdata, kernel.idata, 1)
hits = [
    sum(special.softplus_sigmoid.stats.cache_hits.values()),
    kernel.function.cache_hits,
    sum(micro._gradient_loop.stats.cache_hits.values()),
]
print(*hits)
"""


def _numba_files(folder: Path) -> list[Path]:
    return sorted(p for pattern in ("*.nbi", "*.nbc") for p in folder.rglob(pattern))


def _installed_copy(tmp_path) -> Path:
    """A copy of the package, without any cache, standing in for an installed one (as in
    ``site-packages``): the checkout's own ``__pycache__`` may already hold numba files."""
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "hamiltonia", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _run_own(site: Path, cache: Path, cwd: Path) -> list[int]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"NUMBA_CACHE_DIR", "HAMILTONIA_KERNEL_DIR", "XDG_CACHE_HOME"}
    }
    env["HAMILTONIA_CACHE"] = str(cache)
    env["PYTHONPATH"] = str(site)
    out = subprocess.run(
        [sys.executable, "-c", OWN_SCRIPT, str(site / "hamiltonia")],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert out.returncode == 0, out.stderr
    return [int(n) for n in out.stdout.split()]


def test_no_numba_cache_file_is_written_inside_the_package(tmp_path):
    """numba's cache files of the package's functions go to ``<cache>/numba``, never to the
    package's ``__pycache__``: files left there outlive a reinstall and make Python import
    ``hamiltonia`` as an empty namespace package (issue 26)."""
    site = _installed_copy(tmp_path)
    cache = tmp_path / "cache"
    first = _run_own(site, cache, tmp_path)
    assert _numba_files(site) == []
    stored = _numba_files(cache / "numba")
    # The layout mirrors the package: <cache>/numba/hamiltonia-<hash>/modelling/...
    assert any(p.parent.name == "modelling" and "special" in p.name for p in stored), stored
    assert any(p.parent.name == "targets" and "banana" in p.name for p in stored), stored
    assert any(p.parent.name == "bench" and "micro" in p.name for p in stored), stored
    assert first == [0, 0, 0]
    # A second process loads every one of them from there.
    assert _run_own(site, cache, tmp_path) == [1, 1, 1]
    assert _numba_files(site) == []
    # Only Python's own byte code is left in the package: nothing a reinstall would strand.
    left = {p.suffix for p in site.rglob("*") if p.is_file()} - {".py", ".pyc"}
    assert not left - {p.suffix for p in PACKAGE.rglob("*") if "__pycache__" not in p.parts}


def test_only_the_package_files_are_claimed(tmp_path, monkeypatch):
    """The locator claims the package's source files only: a user's function is cached
    where numba puts it, and ``NUMBA_CACHE_DIR`` is not touched; two installs of the
    package (two folders) get two cache folders."""
    from hamiltonia import _numba_cache
    from hamiltonia.modelling import special

    monkeypatch.setenv("HAMILTONIA_CACHE", str(tmp_path / "cache"))
    user_file = tmp_path / "user_module.py"
    user_file.write_text("def f(x):\n    return x\n")
    namespace = {}
    exec(compile(user_file.read_text(), str(user_file), "exec"), namespace)
    locator = _numba_cache.PackageCacheLocator
    assert locator.from_function(namespace["f"], str(user_file)) is None
    mine = locator.from_function(special.exp_nonpositive.py_func, special.__file__)
    assert Path(mine.get_cache_path()).parent.parent == tmp_path / "cache" / "numba"
    assert Path(mine.get_cache_path()).name == "modelling"
    # numba's own locators still follow, in their order, for everything else.
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0] is locator
    numba_own = getattr(caching, "UserProvidedCacheLocator", None)
    assert (numba_own or caching._UserProvidedCacheLocator) in impl._locator_classes[1:]
    first = _numba_cache.package_cache_dir()
    monkeypatch.setattr(_numba_cache, "PACKAGE_DIR", str(tmp_path / "site" / "hamiltonia"))
    assert _numba_cache.package_cache_dir() != first


def test_an_unwritable_cache_folder_still_keeps_the_package_clean(tmp_path, monkeypatch):
    """When the cache folder cannot be made, the caches go to a temporary folder rather
    than to numba's next locator, which would write inside the package."""
    from hamiltonia import _numba_cache
    from hamiltonia.modelling import special

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("HAMILTONIA_CACHE", str(blocker))
    mine = _numba_cache.PackageCacheLocator.from_function(
        special.exp_nonpositive.py_func, special.__file__
    )
    path = Path(mine.get_cache_path())
    assert path.is_dir()
    assert PACKAGE not in path.parents and blocker not in path.parents


def test_every_cached_decoration_in_the_package_installs_the_locator_first():
    """numba picks a function's cache locator when it is decorated: every module of the
    package that compiles with ``cache=True`` must call ``_numba_cache.install()`` before
    (the composed kernels are modules in ``<cache>/kernels``, outside the package)."""
    pattern = re.compile(r"""cache\s*=\s*True|["']cache["']\s*:\s*True""")
    generated_elsewhere = {PACKAGE / "compiled" / "compose.py", PACKAGE / "_numba_cache.py"}
    checked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        uses = [i for i, line in enumerate(lines) if pattern.search(line.split("#")[0])]
        if not uses or path in generated_elsewhere:
            continue
        installs = [i for i, line in enumerate(lines) if "_numba_cache.install()" in line]
        assert installs and installs[0] < uses[0], f"{path} decorates before installing"
        checked.append(path.name)
    assert {"special.py", "micro.py", "targets.py"} <= set(checked)
