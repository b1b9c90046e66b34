"""Validation of fields no model reads, on the decoded document, by schema definition.

kubesched's models hold what scheduling reads; kube-apiserver validates more of a pod
(its DNS policy, image pull policy, probes...). Those rules are registered here against
the OpenAPI definition they apply to (``io.k8s.api.core.v1.Container``), and strict
decoding (:mod:`kubesched.api.schema`) runs them on every value of that definition it
meets, wherever it is (a Pod's spec, a Deployment's or a CronJob's template), with the
value's field path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .field import FieldError, not_supported

__all__ = ["RAW_CHECKS", "RawCheck", "register_raw_check"]

RawCheck = Callable[[dict[str, Any], Callable[[], str]], list[FieldError]]
"""``check(value, where)``: the errors of one decoded value; ``where()`` is its field
path (worked out only when asked: most values have no error)."""

RAW_CHECKS: dict[str, list[RawCheck]] = {}
"""The checks of each OpenAPI definition, by its name."""


def register_raw_check(definition: str) -> Callable[[RawCheck], RawCheck]:
    """Decorator: run ``check(value, where)`` on every value of ``definition``."""

    def deco(fn: RawCheck) -> RawCheck:
        RAW_CHECKS.setdefault(definition, []).append(fn)
        return fn

    return deco


def enum_check(definition: str, field: str, supported: tuple[str, ...]) -> None:
    """Register the check that ``field`` of ``definition``, when set, is one of
    ``supported`` (listed in the server's order, which is its source's, not sorted)."""

    @register_raw_check(definition)
    def check(value: dict[str, Any], where: Callable[[], str]) -> list[FieldError]:
        got = value.get(field)
        if not got or got in supported:
            return []
        path = where()
        return [not_supported(f"{path}.{field}" if path else field, got, supported)]
