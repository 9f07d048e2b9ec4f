"""``hamiltonia compile`` (hamiltonia.runner.prebuild): the kernels it compiles are those a
user's first run on the same machine needs, so that run compiles no chain kernel."""

import os
import subprocess
import sys

import pytest

from hamiltonia import cli
from hamiltonia.runner import prebuild

#: Prints the names of the functions numba compiles while a user's model runs.
FIRST_RUN = """
import warnings
from numba.core import event
import autograd.numpy as np
import hamiltonia as hm

compiled = []


class Recorder(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Recorder())
model = hm.Model(lambda p: -0.5 * np.sum(p["a"] ** 2) - p["s"], {"a": hm.real(3),
                 "s": hm.positive()})
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    result = hm.sample(model, "mala", chains=2, warmup=20, draws=20, progress=False)
print(result.attrs["compiled"], "chain" in compiled)
"""


def _fresh(script, env):
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_first_run_after_compile_compiles_no_chain_kernel(tmp_path):
    env = dict(os.environ, HAMILTONIA_CACHE=str(tmp_path / "cache"),
               HAMILTONIA_KERNEL_DIR=str(tmp_path / "kernels"))  # fmt: skip
    # Empty folders: the model's first run compiles the chain kernel (the test can fail).
    assert _fresh(FIRST_RUN, env) == ["True", "True"]
    env["HAMILTONIA_CACHE"] = str(tmp_path / "cache-2")
    env["HAMILTONIA_KERNEL_DIR"] = str(tmp_path / "kernels-2")
    argv = ["compile", "mala", "--no-diagnostics"]
    script = f"import sys, hamiltonia.cli as c; sys.exit(c.main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "sampler mala" in done.stdout and "calls" in done.stdout
    # Another process, another target: the kernel comes from the cache.
    assert _fresh(FIRST_RUN, env) == ["True", "False"]


def test_what_it_reports(capsys):
    done = prebuild.prebuild(["mala", "rwmh"], diagnostics=False)
    assert [item.what for item in done] == ["sampler mala", "sampler rwmh", "calls"]
    assert [item.compiled for item in done] == [True, False, True]
    assert all(item.seconds >= 0 for item in done)
    assert cli.main(["compile", "rwmh", "--no-diagnostics"]) == 0
    out = capsys.readouterr().out
    assert "sampler rwmh" in out and "no compiled path: it runs in NumPy" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["compile", "NUTS"], "unknown sampler 'NUTS'; did you mean 'nuts'?"),
        (["compile", "nuts", "--all"], "give sampler names or --all, not both"),
    ],
)
def test_bad_input_is_refused_before_any_work(capsys, argv, fragment, monkeypatch):
    monkeypatch.setattr(prebuild, "_calls", lambda: pytest.fail("work was done"))
    assert cli.main(argv) == 2
    assert fragment in capsys.readouterr().err


def test_a_cache_folder_it_cannot_write_is_refused_before_any_work(capsys, tmp_path,
                                                                    monkeypatch):  # fmt: skip
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("HAMILTONIA_CACHE", str(tmp_path / "a-file" / "cache"))
    monkeypatch.setattr(prebuild, "_calls", lambda: pytest.fail("work was done"))
    assert cli.main(["compile", "mala"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the kernel cache folder" in err and "HAMILTONIA_CACHE" in err
