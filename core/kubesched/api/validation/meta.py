"""ObjectMeta and label-selector validation (``ValidateObjectMeta``, ``ValidateLabelSelector``)."""

from __future__ import annotations

from collections.abc import Callable

from ..meta import LabelSelector, ObjectMeta
from .field import FieldError, forbidden, invalid, required
from .syntax import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    validate_annotations,
    validate_label_name,
    validate_labels,
)

__all__ = [
    "NameValidator",
    "validate_label_selector",
    "validate_object_meta",
    "validate_selector_requirement_values",
]

NameValidator = Callable[[str], list[str]]
"""A name rule (``is_dns1123_subdomain``...) returning the problems of a name."""


def _mask_trailing_dash(name: str) -> str:
    # NameIsDNSSubdomain(prefix=true): a generateName may end in "-" (the suffix follows).
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def validate_object_meta(
    meta: ObjectMeta,
    *,
    namespaced: bool,
    name_rule: NameValidator = is_dns1123_subdomain,
    path: str = "metadata",
) -> list[FieldError]:
    """``ValidateObjectMeta``: name (or generateName) by ``name_rule``, the namespace
    (a DNS label) for namespaced kinds, labels and annotations."""
    errs: list[FieldError] = []
    if meta.generate_name:
        for msg in name_rule(_mask_trailing_dash(meta.generate_name)):
            errs.append(invalid(f"{path}.generateName", meta.generate_name, msg))
    if not meta.name:
        if not meta.generate_name:
            errs.append(required(f"{path}.name", "name or generateName is required"))
    else:
        errs.extend(invalid(f"{path}.name", meta.name, msg) for msg in name_rule(meta.name))
    if namespaced:
        if not meta.namespace:
            errs.append(required(f"{path}.namespace"))
        else:
            errs.extend(
                invalid(f"{path}.namespace", meta.namespace, msg)
                for msg in is_dns1123_label(meta.namespace)
            )
    if meta.labels:
        errs.extend(validate_labels(meta.labels, f"{path}.labels"))
    if meta.annotations:
        errs.extend(validate_annotations(meta.annotations, f"{path}.annotations"))
    return errs


def validate_selector_requirement_values(
    operator: str, values: list[str], path: str
) -> list[FieldError]:
    """The operator/values rule shared by label-selector and node-selector requirements:
    In/NotIn need values, Exists/DoesNotExist forbid them, anything else is invalid
    (Gt/Lt are checked by the caller where they exist)."""
    if operator in ("In", "NotIn"):
        if not values:
            return [
                required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            ]
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            return [
                forbidden(
                    f"{path}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            ]
    else:
        return [invalid(f"{path}.operator", operator, "not a valid selector operator")]
    return []


def validate_label_selector(selector: LabelSelector | None, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelSelector`` for a new object: matchLabels are
    labels, each expression has a valid key, operator, values and label values."""
    if selector is None:
        return []
    errs: list[FieldError] = []
    if selector.match_labels:
        errs.extend(validate_labels(selector.match_labels, f"{path}.matchLabels"))
    for i, req in enumerate(selector.match_expressions or ()):
        rpath = f"{path}.matchExpressions[{i}]"
        errs.extend(validate_selector_requirement_values(req.operator, req.values, rpath))
        errs.extend(validate_label_name(req.key, f"{rpath}.key"))
        for j, value in enumerate(req.values):
            errs.extend(
                invalid(f"{rpath}.values[{j}]", value, msg) for msg in is_valid_label_value(value)
            )
    return errs
