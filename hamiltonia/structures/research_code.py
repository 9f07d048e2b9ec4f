"""The drift of the research's published MHMC code, a hyperbolic map, kept only for
reproduction.

**This is not the magnetic flow** of Tripuraneni et al. (2017), nor the integrator the
thesis describes (Mongwe 2022, thesis, §2.5, eq. 2.24, Algorithm 3): for that, use
:class:`~hamiltonia.structures.magnetic.MagneticStructure` (``field="research"``). It is the
map that the author's public code computes (``WilsonMongwe/hybridtorch``,
``utilities/utils.py``). The code builds :math:`e^{\\varepsilon G}` and the drift factor
:math:`G^{-1}(e^{\\varepsilon G} - I)` from a *symmetric* eigensolver (``torch.symeig``)
applied to the antisymmetric field :math:`G`. A symmetric eigensolver reads one triangle (the
upper, by default), so the code exponentiates the symmetric matrix

.. math::

    S = \\operatorname{triu}(G, 1) + \\operatorname{triu}(G, 1)^\\top,
    \\qquad S_{1i} = S_{i1} = g \\quad (i \\ge 2) \\text{ for the research's field},

whose eigenvalues are real, :math:`\\pm g\\sqrt{D - 1}` and :math:`D - 2` zeros for the
research's field: the momentum is stretched along one direction and shrunk along another,
where the magnetic flow rotates it. The published MHMC figures (Mongwe 2022, thesis, Table
3.8's step sizes and the acceptance rates of its tables) come from this map; this structure
is offered so that they can be reproduced and explained, nothing else.

The map. With the field's sign :math:`s \\in \\{+1, -1\\}` (the chain's auxiliary
variable ``field_reversed``, negated with the momentum on rejection exactly as in
:class:`~hamiltonia.structures.magnetic.MagneticStructure`; :math:`-G` gives :math:`-S`
since :math:`\\operatorname{triu}` is linear), the kick is the canonical one and the drift
for a time :math:`h` is

.. math::

    p \\leftarrow e^{h s S} p, \\qquad
    q \\leftarrow q + F_h\\, p, \\qquad
    F_h = \\int_0^h e^{\\sigma s S}\\, d\\sigma
        = U \\operatorname{diag}\\bigl(h\\, \\varphi(h s \\mu_k)\\bigr) U^\\top,
    \\qquad \\varphi(x) = \\frac{e^x - 1}{x},\\ \\varphi(0) = 1,

for :math:`S = U \\operatorname{diag}(\\mu) U^\\top`. The null space of :math:`S` drifts by
:math:`h`, the full drift :math:`q + h p` there (the public code drops that term, a bug that
would leave most coordinates unmoved; it is kept here). With :math:`U_r`, :math:`\\mu_r` the
non-zero eigenpairs (rank :math:`r`; two for the research's field) and
:math:`y = U_r^\\top p`,

.. math::

    q \\leftarrow q + h p + U_r \\bigl(h(\\varphi(h s\\mu_r) - 1) \\odot y\\bigr), \\qquad
    p \\leftarrow p + U_r \\bigl((e^{h s \\mu_r} - 1) \\odot y\\bigr),

which is :math:`e^{hsS}` and :math:`F_h` exactly, in :math:`O(D r)` operations instead of the
dense :math:`O(D^2)` (:func:`research_code_coefficients` computes the two coefficients
without cancellation).

Properties. The drift's Jacobian is :math:`\\bigl(\\begin{smallmatrix} I & F_h \\\\ 0 &
e^{hsS}\\end{smallmatrix}\\bigr)`, of determinant :math:`\\det e^{hsS} = e^{hs
\\operatorname{tr} S} = 1`: volume is preserved. Negating the momentum and the field,
drifting again and negating back returns to the start, since :math:`e^{-hsS}e^{hsS} = I` and
:math:`F_h - F^{(-s)}_h e^{hsS} = 0`: a symmetric splitting of these drifts and canonical
kicks is reversible, so the Metropolis test on :math:`H` keeps :math:`e^{-H}` invariant and
the sampler is exact. But the drift does not keep the kinetic energy
(:math:`\\tfrac{d}{dt}\\tfrac12|p|^2 = s\\,p^\\top S p \\ne 0`), so the energy error grows
with :math:`g\\sqrt{D-1}\\,\\varepsilon L` and proposals are rejected far more often than
under the magnetic flow (on BLR Pima at the thesis's :math:`\\varepsilon = 0.03`,
:math:`L = 50`: about 73 % accepted at :math:`g = 0.2` and 86 % at :math:`g = 0.1`, against
99 % for the rotation; the published 82 % lies between, see the reproduction page).

Only the identity metric :math:`M = I` is supported (the research code's); a shadow
Hamiltonian, whose magnetic term is that of the rotation, is refused.

References
----------
Mongwe (2022), *Hybrid Monte Carlo Methods in Machine Learning*,
PhD thesis, University of Johannesburg: §2.5, Algorithm 3, Table 3.8; the public code,
https://github.com/WilsonMongwe/hybridtorch (``utilities/utils.py``, ``samplers/mhmc.py``);
Tripuraneni, Rowland, Ghahramani and Turner (2017), *Magnetic Hamiltonian Monte Carlo*, ICML.

Its parts keep both forms, Python methods and kernels, as
:class:`~hamiltonia.structures.magnetic.MagneticStructure`'s do; the coefficients of the
map are written once (:func:`research_code_coefficients`), for both paths.
"""

