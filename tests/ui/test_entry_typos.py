"""A mistyped command says which one was meant."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv, meant", [
    (["worksapce", "list"], "did you mean 'workspace'?"),
    (["wokspace"], "did you mean 'workspace'?"),
    (["workspace", "lsit"], "did you mean 'list'?"),
])
def test_a_mistyped_command_suggests_the_one_meant(argv, meant, isolated, capsys):
    from ui.main import main

    try:
        code = main(argv)
    except SystemExit as ended:  # argparse's own exit, for a subcommand's action
        code = ended.code
    err = capsys.readouterr().err
    assert code == 2 and meant in err and err.count("\n") == 1, err
