"""A target with a compiled kernel, so that whole chains run in numba.

The kernel has the fixed signature (q, grad_out, fdata, idata) -> log density; the data
travel flattened in fdata / idata.

    python examples/compiled_target.py
"""

import numpy as np

import hamiltonia as hm
from hamiltonia.compiled import NumbaTarget


def student_t_kernel(q, grad, fdata, idata):
    # Independent Student-t coordinates with nu = fdata[0] degrees of freedom.
    nu = fdata[0]
    lp = 0.0
    for i in range(q.shape[0]):
        r = 1.0 + q[i] * q[i] / nu
        lp -= 0.5 * (nu + 1.0) * np.log(r)
        grad[i] = -(nu + 1.0) * q[i] / (nu * r)
    return lp


class StudentT(hm.Target):
    """Independent Student-t coordinates."""

    def __init__(self, dim, nu=5.0):
        super().__init__(dim)
        self.nu = nu

    def log_prob_and_grad(self, x):
        x = np.asarray(x, dtype=float)
        r = 1.0 + x * x / self.nu
        lp = -0.5 * (self.nu + 1.0) * np.sum(np.log(r), axis=-1)
        return lp, -(self.nu + 1.0) * x / (self.nu * r)

    def numba_kernel(self):
        return NumbaTarget.build(student_t_kernel, [self.nu])


target = StudentT(dim=5)
# Check the kernel through compiled code before trusting it.
q = np.linspace(-1, 1, 5)
lp, grad = target.numba_kernel().evaluate(q)
assert np.allclose(lp, target.log_prob(q)) and np.allclose(grad, target.grad_log_prob(q))

result = hm.sample(
    target,
    sampler="hmc",
    chains=4,
    warmup=1000,
    draws=5000,
    seed=0,
    compiled=True,
    step_size_jitter=0.5,
    progress=False,
)
print("compiled:", result.attrs["compiled"], f"sampling {result.sampling_seconds:.3f} s")
print(result.summary().round(3))
print("exact variance:", target.nu / (target.nu - 2))
