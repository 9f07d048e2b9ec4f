"""skip_unless_installed: a plugin's test module skips itself when the plugin is absent."""

import pytest

from hamiltonia.testing import skip_unless_installed


def test_an_installed_distribution_lets_the_module_run():
    assert skip_unless_installed("hamiltonia") is None


def test_a_missing_plugin_skips_the_module_saying_how_to_install_it():
    with pytest.raises(pytest.skip.Exception, match=r"pip install -e plugins/no-such-plugin"):
        skip_unless_installed("no-such-plugin")