from __future__ import annotations

import math

import numpy as np

from hamiltonia import backend
from hamiltonia.compiled.parts import PartKernels
from hamiltonia.compiled.roles import offset, own, position_flow
from hamiltonia.structures.base import canonical_kick_kernel
from hamiltonia.structures.magnetic import (
    FIELD_AUX,
    ConstantFieldStructure,
    check_field,
    field_sign,
    magnetic_reverse_kernel,
    research_field,
)

__all__ = [
    "ResearchCodeMagneticStructure",
    "research_code_coefficients",
    "research_code_drift_kernel",
    "research_code_structure",
    "symmetric_from_upper",
]

#: Eigenvalues of :math:`S` below this fraction of the largest in modulus are its null
#: space.
RANK_TOLERANCE = 1e-12

#: Below this :math:`|x|`, :math:`\\varphi(x) - 1` is summed as its series to the term
#: :math:`x^8/9!` (the rest below :math:`10^{-16}` relative), above as
#: :math:`(e^x - 1 - x)/x`, whose cancellation there costs at most a few digits of a
#: quantity added to :math:`h` (absolute error :math:`O(h\\,\\epsilon_\\text{mach})`).
SERIES_BELOW = 0.05

#: Distinct (h, sign) pairs whose coefficients the NumPy path keeps.
COEFFICIENT_CACHE = 64


# -- the maths, written once for both paths (plain functions numba also compiles)


def research_code_coefficients(x, h):
    """The coefficients of one eigendirection of :math:`S` for a drift of time ``h``, at
    :math:`x = h s \\mu` (scalars; both paths).

    .. math::

        e^x - 1, \\qquad h\\,(\\varphi(x) - 1) = h\\,\\frac{e^x - 1 - x}{x}
            = h \\sum_{k \\ge 1} \\frac{x^k}{(k+1)!},

    the series below :data:`SERIES_BELOW`, so that :math:`x = 0` needs no special case and
    small :math:`x` loses no digits. Returns ``(e_minus_one, f_minus_h)``.
    """
    e_minus_one = math.expm1(x)
    if abs(x) < SERIES_BELOW:
        # Horner's rule for the terms k = 1..8: t <- (t + 1) x / m, m = 9 down to 2.
        phi_minus_one = 0.0
        for m in range(9, 1, -1):
            phi_minus_one = (phi_minus_one + 1.0) * x / m
    else:
        phi_minus_one = (e_minus_one - x) / x
    return e_minus_one, h * phi_minus_one


def symmetric_from_upper(field: np.ndarray) -> np.ndarray:
    """:math:`S = \\operatorname{triu}(G, 1) + \\operatorname{triu}(G, 1)^\\top`: the
    symmetric matrix a symmetric eigensolver decomposes when handed :math:`G` (it reads the
    upper triangle only)."""
    upper = np.triu(np.asarray(field, dtype=float), 1)
    return upper + upper.T


# -- kernels (see hamiltonia.compiled.roles), one chain, in place


