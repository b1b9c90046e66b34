"""CEL device selectors (``k8s.io/dynamic-resource-allocation/cel``) on a kept CEL library.

Expressions are compiled by ``common-expression-language`` (Python bindings of the
Rust ``cel`` crate; chosen over ``cel-python`` for its 14x faster evaluation, see
docs/dra.md) and evaluated with the variable ``device``: ``device.driver``,
``device.attributes["domain"].name`` and ``device.capacity["domain"].name``, as
upstream builds it (an attribute or capacity without a domain belongs to the
driver's). Kubernetes' ``quantity`` and ``semver`` libraries are provided as
functions; their values are CEL maps with one private key, so that ``==`` compares
them by value as upstream's types do.

Errors read as upstream's: a compile error is ``compilation failed: ERROR: <input>:...``
and a lookup of a missing attribute ``no such key: name``.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from functools import total_ordering
from typing import Any

from kubesched.api import Device, Quantity, parse_quantity
from kubesched.api.validation.dra import SEMVER_RE, cel_library, compile_cel

__all__ = ["CELCache", "CELError", "CompiledExpression", "DeviceEnv"]

# The library logs every failing Python function at WARNING before raising; the error
# reaches the user through the allocator's message, so the log line is only noise.
logging.getLogger("cel").setLevel(logging.CRITICAL)

_QUANTITY_KEY = "__k8s_quantity_nanos__"
_SEMVER_KEY = "__k8s_semver__"


# The domains an expression indexes with a literal (device.attributes["gpu.example.com"]):
# upstream's attribute map yields an empty map for an unknown domain, so the error names
# the missing attribute, not the domain; the bindings need those domains present.
_DOMAIN_RE = re.compile(r"device\s*\.\s*(?:attributes|capacity)\s*\[\s*\"([^\"]*)\"\s*\]")


# --- quantity ----------------------------------------------------------------------------


def _q(nanos: int) -> dict[str, str]:
    return {_QUANTITY_KEY: str(nanos)}


def quantity_value(q: Quantity) -> dict[str, str]:
    """A quantity as the CEL value ``device.capacity`` holds."""
    return _q(q.nanos)


def _nanos(v: Any) -> int:
    if isinstance(v, dict) and _QUANTITY_KEY in v:
        return int(v[_QUANTITY_KEY])
    if isinstance(v, int) and not isinstance(v, bool):
        return v * 10**9
    raise TypeError("no such overload")


def _quantity(text: str) -> dict[str, str]:
    # parse_quantity's errors are apimachinery's words, which upstream's CEL returns too.
    return quantity_value(parse_quantity(text))


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except (ValueError, TypeError):
        return False
    return True


# --- semver ------------------------------------------------------------------------------


@total_ordering
@dataclass(frozen=True)
class _Version:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]

    def __lt__(self, other: _Version) -> bool:
        if (self.major, self.minor, self.patch) != (other.major, other.minor, other.patch):
            return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)
        if not self.pre or not other.pre:
            return bool(self.pre) and not other.pre  # a pre-release sorts first
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if a.isdigit() and b.isdigit():
                return int(a) < int(b)
            if a.isdigit() != b.isdigit():
                return a.isdigit()
            return a < b
        return len(self.pre) < len(other.pre)


def _parse_version(text: str, normalize: bool = False) -> _Version:
    if normalize:
        text = text.removeprefix("v")
        core, sep, rest = text.partition("-")
        core, plus, build = core.partition("+")
        parts = core.split(".")
        while len(parts) < 3:
            parts.append("0")
        parts = [p.lstrip("0") or "0" for p in parts]
        text = ".".join(parts) + (plus + build) + (sep + rest)
    m = SEMVER_RE.match(text)
    if m is None:
        raise ValueError(f"could not parse {text!r} as semver")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return _Version(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)


def semver_value(text: str) -> dict[str, str]:
    """A semantic version (a ``version`` attribute) as a CEL value; raises ValueError."""
    _parse_version(text)
    return {_SEMVER_KEY: text}


def _semver(text: str, normalize: bool = False) -> dict[str, str]:
    v = _parse_version(text, normalize)
    pre = "-" + ".".join(v.pre) if v.pre else ""
    return {_SEMVER_KEY: f"{v.major}.{v.minor}.{v.patch}{pre}"}


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _parse_version(text, normalize)
    except ValueError:
        return False
    return True


def _version(v: Any) -> _Version | None:
    if isinstance(v, dict) and _SEMVER_KEY in v:
        return _parse_version(v[_SEMVER_KEY])
    return None


# --- member functions shared by both types -----------------------------------------------


def _compare(a: Any, b: Any) -> int:
    va, vb = _version(a), _version(b)
    if va is not None and vb is not None:
        return (va > vb) - (va < vb)
    na, nb = _nanos(a), _nanos(b)
    return (na > nb) - (na < nb)


def _component(name: str) -> Any:
    def get(v: Any) -> int:
        ver = _version(v)
        if ver is None:
            raise TypeError("no such overload")
        return getattr(ver, name)

    return get


def _as_integer(v: Any) -> int:
    n = _nanos(v)
    if n % 10**9:
        raise ValueError("cannot convert value to integer")
    value = n // 10**9
    if not -(2**63) <= value < 2**63:
        raise ValueError("cannot convert value to integer")
    return value


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": lambda v: (_nanos(v) > 0) - (_nanos(v) < 0),
    "isInteger": lambda v: _nanos(v) % 10**9 == 0 and -(2**63) <= _nanos(v) // 10**9 < 2**63,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda v: _nanos(v) / 10**9,
    "add": lambda a, b: _q(_nanos(a) + _nanos(b)),
    "sub": lambda a, b: _q(_nanos(a) - _nanos(b)),
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _component("major"),
    "minor": _component("minor"),
    "patch": _component("patch"),
    "compareTo": _compare,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
}


# --- compiled expressions ----------------------------------------------------------------


class CELError(Exception):
    """A compile or runtime error, worded as upstream's ``apiservercel.Error`` detail."""


