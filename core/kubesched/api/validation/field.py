"""Field-level validation errors worded as apimachinery's ``field.Error`` renders them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OMIT",
    "FieldError",
    "duplicate",
    "forbidden",
    "invalid",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "too_many",
]

OMIT: Any = object()
"""A ``value`` that is not shown in the message (upstream's ``omitValue``)."""

_TYPE_TEXT = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
}
# The types whose message never shows the value, whatever it is.
_VALUELESS = frozenset({"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong"})


_GO_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def _go_escape(ch: str) -> str:
    if ch in _GO_ESCAPES:
        return _GO_ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x80:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def go_quote(value: str) -> str:
    """``strconv.Quote``/``%q`` of a string: double quotes, printable text kept, the rest
    escaped the way Go escapes it (``\\n``, ``\\x01``, ``\\u200b``)."""
    if value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return '"' + "".join(_go_escape(ch) for ch in value) + '"'


def _render_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, dict | list):
        # v1.36 renders structs and maps as compact JSON (callers give keys in Go's order).
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field's validation error: its type (``FieldValueInvalid``...), the field path
    (``spec.containers[0].name``), the offending value and a detail sentence.

    ``str()`` reads exactly like upstream's ``field.Error.Error()``:
    ``spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater
    than or equal to 0``.
    """

    type: str
    field: str
    value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """The message without the field path (upstream's ``ErrorBody``)."""
        text = _TYPE_TEXT[self.type]
        if self.type not in _VALUELESS and self.value is not OMIT:
            text = f"{text}: {_render_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``field.Invalid``: a malformed value."""
    return FieldError("FieldValueInvalid", field, value, detail)


def required(field: str, detail: str = "") -> FieldError:
    """``field.Required``: a value that must be given."""
    return FieldError("FieldValueRequired", field, "", detail)


def forbidden(field: str, detail: str) -> FieldError:
    """``field.Forbidden``: a value not allowed here."""
    return FieldError("FieldValueForbidden", field, "", detail)


def duplicate(field: str, value: Any) -> FieldError:
    """``field.Duplicate``: a value that must be unique."""
    return FieldError("FieldValueDuplicate", field, value)


def not_found(field: str, value: Any) -> FieldError:
    """``field.NotFound``: a reference to something that does not exist."""
    return FieldError("FieldValueNotFound", field, value)


def not_supported(field: str, value: Any, valid: list[str] | tuple[str, ...]) -> FieldError:
    """``field.NotSupported``: a value outside an enumeration (listed, quoted)."""
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return FieldError("FieldValueNotSupported", field, value, detail)


def too_long(field: str, value: Any, max_length: int) -> FieldError:
    """``field.TooLong``: the value is not shown, only the limit in bytes (v1.36 wording)."""
    return FieldError("FieldValueTooLong", field, value, f"may not be more than {max_length} bytes")


def too_many(field: str, actual: int, max_quantity: int) -> FieldError:
    """``field.TooMany``: a list with more items than allowed."""
    unit = "item" if max_quantity == 1 else "items"
    return FieldError(
        "FieldValueTooMany", field, actual, f"must have at most {max_quantity} {unit}"
    )
