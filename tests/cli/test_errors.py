"""Every failure of every command is one line on stderr and a non-zero exit status; the
traceback comes only with ``--debug`` or ``KUBESCHED_DEBUG``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubesched.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    error_line,
    report_failure,
)
from kubesched.cli.main import build_parser, main
from kubesched.errors import UserInputError

HINT = " (run with --debug for the traceback)"


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub-)command that runs something: its words and its parser."""
    if parser.get_default("func") is not None:
        yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*path, name))


def _argv(path: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    """The command's words and a placeholder for each argument it requires."""
    argv = list(path)
    for action in parser._actions:
        if not action.option_strings and action.nargs in (None, "+"):
            argv.append("x")
        elif action.option_strings and action.required:
            argv += [action.option_strings[0], "x"]
    return argv


COMMANDS = sorted(_leaves(build_parser()))


def _failing(monkeypatch: pytest.MonkeyPatch, parser: argparse.ArgumentParser, err: BaseException):
    """Make the command behind ``parser`` raise ``err`` (main builds its parser anew)."""
    func: Callable[..., Any] = parser.get_default("func")

    def raising(_args: argparse.Namespace) -> int:
        raise err

    monkeypatch.setattr(sys.modules[func.__module__], func.__name__, raising)


def test_every_command_is_covered() -> None:
    names = {path[0] for path, _ in COMMANDS}
    assert {"simulate", "run", "bench", "capacity", "compare", "config", "plugins"} <= names


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_an_unexpected_exception_is_one_line(path, parser, monkeypatch, capsys) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    _failing(monkeypatch, parser, ZeroDivisionError("division by zero"))
    assert main(_argv(path, parser)) == 1
    captured = capsys.readouterr()
    assert captured.err == f"error: {path[0]}: ZeroDivisionError: division by zero{HINT}\n"


@pytest.mark.parametrize("how", ["before", "after", "environment"])
@pytest.mark.parametrize(
    ("path", "parser"), COMMANDS[:3], ids=[" ".join(p) for p, _ in COMMANDS[:3]]
)
def test_debug_adds_the_traceback(path, parser, how, monkeypatch, capsys) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    _failing(monkeypatch, parser, RuntimeError("boom"))
    argv = _argv(path, parser)
    if how == "before":
        argv.insert(0, "--debug")
    elif how == "after":
        argv.append("--debug")
    else:
        monkeypatch.setenv("KUBESCHED_DEBUG", "1")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert "in raising" in err
    assert err.endswith(f"\nerror: {path[0]}: RuntimeError: boom\n")
    # --debug lasts for the command only.
    if how != "environment":
        assert "KUBESCHED_DEBUG" not in os.environ


@pytest.mark.parametrize(
    ("err", "line"),
    [
        (
            UserInputError("no such file", source="a.yaml", obj="--config"),
            "error: a.yaml: --config: no such file",
        ),
        (RuntimeError("boom"), f"error: simulate: RuntimeError: boom{HINT}"),
        (KeyError("zone"), f"error: simulate: KeyError: 'zone'{HINT}"),
        (RuntimeError("two\n  lines\n"), f"error: simulate: RuntimeError: two lines{HINT}"),
        (RuntimeError(), f"error: simulate: RuntimeError{HINT}"),
    ],
    ids=["kubesched-error", "plain", "key-error", "multi-line", "no-message"],
)
def test_error_line(err: BaseException, line: str, monkeypatch) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    assert error_line(err, "simulate") == line


@pytest.mark.parametrize(
    ("err", "status", "line"),
    [
        (KeyboardInterrupt(), EXIT_INTERRUPTED, "interrupted"),
        (Terminated(), EXIT_TERMINATED, "terminated"),
        (OSError(28, "No space left on device"), 1, None),
    ],
    ids=["ctrl-c", "sigterm", "error"],
)
def test_signals_and_errors_in_a_command(err, status, line, monkeypatch, capsys) -> None:
    monkeypatch.delenv("KUBESCHED_DEBUG", raising=False)
    (path, parser) = next((p, q) for p, q in COMMANDS if p == ("plugins",))
    _failing(monkeypatch, parser, err)
    assert main(list(path)) == status
    err_text = capsys.readouterr().err
    assert err_text.count("\n") == 1 and "Traceback" not in err_text
    if line is not None:
        assert err_text == line + "\n"


@pytest.mark.parametrize("value", ["0", "no", "false", ""], ids=["0", "no", "false", "empty"])
def test_debug_environment_values_that_mean_off(value: str, monkeypatch, capsys) -> None:
    monkeypatch.setenv("KUBESCHED_DEBUG", value)
    assert report_failure(RuntimeError("boom"), "run") == 1
    assert capsys.readouterr().err == f"error: run: RuntimeError: boom{HINT}\n"
