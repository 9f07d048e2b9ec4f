"""hamiltonia.elementary: NumPy's functions to the bit on NumPy, the same numbers on another
array backend, and NumPy's function inside a composed kernel."""

import numpy as np
import pytest

from hamiltonia import backend, elementary
from hamiltonia.compiled.compose import compose, module_text

FUNCTIONS = ["exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tanh", "sinc"]
#: Points in every function's domain (sinc's special value 0 is checked on its own).
POINTS = np.array([1e-9, 0.3, 1.0, 2.5, 7.0])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_numpy_arrays_and_scalars_get_numpys_function(name):
    fn, want = getattr(elementary, name), getattr(np, name)
    np.testing.assert_array_equal(fn(POINTS), want(POINTS))
    assert fn(0.3) == want(0.3) and fn(np.float64(2.5)) == want(2.5)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_another_backend_computes_on_its_own_arrays_as_numpy_does(name):
    strict = pytest.importorskip("array_api_strict")
    got = getattr(elementary, name)(strict.asarray(POINTS))
    assert isinstance(got, type(strict.asarray(POINTS)))  # no NumPy array came back
    # sinc is NumPy's formula through the array API: the same rounding.
    np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(POINTS))


def test_sinc_is_one_at_zero_on_every_backend():
    strict = pytest.importorskip("array_api_strict")
    assert elementary.sinc(0.0) == 1.0
    at_zero = elementary.sinc(strict.asarray([0.0, -0.0, 0.5]))
    np.testing.assert_array_equal(np.asarray(at_zero), np.sinc([0.0, -0.0, 0.5]))


def _uses_elementary(x):
    return elementary_exp(x) + elementary_sinc(x) * elementary_sqrt(x)


elementary_exp, elementary_sinc, elementary_sqrt = elementary.exp, elementary.sinc, elementary.sqrt


def test_a_kernel_calls_numpys_function():
    text, _ = module_text({}, _uses_elementary)
    assert "m_numpy.exp(x)" in text and "m_numpy.sinc(x)" in text
    chain = compose({}, _uses_elementary)
    for x in (0.0, 0.7, 3.0):
        assert chain(x) == _uses_elementary(x)


def test_einsum_without_one_in_the_namespace_contracts_as_numpy():
    strict = pytest.importorskip("array_api_strict")
    assert not hasattr(strict, "einsum")  # else the fallback is not what runs here
    rng = np.random.default_rng(0)
    cases = [("cd,dr->cr", [(3, 4), (4, 5)]), ("cd,cdr->cr", [(3, 4), (3, 4, 5)]),
             ("cr,dr->cd", [(3, 5), (4, 5)]), ("cr,cdr->cd", [(3, 5), (3, 4, 5)]),
             ("ci,ij,cj->c", [(3, 4), (4, 4), (3, 4)]), ("ij->ji", [(2, 3)])]  # fmt: skip
    for subscripts, shapes in cases:
        operands = [rng.normal(size=shape) for shape in shapes]
        got = backend.einsum(subscripts, *(strict.asarray(a) for a in operands))
        want = np.einsum(subscripts, *operands)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="repeated index"):
        backend.einsum("ii->i", strict.asarray(np.eye(2)))
