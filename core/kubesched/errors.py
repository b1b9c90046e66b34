"""User-facing errors: what was wrong, in which file, which object and which field."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

DEBUG_ENV = "KUBESCHED_DEBUG"
"""The environment variable that asks for tracebacks (``kubesched --debug`` sets it, so
that the processes kubesched starts inherit it)."""


def debug_enabled() -> bool:
    """True when a failure should show its traceback: ``kubesched --debug`` or
    ``KUBESCHED_DEBUG=1`` (any value but empty, ``0``, ``false`` or ``no``)."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


class ErrorType(StrEnum):
    """The type of a field error, as apimachinery's ``field.ErrorType`` names it."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"


def show_value(value: Any) -> str:
    """A value as Go's ``%v`` in a field error shows it: strings quoted, ``null`` for None."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, bool | dict | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except ValueError:  # a cycle: never from parsed YAML
            return str(value)
    return str(value)


def format_loc(loc: Iterable[str | int]) -> str:
    """Render a pydantic location tuple as a Kubernetes-style field path.

    ``("profiles", 1, "pluginConfig", 0, "args", "scoringStrategy")`` becomes
    ``profiles[1].pluginConfig[0].args.scoringStrategy``.
    """
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif path:
            path += f".{part}"
        else:
            path = str(part)
    return path


class FieldProblem:
    """One problem at one field path: ``path``, ``message`` (``Invalid value: 101: ...``)
    and ``type``, the Kubernetes error type (``ErrorType.INVALID`` is ``FieldValueInvalid``)."""

    __slots__ = ("message", "path", "type")

    def __init__(self, path: str, message: str, type: ErrorType = ErrorType.INVALID) -> None:
        self.path = path
        self.message = message
        self.type = type

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def __repr__(self) -> str:
        return f"FieldProblem({self.path!r}, {self.message!r}, {self.type.value})"


_TYPE_NAMES = {
    "int": "an integer",
    "float": "a number",
    "decimal": "a number",
    "bool": "a boolean",
    "string": "a string",
    "str": "a string",
    "list": "a list",
    "tuple": "a list",
    "set": "a list",
    "frozen_set": "a list",
    "dict": "an object",
    "model": "an object",
    "model_attributes": "an object",
    "dataclass": "an object",
}

_BOUNDS = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be greater than or equal to {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be less than or equal to {}"),
    "multiple_of": ("multiple_of", "must be a multiple of {}"),
}


def _kubernetes_problem(e: Any) -> tuple[ErrorType, str]:
    """One pydantic error detail in apimachinery's wording (type and message body)."""
    kind, message, ctx, value = e["type"], e["msg"], e.get("ctx") or {}, e.get("input")
    if kind in ErrorType._value2member_map_:
        # raise_args_errors: already a Kubernetes field error.
        return ErrorType(kind), message
    if kind == "missing":
        return ErrorType.REQUIRED, "Required value"
    if kind == "extra_forbidden":
        return ErrorType.FORBIDDEN, f'unknown field "{e["loc"][-1]}"'
    if kind in ("literal_error", "enum"):
        supported = ", ".join(json.dumps(v) for v in re.findall(r"'([^']*)'", ctx["expected"]))
        return (
            ErrorType.NOT_SUPPORTED,
            f"Unsupported value: {show_value(value)}: supported values: {supported}",
        )
    if kind in _BOUNDS:
        key, text = _BOUNDS[kind]
        return ErrorType.INVALID, f"Invalid value: {show_value(value)}: {text.format(ctx[key])}"
    if kind in ("string_too_long", "too_long"):
        limit = ctx.get("max_length")
        if kind == "string_too_long":
            return ErrorType.TOO_LONG, f"Too long: may not be more than {limit} bytes"
        return (
            ErrorType.TOO_MANY,
            f"Too many: {ctx.get('actual_length')}: must have at most {limit} items",
        )
    if kind in ("string_too_short", "too_short"):
        limit = ctx.get("min_length")
        if limit == 1:
            return ErrorType.REQUIRED, "Required value"
        unit = "characters" if kind == "string_too_short" else "items"
        return (
            ErrorType.INVALID,
            f"Invalid value: {show_value(value)}: must have at least {limit} {unit}",
        )
    if kind in ("value_error", "assertion_error"):
        for prefix in ("Value error, ", "Assertion failed, "):
            if message.startswith(prefix):
                message = message[len(prefix) :]
        return ErrorType.INVALID, message
    base = kind.removesuffix("_type").removesuffix("_parsing").removesuffix("_from_float")
    if base in _TYPE_NAMES or kind.endswith(("_type", "_parsing", "_from_float")):
        expected = _TYPE_NAMES.get(base, base.replace("_", " "))
        if kind == "int_from_float":
            expected = "an integer"
        return ErrorType.TYPE_INVALID, f"Invalid value: {show_value(value)}: must be {expected}"
    # Anything else (a format such as a date): the value and pydantic's reason in lower case.
    return (
        ErrorType.INVALID,
        f"Invalid value: {show_value(value)}: {message[:1].lower()}{message[1:]}",
    )


