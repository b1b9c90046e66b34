"""Arguments the commands share: argparse types that check a value and say what is wrong
with it, and the ``--output`` option of the commands that write a report."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubesched.config.duration import parse_duration


def positive_int(text: str) -> int:
    """A whole number of at least 1 (argparse ``type``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_int_or_all(text: str) -> int | None:
    """A whole number of at least 1, or ``all`` for no limit (None) (argparse ``type``)."""
    if text == "all":
        return None
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{err} (or 'all')") from None


def positive_number(text: str) -> float:
    """A number greater than 0, e.g. seconds (argparse ``type``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def positive_duration(text: str) -> float:
    """A positive duration: seconds, or a Go duration such as 10m or 1h30m (argparse ``type``)."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{err}: {text!r}") from None
    if not seconds > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return seconds


def output_file(text: str) -> str:
    """A file to write at the end of a run (argparse ``type``): refused at once, before
    any work, when its folder does not exist or the path is a folder."""
    path = Path(text)
    folder = path.parent
    if not folder.is_dir():
        why = (
            f"{folder} is not a folder"
            if folder.exists()
            else f"the folder {folder} does not exist"
        )
        raise argparse.ArgumentTypeError(f"cannot write {text}: {why}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a folder")
    return text


def add_output_argument(parser: argparse.ArgumentParser, schema: str | None = None) -> None:
    """``--output``/``-o``: text for a person, or json or yaml (of ``schema``, the report's
    ``schemaVersion``) for a program."""
    help_text = "text for a person; json or yaml for a program"
    parser.add_argument(
        "--output",
        "-o",
        choices=("text", "json", "yaml"),
        default="text",
        help=f"{help_text} (schema {schema})" if schema else help_text,
    )
