"""Plugin args: the base models and Kubernetes-style field errors for their validation.

Upstream validates plugin args with ``field.ErrorList`` (``validation_pluginargs.go``):
every problem is reported, each at its field path, as ``Invalid value: 0: ...``,
``Required value: ...``, ``Duplicate value: "cpu"`` or ``Unsupported value: ...``. A
pydantic ``model_validator`` collects :class:`ArgsError` items and raises them together
with :func:`raise_args_errors`, so that ``kubesched config validate`` and the Python API
(``kubesched.testing.framework_for``) show upstream's messages at the right paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from kubesched.api.validation.syntax import is_qualified_name
from kubesched.errors import ErrorType, show_value
from kubesched.features import FeatureGates

__all__ = [
    "ARGS_FEATURE_GATES",
    "ArgsError",
    "ArgsModel",
    "PluginArgs",
    "duplicate",
    "feature_gates",
    "forbidden",
    "invalid",
    "label_name_errors",
    "not_supported",
    "raise_args_errors",
    "required",
]


ARGS_FEATURE_GATES = "feature_gates"
"""The validation context key under which a profile's args see the ``--feature-gates``."""


def feature_gates(info: ValidationInfo) -> FeatureGates | None:
    """The feature gates the args are validated under (a configuration file loaded under
    ``--feature-gates``), or None when validated without them."""
    return (info.context or {}).get(ARGS_FEATURE_GATES)


class ArgsModel(BaseModel):
    """Base of the models inside a plugin's args (``scoringStrategy``, ``resources[i]``).

    Keys are camelCase in YAML (``scoringStrategy``) and snake_case in Python
    (``scoring_strategy``); an unknown key is an error that names it. A ``null`` value is
    the same as an absent key, as upstream's decoding into pointers and slices followed by
    defaulting treats it: the field takes its default.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(v is None for v in data.values()):
            return {k: v for k, v in data.items() if v is not None}
        return data


class PluginArgs(ArgsModel):
    """Base of every plugin's ``Args`` model: the ``args`` of its ``pluginConfig`` entry.

    ``kind`` and ``apiVersion`` are accepted because upstream's typed args carry them
    (``kind: NodeResourcesFitArgs``); they are not otherwise used.
    """

    kind: str | None = None
    api_version: str | None = None

    null_when_gated_off: ClassVar[frozenset[str]] = frozenset()
    """The fields (Python names) of :meth:`fields_gated_off` written as ``null`` while
    unset, as upstream writes a field its JSON tag does not mark ``omitempty``; the others
    are left out."""

    @classmethod
    def fields_gated_off(cls, gates: FeatureGates) -> dict[str, str]:
        """The fields (Python names) whose feature gate ``gates`` turn off, each with
        upstream's reason: such a field is neither defaulted nor accepted."""
        return {}

    def gate_errors(self, info: ValidationInfo) -> list[ArgsError]:
        """A ``Forbidden`` error for each field set while its feature gate is off (none
        when validated without the gates)."""
        gates = feature_gates(info)
        if gates is None:
            return []
        off = self.fields_gated_off(gates)
        return [
            forbidden((type(self).model_fields[name].alias or name,), reason)
            for name, reason in off.items()
            if name in self.model_fields_set
        ]


@dataclass(frozen=True)
class ArgsError:
    """One problem: where (a pydantic location relative to the args), what, and its
    Kubernetes error type (``FieldValueInvalid``, ...)."""

    loc: tuple[str | int, ...]
    message: str
    value: Any = None
    type: ErrorType = ErrorType.INVALID


def invalid(loc: Sequence[str | int], value: Any, detail: str) -> ArgsError:
    """``field.Invalid``: ``Invalid value: <value>: <detail>``."""
    return ArgsError(tuple(loc), f"Invalid value: {show_value(value)}: {detail}", value)


def required(loc: Sequence[str | int], detail: str = "") -> ArgsError:
    """``field.Required``: ``Required value[: <detail>]``."""
    message = f"Required value: {detail}" if detail else "Required value"
    return ArgsError(tuple(loc), message, type=ErrorType.REQUIRED)


def forbidden(loc: Sequence[str | int], detail: str) -> ArgsError:
    """``field.Forbidden``: ``Forbidden: <detail>``."""
    return ArgsError(tuple(loc), f"Forbidden: {detail}", type=ErrorType.FORBIDDEN)


def duplicate(loc: Sequence[str | int], value: Any) -> ArgsError:
    """``field.Duplicate``: ``Duplicate value: <value>``."""
    return ArgsError(
        tuple(loc), f"Duplicate value: {show_value(value)}", value, ErrorType.DUPLICATE
    )


def not_supported(loc: Sequence[str | int], value: Any, supported: Iterable[str]) -> ArgsError:
    """``field.NotSupported``: ``Unsupported value: "x": supported values: "a", "b"``."""
    values = ", ".join(show_value(s) for s in supported)
    return ArgsError(
        tuple(loc),
        f"Unsupported value: {show_value(value)}: supported values: {values}",
        value,
        ErrorType.NOT_SUPPORTED,
    )


def raise_args_errors(title: str, errors: Sequence[ArgsError]) -> None:
    """Raise all ``errors`` as one pydantic ``ValidationError`` (no-op when empty).

    Raised inside a validator, pydantic prefixes each location with the validated
    model's own location, so the paths end up relative to the configuration file. Each
    error's pydantic type is its Kubernetes type, which ``FieldProblem.type`` carries on.
    """
    if not errors:
        return
    raise ValidationError.from_exception_data(
        title,
        [
            InitErrorDetails(
                # The text goes through ctx so that braces in it are not a template.
                type=PydanticCustomError(str(e.type), "{message}", {"message": e.message}),
                loc=e.loc,
                input=e.value,
            )
            for e in errors
        ],
    )


def label_name_errors(loc: Sequence[str | int], value: str) -> list[ArgsError]:
    """``metav1validation.ValidateLabelName``: one ``Invalid value`` per problem
    ``IsQualifiedName`` finds, in upstream's words."""
    return [invalid(loc, value, msg) for msg in is_qualified_name(value)]
