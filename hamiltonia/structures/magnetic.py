"""The magnetic Poisson structure of magnetic HMC, and the fields it is used with.

Magnetic HMC (Tripuraneni et al. 2017) integrates the non-canonical flow

.. math::

    \\dot q = M^{-1} p, \\qquad \\dot p = -\\nabla U(q) + s\\, G M^{-1} p,
    \\qquad J_G = \\begin{pmatrix} 0 & I \\\\ -I & sG \\end{pmatrix},

with a constant antisymmetric field :math:`G` and its sign :math:`s \\in \\{+1, -1\\}`, an
auxiliary variable of the chain (the state variable ``field_reversed``,
:math:`s = 1 - 2\\,\\text{field\\_reversed}`). The flow keeps :math:`H` and phase-space volume,
and :math:`(q, p, s) \\mapsto (q, -p, -s)` reverses it, so a Metropolis step that negates
:math:`p` and :math:`s` on rejection keeps :math:`e^{-H}` invariant (Mongwe 2022,
thesis, §2.5, Algorithm 3; Mongwe, Mbuvha and Marwala 2022, SMHMC, Algorithm 2).

A splitting integrator composes the exact flows of the potential (the canonical *kick*) and
of the kinetic energy (the *drift*, here a rotation of the momentum):

.. math::

    p(h) = e^{h s G M^{-1}} p, \\qquad
    q(h) = q + M^{-1} \\int_0^h e^{\\sigma s G M^{-1}}\\, d\\sigma\\; p
         = q + M^{-1} h\\, \\varphi_1(h s G M^{-1})\\, p,

with :math:`\\varphi_1(X) = \\sum_k X^k/(k+1)!`, exact for a singular :math:`G` (the research's
field has rank two), where the printed :math:`G^{-1}(e^{\\varepsilon G} - I)` is undefined
(Mongwe 2022, thesis, §2.5, eq. 2.24, prints an eigen-decomposition form for that case with
typos: its null-space block must be :math:`\\varepsilon I` and its transposes conjugate).

How it is computed. With :math:`M^{-1} = L L^\\top` and whitened momentum :math:`r = L^\\top
p`, the drift is the flow of the antisymmetric :math:`\\tilde G = L^\\top G L`. Its real
normal form :math:`\\tilde G = Q\\, T\\, Q^\\top`, :math:`Q` of shape ``(dim, 2k)`` with
orthonormal columns and :math:`T` made of :math:`k` blocks
:math:`\\lambda_j \\bigl(\\begin{smallmatrix} 0 & -1 \\\\ 1 & 0\\end{smallmatrix}\\bigr)`
(the null space of :math:`\\tilde G` does not rotate), turns the drift into

.. math::

    y = Q^\\top r, \\qquad
    q \\leftarrow q + h M^{-1} p + L Q\\, (\\Phi_h - h)\\, y, \\qquad
    p \\leftarrow p + L^{-\\top} Q\\, (R_h - I)\\, y,

where :math:`R_h` and :math:`\\Phi_h` rotate and integrate each pair by the angle
:math:`\\theta_j = s \\lambda_j h` (:func:`magnetic_pair_update`). The decomposition is computed
once per metric (per chain and iteration for a random mass, from a factorisation of
:math:`G` computed once); any step size, stage coefficient, jittered or adapted
:math:`\\varepsilon` and either sign then costs :math:`k` sines and :math:`O(\\dim \\cdot k)`
operations, :math:`O(\\dim)` for the research's field.

References
----------
Tripuraneni, Rowland, Ghahramani and Turner (2017), *Magnetic Hamiltonian Monte Carlo*,
ICML; Mongwe, Mbuvha and Marwala (2021), *Quantum-inspired magnetic Hamiltonian Monte
Carlo*, PLoS One 16(10) (the general-mass integrator, thesis eq. 4.1); Brofos and Lederman
(2020), *Non-canonical Hamiltonian Monte Carlo* (random antisymmetric fields).

Its parts keep both forms, Python methods and kernels, as a measured optimisation (the
methods vectorise the chains); a new part needs one (:doc:`/design`, "written once").

The fields themselves (:func:`research_field`, :func:`random_field`) and their checks
(:func:`check_field`) are in :mod:`hamiltonia.structures.magnetic_fields`; this module
re-exports them.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from hamiltonia import backend
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import inverse_mass_diagonal, offset, own, position_flow
from hamiltonia.elementary import sin, sinc
from hamiltonia.structures.base import PoissonStructure, canonical_kick_kernel
from hamiltonia.structures.magnetic_fields import (
    check_field,
    check_field_strength,  # noqa: F401 (moved to magnetic_fields)
    random_field,
    research_field,
)

__all__ = [
    "FIELD_AUX",
    "ConstantFieldStructure",
    "MagneticStructure",
    "antisymmetric_blocks",
    "check_field",
    "field_basis",
    "field_sign",
    "magnetic_pair_update",
    "random_field",
    "research_field",
]

#: The chain's auxiliary variable holding the field's sign: 0 for :math:`+G`, 1 for
#: :math:`-G` (zero, the value of a variable not set yet, is the field as given).
FIELD_AUX = "field_reversed"

#: Eigenvalues of :math:`iG` below this fraction of the largest are the null space.
RANK_TOLERANCE = 1e-12


# -- the maths, written once for both paths (plain functions numba also compiles)


def field_sign(reversed_flag):
    """The sign of the field, :math:`1 - 2r` for the chain's flag :math:`r \\in \\{0, 1\\}`
    (:data:`FIELD_AUX`; both paths, scalars or arrays)."""
    return 1.0 - 2.0 * reversed_flag


def magnetic_pair_update(a, b, theta, h):
    """The change of one rotating pair of whitened momentum coordinates :math:`(a, b)` over
    a time :math:`h` at angle :math:`\\theta = s\\lambda h`.

    .. math::

        R - I = \\begin{pmatrix} \\cos\\theta - 1 & -\\sin\\theta \\\\
                                 \\sin\\theta & \\cos\\theta - 1 \\end{pmatrix},
        \\qquad
        \\Phi - h = \\begin{pmatrix} h(\\operatorname{sinc}\\theta - 1) & -f \\\\
                                     f & h(\\operatorname{sinc}\\theta - 1) \\end{pmatrix},
        \\quad f = h\\,\\frac{1 - \\cos\\theta}{\\theta},

    written with :math:`\\sin(\\theta/2)` so that small angles lose no digits and
    :math:`\\theta = 0` needs no branch. Returns ``(dq_a, dq_b, dp_a, dp_b)``: the
    coefficients of the pair's two basis vectors in the position and momentum updates.
    Scalars or arrays.
    """
    half = 0.5 * theta
    sinc_half = sinc(half / np.pi)
    cos_minus_one = -2.0 * sin(half) ** 2
    sin_theta = sin(theta)
    integral_minus_h = h * (sinc(theta / np.pi) - 1.0)
    f = h * half * sinc_half * sinc_half
    return (
        integral_minus_h * a - f * b,
        f * a + integral_minus_h * b,
        cos_minus_one * a - sin_theta * b,
        sin_theta * a + cos_minus_one * b,
    )


def antisymmetric_blocks(K, n_pairs):
    """The ``n_pairs`` largest rotation planes of a real antisymmetric ``K``.

    The Hermitian :math:`iK` has real eigenvalues in pairs :math:`\\pm\\lambda`; an
    eigenvector :math:`v = x + iy` of :math:`\\lambda > 0` gives :math:`Kx = \\lambda y`,
    :math:`Ky = -\\lambda x` with :math:`x \\perp y`, :math:`|x| = |y| = 1/\\sqrt 2`.
    Returns ``X`` of shape ``(n, 2 n_pairs)`` with orthonormal columns
    :math:`\\sqrt2 x_j, \\sqrt2 y_j` and the :math:`\\lambda_j` (largest first).
    """
    n = K.shape[0]
    X = np.empty((n, 2 * n_pairs))
    lam = np.empty(n_pairs)
    if n == 2 and n_pairs == 1:
        # One plane (the research's field): K = ((0, -a), (a, 0)) turns e1 into a e2.
        a = 0.5 * (K[1, 0] - K[0, 1])
        lam[0] = abs(a)
        X[0, 0], X[1, 0], X[0, 1] = 1.0, 0.0, 0.0
        X[1, 1] = 1.0 if a >= 0 else -1.0
        return X, lam
    eigenvalues, vectors = np.linalg.eigh(1j * K)
    root_two = np.sqrt(2.0)
    for j in range(n_pairs):
        col = n - 1 - j
        lam[j] = eigenvalues[col]
        for i in range(n):
            X[i, 2 * j] = root_two * vectors[i, col].real
            X[i, 2 * j + 1] = root_two * vectors[i, col].imag
    return X, lam


def field_basis(C, lam0):
    """The normal form of :math:`\\tilde G = L^\\top G L` from :math:`C = L^\\top U`.

    With :math:`G = U T(\\lambda^0) U^\\top` (``U`` of shape ``(dim, 2k)``, orthonormal),
    :math:`\\tilde G = C T C^\\top`; the thin QR factorisation :math:`C = Q_C R` (Gram-Schmidt,
    reorthogonalised) leaves the
    :math:`2k \\times 2k` antisymmetric :math:`K = R T R^\\top`, whose planes
    (:func:`antisymmetric_blocks`) give :math:`\\tilde G = (Q_C X) T(\\lambda) (Q_C X)^\\top`.
    :math:`O(\\dim \\cdot k^2 + k^3)`. Returns ``(Q_C X, lam)``.
    """
    d, r = C.shape
    k = r // 2
    # Thin QR by Gram-Schmidt, each column orthogonalised twice ("twice is enough",
    # Giraud et al. 2005): C has full rank with a condition number at most that of L, and
    # for the research's two columns this is far cheaper than a LAPACK call per iteration.
    QC = np.zeros((d, r))
    R = np.zeros((r, r))
    for j in range(r):
        for i in range(d):
            QC[i, j] = C[i, j]
        for _ in range(2):
            for m in range(j):
                s = 0.0
                for i in range(d):
                    s += QC[i, m] * QC[i, j]
                R[m, j] += s
                for i in range(d):
                    QC[i, j] -= s * QC[i, m]
        norm = 0.0
        for i in range(d):
            norm += QC[i, j] * QC[i, j]
        norm = np.sqrt(norm)
        R[j, j] = norm
        for i in range(d):
            QC[i, j] /= norm
    T = np.zeros((r, r))
    for j in range(k):
        T[2 * j + 1, 2 * j] = lam0[j]
        T[2 * j, 2 * j + 1] = -lam0[j]
    K = np.dot(np.dot(R, T), np.ascontiguousarray(R.T))
    # Exactly antisymmetric, as eigh reads one triangle only.
    K = 0.5 * (K - np.ascontiguousarray(K.T))
    X, lam = antisymmetric_blocks(K, k)
    return np.dot(QC, X), lam


# -- kernels (see hamiltonia.compiled.roles), one chain, in place


def _field_workspace(ctx, k):
    """The workspace of the pair coordinates ``y`` and of the last drift's coefficients
    ``memo``."""
    at = offset.field_coordinates
    y = ctx.aux[at : at + 2 * k]
    at = offset.field_coefficients
    memo = ctx.aux[at : at + 2 + 4 * k]
    return y, memo


def _chain_basis(ctx, d, k):
    """The chain's own normal form ``(lam, A, B)``, in its workspace ``field_basis``."""
    r = 2 * k
    at = offset.field_basis
    basis = ctx.aux[at : at + k + 2 * d * r]
    return basis[:k], basis[k : k + d * r], basis[k + d * r : k + 2 * d * r]