def research_code_drift_kernel(ctx, q, p, v, h):
    """The drift of the research code's map for a time ``h`` (role ``drift``); returns 0
    when the new position is finite, nan otherwise. Parameters: ``rank`` (r), the non-zero
    eigenvalues ``mu`` of :math:`S` and their eigenvectors ``U`` (stored by columns). The
    coefficients depend on ``h`` and the sign only, so the drifts of a trajectory compute
    them once: the workspace keeps the last ``h`` and sign with them (zero, the workspace's
    start, is no sign)."""
    r = own.rank
    if r == 0:
        return position_flow(ctx, q, p, v, h)
    d = q.shape[0]
    U = own.U
    mu = own.mu
    sign = field_sign(ctx.aux[offset.field_reversed])
    at = offset.research_code_coordinates
    y = ctx.aux[at : at + r]
    at = offset.research_code_coefficients
    memo = ctx.aux[at : at + 2 + 2 * r]
    if memo[0] != h or memo[1] != sign:
        memo[0] = h
        memo[1] = sign
        for k in range(r):
            c = research_code_coefficients(h * sign * mu[k], h)
            memo[2 + 2 * k] = c[0]
            memo[3 + 2 * k] = c[1]
    for k in range(r):
        s = 0.0
        for i in range(d):
            s += U[k * d + i] * p[i]
        y[k] = s
    check = position_flow(ctx, q, p, v, h)
    for k in range(r):
        dp = memo[2 + 2 * k] * y[k]
        dq = memo[3 + 2 * k] * y[k]
        x0 = k * d
        for i in range(d):
            q[i] += U[x0 + i] * dq
            p[i] += U[x0 + i] * dp
    for i in range(d):
        check += q[i] - q[i]
    return check


