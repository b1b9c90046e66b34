"""Kubernetes-style validation errors for the node resources plugins' args.

Upstream validates plugin args with ``field.ErrorList`` (``validation_pluginargs.go``):
every problem is reported, each at its field path, as ``Invalid value: 0: ...``,
``Required value: ...``, ``Duplicate value: "cpu"`` or ``Unsupported value: ...``. A
pydantic ``model_validator`` collects :class:`ArgsError` items and raises them together
with :func:`raise_args_errors`, so the configuration layer shows upstream's messages at
the right paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = [
    "ArgsError",
    "duplicate",
    "invalid",
    "label_name_errors",
    "not_supported",
    "raise_args_errors",
    "required",
]


@dataclass(frozen=True)
class ArgsError:
    """One problem: where (a pydantic location relative to the args) and what."""

    loc: tuple[str | int, ...]
    message: str
    value: Any = None


def _show(value: Any) -> str:
    # Go's %v of the value as field.Invalid prints it: strings quoted.
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def invalid(loc: Sequence[str | int], value: Any, detail: str) -> ArgsError:
    """``field.Invalid``: ``Invalid value: <value>: <detail>``."""
    return ArgsError(tuple(loc), f"Invalid value: {_show(value)}: {detail}", value)


def required(loc: Sequence[str | int], detail: str = "") -> ArgsError:
    """``field.Required``: ``Required value[: <detail>]``."""
    return ArgsError(tuple(loc), f"Required value: {detail}" if detail else "Required value")


def duplicate(loc: Sequence[str | int], value: Any) -> ArgsError:
    """``field.Duplicate``: ``Duplicate value: <value>``."""
    return ArgsError(tuple(loc), f"Duplicate value: {_show(value)}", value)


def not_supported(loc: Sequence[str | int], value: Any, supported: Iterable[str]) -> ArgsError:
    """``field.NotSupported``: ``Unsupported value: "x": supported values: "a", "b"``."""
    values = ", ".join(json.dumps(s) for s in supported)
    return ArgsError(
        tuple(loc), f"Unsupported value: {_show(value)}: supported values: {values}", value
    )


def raise_args_errors(title: str, errors: Sequence[ArgsError]) -> None:
    """Raise all ``errors`` as one pydantic ``ValidationError`` (no-op when empty).

    Raised inside a validator, pydantic prefixes each location with the validated
    model's own location, so the paths end up relative to the configuration file.
    """
    if not errors:
        return
    raise ValidationError.from_exception_data(
        title,
        [
            InitErrorDetails(
                # The text goes through ctx so that braces in it are not a template.
                type=PydanticCustomError("kubernetes_field", "{message}", {"message": e.message}),
                loc=e.loc,
                input=e.value,
            )
            for e in errors
        ],
    )


# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName / IsDNS1123Subdomain, with
# upstream's exact error texts (metav1validation.ValidateLabelName reports each of them
# as field.Invalid).
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_QUALIFIED_NAME_FMT}')"
)
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. "
    f"'example.com', regex used for validation is '{_DNS1123_SUBDOMAIN_FMT}')"
)


def _qualified_name_messages(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errs = []
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append("prefix part " + _DNS1123_SUBDOMAIN_ERR)
    else:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_ERR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + _QUALIFIED_NAME_ERR)
    return errs


def label_name_errors(loc: Sequence[str | int], value: str) -> list[ArgsError]:
    """``metav1validation.ValidateLabelName``: one ``Invalid value`` per problem."""
    return [invalid(loc, value, msg) for msg in _qualified_name_messages(value)]
