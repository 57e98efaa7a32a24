"""The command line: the demo runs and prints the paper's numbers beside ours."""

from __future__ import annotations

import pytest

from bayes_rvm.__main__ import main


def test_demo_runs_and_saves_the_figure(tmp_path, capsys):
    assert main(["demo", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Fig. 1" in out and "9 RVs, max err 0.0070" in out
    assert (tmp_path / "demo_sinc.png").stat().st_size > 10_000


def test_unknown_command_is_an_error(capsys):
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "invalid choice" in capsys.readouterr().err
