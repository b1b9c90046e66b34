"""The API's own schema, recorded from kube-apiserver, and strict decoding of manifests against it.

``openapi/kube-apiserver.json.gz`` holds the OpenAPI v3 schema the real kube-apiserver
serves (every group-version of a default v1.36 server), trimmed to its structure by
``tests/fixtures/apiserver/record_openapi.py``. From it this module knows which
``apiVersion``/``kind`` pairs the server serves (and whether they are namespaced), and
decodes a manifest as the server does with ``fieldValidation=Strict`` (``kubectl
apply``'s default): a field the schema does not have is ``unknown field "spec.x"``, a
key given twice is a duplicate, a value of the wrong JSON type is Go's ``json: cannot
unmarshal ...``. Each schema definition is compiled once, on first use, into a checker.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

from .validation.field import FieldError
from .validation.raw import RAW_CHECKS

__all__ = [
    "DecodeErrors",
    "DuplicateKeys",
    "ServedKind",
    "decode_errors",
    "load",
    "served_kind",
    "served_kinds",
    "server_version",
    "serves_group",
]

_DATA = "kube-apiserver.json.gz"


@cache
def _data() -> dict[str, Any]:
    raw = files("kubesched.api").joinpath("openapi", _DATA).read_bytes()
    return json.loads(gzip.decompress(raw))


def server_version() -> str:
    """The version of kube-apiserver whose schema was recorded (``v1.36.2``)."""
    return _data()["server"]


@dataclass(frozen=True, slots=True)
class ServedKind:
    """A kind the API server serves at one ``apiVersion``: its schema ``definition``,
    REST ``resource`` (plural) and whether it is ``namespaced``."""

    api_version: str
    kind: str
    definition: str
    resource: str
    namespaced: bool

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]


@cache
def _served() -> dict[tuple[str, str], ServedKind]:
    return {
        (api_version, kind): ServedKind(api_version, kind, **entry)
        for api_version, kinds in _data()["kinds"].items()
        for kind, entry in kinds.items()
    }


def served_kind(api_version: str, kind: str) -> ServedKind | None:
    """The kind as the server serves it at ``api_version``; None if it does not."""
    return _served().get((api_version, kind))


def served_kinds() -> list[ServedKind]:
    """Every kind a client can create, in every served version."""
    return list(_served().values())


@cache
def _groups() -> frozenset[str]:
    return frozenset(k.group for k in _served().values())


def serves_group(group: str) -> bool:
    """Whether the server serves some version of API group ``group`` ("" is the core)."""
    return group in _groups()


class DuplicateKeys(dict[str, Any]):
    """A mapping read from a document that gave some keys more than once (the last value
    kept, as the server keeps it); ``duplicates`` lists each repeat: its key and, read
    from YAML, its 1-based line (None from JSON)."""

    __slots__ = ("duplicates",)

    def __init__(self, items: Any, duplicates: list[tuple[str, int | None]]) -> None:
        super().__init__(items)
        self.duplicates = duplicates


@dataclass
class DecodeErrors:
    """What strict decoding found in one object: Go's first type error (which stops
    decoding, as ``json.Unmarshal`` does), the YAML duplicate keys (``line 3: key "a"
    already set in map``) and the unknown or duplicate fields, in the server's order."""

    type_error: str | None = None
    type_error_path: str = ""
    yaml_duplicates: list[tuple[str, str]] | None = None
    """``(path, message)``: ``("spec.replicas", 'line 6: key "replicas" already set in map')``."""
    fields: list[tuple[str, str]] | None = None
    """``(path, message)``: ``("spec.x", 'unknown field "spec.x"')``."""
    invalid: list[FieldError] = field(default_factory=list)
    """What the checks registered for a definition (:func:`register_check`) found: the
    server's validation errors (HTTP 422) of fields no model reads, once decoded."""

    @property
    def problems(self) -> list[tuple[str, str]]:
        """``(path, message)`` of each field that failed to decode."""
        if self.type_error:
            return [(self.type_error_path, self.type_error)]
        return [*(self.yaml_duplicates or ()), *(self.fields or ())]

    @property
    def failed(self) -> bool:
        """Whether decoding itself failed (HTTP 400; validation never runs)."""
        return bool(self.type_error or self.yaml_duplicates or self.fields)

    def message(self, served: ServedKind) -> str:
        """The server's refusal: ``Pod in version "v1" cannot be handled as a Pod: ...``."""
        version = served.api_version.rpartition("/")[2]
        head = f'{served.kind} in version "{version}" cannot be handled as a {served.kind}: '
        if self.type_error:
            return head + self.type_error
        parts = []
        if self.yaml_duplicates:
            lines = (text for _, text in self.yaml_duplicates)
            parts.append("yaml: unmarshal errors:\n  " + "\n  ".join(lines))
        parts.extend(text for _, text in self.fields or ())
        return head + "strict decoding error: " + ", ".join(parts)


