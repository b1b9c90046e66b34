"""Cluster backends: the embedded in-memory cluster and a real cluster, behind one protocol."""

from kubesched.backend.protocol import (
    BackendError,
    ClusterBackend,
    ConflictError,
    EventType,
    EvictionResult,
    NotFoundError,
    PodCondition,
    RecordedEvent,
    Watch,
    WatchEvent,
    WatchHandler,
)

__all__ = [
    "BackendError",
    "ClusterBackend",
    "ConflictError",
    "EventType",
    "EvictionResult",
    "NotFoundError",
    "PodCondition",
    "RecordedEvent",
    "Watch",
    "WatchEvent",
    "WatchHandler",
]
