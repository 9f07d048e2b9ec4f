import pytest

TINY = """
name = "tiny"
title = "A tiny experiment"
source = "a test"
notes = ["a note"]

[protocol]
chains = 2
draws = 60
warmup = 30
init = "normal"
seed = 3

[scales.small]
draws = 40

[options]
metric = "identity"
adapt_step_size = false

[[targets]]
label = "Banana"
name = "banana"
vars = { L = 5, eps = 0.1 }

[[targets]]
label = "Gauss"
name = "gaussian-d10"
vars = { L = 5, eps = 0.2 }

[[samplers]]
label = "HMC"
recipe = "hmc"
options = { step_size = "$eps", n_steps = "$L" }

[[samplers]]
label = "PHMC"
recipe = "phmc"
options = { step_size = "$eps", n_steps = "$L", rho = 0.7 }

[published.Banana]
acceptance = { HMC = 90.0, PHMC = 90.0 }
ess = { HMC = 10, PHMC = 20 }

[[claims]]
text = "PHMC beats HMC on ESS"
rule = "greater"
metric = "ess"
pairs = [["PHMC", "HMC"]]
"""


@pytest.fixture
def tiny_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path
