"""Read access to cluster objects besides pods and nodes, as plugins see it via the Handle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from operator import itemgetter
from typing import Protocol

from kubesched.api import (
    KubeObject,
    Namespace,
    Pod,
    PodDisruptionBudget,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    split_kind,
    stored_key,
)


class ObjectLister(Protocol):
    """What ``handle.lister`` offers: the objects scheduling plugins read, by kind.

    The embedded cluster and the real-cluster backend both implement it (the latter
    from its watch caches), so a plugin reads the same way everywhere.
    """

    def get_namespace(self, name: str) -> Namespace | None:
        """The Namespace ``name``, or None."""
        ...

    def list_services(self, namespace: str) -> list[Service]:
        """The Services of ``namespace``."""
        ...

    def list_replication_controllers(self, namespace: str) -> list[ReplicationController]:
        """The ReplicationControllers of ``namespace``."""
        ...

    def list_replica_sets(self, namespace: str) -> list[ReplicaSet]:
        """The ReplicaSets of ``namespace``."""
        ...

    def list_stateful_sets(self, namespace: str) -> list[StatefulSet]:
        """The StatefulSets of ``namespace``."""
        ...

    def list_pod_disruption_budgets(self, namespace: str) -> list[PodDisruptionBudget]:
        """The PodDisruptionBudgets of ``namespace`` (preemption reads them)."""
        ...

    def get_object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """Any object by kind name (built-in or a plugin's CRD-like kind such as
        ``PodGroup``), or None. ``namespace`` is ignored for cluster-scoped kinds. A kind
        name two groups share names the other group's kind as ``apiVersion/Kind``
        (``scheduling.k8s.io/v1alpha2/PodGroup``)."""
        ...

    def list_objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), sorted by key; empty for
        a kind nobody registered."""
        ...

    def kind_generation(self, kind: str) -> int:
        """A number that changes whenever an object of ``kind`` is added, changed or
        removed (SDK 1.5): a plugin that derives something from all objects of a kind
        (one per node, say) keeps it while the number stays the same, instead of looking
        every object up again each cycle."""
        ...

    def list_pods_with_label(self, namespace: str, key: str, value: str) -> list[Pod]:
        """The Pods of ``namespace`` whose label ``key`` is ``value``, sorted by key: what
        upstream's pod lister answers for the selector ``key=value`` (SDK 1.2). The
        embedded cluster answers from an index, not by walking every pod."""
        ...


class StaticLister:
    """An ``ObjectLister`` over a fixed set of objects (tests, snapshots).

    Every object is reachable through the generic ``get``/``list_objects``; the typed
    ``list_*`` methods serve their kinds. ``add``/``remove`` keep it current when used
    as the store of a changing cluster.
    """

    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._generic: dict[str, dict[str, KubeObject]] = defaultdict(dict)
        self._generations: dict[str, int] = defaultdict(int)
        self._namespaces: dict[str, Namespace] = {}
        self._by_kind: dict[type, dict[str, dict[str, KubeObject]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        for obj in objects:
            self.add(obj)

    @staticmethod
    def _generic_key(kind: str, obj: KubeObject) -> str:
        # Two groups' objects of one kind name (PodGroup) may share namespace and name.
        return stored_key(kind, obj.key, obj.api_version)

    def add(self, obj: KubeObject) -> None:
        """Add or replace ``obj``."""
        kind = obj.kind or type(obj).__name__
        self._generic[kind][self._generic_key(kind, obj)] = obj
        if isinstance(obj, Namespace):
            self._namespaces[obj.metadata.name] = obj
        elif isinstance(
            obj, (Service, ReplicationController, ReplicaSet, StatefulSet, PodDisruptionBudget)
        ):
            ns = obj.metadata.namespace or "default"
            self._by_kind[type(obj)][ns][obj.metadata.name] = obj
        # After the change: a reader that sees the new number sees the new object.
        self.changed(kind)

    def remove(self, obj: KubeObject) -> None:
        """Remove ``obj`` if present."""
        kind = obj.kind or type(obj).__name__
        self._generic[kind].pop(self._generic_key(kind, obj), None)
        if isinstance(obj, Namespace):
            self._namespaces.pop(obj.metadata.name, None)
        else:
            ns = obj.metadata.namespace or "default"
            self._by_kind[type(obj)][ns].pop(obj.metadata.name, None)
        self.changed(kind)

    def changed(self, kind: str) -> None:
        """Count a change of ``kind`` (``add``/``remove`` do; a subclass whose objects of
        a kind live elsewhere calls it itself)."""
        self._generations[kind] += 1

    def kind_generation(self, kind: str) -> int:
        """A number that changes whenever an object of ``kind`` is added, changed or
        removed."""
        return self._generations.get(kind, 0)

    def get_namespace(self, name: str) -> Namespace | None:
        """The Namespace ``name``, or None."""
        return self._namespaces.get(name)

    def _list(self, kind: type, namespace: str) -> list:
        return list(self._by_kind[kind][namespace].values())

    def list_services(self, namespace: str) -> list[Service]:
        """The Services of ``namespace``."""
        return self._list(Service, namespace)

    def list_replication_controllers(self, namespace: str) -> list[ReplicationController]:
        """The ReplicationControllers of ``namespace``."""
        return self._list(ReplicationController, namespace)

    def list_replica_sets(self, namespace: str) -> list[ReplicaSet]:
        """The ReplicaSets of ``namespace``."""
        return self._list(ReplicaSet, namespace)

    def list_stateful_sets(self, namespace: str) -> list[StatefulSet]:
        """The StatefulSets of ``namespace``."""
        return self._list(StatefulSet, namespace)

    def list_pod_disruption_budgets(self, namespace: str) -> list[PodDisruptionBudget]:
        """The PodDisruptionBudgets of ``namespace``."""
        return self._list(PodDisruptionBudget, namespace)

    def get_object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        """Any object by kind name (or ``apiVersion/Kind``), or None."""
        kind, api_version = split_kind(kind)
        store = self._generic.get(kind)
        if not store:
            return None
        obj = store.get(stored_key(kind, f"{namespace or 'default'}/{name}", api_version))
        # A cluster-scoped object's key is its name.
        return obj if obj is not None else store.get(stored_key(kind, name, api_version))

    def list_objects(self, kind: str, namespace: str | None = None) -> list[KubeObject]:
        """The objects of ``kind`` (of ``namespace`` if given), sorted by key."""
        # One copy of the items (atomic): a real cluster's informers change the store
        # from their threads while plugins read.
        kind, api_version = split_kind(kind)
        items = sorted((self._generic.get(kind) or {}).items(), key=itemgetter(0))
        return [
            o
            for key, o in items
            if (namespace is None or o.namespace == namespace)
            and (api_version is None or key == stored_key(kind, o.key, api_version))
        ]

    def list_pods_with_label(self, namespace: str, key: str, value: str) -> list[Pod]:
        """The Pods of ``namespace`` whose label ``key`` is ``value``, sorted by key."""
        pods = self.list_objects("Pod", namespace)
        return [p for p in pods if (p.metadata.labels or {}).get(key) == value]  # type: ignore[misc]
