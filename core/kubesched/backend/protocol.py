"""The scheduler's one interface to a cluster: list, watch, bind, status, events, leases."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from kubesched.api import KubeObject, Lease, Pod, WorkloadPodGroup
from kubesched.errors import KubeschedError


class EventType(StrEnum):
    """What a watch event says happened to an object (the Kubernetes watch types)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change of one object. ``old`` is the previous version for ``MODIFIED``.

    Slotted: the embedded cluster's watch log keeps up to 100,000 of them."""

    type: EventType
    object: KubeObject
    old: KubeObject | None = None


WatchHandler = Callable[[WatchEvent], None]
"""Receives the watch events of a kind, in resourceVersion order."""


class Watch(Protocol):
    """A running watch; ``stop()`` ends it."""

    def stop(self) -> None:
        """Stop delivering events."""
        ...


@dataclass
class PodCondition:
    """A condition to set on a pod's status (``PodScheduled=False``, reason, message)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""


@dataclass
class RecordedEvent:
    """A Kubernetes Event the scheduler emits (``Scheduled``, ``FailedScheduling``,
    ``Preempted``) about an object."""

    involved_kind: str
    involved_namespace: str
    involved_name: str
    type: str
    reason: str
    message: str
    action: str = ""
    reporting_controller: str = "default-scheduler"
    timestamp: float = 0.0
    related: str | None = None


@dataclass
class EvictionResult:
    """The answer of the Eviction API: 200 (evicted), 429 (a PDB forbids it now), 500
    (several PDBs select the pod), 404 (no such pod)."""

    code: int
    message: str = ""
    blocking_pdbs: Sequence[str] = field(default_factory=tuple)


class BackendError(KubeschedError):
    """A request the cluster refused; ``code`` is the HTTP-like status."""

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.code = code


class NotFoundError(BackendError):
    """The object does not exist (404)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 404)


class ConflictError(BackendError):
    """The request conflicts with the object's state, e.g. binding a bound pod (409)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 409)


class ClusterBackend(Protocol):
    """A cluster as the scheduler uses it. ``memory`` (embedded) and ``kube`` implement it.

    ``kind`` arguments are Kubernetes kind names ("Pod", "Node", "Namespace", ...).
    Watches deliver events to the handler in order; the embedded cluster delivers them
    synchronously, a real cluster from its watch threads. A backend whose controllers
    act within the write that triggers them sets ``reconciles_synchronously = True``
    (plugins waiting for a controller, such as VolumeBinding's PreBind, then check once).
    """

    def list(self, kind: str) -> tuple[list[KubeObject], str]:
        """All objects of ``kind`` and the resourceVersion to watch from."""
        ...

    def watch(self, kind: str, resource_version: str, handler: WatchHandler) -> Watch:
        """Deliver every change of ``kind`` after ``resource_version`` to ``handler``."""
        ...

    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject:
        """The object as the cluster has it now; ``NotFoundError`` if it does not exist
        (a plugin re-reads an object this way after a conflict)."""
        ...

    def create(self, obj: KubeObject) -> KubeObject:
        """Create an object (a claim for a pod's extended resources) and return it as
        stored; ``metadata.generateName`` gives it a name."""
        ...

    def update(self, obj: KubeObject) -> KubeObject:
        """Replace an object (a PV's claimRef, a claim's annotations: volume binding);
        ``ConflictError`` when its resourceVersion is not the current one."""
        ...

    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name`` (the pods/binding subresource); raises
        ``ConflictError`` if it is bound already, ``NotFoundError`` if it is gone."""
        ...

    def update_pod_status(
        self,
        pod: Pod,
        *,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
        clear_nominated_node_name: bool = False,
    ) -> None:
        """Set a condition and/or the nominated node on ``pod``'s status."""
        ...

    def update_pod_group_status(self, group: WorkloadPodGroup, condition: PodCondition) -> None:
        """Set a condition on a Workload API PodGroup's status (its ``/status``)."""
        ...

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """Delete ``pod`` (with its termination grace period unless overridden)."""
        ...

    def evict_pod(self, pod: Pod) -> EvictionResult:
        """Evict ``pod`` through the Eviction API, honouring PodDisruptionBudgets."""
        ...

    def record_event(self, event: RecordedEvent) -> None:
        """Create a Kubernetes Event."""
        ...

    def get_lease(self, namespace: str, name: str) -> Lease | None:
        """The Lease, or None."""
        ...

    def create_lease(self, lease: Lease) -> Lease:
        """Create a Lease; ``ConflictError`` if it exists."""
        ...

    def update_lease(self, lease: Lease) -> Lease:
        """Replace a Lease if its resourceVersion is current; ``ConflictError`` otherwise."""
        ...
