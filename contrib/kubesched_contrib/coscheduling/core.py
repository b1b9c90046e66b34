"""PodGroupManager: the group bookkeeping behind Coscheduling (upstream ``coscheduling/core``).

It finds a pod's PodGroup and siblings through the Handle's lister, counts the group's
assigned pods (bound or assumed) in the cycle's snapshot, and keeps two expiring sets:
groups that recently failed (backoff, checked by PreFilter) and groups whose
``minResources`` check passed (so it is not repeated for every member).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kubesched import NodeInfo
from kubesched.api import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Pod, resource_value

from .api import POD_GROUP_KIND, POD_GROUP_LABEL, PodGroup, pod_group_full_name, pod_group_label

DEFAULT_WAIT_TIME = 60.0
"""Upstream ``util.DefaultWaitTime``: the Permit wait when nothing else says how long."""

# Permit's outcomes (upstream core.Status).
POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
POD_GROUP_NOT_FOUND = "PodGroup not found"
SUCCESS = "Success"
WAIT = "Wait"


class PreFilterError(Exception):
    """Why PreFilter rejects a pod of a group (the message is upstream's)."""


class _TTLSet:
    """Keys that expire (upstream uses go-cache), on the scheduler's clock."""

    def __init__(self, now) -> None:
        self._now = now
        self._expiry: dict[str, float] = {}

    def add(self, key: str, ttl: float) -> None:
        # go-cache's Add does not extend an unexpired entry.
        if key not in self:
            self._expiry[key] = self._now() + ttl

    def __contains__(self, key: str) -> bool:
        expiry = self._expiry.get(key)
        if expiry is None:
            return False
        if self._now() >= expiry:
            del self._expiry[key]
            return False
        return True

    def delete(self, key: str) -> None:
        self._expiry.pop(key, None)


class PodGroupManager:
    """Upstream's ``PodGroupManager`` over a kubesched Handle."""

    def __init__(self, handle: Any, schedule_timeout: float) -> None:
        self.handle = handle
        self.schedule_timeout = schedule_timeout
        self.permitted = _TTLSet(self.now)
        self.backed_off = _TTLSet(self.now)

    def now(self) -> float:
        """The scheduler's clock (virtual time in a simulation)."""
        clock = getattr(self.handle, "clock", None)
        return clock.now() if clock is not None else time.monotonic()

    # -- lookups ------------------------------------------------------------------------
    def get_pod_group(self, pod: Pod) -> tuple[str, PodGroup | None]:
        """``(namespace/name, PodGroup)`` of the pod's group; ``("", None)`` without the
        label, ``(name, None)`` when the PodGroup does not exist."""
        name = pod_group_label(pod)
        if not name:
            return "", None
        namespace = pod.metadata.namespace or "default"
        lister = self.handle.lister
        pg = lister.get_object(POD_GROUP_KIND, namespace, name) if lister is not None else None
        return f"{namespace}/{name}", pg  # type: ignore[return-value]

    def siblings(self, pod: Pod) -> list[Pod]:
        """Every pod of the pod's namespace with the same group label (itself included),
        as upstream's pod lister with a label selector returns them."""
        name = pod_group_label(pod)
        lister = self.handle.lister
        if not name or lister is None:
            return []
        namespace = pod.metadata.namespace or "default"
        return lister.list_pods_with_label(namespace, POD_GROUP_LABEL, name)

    def calculate_assigned_pods(self, group: str, namespace: str) -> int:
        """Pods of the group that have a node in the snapshot: bound or assumed
        (the pod being scheduled is not in it during its own cycle)."""
        snapshot = self.handle.snapshot
        if snapshot is None:
            return 0
        # The snapshot's pods grouped by namespace and labels, kept current by the cache:
        # one look per group of alike pods instead of one per pod of the cluster.
        return sum(
            g.count
            for g in snapshot.pods_by_labels().groups.values()
            if g.sample.namespace == namespace and g.sample.labels.get(POD_GROUP_LABEL) == group
        )

    # -- extension points ---------------------------------------------------------------
    def pre_filter(self, pod: Pod) -> None:
        """Raise ``PreFilterError`` when the pod's group is backed off, has fewer pods
        than ``minMember``, or (with ``minResources``) the cluster lacks the resources."""
        full_name, pg = self.get_pod_group(pod)
        if pg is None:
            return
        if full_name in self.backed_off:
            raise PreFilterError(f"podGroup {full_name} failed recently")
        pods = self.siblings(pod)
        if len(pods) < pg.spec.min_member:
            raise PreFilterError(
                f"pre-filter pod {pod.metadata.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {pg.spec.min_member}"
            )
        if pg.spec.min_resources is None:
            return
        # As upstream (an open item there too): only a resource pre-check, other constraints may
        # still fail in Filter.
        if full_name in self.permitted:
            return
        request = {name: resource_value(name, q) for name, q in pg.spec.min_resources.items()}
        request[PODS] = pg.spec.min_member
        gap = check_cluster_resource(self.handle.snapshot.list(), request, full_name)
        if gap:
            raise PreFilterError(f"resource gap: {format_resources(gap)}")
        self.permitted.add(full_name, self.schedule_timeout)

    def permit(self, pod: Pod) -> str:
        """``SUCCESS`` when this pod completes the quorum, else ``WAIT`` (or why not)."""
        full_name, pg = self.get_pod_group(pod)
        if not full_name:
            return POD_GROUP_NOT_SPECIFIED
        if pg is None:
            return POD_GROUP_NOT_FOUND
        assigned = self.calculate_assigned_pods(pg.name, pg.namespace)
        # The pod being scheduled is not in the snapshot during its own cycle: +1.
        if assigned + 1 >= pg.spec.min_member:
            return SUCCESS
        return WAIT

    def creation_timestamp(self, pod: Pod, default: float, to_clock) -> float:
        """The PodGroup's creation time (clock seconds), or ``default`` for a pod
        without a group or whose group is missing (upstream ``GetCreationTimestamp``)."""
        name = pod_group_label(pod)
        if not name or self.handle.lister is None:
            return default
        pg = self.handle.lister.get_object(
            POD_GROUP_KIND, pod.metadata.namespace or "default", name
        )
        if pg is None or pg.metadata.creation_timestamp is None:
            return default
        return to_clock(pg.metadata.creation_timestamp)

    def backoff_pod_group(self, full_name: str, backoff: float) -> None:
        """Deny the group at PreFilter for ``backoff`` seconds."""
        if backoff:
            self.backed_off.add(full_name, backoff)

    def delete_permitted_pod_group(self, full_name: str) -> None:
        """Forget that the group passed the ``minResources`` check."""
        self.permitted.delete(full_name)

    def pods_to_activate(self, pod: Pod) -> dict[str, Pod]:
        """The pod's siblings (not itself), by ``namespace/name`` (``ActivateSiblings``),
        but those waiting at Permit: they hold a node already, and a pod activated while
        in flight is retried at once when its group is rejected, so a group that cannot
        fit would be retried over and over with no time passing."""
        skip = {pod.metadata.uid} | {
            w.pod.metadata.uid for w in self.handle.iterate_over_waiting_pods()
        }
        return {
            f"{p.metadata.namespace or 'default'}/{p.metadata.name}": p
            for p in self.siblings(pod)
            if p.metadata.uid not in skip
        }


def wait_time(pg: PodGroup | None, schedule_timeout: float) -> float:
    """Upstream ``GetWaitTimeDuration``: the group's ``scheduleTimeoutSeconds`` if set,
    else the plugin's ``permitWaitingTimeSeconds`` if not 0, else 60 s."""
    if pg is not None and pg.spec.schedule_timeout_seconds is not None:
        return float(pg.spec.schedule_timeout_seconds)
    if schedule_timeout:
        return schedule_timeout
    return DEFAULT_WAIT_TIME


def _node_left(node_info: NodeInfo, group_full_name: str) -> dict[str, int]:
    """What the node has left if the group's own pods were not on it (``getNodeResource``)."""
    requested = node_info.requested.clone()
    pods = 0
    for pi in node_info.pods:
        if pod_group_full_name(pi.pod) == group_full_name:
            requested.add(pi.requests, -1)
        else:
            pods += 1
    alloc = node_info.allocatable
    left = {
        PODS: alloc.allowed_pod_number - pods,
        CPU: alloc.milli_cpu - requested.milli_cpu,
        MEMORY: alloc.memory - requested.memory,
        EPHEMERAL_STORAGE: alloc.ephemeral_storage - requested.ephemeral_storage,
    }
    for name, amount in alloc.scalar_resources.items():
        left[name] = amount - requested.scalar_resources.get(name, 0)
    return left


def check_cluster_resource(
    node_infos: Iterable[NodeInfo], request: dict[str, int], group_full_name: str
) -> dict[str, int]:
    """Upstream ``CheckClusterResource``: subtract each node's leftovers from ``request``
    until nothing is missing; returns what is still missing (empty: the cluster fits)."""
    remaining = dict(request)
    for node_info in node_infos:
        if node_info is None or node_info.node is None:
            continue
        left = _node_left(node_info, group_full_name)
        for name in list(remaining):
            value = remaining[name] - left.get(name, 0)
            if value <= 0:
                del remaining[name]
            else:
                remaining[name] = value
        if not remaining:
            return {}
    return remaining


def format_resources(amounts: dict[str, int]) -> str:
    """``map[cpu:1500m memory:1073741824]``: Go's ``%v`` of a map, sorted by key, with
    cpu in millicores (upstream prints Quantity structs, which we do not imitate)."""
    parts = [
        f"{name}:{value}m" if name == CPU else f"{name}:{value}"
        for name, value in sorted(amounts.items())
    ]
    return "map[" + " ".join(parts) + "]"
