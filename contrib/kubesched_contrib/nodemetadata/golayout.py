"""Go ``time.Parse`` layouts (``2006-01-02T15:04:05Z07:00``) for the timestamps NodeMetadata reads.

Covers the reference-time elements of Go's layouts (year, month, day, weekday, hour,
minute, second, fractional seconds, AM/PM, zone offsets and abbreviations); a layout
without any of them is not a time layout.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache

__all__ = ["RFC3339", "LayoutError", "compile_layout", "parse_time"]

RFC3339 = "2006-01-02T15:04:05Z07:00"

_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class LayoutError(ValueError):
    """A layout Go would not read a time with."""


def _offset(text: str) -> timedelta:
    if text == "Z":
        return timedelta(0)
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    return sign * timedelta(hours=hours, minutes=minutes)


# Longest first: each element as (layout text, regex, field it sets).
_ELEMENTS: list[tuple[str, str, str]] = [
    ("January", "|".join(_MONTHS), "month_name"),
    ("Monday", "|".join(_DAYS), "weekday"),
    ("Z07:00", r"Z|[+-]\d\d:\d\d", "offset"),
    ("-07:00", r"[+-]\d\d:\d\d", "offset"),
    ("Z0700", r"Z|[+-]\d{4}", "offset"),
    ("-0700", r"[+-]\d{4}", "offset"),
    ("Z07", r"Z|[+-]\d\d", "offset"),
    ("-07", r"[+-]\d\d", "offset"),
    ("2006", r"\d{4}", "year"),
    ("Jan", "|".join(m[:3] for m in _MONTHS), "month_abbr"),
    ("Mon", "|".join(d[:3] for d in _DAYS), "weekday"),
    ("MST", r"[A-Z]{3,5}|[+-]\d\d", "zone_abbr"),
    ("_2", r" ?\d{1,2}", "day"),
    ("01", r"\d\d", "month"),
    ("02", r"\d\d", "day"),
    ("03", r"\d\d", "hour12"),
    ("04", r"\d\d", "minute"),
    ("05", r"\d\d", "second"),
    ("06", r"\d\d", "year2"),
    ("15", r"\d\d?", "hour"),
    ("PM", r"AM|PM", "ampm"),
    ("pm", r"am|pm", "ampm"),
    ("1", r"\d\d?", "month"),
    ("2", r"\d\d?", "day"),
    ("3", r"\d\d?", "hour12"),
    ("4", r"\d\d?", "minute"),
    ("5", r"\d\d?", "second"),
]
_FRACTION = re.compile(r"[.,](0+|9+)(?!\d)")


@dataclass(frozen=True)
class Layout:
    """A compiled layout: a regex with one group per element, and each group's field."""

    pattern: re.Pattern[str]
    fields: tuple[str, ...]


@lru_cache(maxsize=64)
def compile_layout(layout: str) -> Layout:
    """The regex reading ``layout``; ``LayoutError`` when it has no time element."""
    regex, fields, i = "", [], 0
    while i < len(layout):
        m = _FRACTION.match(layout, i)
        if m is not None:
            digits = len(m.group(1))
            required = m.group(1)[0] == "0"
            regex += rf"[.,](\d{{{digits}}})" if required else r"(?:[.,](\d+))?"
            fields.append("fraction")
            i = m.end()
            continue
        for text, pattern, name in _ELEMENTS:
            if layout.startswith(text, i):
                regex += f"({pattern})"
                fields.append(name)
                i += len(text)
                break
        else:
            regex += re.escape(layout[i])
            i += 1
    if not fields:
        raise LayoutError(f"layout {layout!r} has no date or time element")
    return Layout(re.compile(regex), tuple(fields))


_SETTERS: dict[str, Callable[[dict, str], None]] = {
    "year": lambda v, s: v.__setitem__("year", int(s)),
    "year2": lambda v, s: v.__setitem__("year", 1900 + int(s) if int(s) >= 69 else 2000 + int(s)),
    "month": lambda v, s: v.__setitem__("month", int(s)),
    "month_name": lambda v, s: v.__setitem__("month", _MONTHS.index(s) + 1),
    "month_abbr": lambda v, s: v.__setitem__("month", [m[:3] for m in _MONTHS].index(s) + 1),
    "day": lambda v, s: v.__setitem__("day", int(s)),
    "hour": lambda v, s: v.__setitem__("hour", int(s)),
    "hour12": lambda v, s: v.__setitem__("hour12", int(s)),
    "minute": lambda v, s: v.__setitem__("minute", int(s)),
    "second": lambda v, s: v.__setitem__("second", int(s)),
    "fraction": lambda v, s: v.__setitem__("microsecond", int((s or "0").ljust(6, "0")[:6])),
    "ampm": lambda v, s: v.__setitem__("pm", s.upper() == "PM"),
    "offset": lambda v, s: v.__setitem__("offset", _offset(s)),
    "weekday": lambda v, s: None,  # checked by Go only for syntax
    "zone_abbr": lambda v, s: None,  # an abbreviation reads as UTC, as Go does for unknown ones
}


def parse_time(layout: str, value: str) -> datetime:
    """``value`` read with the Go ``layout`` (UTC when it has no offset); ``ValueError``
    when it does not match."""
    compiled = compile_layout(layout)
    m = compiled.pattern.fullmatch(value)
    if m is None:
        raise ValueError(f"cannot parse {value!r} as {layout!r}")
    v: dict = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0}
    for name, text in zip(compiled.fields, m.groups(), strict=True):
        _SETTERS[name](v, (text or "").strip() if name != "fraction" else text)
    if "hour12" in v:
        v["hour"] = v.pop("hour12") % 12 + (12 if v.pop("pm", False) else 0)
    v.pop("pm", None)
    offset = v.pop("offset", timedelta(0))
    try:
        return datetime(**v, tzinfo=timezone(offset) if offset else UTC)
    except ValueError as err:
        raise ValueError(f"cannot parse {value!r} as {layout!r}: {err}") from None
