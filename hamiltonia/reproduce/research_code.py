"""What the author's public S2HMC code does differently, emulated to explain published figures.

The public code (``WilsonMongwe/hybridtorch``, ``samplers/s2hmc.py``; see
``spec/seed002_ch1-3.md`` §9) departs from the method of Sweet et al. (2009) and the thesis
(Algorithm 5, eqs. 2.33-2.34) in two ways that change the acceptance rate:

* **the post-processing momentum has the opposite sign**: it returns
  :math:`p = \\hat p + \\tfrac{\\varepsilon}{24}(g_+ - g_-)` where :math:`X^{-1}` needs
  :math:`p = \\hat p - \\tfrac{\\varepsilon}{24}(g_+ - g_-)`
  (:mod:`hamiltonia.integrators.processed`). Its map is then not conjugate to the leapfrog, and
  the shadow :math:`\\tilde H` changes by :math:`O(\\varepsilon^2)` over a trajectory rather than
  :math:`O(\\varepsilon^4)`;
* **the Metropolis test is called with the two energies swapped**, so a proposal is accepted
  with probability :math:`\\min(1, e^{\\tilde H_{new} - \\tilde H_{old}})`.

This module is not a sampler and its chains are not meant to be used (neither departure leaves
the target invariant); it composes the package's own pre- and post-processing, leapfrog and
shadow energy, flipping the sign and the test where asked, and reports the fraction of
proposals accepted, for ``python -m hamiltonia.reproduce.research_code``. Two other traits of
the public code are left out, as they do not bear on the acceptance rate: it stores each
iteration's importance weight at the proposal, and its fixed-point loops carry on with the last
iterate after 100 iterations, where this emulation rejects the proposal (no fixed point failed
at the settings of the PS2HMC paper).

References
----------
Sweet, Hampton, Skeel and Izaguirre (2009), J. Chem. Phys. 131, 174106; Mongwe (2022), PhD
thesis, Algorithm 5; Mongwe, Mbuvha and Marwala (2021), PS2HMC, IEEE Access 9, 151235-151244.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

__all__ = ["VARIANTS", "ProcessedVariant", "fraction_accepted", "main", "processed_transition"]


@dataclasses.dataclass(frozen=True)
class ProcessedVariant:
    """One way of running S2HMC's processed leapfrog and its test.

    Attributes
    ----------
    label : str
    code_momentum_sign : bool
        Post-process the momentum with the public code's sign.
    swapped_test : bool
        Accept with :math:`\\min(1, e^{+\\Delta\\tilde H})`, as the public code's call does.
    """

    label: str
    code_momentum_sign: bool
    swapped_test: bool


#: The method, each departure alone, and both (the public code).
VARIANTS = (
    ProcessedVariant("method (thesis eqs. 2.33-2.34)", False, False),
    ProcessedVariant("code's momentum sign only", True, False),
    ProcessedVariant("code's swapped test only", False, True),
    ProcessedVariant("public code (both)", True, True),
)


def processed_transition(
    hamiltonian,
    q,
    p,
    step_size,
    n_steps,
    *,
    code_momentum_sign: bool,
    tolerance: float = 1e-6,
    max_iterations: int = 100,
):
    """:math:`X^{-1} \\circ \\mathrm{LF}^L \\circ X` from ``(q, p)`` for every chain, with
    the method's post-processing momentum or the public code's.

    Returns ``(q', p', ok)``; ``ok`` is false for a chain whose fixed point failed or met a
    non-finite density.
    """
    from hamiltonia.integrators.leapfrog import Leapfrog
    from hamiltonia.integrators.processed import post_process, pre_process

    n = q.shape[0]
    eps = np.full(n, float(step_size))
    q_hat, p_hat, _, ok_pre = pre_process(hamiltonian, q, p, eps, {}, tolerance, max_iterations)
    inside = hamiltonian.evaluate(np.where(ok_pre[:, None], q_hat, q), p_hat)
    moved, _ = Leapfrog().integrate(hamiltonian, inside, eps, np.full(n, n_steps))
    alive = ok_pre & np.isfinite(np.asarray(moved.log_prob))
    q_in = np.where(alive[:, None], moved.q, q)
    q_end, p_end, _, ok_post = post_process(
        hamiltonian, q_in, moved.p, eps, {}, tolerance, max_iterations
    )
    if code_momentum_sign:
        # The method returns p_hat - s; the code returns p_hat + s.
        p_end = 2.0 * moved.p - p_end
    return q_end, p_end, alive & ok_post


def fraction_accepted(
    target,
    step_size: float,
    n_steps: int,
    starts: np.ndarray,
    variant: ProcessedVariant,
    *,
    iterations: int,
    seed: int = 0,
) -> float:
    """The fraction of ``iterations`` proposals per chain that ``variant`` accepts, the chains
    starting at ``starts`` (``(chains, dim)``, e.g. posterior draws) with a full momentum
    refresh each iteration and :math:`M = I`, as the research's S2HMC."""
    import hamiltonia as hm

    ham = hm.EuclideanHamiltonian(target)
    shadow = hm.SeparableShadowHamiltonian(ham)
    rng = np.random.default_rng(seed)
    q = np.array(starts, dtype=np.float64)
    n = q.shape[0]
    eps = np.full(n, float(step_size))
    accepted = 0
    for _ in range(iterations):
        p = rng.standard_normal(q.shape)
        before = shadow.energy(ham.evaluate(q, p), eps)
        q_new, p_new, ok = processed_transition(
            ham, q, p, step_size, n_steps, code_momentum_sign=variant.code_momentum_sign
        )
        after = shadow.energy(ham.evaluate(np.where(ok[:, None], q_new, q), p_new), eps)
        with np.errstate(all="ignore"):
            delta = np.asarray(after - before)
            log_ratio = delta if variant.swapped_test else -delta
            take = ok & np.isfinite(delta) & (np.log(rng.random(n)) < log_ratio)
        q = np.where(take[:, None], q_new, q)
        accepted += int(take.sum())
    return accepted / (n * iterations)


def main(argv=None) -> int:
    """``python -m hamiltonia.reproduce.research_code TARGET STEP_SIZE N_STEPS``: the fraction
    each variant accepts, from posterior draws of the target's paper setting."""
    import warnings

    import hamiltonia as hm

    parser = argparse.ArgumentParser(prog="python -m hamiltonia.reproduce.research_code")
    parser.add_argument("target")
    parser.add_argument("step_size", type=float)
    parser.add_argument("n_steps", type=int)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    target = hm.targets.get(args.target, setting="paper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draws = hm.sample(target, "nuts", chains=args.chains, warmup=500, draws=100,
                          seed=args.seed, progress=False).draws  # fmt: skip
    starts = draws[:, -1]
    print(f"{args.target} (setting='paper'), step size {args.step_size}, L = {args.n_steps}, "
          f"{args.chains} chains x {args.iterations} iterations from posterior draws")  # fmt: skip
    for variant in VARIANTS:
        rate = fraction_accepted(target, args.step_size, args.n_steps, starts, variant,
                                 iterations=args.iterations, seed=args.seed)  # fmt: skip
        print(f"  {variant.label:32s} {100 * rate:6.1f} % accepted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