def _magnetic_drift(ctx, q, p, v, h, lam, A, B):
    """The drift of :func:`magnetic_drift_kernel` in the normal form ``(lam, A, B)``."""
    d = q.shape[0]
    k = lam.shape[0]
    sign = field_sign(ctx.aux[offset.field_reversed])
    y, memo = _field_workspace(ctx, k)
    if memo[0] != h or memo[1] != sign:
        memo[0] = h
        memo[1] = sign
        for j in range(k):
            # The coefficients of the unit pairs (1, 0) and (0, 1) give those of any pair.
            c = magnetic_pair_update(1.0, 0.0, sign * lam[j] * h, h)
            memo[2 + 4 * j] = c[0]
            memo[3 + 4 * j] = c[1]
            memo[4 + 4 * j] = c[2]
            memo[5 + 4 * j] = c[3]
    for j in range(2 * k):
        s = 0.0
        for i in range(d):
            s += A[j * d + i] * p[i]
        y[j] = s
    check = position_flow(ctx, q, p, v, h)
    for j in range(k):
        a = y[2 * j]
        b = y[2 * j + 1]
        # (1, 0) -> (f_q, g_q, f_p, g_p); by the rotation symmetry (0, 1) -> (-g, f).
        fq = memo[2 + 4 * j]
        gq = memo[3 + 4 * j]
        fp = memo[4 + 4 * j]
        gp = memo[5 + 4 * j]
        dqa = fq * a - gq * b
        dqb = gq * a + fq * b
        dpa = fp * a - gp * b
        dpb = gp * a + fp * b
        x0 = 2 * j * d
        x1 = x0 + d
        for i in range(d):
            q[i] += A[x0 + i] * dqa + A[x1 + i] * dqb
            p[i] += B[x0 + i] * dpa + B[x1 + i] * dpb
    for i in range(d):
        check += q[i] - q[i]
    return check


