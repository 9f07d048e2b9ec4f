"""The pytest plugin (hamiltonia.testing.plugin, entry point ``pytest11``): its fixtures are the
kit's functions, and it defines the ``slow`` marker only where the project has none."""

import numpy as np

import hamiltonia.testing as kit
from hamiltonia.testing import plugin


def test_the_fixtures_are_the_kit(
    hamiltonia_seed, gaussian_target, assert_paths_agree, check_integrator, check_invariance,
    check_gradient, assert_moments, request,
):  # fmt: skip
    assert hamiltonia_seed == plugin.HAMILTONIA_SEED
    assert isinstance(gaussian_target, kit.GaussianTarget) and gaussian_target.dim == 3
    assert gaussian_target.exact_moments is not None
    assert assert_paths_agree is kit.assert_paths_agree
    assert check_integrator is kit.check_integrator
    assert check_invariance is kit.check_invariance
    assert check_gradient is kit.check_gradient
    assert assert_moments is kit.assert_moments_recovered
    # Loaded through its entry point (not a conftest), under the name "hamiltonia".
    assert request.config.pluginmanager.get_plugin("hamiltonia") is plugin


class _Config:
    def __init__(self, markers):
        self.markers = list(markers)

    def getini(self, name):
        assert name == "markers"
        return list(self.markers)

    def addinivalue_line(self, name, line):
        self.markers.append(line)


def test_the_slow_marker_is_added_only_where_missing(request):
    bare = _Config([])
    plugin.pytest_configure(bare)
    assert [m.split(":")[0] for m in bare.markers] == ["slow"]
    own = _Config(["slow: the project's own"])
    plugin.pytest_configure(own)
    assert own.markers == ["slow: the project's own"]
    # This project defines it (setup.cfg): once, with its own text.
    slow = [m for m in request.config.getini("markers") if m.startswith("slow")]
    assert len(slow) == 1 and "run with -m slow" in slow[0]


def test_the_gaussian_fixture_is_a_good_target(gaussian_target, check_gradient):
    check_gradient(gaussian_target)
    moments = gaussian_target.exact_moments
    np.testing.assert_array_equal(moments.mean, gaussian_target.mean)
    np.testing.assert_array_equal(moments.var, np.diag(gaussian_target.covariance))
