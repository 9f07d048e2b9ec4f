"""The magnetic structure's module keeps its flow, its normal form and its kernels; the
fields and their checks live in ``structures.magnetic_fields`` (issue 48).
``structures.magnetic`` still gives every name it gave before (setup.cfg's entry point and
the docs name it), the same objects as their new homes'; its kernels keep their module path
(the composed module names them by it)."""

from __future__ import annotations

from hamiltonia.structures import magnetic
from tests.moved import assert_re_exported

#: Each name ``magnetic`` had before the split that moved, by its new home.
HOMES = {
    "magnetic_fields": ["check_field", "check_field_strength", "random_field", "research_field"],
}

#: ``magnetic.__all__`` before the split: unchanged.
PUBLIC = [
    "FIELD_AUX", "ConstantFieldStructure", "MagneticStructure", "antisymmetric_blocks",
    "check_field", "field_basis", "field_sign", "magnetic_pair_update", "random_field",
    "research_field",
]  # fmt: skip


def test_every_name_is_where_it_was():
    homes = {f"hamiltonia.structures.{module}": names for module, names in HOMES.items()}
    assert_re_exported("hamiltonia.structures.magnetic", homes, PUBLIC)


def test_the_kernels_keep_their_module_path():
    kernels = [
        "magnetic_drift_kernel", "chain_magnetic_drift_kernel", "magnetic_prepare_kernel",
        "magnetic_reverse_kernel", "field_sign", "magnetic_pair_update", "field_basis",
    ]  # fmt: skip
    for name in kernels:
        assert getattr(magnetic, name).__module__ == "hamiltonia.structures.magnetic", name
    assert magnetic.MagneticStructure.__module__ == "hamiltonia.structures.magnetic"