def magnetic_drift_kernel(ctx, q, p, v, h):
    """The exact flow of the kinetic energy under the magnetic structure for a time ``h``
    (role ``drift``); returns 0 when the new position is finite, nan otherwise. The
    parameters: ``pairs`` (k), :math:`\\lambda^0` (``lam0``), ``U``, and the metric's normal
    form :math:`\\lambda` (``lam``), ``A = LQ``, ``B = L^{-T}Q``, matrices stored by columns.
    The pair coefficients depend on ``h`` and the sign only, so the drifts of a trajectory
    (all of one length, in a leapfrog) compute them once: the workspace keeps the last ``h``
    and sign with them (zero, the workspace's start, is no drift's ``h``)."""
    if own.pairs == 0:
        return position_flow(ctx, q, p, v, h)
    return _magnetic_drift(ctx, q, p, v, h, own.lam, own.A, own.B)


def chain_magnetic_drift_kernel(ctx, q, p, v, h):
    """:func:`magnetic_drift_kernel` in the chain's own normal form (a random mass), which
    :func:`magnetic_prepare_kernel` keeps in the workspace (role ``drift``)."""
    k = own.pairs
    if k == 0:
        return position_flow(ctx, q, p, v, h)
    lam, A, B = _chain_basis(ctx, q.shape[0], k)
    return _magnetic_drift(ctx, q, p, v, h, lam, A, B)


