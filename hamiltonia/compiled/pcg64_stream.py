"""NumPy's PCG64 stream as plain functions over a state array, for equal draws on the device.

Each chain draws from its own :class:`numpy.random.Generator` over a
:class:`numpy.random.PCG64`; on the compiled CPU path numba calls the same generator, with
numba's copies of NumPy's algorithms. A CUDA device function cannot hold a ``Generator``, so
this module writes the bit generator and the draws the chain kernels make as functions of a
small ``uint64`` state array. Their purpose is that a chain on the device draws exactly the
numbers its CPU twin draws, call for call: the algorithms are NumPy's
(``numpy/random/src/pcg64`` and ``src/distributions``), with the same constant tables (numba's
copies in ``numba.np.random._constants``).

The functions use only scalar integer and float arithmetic, :mod:`math` and indexing, so they
run unchanged as plain Python, under ``numba.njit`` (each is a
:func:`numba.extending.register_jitable`) and as CUDA device functions. The 128-bit state is
kept as two 64-bit halves and multiplied in 32-bit limbs whose products fit in 64 bits, so no
operation overflows: the arithmetic is exact for NumPy ``uint64`` scalars in plain Python (no
overflow warnings) as for numba's wrapping ``uint64``. Integer constants are ``np.uint64``
globals, since numba types a mix of ``uint64`` and ``int64`` as ``float64``.

State layout (:data:`STATE_SIZE` ``uint64`` words)::

    [state_hi, state_lo, inc_hi, inc_lo, has_uint32, uinteger]

:func:`state_of` and :func:`set_state` convert from and to ``bit_generator.state``.

PCG64 (O'Neill 2014) advances a 128-bit linear congruential state and outputs the XSL-RR
permutation of the new state:

.. math::

    s_{n+1} = (a\\,s_n + c) \\bmod 2^{128}, \\qquad
    x_{n+1} = \\operatorname{rotr}_{64}\\!\\big(\\lfloor s_{n+1} / 2^{64} \\rfloor \\oplus
    (s_{n+1} \\bmod 2^{64}),\\; \\lfloor s_{n+1} / 2^{122} \\rfloor\\big),

with :math:`a` = ``0x2360ED051FC65DA44385DF649FCCF645`` and the odd increment :math:`c`.

Notes
-----
On a GPU the integer draws and :func:`next_double` are exact. The float draws are exact where
the device rounds as the host does, which is not the default: NVVM contracts ``a * b + c``
into fused multiply-adds (numba-cuda passes no ``-fma=0``, ``fastmath=False`` or not), which
changes for instance the gamma's :math:`1 + c z`; and libdevice's ``exp``, ``log``, ``log1p``
and ``pow`` may differ from the host's libm in the last bit (the ziggurats' wedge and tail
steps, the gamma). A rejection test decided differently changes how many outputs a draw
consumes, so the two streams part from there.

References
----------
M. E. O'Neill (2014), "PCG: A Family of Simple Fast Space-Efficient Statistically Good
Algorithms for Random Number Generation", Harvey Mudd College, HMC-CS-2014-0905.

G. Marsaglia and W. W. Tsang (2000), "The Ziggurat Method for Generating Random Variables",
Journal of Statistical Software 5(8); and "A Simple Method for Generating Gamma Variables",
ACM Transactions on Mathematical Software 26(3), 363-372.

D. Lemire (2019), "Fast Random Integer Generation in an Interval", ACM Transactions on
Modeling and Computer Simulation 29(1).
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable
from numba.np.random._constants import (
    fe_double,
    fi_double,
    ke_double,
    ki_double,
    we_double,
    wi_double,
    ziggurat_exp_r,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)

__all__ = [
    "GENERATOR_METHODS",
    "STATE_SIZE",
    "exponential",
    "gamma",
    "integers",
    "next_double",
    "next_uint32",
    "next_uint64",
    "normal",
    "set_state",
    "standard_exponential",
    "standard_gamma",
    "standard_normal",
    "state_of",
    "uniform",
]

STATE_HI, STATE_LO, INC_HI, INC_LO, HAS_UINT32, UINTEGER = range(6)
STATE_SIZE = 6

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_BYTE = np.uint64(0xFF)
_MASK32 = np.uint64(0xFFFFFFFF)
_MASK52 = np.uint64(0x000FFFFFFFFFFFFF)
_UINT64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_INT64_MAX = np.uint64(0x7FFFFFFFFFFFFFFF)
_SIXTY_FOUR = np.uint64(64)
_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


@register_jitable
def _mul64(a, b):
    """The 128-bit product of two ``uint64`` as ``(hi, lo)``, from 32-bit limbs:

    .. math::

        a b = a_1 b_1 2^{64} + (a_0 b_1 + a_1 b_0) 2^{32} + a_0 b_0,
        \\qquad a = a_1 2^{32} + a_0,\\; b = b_1 2^{32} + b_0.
    """
    a0 = a & _MASK32
    a1 = a >> 32
    b0 = b & _MASK32
    b1 = b >> 32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> 32) + (p01 & _MASK32) + (p10 & _MASK32)
    hi = a1 * b1 + (p01 >> 32) + (p10 >> 32) + (mid >> 32)
    return hi, ((mid & _MASK32) << 32) | (p00 & _MASK32)


@register_jitable
def _add64(a, b):
    """``(carry, (a + b) mod 2**64)`` for two ``uint64``, without overflowing."""
    low = (a & _MASK32) + (b & _MASK32)
    high = (a >> 32) + (b >> 32) + (low >> 32)
    return high >> 32, ((high & _MASK32) << 32) | (low & _MASK32)


@register_jitable
def _advance(s):
    """Advance the state ``s`` one step, :math:`s \\leftarrow (a s + c) \\bmod 2^{128}`, and
    return its new halves ``(hi, lo)``, in 32-bit limbs (exact in Python as in compiled
    code; :func:`_advance_on_cpu` is the CPU's form)."""
    state_hi = s[STATE_HI]
    state_lo = s[STATE_LO]
    hi, lo = _mul64(state_lo, _MULT_LO)
    hi = _add64(hi, _mul64(state_hi, _MULT_LO)[1])[1]
    hi = _add64(hi, _mul64(state_lo, _MULT_HI)[1])[1]
    carry, lo = _add64(lo, s[INC_LO])
    hi = _add64(_add64(hi, s[INC_HI])[1], carry)[1]
    s[STATE_HI] = hi
    s[STATE_LO] = lo
    return hi, lo


@intrinsic
def _high_product(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two ``uint64`` (one multiplication)."""

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return types.uint64(types.uint64, types.uint64), codegen


@overload(_advance, target="cpu")
def _advance_on_cpu(s):
    """:func:`_advance` on the CPU, a measured optimisation: numba's ``uint64`` arithmetic
    wraps modulo :math:`2^{64}`, so the low half of the product and the cross terms are
    plain multiplications, and the high half of :math:`a_{lo} s_{lo}` one 128-bit
    multiplication. The limbs made a normal and a uniform draw cost 10 ns against numba's
    ``Generator``'s 3.9 ns (1e7 pairs, one core); this form, 4.8 ns. The same
    numbers: the tests compare the compiled streams with NumPy's."""

    def advance(s):
        state_hi = s[STATE_HI]
        state_lo = s[STATE_LO]
        lo = state_lo * _MULT_LO
        hi = _high_product(state_lo, _MULT_LO) + state_hi * _MULT_LO + state_lo * _MULT_HI
        new_lo = lo + s[INC_LO]
        carry = _ONE if new_lo < lo else _ZERO
        new_hi = hi + s[INC_HI] + carry
        s[STATE_HI] = new_hi
        s[STATE_LO] = new_lo
        return new_hi, new_lo

    return advance


@register_jitable
def next_uint64(s):
    """Advance the PCG64 state ``s`` one step and return its 64-bit output.

    .. math::

        s \\leftarrow (a s + c) \\bmod 2^{128}, \\qquad
        x = \\operatorname{rotr}_{64}(s_{hi} \\oplus s_{lo},\\; s_{hi} \\gg 58).

    The product modulo :math:`2^{128}` is
    :math:`a_{lo} s_{lo} + 2^{64}\\,((a_{hi} s_{lo} + a_{lo} s_{hi}) \\bmod 2^{64})`.
    Equal to ``Generator.bit_generator.random_raw()``; the 32-bit buffer is untouched.
    """
    hi, lo = _advance(s)
    x = hi ^ lo
    rot = hi >> 58
    if rot == _ZERO:
        return x
    return (x >> rot) | ((x & ((_ONE << rot) - _ONE)) << (_SIXTY_FOUR - rot))


@register_jitable
def next_uint32(s):
    """The next 32-bit output (as ``uint64``), NumPy's PCG64 ``next_uint32``: one 64-bit
    output gives two, the low half now and the high half, kept in ``uinteger`` with
    ``has_uint32`` set, at the next call."""
    if s[HAS_UINT32] != _ZERO:
        s[HAS_UINT32] = _ZERO
        return s[UINTEGER]
    x = next_uint64(s)
    s[HAS_UINT32] = _ONE
    s[UINTEGER] = x >> 32
    return x & _MASK32


@register_jitable
def next_double(s):
    """A uniform double on :math:`[0, 1)`, ``Generator.random()``:

    .. math:: u = \\lfloor x / 2^{11} \\rfloor \\, 2^{-53}.
    """
    return (next_uint64(s) >> 11) * _TWO_TO_MINUS_53


@register_jitable
def _bounded_lemire32(s, rng):
    """A uniform integer on :math:`0 .. \\mathrm{rng}` for ``rng < 2**32 - 1`` from 32-bit
    outputs, Lemire's multiply-and-reject (NumPy's ``buffered_bounded_lemire_uint32``)."""
    rng_excl = rng + _ONE
    m = next_uint32(s) * rng_excl
    leftover = m & _MASK32
    if leftover < rng_excl:
        threshold = (_MASK32 - rng) % rng_excl
        while leftover < threshold:
            m = next_uint32(s) * rng_excl
            leftover = m & _MASK32
    return m >> 32


@register_jitable
def _bounded_lemire64(s, rng):
    """A uniform integer on :math:`0 .. \\mathrm{rng}` for ``rng < 2**64 - 1`` from 64-bit
    outputs: the high word of :math:`x (\\mathrm{rng} + 1)`, rejecting the low words below
    :math:`(2^{64} - \\mathrm{rng} - 1) \\bmod (\\mathrm{rng} + 1)`."""
    rng_excl = rng + _ONE
    hi, leftover = _mul64(next_uint64(s), rng_excl)
    if leftover < rng_excl:
        threshold = (_UINT64_MAX - rng) % rng_excl
        while leftover < threshold:
            hi, leftover = _mul64(next_uint64(s), rng_excl)
    return hi


@register_jitable
def integers(s, low, high):
    """A uniform ``int64`` on ``low .. high - 1``, ``Generator.integers(low, high)``.

    With :math:`r = \\mathrm{high} - \\mathrm{low} - 1`: no draw when :math:`r = 0`; one or
    more 32-bit outputs (:func:`next_uint32`, so the 32-bit buffer is used) when
    :math:`r < 2^{32}`; 64-bit outputs otherwise. ``low < high`` is required and not checked
    (NumPy raises ``ValueError``). In plain Python pass ``int`` bounds. For spans above
    :math:`2^{53}` numba's own ``Generator.integers`` departs from NumPy (it computes the
    rejection threshold in float64); this function follows NumPy.
    """
    rng = np.uint64(high - low - 1)
    if rng == _ZERO:
        value = _ZERO
    elif rng == _MASK32:
        value = next_uint32(s)
    elif rng < _MASK32:
        value = _bounded_lemire32(s, rng)
    else:
        value = _bounded_lemire64(s, rng)
    if value <= _INT64_MAX:
        return low + np.int64(value)
    return (low + 9223372036854775807) + np.int64(value - _INT64_MAX)


@register_jitable
def standard_normal(s):
    """A standard normal draw, ``Generator.standard_normal()``: NumPy's 256-layer ziggurat.

    One 64-bit output :math:`x` gives the layer :math:`i = x \\bmod 2^8`, a sign bit and a
    52-bit magnitude :math:`r`; the candidate :math:`z = \\pm r\\,w_i` is accepted at once
    when :math:`r < k_i`. Otherwise, in layer 0 a tail draw (Marsaglia & Tsang)

    .. math::

        \\xi = -\\log(1 - u_1) / R, \\quad \\eta = -\\log(1 - u_2), \\quad
        \\text{accept } \\pm(R + \\xi) \\text{ when } 2\\eta > \\xi^2,

    and in the others :math:`z` is accepted when
    :math:`(f_{i-1} - f_i) u + f_i < e^{-z^2/2}`.
    """
    while True:
        r = next_uint64(s)
        idx = r & _BYTE
        r = r >> 8
        sign = r & _ONE
        rabs = (r >> 1) & _MASK52
        x = rabs * wi_double[idx]
        if sign != _ZERO:
            x = -x
        if rabs < ki_double[idx]:
            return x
        if idx == _ZERO:
            while True:
                xx = -ziggurat_nor_inv_r * math.log1p(-next_double(s))
                yy = -math.log1p(-next_double(s))
                if yy + yy > xx * xx:
                    if (rabs >> 8) & _ONE:
                        return -(ziggurat_nor_r + xx)
                    return ziggurat_nor_r + xx
        else:
            f_i = fi_double[idx]
            if (fi_double[idx - _ONE] - f_i) * next_double(s) + f_i < math.exp(-0.5 * x * x):
                return x


@register_jitable
def standard_exponential(s):
    """A standard exponential draw, ``Generator.standard_exponential()``: NumPy's ziggurat
    (the 56 high bits of one output give the layer and the magnitude; layer 0's tail is
    :math:`R - \\log(1 - u)`, the other layers' wedges are accepted when
    :math:`(f_{i-1} - f_i) u + f_i < e^{-z}`)."""
    while True:
        ri = next_uint64(s) >> 3
        idx = ri & _BYTE
        ri = ri >> 8
        x = ri * we_double[idx]
        if ri < ke_double[idx]:
            return x
        if idx == _ZERO:
            return ziggurat_exp_r - math.log1p(-next_double(s))
        f_i = fe_double[idx]
        if (fe_double[idx - _ONE] - f_i) * next_double(s) + f_i < math.exp(-x):
            return x


@register_jitable
def standard_gamma(s, shape):
    """A gamma draw of unit scale, ``Generator.standard_gamma(shape)``.

    ``shape == 1``: :func:`standard_exponential`; ``shape == 0``: 0. ``shape < 1``:
    NumPy's rejection from a uniform :math:`u` and an exponential :math:`v` (Ahrens-Dieter
    GS): :math:`X = u^{1/k}` accepted when :math:`X \\le v` if :math:`u \\le 1 - k`, else
    :math:`y = -\\log((1-u)/k)`, :math:`X = (1 - k + k y)^{1/k}` accepted when
    :math:`X \\le v + y`. ``shape > 1``: Marsaglia & Tsang (2000), with
    :math:`b = k - 1/3`, :math:`c = 1/\\sqrt{9b}`, a normal :math:`z` with
    :math:`V = (1 + c z)^3 > 0` and a uniform :math:`u`:

    .. math::

        \\text{accept } bV \\text{ when } u < 1 - 0.0331 z^4 \\text{ or }
        \\log u < z^2/2 + b (1 - V + \\log V).
    """
    if shape == 1.0:
        return standard_exponential(s)
    if shape == 0.0:
        return 0.0
    if shape < 1.0:
        while True:
            u = next_double(s)
            v = standard_exponential(s)
            if u <= 1.0 - shape:
                x = math.pow(u, 1.0 / shape)
                if x <= v:
                    return x
            else:
                y = -math.log((1 - u) / shape)
                x = math.pow(1.0 - shape + shape * y, 1.0 / shape)
                if x <= v + y:
                    return x
    b = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9 * b)
    while True:
        while True:
            z = standard_normal(s)
            v = 1.0 + c * z
            if v > 0.0:
                break
        v = v * v * v
        u = next_double(s)
        if u < 1.0 - 0.0331 * (z * z) * (z * z):
            return b * v
        if math.log(u) < 0.5 * z * z + b * (1.0 - v + math.log(v)):
            return b * v


@register_jitable
def gamma(s, shape, scale):
    """A gamma draw, ``Generator.gamma(shape, scale)``: ``scale * standard_gamma(s, shape)``
    (``shape, scale >= 0``, not checked)."""
    return scale * standard_gamma(s, shape)


@register_jitable
def normal(s, loc, scale):
    """``Generator.normal(loc, scale)``: :math:`\\mu + \\sigma z`, ``z`` a standard normal."""
    return loc + scale * standard_normal(s)


@register_jitable
def uniform(s, low, high):
    """``Generator.uniform(low, high)``: :math:`a + (b - a) u`, ``u`` from :func:`next_double`."""
    return low + (high - low) * next_double(s)


@register_jitable
def exponential(s, scale):
    """``Generator.exponential(scale)``: ``scale`` times a standard exponential."""
    return scale * standard_exponential(s)


def state_of(generator) -> np.ndarray:
    """The state array of a PCG64 ``generator`` (a ``Generator`` or the ``PCG64`` itself),
    from ``bit_generator.state``: ``{"bit_generator": "PCG64", "state": {"state": int,
    "inc": int}, "has_uint32": int, "uinteger": int}``."""
    bits = getattr(generator, "bit_generator", generator)
    state = bits.state
    if state["bit_generator"] != "PCG64":
        raise ValueError(f"expected a PCG64 generator, got {state['bit_generator']}")
    value, inc = state["state"]["state"], state["state"]["inc"]
    mask = 0xFFFFFFFFFFFFFFFF
    words = [value >> 64, value & mask, inc >> 64, inc & mask]
    return np.array([*words, state["has_uint32"], state["uinteger"]], dtype=np.uint64)


def set_state(generator, s) -> None:
    """Set the PCG64 ``generator`` (a ``Generator`` or the ``PCG64`` itself) to the state
    array ``s``, so that it continues the stream drawn from ``s``."""
    bits = getattr(generator, "bit_generator", generator)
    words = [int(word) for word in s]
    if len(words) != STATE_SIZE:
        raise ValueError(f"a PCG64 state array has {STATE_SIZE} words, got {len(words)}")
    bits.state = {
        "bit_generator": "PCG64",
        "state": {
            "state": (words[STATE_HI] << 64) | words[STATE_LO],
            "inc": (words[INC_HI] << 64) | words[INC_LO],
        },
        "has_uint32": words[HAS_UINT32],
        "uinteger": words[UINTEGER],
    }


#: The methods of ``numpy.random.Generator`` a kernel may call as ``ctx.rng.METHOD(...)``,
#: and the functions of this module that stand for them where the chain's generator is a
#: state array (the chain kernels, :mod:`hamiltonia.compiled.compose`).
GENERATOR_METHODS = {
    "random": next_double,
    "standard_normal": standard_normal,
    "normal": normal,
    "uniform": uniform,
    "integers": integers,
    "standard_exponential": standard_exponential,
    "exponential": exponential,
    "standard_gamma": standard_gamma,
    "gamma": gamma,
}
