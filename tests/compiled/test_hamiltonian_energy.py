"""The role ``hamiltonian_energy`` (issue 48): the accept step's energy, which the composer
binds once per composition (to ``target_energy`` where the Hamiltonian's energy reads the
target, else to a kernel calling ``energy``), in place of the idiom
``if energy_reads_target: target_energy(...) else: energy(...)`` written at every call site.
The idiom, and the roles it uses, keep working for a plugin's kernel."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import hamiltonia as hm
from hamiltonia.compiled import NotCompilable, plan_for
from hamiltonia.compiled.chain import energy_without_target_kernel, no_op_kernels
from hamiltonia.compiled.compose import CompositionError, compose, module_text
from hamiltonia.compiled.context import chain_context
from hamiltonia.compiled.roles import (
    COMPOSED_ROLES,
    ROLE_SLOTS,
    energy,
    energy_reads_target,
    hamiltonian_energy,
    target_energy,
)

# -- kernels (module level: the composer reads their source)


def toy_energy_kernel(ctx, q, p, lp, grad, v, eps):
    h = -lp
    for i in range(p.shape[0]):
        h += 0.5 * p[i] * p[i]
    return h


def toy_target_energy_kernel(ctx, q, p, lp, grad, v, eps):
    """An energy that reads the target's data: ``energy`` plus its first float."""
    return energy(ctx, q, p, lp, grad, v, eps) + ctx.fdata[0]


def new_entry(q, p, lp, grad, v, eps, aux, PF, PI, logp, fdata, idata):
    ctx = chain_context(None, aux, None, None, PF, PI, logp, fdata, idata)
    return hamiltonian_energy(ctx, q, p, lp, grad, v, eps)


def legacy_entry(q, p, lp, grad, v, eps, aux, PF, PI, logp, fdata, idata):
    """A plugin's kernel written against the roles before ``hamiltonian_energy``."""
    ctx = chain_context(None, aux, None, None, PF, PI, logp, fdata, idata)
    if energy_reads_target:
        h = target_energy(ctx, q, p, lp, grad, v, eps)
    else:
        h = energy(ctx, q, p, lp, grad, v, eps)
    return h


def _roles(reads: bool) -> dict:
    roles = dict(no_op_kernels())
    roles["energy"] = toy_energy_kernel
    roles["energy_reads_target"] = reads
    if reads:
        roles["target_energy"] = toy_target_energy_kernel
    return roles


def _call(chain):
    q, p = np.array([0.3, -1.0]), np.array([1.0, 2.0])
    grad, v, aux = np.zeros(2), np.zeros(2), np.zeros(1)
    PF, PI = (np.zeros(1),), np.zeros(1, dtype=np.int64)
    fdata, idata = np.array([10.0]), np.zeros(1, dtype=np.int64)
    return chain(q, p, -1.5, grad, v, 0.1, aux, PF, PI, 0, fdata, idata)


def test_it_is_a_role_the_composer_binds_and_no_part_fills():
    assert COMPOSED_ROLES == {"hamiltonian_energy": ROLE_SLOTS["energy"]}
    assert "hamiltonian_energy" not in ROLE_SLOTS
    with pytest.raises(RuntimeError, match="compiled composition"):
        hamiltonian_energy(*range(12))


@pytest.mark.parametrize("reads", [False, True])
def test_it_binds_the_energy_the_flag_chooses_and_agrees_with_the_idiom(reads):
    text, _ = module_text(_roles(reads), new_entry)
    if reads:
        # The target's energy itself: no wrapper, no branch.
        assert "return role_target_energy(ctx, q, p, lp" in text
        assert "def role_hamiltonian_energy" not in text
    else:
        # The energy without the target; the target's energy is not composed at all.
        assert "def role_hamiltonian_energy" in text and "def role_target_energy" not in text
    assert "energy_reads_target" not in text
    expected = 2.5 + 1.5 + (10.0 if reads else 0.0)
    assert _call(compose(_roles(reads), new_entry)) == expected
    assert _call(compose(_roles(reads), legacy_entry)) == expected


def test_the_flag_defaults_to_off():
    roles = {"energy": toy_energy_kernel}
    assert _call(compose(roles, new_entry)) == 4.0


def test_a_composition_that_fills_it_is_refused():
    roles = {**_roles(False), "hamiltonian_energy": energy_without_target_kernel}
    with pytest.raises(CompositionError, match="bound by the composer"):
        module_text(roles, new_entry)


class FillsTheComposedRole(hm.EuclideanHamiltonian):
    def compiled(self, dim):
        kernels = super().compiled(dim)
        functions = {**kernels.functions, "hamiltonian_energy": energy_without_target_kernel}
        return replace(kernels, functions=functions)


def test_a_part_that_fills_it_is_not_compiled():
    target = hm.targets.get("gaussian")
    sampler = hm.HamiltonianSampler(
        hamiltonian=FillsTheComposedRole(target),
        integrator=hm.Leapfrog(),
        trajectory=hm.StaticLength(3),
        tuners=[],
        step_size=0.3,
    )
    with pytest.raises(NotCompilable, match="hamiltonian_energy"):
        plan_for(sampler)


def test_no_kernel_of_the_package_writes_the_idiom_out():
    """The choice between ``energy`` and ``target_energy`` is written once, in the composer:
    a kernel calls ``hamiltonian_energy``."""
    package = Path(hm.__file__).parent
    found = []
    for source in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "energy_reads_target":
                found.append(f"{source.relative_to(package)}:{node.lineno}")
    assert found == []
