"""Kubernetes ``resource.Quantity``: parsing with apimachinery's grammar, exact values, rounding."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from pydantic_core import core_schema

__all__ = ["Quantity", "parse_quantity"]

# apimachinery's ErrFormatWrong / ErrSuffix messages, word for word.
ERR_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_SUFFIX = "unable to parse quantity's suffix"

# Equivalent to the hand-written scanner of apimachinery's parseQuantityString: optional
# sign, digits, optional "." and digits (both parts may be empty: "1.", ".5", even "." and
# "+" parse as 0 upstream), then suffix letters, an optional sign and digits.
_QUANTITY_RE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_EXPONENT_RE = re.compile(r"[eE]([+-]?[0-9]+)")

_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_POWER = {power: letter for letter, power in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {0: "", **{power: letter for letter, power in _BINARY_SUFFIXES.items()}}

_NANO = 10**9
# BinarySI quantities are capped at the int64 maximum (apimachinery's maxAllowed).
_MAX_BINARY_NANOS = (2**63 - 1) * _NANO
# kube-apiserver accepts any int32 exponent ("1e100000" is stored as "10e99999") and
# mantissas of thousands of digits; exact integers of that size would take minutes (and
# Python refuses to read more than 4300 digits). Beyond these bounds a value is held at
# their edge: it stays far past int64 (the scheduler saturates it) or rounds up to one
# nano-unit (as upstream rounds every non-zero value), so what the scheduler counts is
# unchanged; only canonical() of such a quantity is approximate.
_MAX_DIGITS = 1000
_MAX_DECIMAL_EXPONENT = 1000
_MIN_DECIMAL_EXPONENT = -(_MAX_DIGITS + 1000)
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _ceil_div(n: int, d: int) -> int:
    """Divide rounding away from zero, as apimachinery's ScaledValue does."""
    q, r = divmod(abs(n), d)
    if r:
        q += 1
    return q if n >= 0 else -q


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """``value`` without its factors of ``base``, and how many were removed."""
    times = 0
    while value and value % base == 0:
        value //= base
        times += 1
    return value, times


