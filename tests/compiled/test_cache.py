"""numba's on-disk cache serves the composed chain kernel to a second process, and an
edited part (or a helper it calls, in another file) never gets a stale kernel."""

import os
import subprocess
import sys
import textwrap

PART = """
import numpy as np
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import draw_momentum
from hamiltonia.momentum import MomentumRefresh
from scaled_helper import scale


def scaled_refresh_kernel(rng, q, p, grad, lp, eps, aux, stats, PF, PI, logp, fdata, idata):
    draw_momentum(rng, q, p, aux, PF, PI)
    for i in range(p.shape[0]):
        p[i] = scale(p[i])


class ScaledRefresh(MomentumRefresh):
    def refresh(self, hamiltonian, state, rngs, step_size=None):
        return state.with_momentum(scale(hamiltonian.sample_momentum(rngs, state.aux)))

    def compiled(self, dim):
        return PartKernels({"refresh": scaled_refresh_kernel}, iparams=[0])
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