def _runtime_message(err: Exception) -> str:
    if isinstance(err, KeyError):
        return f"no such key: {err.args[0] if err.args else ''}"
    text = str(err)
    # "Function 'quantity' error: Python function call failed: ValueError: x. Check ..."
    m = re.search(r"Python function call failed: \w+: (.*?)\. Check function", text)
    if m:
        return m.group(1)
    if isinstance(err, TypeError) and text.startswith("No such overload"):
        return "no such overload"
    return text


@dataclass
class CompiledExpression:
    """One compiled selector: ``error`` is set when it does not compile."""

    expression: str
    program: Any = None
    error: str | None = None
    domains: tuple[str, ...] = ()

    def device_matches(self, env: DeviceEnv) -> bool:
        """Evaluate against a device; raises :class:`CELError` (runtime error, or a result
        that is not a bool)."""
        if self.error is not None:
            raise CELError(self.error)
        try:
            result = self.program.execute(env.context(self.domains))
        except Exception as err:  # the library raises KeyError, TypeError, RuntimeError...
            raise CELError(_runtime_message(err)) from None
        if not isinstance(result, bool):
            # Upstream rejects this at compile time, from the checked type.
            raise CELError(
                f"must evaluate to bool or the unknown type, not {type(result).__name__}"
            )
        return result


def _compile(expression: str) -> CompiledExpression:
    domains = tuple(sorted(set(_DOMAIN_RE.findall(expression))))
    program, error = compile_cel(expression)
    if error is not None:
        return CompiledExpression(expression, error=error)
    return CompiledExpression(expression, program=program, domains=domains)


class CELCache:
    """Compiled expressions by text, least recently used evicted (upstream's
    ``cel.Cache``; the plugin keeps a few hundred, a cluster has few distinct ones)."""

    def __init__(self, max_size: int = 256) -> None:
        self._max = max_size
        self._entries: OrderedDict[str, CompiledExpression] = OrderedDict()
        self.compilations = 0
        """How many expressions were compiled (tests check the cache works)."""

    def get_or_compile(self, expression: str) -> CompiledExpression:
        """The compiled form of ``expression``, compiling it on first use."""
        entry = self._entries.get(expression)
        if entry is not None:
            self._entries.move_to_end(expression)
            return entry
        self.compilations += 1
        entry = self._entries[expression] = _compile(expression)
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return entry


# --- the device variable -----------------------------------------------------------------


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


class DeviceEnv:
    """The ``device`` variable for one device of one driver, built once per device."""

    __slots__ = ("_contexts", "value")

    def __init__(self, driver: str, device: Device) -> None:
        attributes: dict[str, dict[str, Any]] = {}
        for name, attr in device.attributes.items():
            domain, ident = _split(name, driver)
            value: Any = attr.value
            if attr.version is not None:
                try:
                    value = semver_value(attr.version)
                except ValueError:
                    continue  # upstream drops an attribute that does not parse
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in device.capacity.items():
            domain, ident = _split(name, driver)
            capacity.setdefault(domain, {})[ident] = quantity_value(cap.value)
        self.value = {
            "driver": driver,
            "allowMultipleAllocations": bool(device.allow_multiple_allocations),
            "attributes": attributes,
            "capacity": capacity,
        }
        self._contexts: dict[tuple[str, ...], Any] = {}

    def context(self, domains: tuple[str, ...]) -> Any:
        """A CEL context with ``device`` and the functions; ``domains`` absent from the
        device are present and empty, as upstream's lazy maps are."""
        ctx = self._contexts.get(domains)
        if ctx is None:
            value = self.value
            missing = [d for d in domains if d not in value["attributes"]]
            missing_cap = [d for d in domains if d not in value["capacity"]]
            if missing or missing_cap:
                value = {
                    "driver": value["driver"],
                    "attributes": {**value["attributes"], **{d: {} for d in missing}},
                    "capacity": {**value["capacity"], **{d: {} for d in missing_cap}},
                }
            ctx = self._contexts[domains] = cel_library().Context(
                variables={"device": value}, functions=_FUNCTIONS
            )
        return ctx
