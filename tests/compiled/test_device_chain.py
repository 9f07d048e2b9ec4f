"""The fused device chain (:mod:`hamiltonia.compiled.device_chain`) runs the same part kernels
as the CPU chain and draws the same random numbers: under numba's CUDA simulator its draws
equal the CPU path's to rounding, for the samplers the issue names."""

import os
import subprocess
import sys

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled.compose import CompositionError, module_text
from hamiltonia.compiled.device_compose import device_module_text
from hamiltonia.testing.device import check_device_compiles, device_compiler_available

#: Each sampler on the CPU and on the simulated device, compared by assert_paths_agree: a
#: fixed step size and no warm-up (the CPU's fused multiply-adds make the difference), then
#: HMC with its warm-up (dual averaging and the metric windows run in the device kernel).
SAME_DRAWS = """
from hamiltonia.testing import assert_paths_agree

short = dict(chains=3, warmup=0, draws=20, seed=11, step_size=0.3, device="cuda")
for name, options in [
    ("hmc", dict(n_steps=7)),
    ("nuts", {}),
    ("mala", {}),
    ("mhmc", dict(n_steps=7)),
    ("s2hmc", dict(n_steps=7)),
]:
    assert_paths_agree("gaussian-d10", name, **short, **options)
    print("agree", name)
assert_paths_agree("blr-german", "hmc", chains=2, warmup=0, draws=4, seed=3, step_size=0.05,
                   n_steps=5, device="cuda")
print("agree blr-german")
run, on_device = assert_paths_agree(
    "gaussian-d10", "hmc", chains=2, warmup=10, draws=5, seed=1, device="cuda", save_warmup=True
)
assert on_device.attrs["path_reason"].endswith("on device 'cuda'")
print("agree warm-up")
"""


AGREED = ["agree hmc", "agree nuts", "agree mala", "agree mhmc", "agree s2hmc",
          "agree blr-german", "agree warm-up"]  # fmt: skip


def _same_draws(simulated: bool) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if simulated:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", SAME_DRAWS], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.split("\n")[:-1]


def test_device_draws_equal_the_cpu_path_under_the_simulator():
    assert _same_draws(simulated=True) == AGREED


def _has_gpu() -> bool:
    from numba.core import config

    if config.ENABLE_CUDASIM:
        return False
    from numba import cuda

    return bool(cuda.is_available())


@pytest.mark.skipif(not _has_gpu(), reason="no GPU here (the device check runs this)")
def test_device_draws_equal_the_cpu_path_on_a_gpu():
    """On a real GPU the draws agree as well: the compiler's fused multiply-adds and the
    GPU's exp and log differ from the CPU's in the last bits only."""
    assert _same_draws(simulated=False) == AGREED


def test_the_logistic_device_form_is_the_kernel():
    """The logistic regression's device form (scalar rows, no work arrays) gives its CPU
    kernel's log density and gradient."""
    import numba

    target = hm.targets.get("blr-german")
    kernel = target.numba_kernel()
    device_form = numba.njit(kernel.device_function)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = 0.3 * rng.standard_normal(target.dim)
        lp, grad = kernel.evaluate(q)
        grad_device = np.empty_like(q)
        lp_device = device_form(q, grad_device, kernel.fdata, kernel.idata)
        np.testing.assert_allclose(lp_device, lp, rtol=1e-12)
        np.testing.assert_allclose(grad_device, grad, rtol=1e-10, atol=1e-10 * np.abs(grad).max())


def test_device_is_checked_before_any_work():
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'cuda'\), got 'gpu'"):
        hm.sample("banana", "hmc", device="gpu", draws=10, warmup=0, progress=False)


@pytest.mark.skipif(
    os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="the simulator stands in for a GPU"
)
def test_cuda_without_a_gpu_says_how_to_simulate_it():
    from numba import cuda

    if cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="NUMBA_ENABLE_CUDASIM=1"):
        hm.sample("banana", "hmc", device="cuda", draws=10, warmup=0, progress=False)


@pytest.mark.skipif(not device_compiler_available(), reason="no NVVM here to compile PTX")
@pytest.mark.parametrize(
    ("target", "sampler"),
    [("gaussian-d10", name) for name in ("hmc", "nuts", "mala", "mhmc", "s2hmc")]
    + [("blr-german", "hmc")],
)
def test_the_device_kernel_compiles_for_a_gpu(target, sampler):
    """numba CUDA compiles each sampler's fused kernel (warm-up's tuners included) to PTX:
    what the simulator, which runs Python, does not check. The logistic regression compiles
    its device form (NumbaTarget.device_function)."""
    ptx = check_device_compiles(target, sampler, cc=(9, 0))
    assert ".visible .entry" in ptx and ".target sm_90" in ptx


def _allocating_kernel(ctx, q):
    scratch = np.empty(q.shape[0])
    return scratch[0]


def test_a_kernel_the_device_cannot_run_is_named():
    """A kernel that allocates an array is refused for the device, naming the kernel and the
    NumPy function; for the CPU it composes as before."""
    module_text({}, _allocating_kernel)
    with pytest.raises(CompositionError, match=r"_allocating_kernel calls numpy\.empty, which"):
        device_module_text({}, _allocating_kernel)
