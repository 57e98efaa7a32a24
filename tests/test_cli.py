"""The command line: the demo, the version, help that names the command as typed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import bayes_rvm
from bayes_rvm.__main__ import main


def test_demo_runs_and_saves_the_figure(tmp_path, capsys):
    """Each comparison: ours over the draws beside the paper's value, and why they differ."""
    assert main(["demo", "--repeats", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "9 RVs, max |error| 0.0070" in out and "noise sd fixed at 0.01" in out
    assert out.count("ours, 3 draws: median (range)") == 3
    assert out.count("why they differ: ") == 4
    assert (tmp_path / "demo_sinc.png").stat().st_size > 10_000


def test_unknown_command_is_an_error(capsys):
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "invalid choice" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"bayes_rvm {bayes_rvm.__version__}"


@pytest.mark.parametrize(
    ("argv0", "usage"),
    [
        ("/home/user/.venv/bin/bayes-rvm", "usage: bayes-rvm reproduce"),
        (os.path.join(os.path.dirname(bayes_rvm.__file__), "__main__.py"),
         "usage: python -m bayes_rvm reproduce"),
    ],
)  # fmt: skip
def test_help_names_the_command_as_typed(monkeypatch, capsys, argv0, usage):
    monkeypatch.setattr(sys, "argv", [argv0, "reproduce", "--help"])
    with pytest.raises(SystemExit):
        main()
    assert capsys.readouterr().out.startswith(usage)


def test_help_of_python_dash_m_and_its_grammar():
    """A real ``python -m bayes_rvm`` process: its usage line, and "1 repetition" singular."""
    help_text = subprocess.run(
        [sys.executable, "-m", "bayes_rvm", "reproduce", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    assert help_text.startswith("usage: python -m bayes_rvm reproduce")
    assert "1 repetition per row" in help_text and "1 repetitions" not in help_text