def magnetic_prepare_kernel(ctx, q):
    """The chain's own normal form for its current (random) mass (role ``prepare``): the
    Hamiltonian's ``inverse_mass_diagonal`` gives :math:`L = \\operatorname{diag}(\\sqrt m)`."""
    d = q.shape[0]
    k = own.pairs
    if k == 0:
        return
    r = 2 * k
    inverse_mass = inverse_mass_diagonal(ctx)
    lam0 = own.lam0
    U = own.U
    root = np.sqrt(inverse_mass)
    C = np.empty((d, r))
    for j in range(r):
        for i in range(d):
            C[i, j] = root[i] * U[j * d + i]
    Q, lam = field_basis(C, lam0)
    at = offset.field_basis
    ctx.aux[offset.field_coefficients] = 0.0  # the drift's coefficients are stale
    for j in range(k):
        ctx.aux[at + j] = lam[j]
    a = at + k
    b = a + d * r
    for j in range(r):
        for i in range(d):
            ctx.aux[a + j * d + i] = root[i] * Q[i, j]
            ctx.aux[b + j * d + i] = Q[i, j] / root[i]


def magnetic_reverse_kernel(ctx):
    """Negate the field's sign (role ``reverse_structure``)."""
    at = offset.field_reversed
    ctx.aux[at] = 1.0 - ctx.aux[at]


def _rank_pairs(G: np.ndarray) -> int:
    """The number of rotation planes of ``G`` (half its rank)."""
    eigenvalues = np.linalg.eigvalsh(1j * G)
    largest = float(np.max(np.abs(eigenvalues), initial=0.0))
    if largest == 0.0:
        return 0
    return int(np.sum(eigenvalues > RANK_TOLERANCE * largest))


