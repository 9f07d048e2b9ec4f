"""The negative control of the delayed-rejection tutorial (``docs/tutorial_new_trajectory.rst``):
delayed rejection with the ghost factor dropped, which the invariance check must reject."""

from hamiltonia.trajectories.delayed_rejection import DelayedRejection, delayed_rejection


def without_ghost_kernel(ctx, q, p, grad, lp, eps):
    """Delayed rejection with stage 2 accepted with min(1, exp(H0 - H2)), the ghost factor
    dropped. Wrong: the chain is not reversible."""
    return delayed_rejection(ctx, q, p, grad, lp, eps, False)


class WithoutGhost(DelayedRejection):
    """:class:`DelayedRejection` with :func:`without_ghost_kernel` (the negative control)."""

    def compiled(self, dim):
        kernels = super().compiled(dim)
        kernels.functions["transition"] = without_ghost_kernel
        return kernels
