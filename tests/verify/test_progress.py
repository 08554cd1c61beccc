"""Progress: a bar on a terminal, plain lines elsewhere; every --help says what it writes."""

import io

import pytest

from sim.cli import SUBCOMMANDS, _module
from sim.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("stream, tty", [(io.StringIO, False), (Terminal, True)])
def test_progress_modes(stream, tty):
    out = stream()
    with Progress(3, out, "gen") as bar:
        for name in ("a", "b", "c"):
            bar.step(f"layer {name}", "pass 1")
    text = out.getvalue()
    if tty:
        assert text.count("\r") == 3 and text.endswith("\n")
        assert "[" + "#" * 30 + "] 3/3 pass 1" in text
    else:
        assert "\r" not in text
        assert text.splitlines() == ["gen [1/3] layer a", "gen [2/3] layer b", "gen [3/3] layer c"]


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_help_names_what_it_writes(command, capsys):
    try:
        code = _module(command).main(["--help"])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 0
    assert "writes:" in capsys.readouterr().out
