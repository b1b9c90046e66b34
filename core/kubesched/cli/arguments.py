"""Argument types the commands share: argparse checks a value and says what is wrong with it."""

from __future__ import annotations

import argparse


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