class ConstantFieldStructure(PoissonStructure):
    """What the structures of a constant field share: the field :math:`G` (``field``), the
    canonical kick, the field's sign as the chain's auxiliary variable :data:`FIELD_AUX`,
    negated by :meth:`reverse` (a Metropolis rejection does so together with the momentum),
    and the generator

    .. math::

        \\begin{pmatrix} 0 & I \\\\ -I & B \\end{pmatrix}

    of the drift's matrix :math:`B` (:attr:`block`: :math:`G` itself for the magnetic flow).
    Subclasses give the drift.
    """

    numeric_methods = ("kick", "drift", "vector_field", "reverse")

    @property
    def dim(self) -> int:
        return self.field.shape[0]

    @property
    def block(self) -> np.ndarray:
        """The drift's matrix :math:`B` (default: the field :math:`G`)."""
        return self.field

    def _check_dim(self, hamiltonian) -> None:
        if hamiltonian.dim != self.dim:
            raise ValueError(
                f"the magnetic field has shape {self.field.shape}, the target has dim "
                f"{hamiltonian.dim}"
            )

    def matrix(self, dim):
        eye = np.eye(dim)
        return np.block([[np.zeros((dim, dim)), eye], [-eye, self.block]])

    def holding(self, fixed):
        """The structure of the field restricted to the other coordinates,
        :math:`G_{ij} = 0` for :math:`i` or :math:`j` held: the field would otherwise turn
        the free momentum into the held coordinates (HMC within Gibbs moves only its own
        block). ``None`` for a subclass not built from its field alone."""
        field = np.array(self.field, dtype=np.float64)
        field[list(fixed), :] = 0.0
        field[:, list(fixed)] = 0.0
        try:
            return type(self)(field)
        except TypeError:  # a constructor that takes more than the field
            return None

    def vector_field(self, dH_dq, dH_dp):
        return dH_dp, -dH_dq + dH_dp @ self.block.T

    def kick(self, hamiltonian, q, p, grad, h, aux=None):
        return q, p + h * grad

    def reverse(self, state):
        n = state.q.shape[0]
        flag = np.reshape(backend.to_numpy(state.aux.get(FIELD_AUX, np.zeros(n))), (n, 1))
        aux = {**state.aux, FIELD_AUX: backend.asarray(1.0 - flag)}
        return type(state)(state.q, state.p, state.log_prob, state.grad, aux)