class _TypeError(Exception):
    """Go's ``json.UnmarshalTypeError``: ends the walk (the first one is reported).
    ``path`` is the field's path with list indices, for the problem's location."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


# Where a value is: None at the top, else (parent, key, step) with ``step`` one of these.
# Kept as a chain of tuples and rendered only for an error: most documents have none.
_FIELD, _INDEX, _KEY = 0, 1, 2
Loc = tuple[Any, str | int, int] | None


def _path(loc: Loc) -> str:
    """The field path of ``loc`` as the server writes it: ``spec.containers[0].name``,
    map keys as fields (``spec.nodeSelector.zone``)."""
    parts: list[str] = []
    while loc is not None:
        loc, key, step = loc
        parts.append(f"[{key}]" if step == _INDEX else f".{key}")
    return "".join(reversed(parts)).removeprefix(".")


def _go_path(loc: Loc, struct: str) -> str:
    """The struct field Go's type errors name: the innermost struct's name, then the
    path's fields without list indices or map keys (``Container.spec.containers.args``)."""
    parts: list[str] = []
    while loc is not None:
        loc, key, step = loc
        if step == _FIELD:
            parts.append(str(key))
        elif step == _KEY:
            parts.clear()  # a map value's errors name the map field
    return ".".join([struct, *reversed(parts)]) if parts else ""


class _Walk:
    """The state of one document's walk: the errors so far and the key order."""

    __slots__ = ("errors", "sort_keys")

    def __init__(self, sort_keys: bool) -> None:
        self.errors = DecodeErrors()
        self.sort_keys = sort_keys

    def field(self, loc: Loc, what: str) -> None:
        """Record ``unknown field "path"`` or ``duplicate field "path"``."""
        if self.errors.fields is None:
            self.errors.fields = []
        path = _path(loc)
        self.errors.fields.append((path, f'{what} field "{path}"'))


# A checker: (value, loc, struct, walk) -> None; ``struct`` is the Go struct that holds
# the value's field (``ContainerPort``), for Go's type errors.
Checker = Callable[[Any, Loc, str, _Walk], None]


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(
    value: Any, loc: Loc, struct: str, go_type: str, shown: str | None = None
) -> _TypeError:
    what = shown or _json_kind(value)
    go_path = _go_path(loc, struct)
    where = f"Go struct field {go_path}" if go_path else "Go value"
    return _TypeError(f"json: cannot unmarshal {what} into {where} of type {go_type}", _path(loc))


def _not_plain_mapping(
    value: Any, loc: Loc, struct: str, go_type: str, step: int, walk: _Walk
) -> None:
    """For a value that is not a plain dict: Go's type error unless it is a mapping;
    a JSON mapping's repeated keys (YAML's are listed by line, beforehand)."""
    if not isinstance(value, dict):
        raise _type_error(value, loc, struct, go_type)
    if type(value) is DuplicateKeys and not walk.sort_keys:
        for key, _ in value.duplicates:
            walk.field((loc, key, step), "duplicate")


