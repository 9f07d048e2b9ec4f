"""``hamiltonia reproduce``: the list, a run printing published beside reproduced, and the
errors a user can fix."""

import pytest

from hamiltonia.cli import main
from hamiltonia.reproduce.experiment import experiment_names


def test_list_shows_every_experiment(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in experiment_names():
        assert name in out


def test_a_run_prints_the_table_and_writes_the_report(capsys, tiny_file, tmp_path):
    out_dir = tmp_path / "rep"
    code = main(
        ["reproduce", str(tiny_file), "--only", "Banana/HMC", "-o", str(out_dir), "--no-progress"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "| AR (%) published | 90.0 |" in out
    assert "AR (%) reproduced" in out
    assert (out_dir / "tiny.md").exists()
    assert (out_dir / "tiny-ess.png").exists()
    page = tmp_path / "page.rst"
    assert main(["reproduce", "--docs-page", str(page), str(out_dir)]) == 0
    assert "tiny: A tiny experiment" in page.read_text()
    # The page is not replaced unasked.
    assert main(["reproduce", "--docs-page", str(page), str(out_dir)]) == 2
    assert "exists" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["reproduce"], "experiment name"),
        (["reproduce", "no-such"], "no experiment 'no-such'"),
        (["reproduce", "ch5-blr", "--only", "Pima/NUTS"], "Pima/HMC"),
        (["reproduce", "ch5-blr", "--scale", "huge"], "scale"),
        (["reproduce", "--docs-page", "x.rst"], "folders"),
    ],
)
def test_errors_a_user_can_fix(capsys, argv, says):
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_the_docs_page_must_be_a_regular_file(capsys, tmp_path):
    # A folder (or device or pipe) is refused before anything is read, overwrite or not.
    assert main(["reproduce", "--docs-page", str(tmp_path), "--overwrite", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err