class ResearchCodeMagneticStructure(ConstantFieldStructure):
    """The map of the research's published MHMC code: :math:`p \\leftarrow e^{hsS}p`,
    :math:`q \\leftarrow q + \\int_0^h e^{\\sigma sS} d\\sigma\\, p`, with the symmetric
    :math:`S` of :math:`G`'s upper triangle. Not the magnetic flow; for reproduction only.

    See the module documentation for the maths, and why the published MHMC acceptance rates
    and step sizes come from it. The kick is the canonical one. The sign of :math:`S` is the
    chain's auxiliary variable :data:`~hamiltonia.structures.magnetic.FIELD_AUX`, negated
    by :meth:`reverse` (a rejection does so together with the momentum), as for
    :class:`~hamiltonia.structures.magnetic.MagneticStructure`.

    .. math::

        S = \\operatorname{triu}(G, 1) + \\operatorname{triu}(G, 1)^\\top
          = U_r \\operatorname{diag}(\\mu_r) U_r^\\top.

    Parameters
    ----------
    field : array of shape (dim, dim)
        The antisymmetric :math:`G` as the research code holds it
        (:func:`~hamiltonia.structures.magnetic.research_field` for the research's);
        checked by :func:`~hamiltonia.structures.magnetic.check_field`.

    References
    ----------
    Mongwe (2022), thesis, Algorithm 3 and Table 3.8;
    https://github.com/WilsonMongwe/hybridtorch (``utilities/utils.py``).
    """

    def __init__(self, field):
        self.field = check_field(field)
        self.symmetric = symmetric_from_upper(self.field)
        eigenvalues, vectors = np.linalg.eigh(self.symmetric)
        largest = float(np.max(np.abs(eigenvalues), initial=0.0))
        keep = np.abs(eigenvalues) > RANK_TOLERANCE * largest if largest > 0 else eigenvalues != 0
        self._mu = np.ascontiguousarray(eigenvalues[keep])
        self._U = np.ascontiguousarray(vectors[:, keep])
        self._coefficients: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}

    @property
    def rank(self) -> int:
        """The rank :math:`r` of :math:`S` (two for the research's field, zero for
        :math:`g = 0`)."""
        return int(self._mu.shape[0])

    def check(self, hamiltonian) -> None:
        """Refuse a Hamiltonian the research code's map is not defined for, naming why: the
        code uses :math:`M = I`, a fixed mass, and :math:`H` itself in the accept test."""
        self._check_dim(hamiltonian)
        if hasattr(hamiltonian, "log_weight"):
            raise ValueError(
                "field='research-code' has no shadow Hamiltonian: the magnetic term of "
                "shadow='leapfrog' is that of the rotation exp(hG), and the research code's "
                "map exp(hS) does not keep the kinetic energy; use field='research'"
            )
        if getattr(hamiltonian, "per_chain_mass", False):
            raise ValueError(
                "field='research-code' is the map of the research's MHMC code, which uses "
                "M = I: it takes no random mass (mass_volatility=0)"
            )
        form = getattr(getattr(hamiltonian, "metric", None), "form", None)
        if form != "identity":
            metric = getattr(hamiltonian, "metric", None)
            raise ValueError(
                "field='research-code' is the map of the research's MHMC code, which uses "
                f"M = I: metric must be 'identity', got {type(metric).__name__}"
            )

    @property
    def block(self) -> np.ndarray:
        """:math:`S`: the generator :math:`\\bigl(\\begin{smallmatrix} 0 & I \\\\ -I & S
        \\end{smallmatrix}\\bigr)` of the map with the canonical kick is not antisymmetric,
        so not a Poisson structure: the flow keeps volume (:math:`\\operatorname{tr} S =
        0`), not :math:`H`."""
        return self.symmetric

    def _chain_coefficients(self, h: np.ndarray, sign: np.ndarray):
        """``(e - 1, f - h)`` of shape ``(n, r)`` for per-chain times ``h`` and signs
        ``sign`` (shape ``(n,)``), from a cache by ``(h, sign)``: a trajectory's drifts all
        have the same few."""
        n, r = h.shape[0], self.rank
        e_minus_one = np.empty((n, r))
        f_minus_h = np.empty((n, r))
        cache = self._coefficients
        for c in range(n):
            key = (float(h[c]), float(sign[c]))
            hit = cache.get(key)
            if hit is None:
                if len(cache) >= COEFFICIENT_CACHE:
                    cache.clear()
                pairs = [research_code_coefficients(key[0] * key[1] * m, key[0]) for m in self._mu]
                hit = (np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]))
                cache[key] = hit
            e_minus_one[c], f_minus_h[c] = hit
        return e_minus_one, f_minus_h

    def drift(self, hamiltonian, q, p, h, aux=None):
        aux = {} if aux is None else aux
        q_new = q + h * hamiltonian.velocity(p, aux)
        if self.rank == 0:
            return q_new, p
        xp = backend.xp()
        n = q.shape[0]
        times = np.broadcast_to(np.reshape(backend.to_numpy(h), (-1,)), (n,))
        flags = np.reshape(backend.to_numpy(aux.get(FIELD_AUX, 0.0)), (-1,))
        sign = np.broadcast_to(field_sign(flags), (n,))
        e_minus_one, f_minus_h = (backend.asarray(a) for a in self._chain_coefficients(times, sign))
        U = backend.asarray(self._U)
        # einsum sums each row on its own, so a chain's draws do not depend on the chains
        # beside it (as MagneticStructure.drift).
        y = xp.einsum("cd,dr->cr", p, U)
        return (
            q_new + xp.einsum("cr,dr->cd", f_minus_h * y, U),
            p + xp.einsum("cr,dr->cd", e_minus_one * y, U),
        )

    def compiled(self, dim, hamiltonian=None):
        if hamiltonian is None:
            raise ValueError(
                "ResearchCodeMagneticStructure.compiled needs the sampler's Hamiltonian"
            )
        self.check(hamiltonian)
        r = self.rank
        return PartKernels(
            {
                "kick": canonical_kick_kernel,
                "drift": research_code_drift_kernel,
                "reverse_structure": magnetic_reverse_kernel,
            },
            # The eigenvectors by columns: the kernel reads one as a contiguous run.
            params={"rank": r, "mu": self._mu, "U": self._U.T},
            aux=((FIELD_AUX, 1),),
            workspace=(
                ("research_code_coordinates", r),
                ("research_code_coefficients", 2 + 2 * r),
            ),
        )

    def __repr__(self):
        return f"ResearchCodeMagneticStructure(dim={self.dim}, rank={self.rank})"


def research_code_structure(dim: int, g: float) -> ResearchCodeMagneticStructure:
    """The published MHMC code's map (not the magnetic flow), with the research's field.

    For reproducing the published MHMC figures only. :math:`G_{1i} = g = -G_{i1}`
    (:func:`~hamiltonia.structures.magnetic.research_field`), hence :math:`S_{1i} = S_{i1}
    = g` (:class:`ResearchCodeMagneticStructure`)."""
    return ResearchCodeMagneticStructure(research_field(dim, g))
