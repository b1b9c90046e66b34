"""Fakes for the Handle a plugin receives: a recording client and event recorder, listers.

Pass them to ``framework_for`` / ``make_framework`` as ``client=``, ``event_recorder=``,
``lister=`` and ``nominator=``; after the run, assert on what the plugin did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api import KubeObject, Pod
from kubesched.backend.protocol import NotFoundError, PodCondition
from kubesched.framework.listers import StaticLister
from kubesched.queue.nominator import Nominator

__all__ = ["ClientCall", "Nominator", "RecordedEventCall", "RecordingClient",
           "RecordingEventRecorder", "StaticLister", "static_lister"]  # fmt: skip


@dataclass(frozen=True)
class ClientCall:
    """One write a plugin made through ``handle.client``.

    ``method`` is ``bind``, ``update_pod_status`` or ``delete_pod``; ``pod`` the pod's
    ``namespace/name``; ``node`` the node of a bind; ``condition``,
    ``nominated_node_name`` and ``clear_nominated_node_name`` those of a status update;
    ``grace_period_seconds`` that of a deletion.
    """

    method: str
    pod: str
    node: str | None = None
    condition: PodCondition | None = None
    nominated_node_name: str | None = None
    clear_nominated_node_name: bool = False
    grace_period_seconds: float | None = None


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


class RecordingClient:
    """A ``kubesched.ClusterClient`` that records each call in ``calls`` instead of
    writing to a cluster.

    Pods whose ``namespace/name`` is in ``missing`` raise ``kubesched.NotFoundError``,
    as a cluster does for a pod deleted in the meantime.
    """

    def __init__(self, missing: Iterable[str] = ()) -> None:
        self.calls: list[ClientCall] = []
        self.missing = set(missing)

    def _record(self, call: ClientCall) -> None:
        if call.pod in self.missing:
            raise NotFoundError(f'pods "{call.pod.split("/", 1)[1]}" not found')
        self.calls.append(call)

    def bind(self, pod: Pod, node_name: str) -> None:
        """Record a binding of ``pod`` to ``node_name``."""
        self._record(ClientCall("bind", _key(pod), node=node_name))

    def update_pod_status(
        self,
        pod: Pod,
        *,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
        clear_nominated_node_name: bool = False,
    ) -> None:
        """Record a status update of ``pod``."""
        self._record(
            ClientCall(
                "update_pod_status",
                _key(pod),
                condition=condition,
                nominated_node_name=nominated_node_name,
                clear_nominated_node_name=clear_nominated_node_name,
            )
        )

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """Record a deletion of ``pod``."""
        self._record(ClientCall("delete_pod", _key(pod), grace_period_seconds=grace_period_seconds))

    def of(self, method: str) -> list[ClientCall]:
        """The recorded calls of ``method``, in order."""
        return [c for c in self.calls if c.method == method]


@dataclass(frozen=True)
class RecordedEventCall:
    """One Event a plugin recorded through ``handle.event_recorder``."""

    object: str
    """``Kind namespace/name`` of the object the Event is about."""
    related: str | None
    type: str
    reason: str
    action: str
    message: str


def _describe(obj: Any) -> str:
    meta = obj.metadata
    kind = getattr(obj, "kind", None) or type(obj).__name__
    name = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return f"{kind} {name}"


class RecordingEventRecorder:
    """A ``kubesched.EventRecorder`` that keeps the Events in ``events``."""

    def __init__(self) -> None:
        self.events: list[RecordedEventCall] = []

    def eventf(
        self, obj: Any, related: Any, event_type: str, reason: str, action: str, message: str
    ) -> None:
        """Record an Event about ``obj``."""
        self.events.append(
            RecordedEventCall(
                _describe(obj),
                None if related is None else _describe(related),
                event_type,
                reason,
                action,
                message,
            )
        )


def static_lister(*objects: Any) -> StaticLister:
    """A ``kubesched.ObjectLister`` over ``objects``: Kubernetes objects, manifests (dicts
    or YAML text) or builders, of any kind (Namespaces, PodDisruptionBudgets, Services,
    ReplicaSets, a plugin's own kinds ...)."""
    from kubesched.testing.builders import objects_from

    items: list[KubeObject] = objects_from(*objects)
    return StaticLister(items)
