"""The quotas CapacityScheduling decides with: each ElasticQuota's min, max and what its pods use.

:class:`ElasticQuotaInfo` is upstream's per-namespace record (min, max, used and the pods
counted in used); :class:`ElasticQuotaInfos` all of them, as one cycle sees them.
:class:`QuotaUsage` keeps what each namespace's pods use, from the scheduler's own view
of the cluster (its snapshot: bound and assumed pods) plus what Reserve and Unreserve
report, so that usage follows the cluster without a watch of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kubesched import INT64_MAX, NodeInfo, Resource
from kubesched.api import resource_value

from .api import ElasticQuota

__all__ = [
    "LOWER_BOUND_OF_MIN",
    "UPPER_BOUND_OF_MAX",
    "ElasticQuotaInfo",
    "ElasticQuotaInfos",
    "QuotaUsage",
    "add_resource",
    "exceeds",
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

    ``min``/``max`` None mean no guarantee / no limit (upstream's nil). The uids counted
    are ``base`` (read, never changed: the usage's own, shared by every copy) with this
    copy's additions and removals, so that copying a quota for a cycle, and once per node
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
        """The uids of the pods counted in ``used`` (a new set)."""
        return (set(self._base) - self._removed) | self._added

    def has_pod(self, uid: str) -> bool:
        """Whether the pod ``uid`` is counted in ``used``."""
        return uid in self._added or (uid in self._base and uid not in self._removed)

    @classmethod
    def of(cls, quota: ElasticQuota) -> ElasticQuotaInfo:
        """The info of ``quota`` with nothing used yet; an unset min guarantees 0 and an
        unset max limits cpu, memory and ephemeral storage to the int64 maximum."""
        return cls(
            quota.metadata.namespace or "default",
            _from_quantities(quota.spec.min, LOWER_BOUND_OF_MIN),
            _from_quantities(quota.spec.max, UPPER_BOUND_OF_MAX),
        )

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

    def add_pod_if_not_present(self, uid: str, request: Resource) -> None:
        """Count the pod ``uid`` in ``used`` unless it already is."""
        if not self.has_pod(uid):
            self._removed.discard(uid)
            if uid not in self._base:
                self._added.add(uid)
            add_resource(self.used, request)

    def delete_pod_if_present(self, uid: str, request: Resource) -> None:
        """Stop counting the pod ``uid`` in ``used`` if it is."""
        if self.has_pod(uid):
            self._added.discard(uid)
            if uid in self._base:
                self._removed.add(uid)
            add_resource(self.used, request, -1)

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


class QuotaUsage:
    """What each namespace's pods request in all, with the pods counted (by uid).

    :meth:`sync` follows the scheduler's snapshot node by node (only the nodes whose
    generation changed since the last sync are looked at); :meth:`reserve` and
    :meth:`unreserve` count a pod from Reserve on, before a snapshot shows it, and stop
    counting it at Unreserve. A pod is counted once however it is reported.
    """

    def __init__(self) -> None:
        self.used: dict[str, Resource] = {}
        self.pods: dict[str, dict[str, Resource]] = {}
        # Per node: the generation synced and the pods seen on it (uid -> namespace).
        self._nodes: dict[str, tuple[int, dict[str, str]]] = {}

    def reserve(self, namespace: str, uid: str, request: Resource) -> None:
        """Count the pod ``uid`` of ``namespace`` (no-op when counted)."""
        pods = self.pods.setdefault(namespace, {})
        if uid not in pods:
            pods[uid] = request
            add_resource(self.used.setdefault(namespace, Resource()), request)

    def unreserve(self, namespace: str, uid: str) -> None:
        """Stop counting the pod ``uid`` of ``namespace`` (no-op when not counted)."""
        request = self.pods.get(namespace, {}).pop(uid, None)
        if request is not None:
            add_resource(self.used[namespace], request, -1)

    def sync(self, nodes: Iterable[NodeInfo]) -> None:
        """Count the pods of ``nodes`` (the snapshot's) and stop counting those gone."""
        seen = self._nodes
        listed = 0
        for ni in nodes:
            listed += 1
            known = seen.get(ni.name)
            if known is not None and known[0] == ni.generation:
                continue
            before = known[1] if known is not None else {}
            after = {p.uid: p.namespace for p in ni.pods}
            for uid, ns in before.items():
                if uid not in after:
                    self.unreserve(ns, uid)
            for p in ni.pods:
                if p.uid not in before:
                    self.reserve(p.namespace, p.uid, Resource.from_mapping(p.requests))
            seen[ni.name] = (ni.generation, after)
        if listed < len(seen):
            self._forget_nodes_not_in({ni.name for ni in nodes})

    def _forget_nodes_not_in(self, names: set[str]) -> None:
        for name in [n for n in self._nodes if n not in names]:
            for uid, ns in self._nodes.pop(name)[1].items():
                self.unreserve(ns, uid)

    def info(self, quota: ElasticQuota) -> ElasticQuotaInfo:
        """``quota``'s info with its namespace's pods counted (a copy to change)."""
        info = ElasticQuotaInfo.of(quota)
        used = self.used.get(info.namespace)
        if used is not None:
            info.used = used.clone()
            # The usage's own mapping, as the base: only Reserve and Unreserve change it,
            # once the cycle that read it has decided.
            info._base = self.pods[info.namespace]
        return info