class MagneticStructure(ConstantFieldStructure):
    """The magnetic structure :math:`J_G` with a constant antisymmetric field :math:`G`.

    See the module documentation for the flow and how it is computed. The kick is the
    canonical one; the drift rotates the momentum exactly. The sign of :math:`G` is the
    chain's auxiliary variable :data:`FIELD_AUX`, negated by :meth:`reverse` (a Metropolis
    rejection does so together with the momentum).

    Parameters
    ----------
    field : array of shape (dim, dim)
        The antisymmetric :math:`G` (:func:`research_field`, :func:`random_field`, or
        any); checked by :func:`check_field`.
    """

    def __init__(self, field):
        self.field = check_field(field)
        self._pairs = _rank_pairs(self.field)
        self._U, self._lam0 = antisymmetric_blocks(self.field, self._pairs)
        self._bases: dict = {}

    def check(self, hamiltonian) -> None:
        """Refuse a Hamiltonian this structure cannot integrate, naming why."""
        self._check_dim(hamiltonian)
        # A shadow Hamiltonian integrates its base's flow.
        hamiltonian = getattr(hamiltonian, "base", hamiltonian)
        # A Gaussian kinetic energy is a Hamiltonian with a metric (hamiltonians import the
        # structures they may be integrated with, not the other way round).
        if getattr(hamiltonian, "metric", None) is None:
            raise ValueError(
                "MagneticStructure needs a Hamiltonian with a Gaussian kinetic energy "
                f"(EuclideanHamiltonian or RandomMassHamiltonian), got {type(hamiltonian).__name__}"
            )

    # -- the normal form

    def _metric_basis(self, metric):
        """``(lam, A, B)`` for a fixed metric, computed once per metric object."""
        hit = self._bases.get(id(metric))
        if hit is not None and hit[0] is metric:
            return hit[1]
        U, lam0 = self._U, self._lam0
        form = getattr(metric, "form", None)
        if form == "identity":
            Q, lam = field_basis(U, lam0)
            A, B = Q, Q
        elif form == "diagonal":
            root = np.sqrt(metric.inverse_mass)[:, None]
            Q, lam = field_basis(root * U, lam0)
            A, B = root * Q, Q / root
        elif form == "dense":
            L = metric._chol
            Q, lam = field_basis(np.ascontiguousarray(L.T @ U), lam0)
            A, B = L @ Q, scipy.linalg.solve_triangular(L.T, Q, lower=False)
        else:
            raise ValueError(
                f"MagneticStructure supports identity, diagonal and dense metrics, got "
                f"{type(metric).__name__}"
            )
        basis = (lam, A, B)
        if len(self._bases) > 8:
            self._bases.clear()
        self._bases[id(metric)] = (metric, basis)
        return basis

    def _chain_bases(self, inverse_mass: np.ndarray):
        """Per-chain ``(lam, A, B)`` of shapes ``(n, k)``, ``(n, dim, 2k)``, for a diagonal
        inverse mass of shape ``(n, dim)``."""
        lams, As, Bs = [], [], []
        for m in inverse_mass:
            root = np.sqrt(m)[:, None]
            Q, lam = field_basis(root * self._U, self._lam0)
            lams.append(lam)
            As.append(root * Q)
            Bs.append(Q / root)
        return np.array(lams), np.array(As), np.array(Bs)

    def _basis(self, hamiltonian, aux):
        per_chain = hamiltonian.inverse_mass_diagonal(aux)
        if per_chain is None:
            return self._metric_basis(hamiltonian.metric)
        key = aux.get("log_mass") if aux else None
        cached = self.__dict__.get("_chain_cache")
        if cached is not None and key is not None and cached[0] is key:
            return cached[1]
        basis = self._chain_bases(backend.to_numpy(per_chain))
        self._chain_cache = (key, basis)
        return basis

    def drift(self, hamiltonian, q, p, h, aux=None):
        aux = {} if aux is None else aux
        q_new = q + h * hamiltonian.velocity(p, aux)
        if self._pairs == 0:
            return q_new, p
        xp = backend.xp()
        lam, A, B = (backend.asarray(a) for a in self._basis(hamiltonian, aux))
        sign = field_sign(xp.reshape(xp.asarray(aux.get(FIELD_AUX, 0.0)), (-1, 1)))
        h = xp.reshape(xp.asarray(h), (-1, 1))
        # einsum sums each row on its own (a matrix product's blocking depends on the
        # number of rows), so a chain's draws do not depend on the chains beside it.
        y = backend.einsum("cd,dr->cr" if A.ndim == 2 else "cd,cdr->cr", p, A)
        dqa, dqb, dpa, dpb = magnetic_pair_update(y[:, 0::2], y[:, 1::2], sign * lam * h, h)
        n, k = dqa.shape
        dq = xp.reshape(xp.stack([dqa, dqb], axis=-1), (n, 2 * k))
        dp = xp.reshape(xp.stack([dpa, dpb], axis=-1), (n, 2 * k))
        back = "cr,dr->cd" if A.ndim == 2 else "cr,cdr->cd"
        return q_new + backend.einsum(back, dq, A), p + backend.einsum(back, dp, B)

    def compiled(self, dim, hamiltonian=None):
        if hamiltonian is None:
            raise ValueError("MagneticStructure.compiled needs the sampler's Hamiltonian")
        self.check(hamiltonian)
        k, r = self._pairs, 2 * self._pairs
        per_chain = bool(getattr(hamiltonian, "per_chain_mass", False))
        if per_chain:
            # Placeholders where a fixed metric's normal form would be: the chain's own is
            # in its workspace.
            lam, A, B = np.zeros(k), np.zeros((dim, r)), np.zeros((dim, r))
        else:
            lam, A, B = self._metric_basis(hamiltonian.metric)
        functions = {
            "kick": canonical_kick_kernel,
            "drift": magnetic_drift_kernel,
            "reverse_structure": magnetic_reverse_kernel,
        }
        workspace = [("field_coordinates", r), ("field_coefficients", 2 + 4 * k)]
        if per_chain:
            functions["drift"] = chain_magnetic_drift_kernel
            functions["prepare"] = magnetic_prepare_kernel
            workspace.append(("field_basis", k + 2 * dim * r))
        return PartKernels(
            functions,
            # Matrices by columns: the kernels read a column as a contiguous run.
            params={
                "pairs": k,
                "lam0": self._lam0,
                "U": self._U.T,
                "lam": lam,
                "A": A.T,
                "B": B.T,
            },
            aux=((FIELD_AUX, 1),),
            workspace=tuple(workspace),
        )

    def __repr__(self):
        return f"MagneticStructure(dim={self.dim}, rank={2 * self._pairs})"