def problems_from_validation_error(
    err: ValidationError, prefix: Sequence[str | int] = ()
) -> list[FieldProblem]:
    """Turn a pydantic ``ValidationError`` into field problems, paths prefixed by
    ``prefix``, in Kubernetes' wording (``Required value``, ``Invalid value: "x": must be
    an integer``, ...) with its error types; never pydantic's own messages."""
    problems = []
    for e in err.errors(include_url=False):
        # pydantic puts the validator kind (e.g. "function-after[...]") into loc for
        # some validators; those are not field names.
        loc = [p for p in e["loc"] if not (isinstance(p, str) and "[" in p and "]" in p)]
        kind, message = _kubernetes_problem(e)
        problems.append(FieldProblem(format_loc([*prefix, *loc]), message, kind))
    return problems


class KubeschedError(Exception):
    """Base class of the errors kubesched reports to a user without a traceback."""


class UserInputError(KubeschedError):
    """A manifest, configuration or argument that is wrong.

    ``source`` names the file (or ``<stdin>``), ``obj`` the object inside it
    (``Pod default/web-0`` or ``profiles[0]``), and ``problems`` each field path
    with what is wrong there and its Kubernetes error type; ``path``, ``type`` and
    ``detail`` are the first problem's, for a test to assert on.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        obj: str | None = None,
        problems: Sequence[FieldProblem] = (),
    ) -> None:
        self.message = message
        self.source = source
        self.obj = obj
        self.problems = list(problems)
        super().__init__(str(self))

    @property
    def path(self) -> str | None:
        """The first problem's field path (None without problems)."""
        return self.problems[0].path if self.problems else None

    @property
    def type(self) -> ErrorType | None:
        """The first problem's Kubernetes error type (None without problems)."""
        return self.problems[0].type if self.problems else None

    @property
    def detail(self) -> str | None:
        """The first problem's message (None without problems)."""
        return self.problems[0].message if self.problems else None

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.source, self.obj) if p)
        head = f"{where}: {self.message}" if where else self.message
        if not self.problems:
            return head
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        return head + ":\n" + "\n".join(f"  - {p}" for p in self.problems)


class PluginArgsError(UserInputError):
    """A plugin's args are invalid, as the Python API (``kubesched.testing``) reports it.

    ``problems`` hold each field path relative to the args
    (``scoringStrategy.resources[0].weight``), its message and its Kubernetes error
    type, as ``kubesched config validate`` shows them.
    """

    def __init__(self, plugin: str, problems: Sequence[FieldProblem]) -> None:
        super().__init__(f"invalid args for plugin {plugin!r}", problems=problems)
        self.plugin = plugin
