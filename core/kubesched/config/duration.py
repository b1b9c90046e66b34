"""Kubernetes duration strings ("15s", "1m30s", "500ms") parsed to seconds and back."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, ValidationInfo

# Go's time.ParseDuration units, in nanoseconds.
_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_WHOLE = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+")


def parse_duration(text: str) -> float:
    """Parse a Kubernetes (Go ``time.ParseDuration``) duration string into seconds.

    A duration is an optional sign and a sequence of decimal numbers, each with a
    unit: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``, ``m``, ``h``: ``"15s"``,
    ``"1m30s"``, ``"500ms"``, ``"1.5h"``. ``"0"`` alone is also valid. Raises
    ``ValueError`` for anything else, including bare numbers such as ``15``.
    """
    if not isinstance(text, str):
        raise ValueError(
            f'invalid duration {text!r}: must be a string with a unit, such as "15s", '
            '"1m30s" or "500ms"'
        )
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    if not _WHOLE.fullmatch(s):
        raise ValueError(
            f'invalid duration "{text}": use a number with a unit (ns, us, ms, s, m, h), '
            'such as "15s", "1m30s" or "500ms"'
        )
    sign = -1 if s.startswith("-") else 1
    total_ns = 0.0
    for number, unit in _PART.findall(s):
        total_ns += float(number) * _UNITS_NS[unit]
    return sign * total_ns / 1e9


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"


def format_duration(seconds: float) -> str:
    """Format seconds the way Go's ``time.Duration.String`` does: ``"1m30s"``, ``"500ms"``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_trim(ns / 1_000)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_trim(ns / 1_000_000)}ms"
    hours, rest = divmod(ns, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    secs = _trim(rest / 1e9)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def _validate(value: Any, info: ValidationInfo) -> Any:
    # Python callers may pass seconds directly; a file must use a string with a unit,
    # as upstream's metav1.Duration does (a bare 15 would be 15 nanoseconds to Go, and
    # nobody means that). The loader marks file input with the "from_file" context.
    from_file = bool(info.context and info.context.get("from_file"))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not from_file:
        return float(value)
    return parse_duration(value)


Duration = Annotated[
    float,
    BeforeValidator(_validate),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
"""A duration field: seconds in Python, a Kubernetes duration string in YAML/JSON."""
