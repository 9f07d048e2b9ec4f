"""The tree-depth check of diagnose(): NUTS trajectories cut short are counted."""

import hamiltonia as hm


def test_nuts_stopped_at_its_maximum_tree_depth_is_warned_about():
    """As Stan's diagnose: iterations whose trees reached max_tree_depth are counted."""
    result = hm.sample("banana", chains=2, warmup=200, draws=200, seed=1, max_tree_depth=3,
                       progress=False)  # fmt: skip
    assert result.attrs["max_tree_depth"] == 3
    (problem,) = [p for p in result.diagnose() if p.check == "tree_depth"]
    full = int((result.stats["tree_depth"] >= 3).sum())
    assert full > 0 and problem.message.startswith(f"{full} of 400 iterations")
    deep = hm.sample("banana", chains=2, warmup=200, draws=200, seed=1, progress=False)
    assert deep.attrs["max_tree_depth"] == 10
    assert not [p for p in deep.diagnose() if p.check == "tree_depth"]
