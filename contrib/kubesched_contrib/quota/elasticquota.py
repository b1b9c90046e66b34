"""The quotas CapacityScheduling decides with: each ElasticQuota's min, max and what its pods use.

:class:`ElasticQuotaInfo` is upstream's per-namespace record (min, max, used and the pods
counted in used); :class:`ElasticQuotaInfos` all of them, as one cycle sees them.
:class:`QuotaUsage` says what each namespace's pods use, from the scheduler's own view
of the cluster (its snapshot: bound and assumed pods, counted per group of pods alike,
which the cache keeps current) plus the pods Reserve reported that the snapshot does
not show yet, so that usage follows the cluster without a watch of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kubesched import INT64_MAX, PodInfo, Resource
from kubesched.api import resource_value

from .api import ElasticQuota
from .victims import node_of

__all__ = [
    "GROUPS",
    "LOWER_BOUND_OF_MIN",
    "UPPER_BOUND_OF_MAX",
    "ElasticQuotaInfo",
    "ElasticQuotaInfos",
    "QuotaUsage",
    "add_resource",
    "bounds",
    "exceeds",
    "request_of",
]

UPPER_BOUND_OF_MAX = INT64_MAX
"""What an unset max allows of cpu, memory and ephemeral storage, and a set max of an
extended resource it leaves out (upstream ``UpperBoundOfMax``)."""
LOWER_BOUND_OF_MIN = 0
"""What an unset min guarantees, and a set min of a resource it leaves out."""

# The resources an unset bound stands for (upstream makeResourceListForBound).
_BOUND_NAMES = ("cpu", "memory", "ephemeral-storage")


def _bound(value: int) -> Resource:
    return Resource.from_mapping(dict.fromkeys(_BOUND_NAMES, value))


def _from_quantities(amounts: Mapping[str, object] | None, unset: int) -> Resource:
    if amounts is None:
        return _bound(unset)
    return Resource.from_mapping({n: resource_value(n, q) for n, q in amounts.items()})


def bounds(quota: ElasticQuota) -> tuple[Resource, Resource]:
    """``quota``'s min and max: an unset min guarantees 0, an unset max limits cpu, memory
    and ephemeral storage to the int64 maximum. Read-only: shared by every info of the
    same quota object (a changed quota is a new object)."""
    cached = _BOUNDS.get(id(quota))
    if cached is None or cached[0] is not quota:
        if len(_BOUNDS) > _BOUNDS_KEPT:
            _BOUNDS.clear()
        cached = _BOUNDS[id(quota)] = (
            quota,
            _from_quantities(quota.spec.min, LOWER_BOUND_OF_MIN),
            _from_quantities(quota.spec.max, UPPER_BOUND_OF_MAX),
        )
    return cached[1], cached[2]


# Parsed bounds by quota object (kept with the object, so that its id is not reused
# while cached); cleared past a size no cluster's quotas reach.
_BOUNDS: dict[int, tuple[ElasticQuota, Resource, Resource]] = {}
_BOUNDS_KEPT = 4096


def exceeds(x1: Resource, x2: Resource, y: Resource, bound: int) -> bool:
    """Whether ``x1 + x2`` is above ``y`` in some resource (upstream ``cmp2``).

    cpu, memory, ephemeral storage and pods always compare, an amount ``y`` leaves out
    being 0; an extended resource compares only when ``x1`` has it, against ``bound``
    when ``y`` leaves it out."""
    if x1.milli_cpu + x2.milli_cpu > y.milli_cpu:
        return True
    if x1.memory + x2.memory > y.memory:
        return True
    if x1.ephemeral_storage + x2.ephemeral_storage > y.ephemeral_storage:
        return True
    if x1.allowed_pod_number + x2.allowed_pod_number > y.allowed_pod_number:
        return True
    theirs, limits = x2.scalar_resources, y.scalar_resources
    return any(
        amount + theirs.get(name, 0) > limits.get(name, bound)
        for name, amount in x1.scalar_resources.items()
    )


_NOTHING = Resource()


def add_resource(into: Resource, amounts: Resource, sign: int = 1) -> None:
    """Add (``sign=-1``: subtract) ``amounts`` to ``into``."""
    into.milli_cpu += sign * amounts.milli_cpu
    into.memory += sign * amounts.memory
    into.ephemeral_storage += sign * amounts.ephemeral_storage
    into.allowed_pod_number += sign * amounts.allowed_pod_number
    scalars = into.scalar_resources
    for name, value in amounts.scalar_resources.items():
        scalars[name] = scalars.get(name, 0) + sign * value


class ElasticQuotaInfo:
    """One namespace's quota: ``min``, ``max``, and ``used`` by the pods in ``pods`` (uids).

    ``min``/``max`` None mean no guarantee / no limit (upstream's nil). The pods counted
    are those bound or assumed in the snapshot (their ``node_name`` is set) and those of
    ``base`` (reserved, not in the snapshot yet; shared by copies, never changed), with
    this copy's additions and removals: copying a quota for a cycle, and once per node
    for preemption's dry run, does not copy every pod of the namespace.
    """

    __slots__ = ("_added", "_base", "_removed", "max", "min", "namespace", "used")

    def __init__(
        self,
        namespace: str,
        min: Resource | None,
        max: Resource | None,
        used: Resource | None = None,
        base: Collection[str] = frozenset(),
    ) -> None:
        self.namespace = namespace
        self.min = min
        self.max = max
        self.used = used if used is not None else Resource()
        self._base = base
        self._added: set[str] = set()
        self._removed: set[str] = set()

    @property
    def pods(self) -> set[str]:
        """The uids counted beyond the snapshot's pods (a new set)."""
        return (set(self._base) - self._removed) | self._added

    def has_pod(self, pod_info: PodInfo) -> bool:
        """Whether the pod is counted in ``used``."""
        uid = pod_info.uid
        if uid in self._added:
            return True
        return (bool(pod_info.node_name) or uid in self._base) and uid not in self._removed

    @classmethod
    def of(
        cls,
        quota: ElasticQuota,
        used: Resource | None = None,
        reserved: Collection[str] = frozenset(),
    ) -> ElasticQuotaInfo:
        """The info of ``quota`` with ``used`` (default: nothing) by the snapshot's pods
        and the ``reserved`` ones (see :func:`bounds` for min and max)."""
        min_, max_ = bounds(quota)
        return cls(quota.metadata.namespace or "default", min_, max_, used, reserved)

    def used_over_min_with(self, request: Resource) -> bool:
        """Whether ``used + request`` is above min in some resource."""
        if self.min is None:
            return True
        return exceeds(request, self.used, self.min, LOWER_BOUND_OF_MIN)

    def used_over_max_with(self, request: Resource) -> bool:
        """Whether ``used + request`` is above max in some resource."""
        if self.max is None:
            return False
        return exceeds(request, self.used, self.max, UPPER_BOUND_OF_MAX)

    def used_over_min(self) -> bool:
        """Whether ``used`` is above min in some resource: the namespace borrows."""
        if self.min is None:
            return True
        return exceeds(self.used, _NOTHING, self.min, LOWER_BOUND_OF_MIN)

    def add_pod_if_not_present(self, pod_info: PodInfo) -> None:
        """Count the pod in ``used`` unless it already is."""
        if not self.has_pod(pod_info):
            uid = pod_info.uid
            if uid in self._removed:
                self._removed.discard(uid)
            else:
                self._added.add(uid)
            add_resource(self.used, request_of(pod_info))

    def delete_pod_if_present(self, pod_info: PodInfo) -> None:
        """Stop counting the pod in ``used`` if it is."""
        if self.has_pod(pod_info):
            uid = pod_info.uid
            if uid in self._added:
                self._added.discard(uid)
            else:
                self._removed.add(uid)
            add_resource(self.used, request_of(pod_info), -1)

    def clone(self) -> ElasticQuotaInfo:
        """An independent copy."""
        c = ElasticQuotaInfo(
            self.namespace,
            self.min.clone() if self.min is not None else None,
            self.max.clone() if self.max is not None else None,
            self.used.clone(),
            self._base,
        )
        c._added = set(self._added)
        c._removed = set(self._removed)
        return c

    def __repr__(self) -> str:
        return (
            f"ElasticQuotaInfo({self.namespace!r}, min={self.min}, max={self.max}, "
            f"used={self.used})"
        )


class ElasticQuotaInfos(dict[str, ElasticQuotaInfo]):
    """The quotas by namespace."""

    def clone(self) -> ElasticQuotaInfos:
        """An independent copy of every quota."""
        return ElasticQuotaInfos((ns, info.clone()) for ns, info in self.items())

    def aggregated_used_over_min_with(self, request: Resource) -> bool:
        """Whether all quotas' used plus ``request`` is above the sum of their mins in some
        resource: nothing is left to borrow."""
        used, total_min = request.clone(), Resource()
        for info in self.values():
            add_resource(used, info.used)
            if info.min is not None:
                add_resource(total_min, info.min)
        return exceeds(used, _NOTHING, total_min, LOWER_BOUND_OF_MIN)


GROUPS = "CapacityScheduling/requests"
"""The name of CapacityScheduling's pod grouping in the snapshot (see ``pods_grouped``)."""


def request_of(pod_info: PodInfo) -> Resource:
    """What the pod requests, as its quota counts it (NodeResourcesFit's requests)."""
    return Resource.from_mapping(pod_info.requests)


def _namespace_and_requests(pod_info: PodInfo) -> tuple[str, frozenset[tuple[str, int]]]:
    return pod_info.namespace, frozenset(pod_info.requests.items())


class QuotaUsage:
    """What each namespace's pods request in all.

    The snapshot's pods count through its grouping of pods by namespace and requests,
    which the cache keeps current as nodes change (a cycle reads one sum per group, not
    every pod). :meth:`reserve` counts a pod from Reserve on, while the snapshot still
    has its node as it was then (the pod is assumed in the cache before Reserve: any
    later snapshot of the node shows it, or shows it gone); :meth:`unreserve` stops
    counting it.
    """

    def __init__(self) -> None:
        # Reserved pods: uid -> (namespace, node, request, the node's generation then).
        self.reserved: dict[str, tuple[str, str, Resource, int | None]] = {}

    def reserve(self, pod_info: PodInfo, node_name: str, snapshot: Any) -> None:
        """Count the pod, reserved on ``node_name`` while ``snapshot`` is the cycle's."""
        node = node_of(snapshot, node_name)
        self.reserved[pod_info.uid] = (
            pod_info.namespace,
            node_name,
            request_of(pod_info),
            node.generation if node is not None else None,
        )

    def unreserve(self, pod_info: PodInfo) -> None:
        """Stop counting the pod as reserved (the snapshot drops it once it is forgotten)."""
        self.reserved.pop(pod_info.uid, None)

    def used(self, snapshot: Any) -> tuple[dict[str, Resource], dict[str, set[str]]]:
        """Per namespace: what its pods use, and the uids of its reserved pods that
        ``snapshot`` cannot show yet."""
        used: dict[str, Resource] = {}
        for (namespace, requests), group in snapshot.pods_grouped(
            GROUPS, _namespace_and_requests
        ).groups.items():
            total = used.setdefault(namespace, Resource())
            for name, amount in requests:
                total.add({name: amount * group.count})
        pending: dict[str, set[str]] = {}
        for uid, (namespace, node_name, request, generation) in list(self.reserved.items()):
            node = node_of(snapshot, node_name)
            if node is None or node.generation != generation:
                del self.reserved[uid]  # the snapshot has the node since: it tells
                continue
            add_resource(used.setdefault(namespace, Resource()), request)
            pending.setdefault(namespace, set()).add(uid)
        return used, pending