_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class _Compiler:
    """Compiles schema nodes into checkers, one per definition (shared, built once)."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.by_name: dict[str, Checker] = {}

    def go_type(self, node: dict[str, Any]) -> str:
        """The Go type a node decodes into, as Go's type errors name it."""
        ref = node.get("ref")
        if ref is not None:
            target = self.definitions[ref]
            if "properties" in target:
                pkg, _, name = ref.rpartition(".")
                return f"{pkg.rpartition('.')[2]}.{name}"
            return self.go_type(target)
        kind = node.get("type")
        if kind == "array":
            return "[]" + self.go_type(node.get("items") or {})
        if kind == "object" and "additionalProperties" in node:
            return "map[string]" + self.go_type(node["additionalProperties"])
        if kind == "string":
            return "[]uint8" if node.get("format") == "byte" else "string"
        if kind == "integer":
            return node.get("format") or "int"
        if kind == "number":
            return "float64"
        if kind == "boolean":
            return "bool"
        return "interface {}"

    def definition(self, name: str) -> Checker:
        checker = self.by_name.get(name)
        if checker is None:
            # Recursive definitions (JSONSchemaProps) reach themselves: a late-bound stub.
            def late(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
                self.by_name[name](value, loc, struct, walk)

            self.by_name[name] = late
            checker = self.node(self.definitions[name], name)
            checks = RAW_CHECKS.get(name)
            if checks:
                checker = _with_checks(checker, checks)
            self.by_name[name] = checker
        return checker

    def node(self, node: dict[str, Any], struct: str | None = None) -> Checker:
        """The checker of ``node``; ``struct`` is the definition it is (for Go's names)."""
        ref = node.get("ref")
        if ref is not None:
            return self.definition(ref)
        kind = node.get("type")
        if node.get("intOrString") or node.get("format") == "int-or-string":
            return _int_or_string
        if kind == "object":
            if "properties" in node:
                return self._struct(node, struct or "")
            if "additionalProperties" in node:
                return self._map(node["additionalProperties"])
            return _anything
        if kind == "array":
            return self._list(node.get("items") or {})
        if kind in ("string", "integer", "number", "boolean"):
            return self._scalar(node)
        return _anything

    def _struct(self, node: dict[str, Any], definition: str) -> Checker:
        props = {key: self.node(sub) for key, sub in node["properties"].items()}
        open_ended = bool(node.get("preserveUnknown"))
        pkg, _, name = definition.rpartition(".")
        go_type = f"{pkg.rpartition('.')[2]}.{name}"

        def check(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
            if type(value) is not dict:
                _not_plain_mapping(value, loc, struct, go_type, _FIELD, walk)
            for key in sorted(value) if walk.sort_keys else value:
                sub = props.get(key)
                if sub is None:
                    if not open_ended:
                        walk.field((loc, key, _FIELD), "unknown")
                    continue
                item = value[key]
                if item is not None:
                    sub(item, (loc, key, _FIELD), name, walk)

        return check

    def _map(self, node: dict[str, Any]) -> Checker:
        sub = self.node(node)
        go_type = "map[string]" + self.go_type(node)

        def check(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
            if type(value) is not dict:
                _not_plain_mapping(value, loc, struct, go_type, _KEY, walk)
            for key in sorted(value) if walk.sort_keys else value:
                item = value[key]
                if item is not None:
                    sub(item, (loc, key, _KEY), struct, walk)

        return check

    def _list(self, node: dict[str, Any]) -> Checker:
        sub = self.node(node)
        go_type = "[]" + self.go_type(node)

        def check(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
            if type(value) is not list and not isinstance(value, list | tuple):
                raise _type_error(value, loc, struct, go_type)
            for i, item in enumerate(value):
                if item is not None:
                    sub(item, (loc, i, _INDEX), struct, walk)

        return check

    def _scalar(self, node: dict[str, Any]) -> Checker:
        kind, fmt = node["type"], node.get("format")
        go_type = self.go_type(node)
        if kind == "string":
            if fmt == "byte":
                return _base64
            return _typed(str, go_type)
        if kind == "boolean":
            return _typed(bool, go_type)
        if kind == "number":
            return _number
        low, high = _INT_RANGES.get(fmt or "int64", _INT_RANGES["int64"])

        def integer(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
            if type(value) is int and low <= value <= high:
                return
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _type_error(value, loc, struct, go_type)
            raise _type_error(value, loc, struct, go_type, f"number {_go_number(value)}")

        return integer


def _go_number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value).removesuffix(".0")
    return repr(value)


def _with_checks(checker: Checker, checks: list[Any]) -> Checker:
    """``checker``, then the validation checks registered for its definition."""

    def check(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
        checker(value, loc, struct, walk)
        for fn in checks:
            errs = fn(value, lambda: _path(loc))
            if errs:
                walk.errors.invalid.extend(errs)

    return check


def _anything(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
    """A free-form value (RawExtension, JSON, Quantity: decoded by its own type)."""


def _int_or_string(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _type_error(value, loc, struct, "int32")


def _number(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(value, loc, struct, "float64")


def _base64(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
    if not isinstance(value, str):
        raise _type_error(value, loc, struct, "[]uint8")
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        raise _TypeError(
            f"illegal base64 data at input byte {_bad_base64_at(value)}", _path(loc)
        ) from None


def _bad_base64_at(value: str) -> int:
    """The offset Go's ``base64.CorruptInputError`` names: the first byte that is not of
    the alphabet, or the end when only the padding is wrong."""
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(value):
        if ch not in alphabet:
            return i if ch != "=" else (i // 4) * 4
    return len(value) - len(value) % 4


def _typed(cls: type, go_type: str) -> Checker:
    def check(value: Any, loc: Loc, struct: str, walk: _Walk) -> None:
        if type(value) is not cls:
            raise _type_error(value, loc, struct, go_type)

    return check


@cache
def _compiler() -> _Compiler:
    return _Compiler(_data()["definitions"])


def load() -> None:
    """Read the schema and compile the checker of every served kind now, rather than on
    first use (a tenth of a second), e.g. before timing a run or a test."""
    compiler = _compiler()
    for served in _served().values():
        compiler.definition(served.definition)


def decode_errors(doc: dict[str, Any], served: ServedKind, *, yaml: bool) -> DecodeErrors:
    """Strictly decode ``doc`` as an object of ``served``: every unknown and duplicate
    field, or the first value of the wrong type (empty when the server would decode it).

    ``yaml``: the document was YAML, which the server turns into JSON with its keys
    sorted, so the fields are listed in key order and repeated keys by line; JSON keeps
    the document's order and names repeated keys by field path.
    """
    walk = _Walk(sort_keys=yaml)
    if yaml:
        repeats = sorted(_yaml_duplicates(doc))
        if repeats:
            walk.errors.yaml_duplicates = [
                (path, f'line {n}: key "{k}" already set in map') for n, k, path in repeats
            ]
    try:
        _compiler().definition(served.definition)(doc, None, "", walk)
    except _TypeError as err:
        return DecodeErrors(type_error=str(err), type_error_path=err.path)
    return walk.errors


def _yaml_duplicates(value: Any) -> list[tuple[int, str, str]]:
    """Every repeated key of a YAML document, as (line, key, field path)."""
    out: list[tuple[int, str, str]] = []
    stack: list[tuple[Any, Loc]] = [(value, None)]
    while stack:
        item, loc = stack.pop()
        if isinstance(item, dict):
            if type(item) is DuplicateKeys:
                for key, line in item.duplicates:
                    out.append((line or 0, key, _path((loc, key, _FIELD))))
            stack.extend((v, (loc, str(k), _FIELD)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, (loc, i, _INDEX)) for i, v in enumerate(item))
    return out
