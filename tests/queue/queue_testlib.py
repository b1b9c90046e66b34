"""Builders for the scheduling queue tests: pods, a QueueSort order, failing an attempt."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubesched.api import Pod
from kubesched.framework.events import ClusterEvent, QueueingHintFn
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.queue import PriorityQueue

DEFAULT = "default-scheduler"


def make_pod(
    name: str,
    *,
    priority: int = 0,
    namespace: str = "default",
    uid: str | None = None,
    scheduler_name: str = DEFAULT,
    labels: dict[str, str] | None = None,
    gates: Sequence[str] = (),
    node_name: str | None = None,
    nominated_node_name: str | None = None,
    resource_version: str | None = None,
) -> Pod:
    """A pod built from a manifest dict, as the API would deliver it."""
    return Pod.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid or f"uid-{name}",
                "labels": labels or {},
                "resourceVersion": resource_version,
            },
            "spec": {
                "priority": priority,
                "schedulerName": scheduler_name,
                "schedulingGates": [{"name": g} for g in gates],
                "nodeName": node_name,
                "containers": [{"name": "c", "image": "pause"}],
            },
            "status": {"nominatedNodeName": nominated_node_name},
        }
    )


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """Higher priority first, then the earlier timestamp (PrioritySort's order)."""
    if a.pod_info.priority != b.pod_info.priority:
        return a.pod_info.priority > b.pod_info.priority
    return a.timestamp < b.timestamp


def scheduling_gates(pod_info: PodInfo) -> Status | None:
    """A PreEnqueue like the SchedulingGates plugin: gated while spec.schedulingGates is set."""
    if pod_info.pod.spec.scheduling_gates:
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "waiting for scheduling gates",
            plugin="SchedulingGates",
        )
    return None


Hints = Sequence[tuple[str, ClusterEvent, QueueingHintFn | None]]
QueueFactory = Callable[..., PriorityQueue]


def fail(
    queue: PriorityQueue,
    qpi: QueuedPodInfo,
    *plugins: str,
    activated: bool = False,
    pending: Sequence[str] = (),
) -> None:
    """Report a failed attempt of ``qpi``, rejected by ``plugins`` (none: an error);
    ``activated``: the pod was activated during its attempt (it then backs off rather
    than wait for an event)."""
    if activated:
        queue.activate([qpi.pod])
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    queue.add_unschedulable_if_not_present(qpi)


def pop_and_fail(queue: PriorityQueue, *plugins: str) -> QueuedPodInfo:
    """Pop the head and fail it at once (no event during the attempt)."""
    qpi = queue.pop(block=False)
    assert qpi is not None
    fail(queue, qpi, *plugins)
    return qpi
