"""The command line: every command explains itself; deal and show round-trip text."""

import subprocess
import sys

import pytest

from engine_rs_free.cards import format_deck, parse_deck
from engine_rs_free.deals import deal
from pipeline.cli import _command_modules, build_parser, main


def test_every_command_has_help_with_an_example(capsys):
    mods = _command_modules()
    assert {"deal", "show", "bench"} <= {m.NAME for m in mods}
    for mod in mods:
        with pytest.raises(SystemExit) as exit_:
            main([mod.NAME, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert "example" in out.lower(), f"acesup {mod.NAME} --help shows no example"


def test_deal_prints_deck_lines_that_parse_back(capsys):
    assert main(["deal", "--seed", "2026", "--index", "3", "--count", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0] == format_deck(deal(2026, 3))
    assert list(parse_deck(lines[1])) == list(deal(2026, 4))


def test_show_replays_a_line(capsys):
    deck_text = format_deck(deal(0, 0))
    assert main(["show", "--deck", deck_text, "--line", "1>0 d"]) == 0
    out = capsys.readouterr().out
    assert out.count("stock") == 3 and "2. d" in out and "legal now:" in out


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["show", "--deck", "AS KS"], "52 cards expected, got 2"),
        (["show", "--seed", "0", "--line", "d 0>0"], "action 2 '0>0'"),
        (["show", "--seed", "0", "--variant", "klondike"], "unknown variant 'klondike'"),
        (["deal", "--seed", "-5"], "seed -5 is out of range"),
        (["deal", "--seed", "1", "--count", "0"], "--count 0 is not positive"),
    ],
)
def test_user_errors_are_one_message_and_exit_2(argv, fragment, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"acesup {argv[0]}: error:") and fragment in err
    assert "Traceback" not in err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "pipeline.cli", "deal", "--seed", "0"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == format_deck(deal(0, 0))


def test_parser_builds():
    assert build_parser().prog == "acesup"


@pytest.mark.parametrize("text", ["", "\n\n", "# decks of tonight\n\n"])
def test_a_deck_file_without_decks_is_an_error(text, tmp_path, capsys):
    path = tmp_path / "decks.txt"
    path.write_text(text)
    assert main(["solve", "--decks", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (f"acesup solve: error: deck file {str(path)!r} holds no decks (it is empty, or has "
                                    f"only blank and '#' lines); give one deck a line, 52 card codes, e.g. from "
                                    f"'acesup deal --seed 1 --count 10'")
