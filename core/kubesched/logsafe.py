"""Escape and bound untrusted text (names, messages, server answers) before it is logged."""

from __future__ import annotations

import logging
import unicodedata

MAX_LOGGED = 512
"""Characters of one untrusted value a log line keeps; the rest is counted, not shown
(a 64 KiB Lease holder identity must not drown the line that names it)."""

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    # Control, format (bidi overrides), surrogates, private use, unassigned; line and
    # paragraph separators: anything that can move the cursor, fake a line or hide text.
    if unicodedata.category(char) in ("Zl", "Zp") or unicodedata.category(char)[0] == "C":
        code = ord(char)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return char


class SafeText(str):
    """Text :func:`safe` already escaped (not escaped twice when logged)."""

    __slots__ = ()


def safe(value: object, limit: int = MAX_LOGGED) -> SafeText:
    """``value`` as text fit for one log line: control and invisible characters escaped
    as ``\\xNN``/``\\uNNNN`` (backslash doubled, so the escaping is unambiguous), cut
    after ``limit`` characters with how many more there were."""
    if isinstance(value, SafeText):
        return value
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit and text.isprintable() and "\\" not in text:
        return SafeText(text)  # the common case: a plain name or message
    out: list[str] = []
    length = 0
    for i, char in enumerate(text):
        piece = _escape(char)
        if length + len(piece) > limit:
            return SafeText("".join(out) + f"...[{len(text) - i} more characters]")
        out.append(piece)
        length += len(piece)
    return SafeText("".join(out))


class SafeArgs(logging.Filter):
    """Applies :func:`safe` to every argument of a log record (what ``%s`` puts in the
    line: names, messages, errors carrying a server's answer), so no module's log line
    can be split, forged or flooded by cluster data. The format string itself is the
    program's own and is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Escape the record's arguments in place; never drops a record."""
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_safe_arg(a) for a in args)
        elif isinstance(args, dict):
            record.args = {k: _safe_arg(v) for k, v in args.items()}
        return True


def _safe_arg(arg: object) -> object:
    # Numbers stay numbers (``%d``, ``%.2f`` still apply); anything shown as text is made safe.
    if arg is None or isinstance(arg, int | float | SafeText):
        return arg
    return safe(arg)


def install(handler: logging.Handler | None = None) -> None:
    """Make every record through ``handler`` (default: each of the root logger's) safe."""
    handlers = [handler] if handler is not None else logging.getLogger().handlers
    for h in handlers:
        if not any(isinstance(f, SafeArgs) for f in h.filters):
            h.addFilter(SafeArgs())
