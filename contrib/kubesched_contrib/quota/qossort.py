"""QOSSort: order the active queue by priority, then by QoS class (QueueSort).

Follows kubernetes-sigs/scheduler-plugins ``pkg/qos``: among pods of equal priority,
Guaranteed pods go before Burstable ones, Burstable before BestEffort.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched import QueuedPodInfo, hookimpl
from kubesched.api import Pod, Quantity

__all__ = ["BEST_EFFORT", "BURSTABLE", "GUARANTEED", "NAME", "QOSSort", "pod_qos_class"]

NAME = "QOSSort"

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

_COMPUTE = ("cpu", "memory")


def _positive(amounts: Mapping[str, Quantity] | None) -> dict[str, Quantity]:
    return {n: q for n, q in (amounts or {}).items() if n in _COMPUTE and q.milli_value() > 0}


def pod_qos_class(pod: Pod) -> str:
    """The pod's QoS class, as the kubelet computes it (``ComputePodQOS``).

    BestEffort: no container (nor the pod) requests or limits cpu or memory. Guaranteed:
    each container limits both, and every request equals its limit. Burstable
    otherwise. Pod-level resources, when set, decide instead of the containers'."""
    spec = pod.spec
    level = spec.resources
    sources: Iterable[Any]
    if level is not None and (_positive(level.requests) or _positive(level.limits)):
        sources = (level,)
    else:
        sources = [c.resources for c in (*(spec.init_containers or ()), *spec.containers)]
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    for res in sources:
        for name, q in _positive(res.requests).items():
            requests[name] = requests[name] + q if name in requests else q
        found = _positive(res.limits)
        for name, q in found.items():
            limits[name] = limits[name] + q if name in limits else q
        if set(found) != set(_COMPUTE):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for name, q in requests.items():
            if name not in limits or limits[name].milli_value() != q.milli_value():
                guaranteed = False
                break
    return GUARANTEED if guaranteed and len(requests) == len(limits) else BURSTABLE


class QOSSort:
    """Pops higher-priority pods first (``spec.priority``, 0 when unset); among equal
    priorities, Guaranteed before Burstable before BestEffort. Pods equal on both keep
    no particular order, as upstream (no time of enqueue is compared)."""

    name = NAME
    sdk_version = "1.0"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    @hookimpl
    def less(self, pod_info1: QueuedPodInfo, pod_info2: QueuedPodInfo) -> bool:
        p1, p2 = pod_info1.pod_info.priority, pod_info2.pod_info.priority
        return p1 > p2 or (
            p1 == p2
            and _before(
                pod_qos_class(pod_info1.pod_info.pod), pod_qos_class(pod_info2.pod_info.pod)
            )
        )


def _before(qos1: str, qos2: str) -> bool:
    """Upstream ``compQOS``: whether a pod of class ``qos1`` goes before one of ``qos2``
    (a Guaranteed pod before any, even another Guaranteed one)."""
    if qos1 == GUARANTEED:
        return True
    if qos1 == BURSTABLE:
        return qos2 != GUARANTEED
    return qos2 == BEST_EFFORT
