"""Eviction records: which pod was evicted, when, by whom and why (for reports and --explain)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BY_DRAIN",
    "BY_KUBELET",
    "BY_POD_GC",
    "BY_PREEMPTION",
    "BY_TAINT_MANAGER",
    "EvictedBy",
    "EvictionRecord",
]

EvictedBy = Literal["taint-manager", "kubelet", "drain", "pod-gc", "preemption"]

BY_TAINT_MANAGER: EvictedBy = "taint-manager"
"""The taint eviction controller: a NoExecute taint the pod does not tolerate (long enough)."""
BY_KUBELET: EvictedBy = "kubelet"
"""The kubelet's eviction manager: node-pressure eviction."""
BY_DRAIN: EvictedBy = "drain"
"""A drain through the Eviction API (honours PodDisruptionBudgets)."""
BY_POD_GC: EvictedBy = "pod-gc"
"""The pod garbage collector: the pod's node was deleted."""
BY_PREEMPTION: EvictedBy = "preemption"
"""The scheduler's preemption (a higher-priority pod needed the room)."""


@dataclass
class EvictionRecord:
    """One eviction: the pod (``namespace/name`` and uid), its node, the evictor, the
    virtual time, a one-line ``reason`` and the evictor's own ``message`` (the kubelet's
    status message, the taint manager's condition message), the termination grace
    period it was given, and ``details`` (the taint and tolerations, the signal,
    threshold and ranking, the PDB) as plain data."""

    time: float
    pod: str
    uid: str
    node: str
    by: EvictedBy
    reason: str
    message: str = ""
    grace_period_seconds: float | None = None
    owner_uid: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