class Quantity:
    """An immutable, hashable Kubernetes quantity such as ``250m``, ``1Gi`` or ``1e3``.

    The exact value is kept as an integer number of nano-units (upstream rounds every
    parsed quantity up to nano precision, so this is lossless); ``value_fraction``
    gives it as a ``Fraction``. ``str()`` returns the text it was parsed from. Two
    quantities are equal when their values are (``1k == 1000``).
    """

    __slots__ = ("_hash", "_milli", "_text", "_value", "nanos")

    nanos: int
    _text: str
    _milli: int
    _value: int
    _hash: int

    def __new__(cls, value: str | int | float | Quantity) -> Quantity:
        """Parse ``value`` (see :func:`parse_quantity`)."""
        return parse_quantity(value)

    @classmethod
    def _make(cls, nanos: int, text: str) -> Quantity:
        self = object.__new__(cls)
        object.__setattr__(self, "nanos", nanos)
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_milli", _ceil_div(nanos, 10**6))
        object.__setattr__(self, "_value", _ceil_div(nanos, _NANO))
        object.__setattr__(self, "_hash", hash(Fraction(nanos, _NANO)))
        return self

    @classmethod
    def from_nanos(cls, nanos: int) -> Quantity:
        """Build a quantity from an integer number of nano-units (text in canonical-ish form)."""
        if nanos % _NANO == 0:
            text = str(nanos // _NANO)
        elif nanos % 10**6 == 0:
            text = f"{nanos // 10**6}m"
        elif nanos % 1000 == 0:
            text = f"{nanos // 1000}u"
        else:
            text = f"{nanos}n"
        return cls._make(nanos, text)

    @classmethod
    def from_milli(cls, milli: int) -> Quantity:
        """Build a quantity of ``milli`` thousandths (``from_milli(250)`` is ``250m``)."""
        return cls.from_nanos(milli * 10**6)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Quantity is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (parse_quantity, (self._text,))

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self

    @property
    def value_fraction(self) -> Fraction:
        """The exact value."""
        return Fraction(self.nanos, _NANO)

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (away from zero), like ``MilliValue()``."""
        return self._milli

    def value(self) -> int:
        """The value in units, rounded up (away from zero), like ``Value()``."""
        return self._value

    def canonical(self) -> str:
        """The text upstream's ``Quantity.String()`` prints (what the API server shows in
        messages and serves back): the parsed format kept (decimal suffix, binary suffix
        or exponent), the value with the largest suffix that keeps it whole: ``2000m`` is
        ``2``, ``0.5`` is ``500m``, ``1536Mi`` stays, ``1024Mi`` is ``1Gi``, ``1000`` is
        ``1k``. A binary quantity below 1024 or not whole is printed as a decimal one."""
        if self.nanos == 0:
            return "0"
        suffix = _QUANTITY_RE.fullmatch(self._text).group(4)  # type: ignore[union-attr]
        binary = suffix in _BINARY_SUFFIXES
        if binary and abs(self.nanos) >= 1024 * _NANO and self.nanos % _NANO == 0:
            amount, times = _remove_factors(self.nanos // _NANO, 1024)
            return f"{amount}{_BINARY_BY_POWER[times * 10]}"
        exponent_form = suffix not in _DECIMAL_SUFFIXES and suffix not in _BINARY_SUFFIXES
        amount, times = _remove_factors(self.nanos, 10)
        exponent = times - 9
        # Down to a multiple of 3, as AsCanonicalBytes does.
        shift = exponent % 3
        amount, exponent = amount * 10**shift, exponent - shift
        if exponent_form:
            return f"{amount}e{exponent}" if exponent else str(amount)
        letter = _DECIMAL_BY_POWER.get(exponent)
        return f"{amount}{letter}" if letter is not None else f"{amount}e{exponent}"

    def is_zero(self) -> bool:
        """Whether the value is exactly zero."""
        return self.nanos == 0

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Quantity({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.nanos < other.nanos
        return NotImplemented

    def __le__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.nanos <= other.nanos
        return NotImplemented

    def __gt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.nanos > other.nanos
        return NotImplemented

    def __ge__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.nanos >= other.nanos
        return NotImplemented

    def __add__(self, other: Quantity) -> Quantity:
        if isinstance(other, Quantity):
            return Quantity.from_nanos(self.nanos + other.nanos)
        return NotImplemented

    def __sub__(self, other: Quantity) -> Quantity:
        if isinstance(other, Quantity):
            return Quantity.from_nanos(self.nanos - other.nanos)
        return NotImplemented

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """Accept str, int, float or Quantity; serialise to the original string."""
        return core_schema.no_info_plain_validator_function(
            parse_quantity,
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> dict[str, Any]:
        """Describe a quantity in JSON Schema as Kubernetes' OpenAPI does (int or string)."""
        return {
            "anyOf": [{"type": "string"}, {"type": "number"}],
            "description": "A Kubernetes resource.Quantity such as 250m, 1Gi or 1e3.",
        }


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    # The same few strings ("100m", "1Gi") recur across thousands of pods; Quantity is
    # immutable, so sharing one instance per text is safe.
    if not text:
        raise ValueError(ERR_FORMAT_WRONG)
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise ValueError(ERR_FORMAT_WRONG)
    sign, num, denom, suffix = m.groups()
    denom = denom or ""
    binary = False
    if suffix in _DECIMAL_SUFFIXES:
        base, exponent = 10, _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        base, exponent, binary = 2, _BINARY_SUFFIXES[suffix], True
    else:
        em = _EXPONENT_RE.fullmatch(suffix)
        if em is None:
            raise ValueError(ERR_SUFFIX)
        text_exponent = em.group(1)
        # Upstream parses the exponent as an int32 and refuses the suffix otherwise.
        if len(text_exponent.lstrip("+-").lstrip("0")) > 10:
            raise ValueError(ERR_SUFFIX)
        base, exponent = 10, int(text_exponent)
        if not _INT32_MIN <= exponent <= _INT32_MAX:
            raise ValueError(ERR_SUFFIX)
    # value = digits * 10**scale * base**exponent, in nanos, rounded up to a whole nano
    # (away from zero): "so that if you want some resources, you get some" (upstream).
    digits = ((num or "") + denom).lstrip("0") or "0"
    scale = -len(denom)
    if len(digits) > _MAX_DIGITS:
        # The first digits, rounded up where the rest is not all zeros.
        rest = digits[_MAX_DIGITS:]
        scale += len(rest)
        mantissa = int(digits[:_MAX_DIGITS]) + (1 if rest.strip("0") else 0)
    else:
        mantissa = int(digits)
    if base == 10:
        scale += exponent
    scale = min(max(scale, _MIN_DECIMAL_EXPONENT), _MAX_DECIMAL_EXPONENT)
    numer = mantissa * _NANO
    den = 1
    if base == 2:
        numer <<= exponent
    if scale >= 0:
        numer *= 10**scale
    else:
        den = 10**-scale
    nanos = -(-numer // den)
    if binary and nanos > _MAX_BINARY_NANOS:
        nanos = _MAX_BINARY_NANOS
    if sign == "-":
        nanos = -nanos
    return Quantity._make(nanos, text)


def parse_quantity(v: str | int | float | Quantity) -> Quantity:
    """Parse a quantity from its string form (or an int / float as YAML gives them).

    Raises ``ValueError`` with upstream's message when the text is not a quantity.
    """
    if isinstance(v, Quantity):
        return v
    if isinstance(v, str):
        return _parse_text(v)
    if isinstance(v, bool):
        raise ValueError(ERR_FORMAT_WRONG)
    if isinstance(v, int):
        return _parse_text(str(v))
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(ERR_FORMAT_WRONG)
        # repr gives the shortest text that round-trips, i.e. what the manifest said.
        return _parse_text(repr(v))
    raise ValueError(ERR_FORMAT_WRONG)
