"""The targets' modules split by their jobs (issue 48) keep their old import paths: each old
module still exports what it exported (its ``__all__``, and the names other modules import
from it), as the very objects of the modules that now hold them, and a pickle that names a
class by its old path (as earlier versions wrote them) still loads."""

from __future__ import annotations

import importlib
import pickle

import pytest

#: old module -> (its ``__all__`` before the split, {new module: names it now holds}).
MOVED = {
    "hamiltonia.targets.jump_diffusion": (
        ["MAX_TERMS", "NAMES", "PAPER_NAMES", "PAPER_TAU", "MertonJumpDiffusion",
         "NaturalMertonJumpDiffusion", "default_priors", "jdp_btc", "jdp_sp500", "jdp_usdzar"],
        {
            "hamiltonia.targets.jump_diffusion_model": [
                "MAX_TERMS", "NAMES", "MertonJumpDiffusion", "default_priors"],
            "hamiltonia.targets.jump_diffusion_paper": [
                "PAPER_NAMES", "PAPER_TAU", "NaturalMertonJumpDiffusion"],
        },
    ),
    "hamiltonia.targets.base": (
        ["SETTINGS", "CompileWarning", "ExactMoments", "FunctionTarget", "RowByRowWarning",
         "Target", "accepts_batches", "autograd_functions", "check_one_number", "check_setting",
         "jax_functions", "numba_functions", "with_setting"],
        {
            "hamiltonia.targets.logp_backends": [
                "AUTOGRAD_NUMPY_BACKENDS", "_jax_x64", "accepts_batches", "autograd_functions",
                "check_dim", "check_one_number", "jax_functions", "numba_functions",
                "numba_or_autograd"],
            "hamiltonia.targets.logp_warnings": ["CompileWarning", "RowByRowWarning"],
        },
    ),
    "hamiltonia.targets.mlp": (
        ["ACTIVATIONS", "DATA_INTERVALS", "DATA_SEED", "GENERATOR_WIDTHS", "PAPER_HIDDEN",
         "PAPER_N_OBS", "PAPER_TAU", "MLPRegression", "Prediction", "Regression1DData",
         "regression_1d", "regression_1d_data"],
        {
            "hamiltonia.targets.mlp_data": [
                "DATA_INTERVALS", "DATA_SEED", "GENERATOR_WIDTHS", "PAPER_N_OBS", "PAPER_TAU",
                "Regression1DData", "regression_1d_data"],
        },
    ),
}  # fmt: skip


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_module_exports_what_it_did(old):
    exported, homes = MOVED[old]
    module = importlib.import_module(old)
    assert sorted(module.__all__) == sorted(exported)
    for new, names in homes.items():
        home = importlib.import_module(new)
        for name in names:
            assert getattr(module, name) is getattr(home, name), f"{old}.{name}"


@pytest.mark.parametrize(
    ("old", "name"),
    [
        ("hamiltonia.targets.jump_diffusion", "MertonJumpDiffusion"),
        ("hamiltonia.targets.jump_diffusion", "NaturalMertonJumpDiffusion"),
        ("hamiltonia.targets.base", "RowByRowWarning"),
        ("hamiltonia.targets.base", "jax_functions"),
        ("hamiltonia.targets.base", "_jax_x64"),
        ("hamiltonia.targets.mlp", "Regression1DData"),
    ],
)
def test_a_pickle_naming_the_old_path_loads(old, name):
    # Protocol 0's global opcode, as a pickle written before the split names the object.
    found = pickle.loads(f"c{old}\n{name}\n.".encode())
    assert found is getattr(importlib.import_module(old), name)


def test_the_registered_factories_keep_their_entry_point_paths():
    from hamiltonia.targets.jump_diffusion import jdp_btc, jdp_sp500, jdp_usdzar
    from hamiltonia.targets.mlp import regression_1d

    for factory in (jdp_sp500, jdp_btc, jdp_usdzar):
        assert factory.__module__ == "hamiltonia.targets.jump_diffusion"
    assert regression_1d.__module__ == "hamiltonia.targets.mlp"
