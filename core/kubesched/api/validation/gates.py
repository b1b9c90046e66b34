"""The API server's feature gates under which objects are validated (kube-apiserver's own)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from kubesched.features import FeatureGates

__all__ = ["gate_enabled", "validating_with"]

_gates: ContextVar[FeatureGates | None] = ContextVar("kubesched_validation_gates", default=None)
_DEFAULTS = FeatureGates()


@contextmanager
def validating_with(gates: FeatureGates) -> Iterator[None]:
    """Validate as kube-apiserver started with ``gates`` does, inside the ``with`` block
    (every gate at its default outside any)."""
    token = _gates.set(gates)
    try:
        yield
    finally:
        _gates.reset(token)


def gate_enabled(name: str) -> bool:
    """Whether gate ``name`` is on for the objects validated now."""
    return (_gates.get() or _DEFAULTS).enabled(name)
