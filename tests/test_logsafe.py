"""Untrusted text in log lines: escaped, bounded, never escaped twice."""

from __future__ import annotations

import io
import logging

import pytest

from kubesched.logsafe import MAX_LOGGED, SafeArgs, safe

BIG = "x" * 65536


@pytest.mark.parametrize(
    ("value", "logged"),
    [
        ("web-0", "web-0"),
        ("ns/wébapp-ü", "ns/wébapp-ü"),
        ("a\nI0101 00:00:00 forged line", "a\\nI0101 00:00:00 forged line"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("nul\x00byte", "nul\\x00byte"),
        ("cr\rtab\t", "cr\\rtab\\t"),
        ("back\\slash", "back\\\\slash"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("line\u2028sep", "line\\u2028sep"),
        ("c1\x85", "c1\\x85"),
        (BIG, "x" * MAX_LOGGED + f"...[{65536 - MAX_LOGGED} more characters]"),
        (
            "\x00" * 1000,
            "\\x00" * (MAX_LOGGED // 4) + f"...[{1000 - MAX_LOGGED // 4} more characters]",
        ),
        (ValueError("bad\nthing"), "bad\\nthing"),
    ],
    ids=[
        "plain",
        "unicode-letters",
        "newline",
        "escape-sequence",
        "nul",
        "cr-tab",
        "backslash",
        "bidi-override",
        "line-separator",
        "c1-control",
        "64-kib",
        "escapes-count-toward-the-bound",
        "exception",
    ],
)
def test_safe(value: object, logged: str) -> None:
    assert safe(value) == logged
    assert safe(safe(value)) == logged  # already safe: not escaped twice


def test_the_filter_makes_every_argument_safe_and_keeps_numbers() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SafeArgs())
    logger = logging.getLogger("kubesched.test-logsafe")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        holder = "evil\x1b]0;title\x07\x00\n2026-01-01 00:00:00 I forged] " + BIG
        logger.warning("new leader: %s after %.1fs (%d tries)", holder, 1.25, 3)
        logger.warning("already safe: %s", safe("a\nb"))
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "\x1b" not in lines[0] and "\x00" not in lines[0] and "\x07" not in lines[0]
    assert lines[0].startswith("new leader: evil\\x1b]0;title\\x07\\x00\\n2026-01-01")
    assert lines[0].endswith("more characters] after 1.2s (3 tries)")
    assert len(lines[0]) < MAX_LOGGED + 100
    assert lines[1] == "already safe: a\\nb"
