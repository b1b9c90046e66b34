"""The snapshot's pods in groups that match alike, with per-topology-domain counts kept current.

Plugins that count pods per topology domain (inter-pod affinity, topology spread) would
otherwise walk every pod of the cluster for every incoming pod. Pods that agree on
everything such a plugin looks at — the namespace and labels a selector is matched
against, or the affinity terms that are matched against the incoming pod — form one
:class:`PodGroup`; a plugin decides once per group and reads the group's pod count
per topology value from :meth:`PodGroupIndex.domains`.

The cache keeps the index of a snapshot current from the nodes that changed between
two cycles (:meth:`PodGroupIndex.replace_node`): assumed, forgotten, added and removed
pods reach it the way they reach the snapshot, and nothing is recounted per pod.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

from kubesched.framework.types import NodeInfo, PodInfo

__all__ = [
    "PodGroup",
    "PodGroupIndex",
    "affinity_group_key",
    "label_group_key",
]

_NO_LABELS: Mapping[str, str] = {}


def label_group_key(pod_info: PodInfo) -> Hashable:
    """Pods a label selector (with the namespace rules of a pod affinity term) cannot
    tell apart: the same namespace and the same labels; terminating or not, which
    topology spread tells apart."""
    return (
        pod_info.namespace,
        frozenset(pod_info.labels.items()),
        pod_info.pod.metadata.deletion_timestamp is not None,
    )


def affinity_group_key(pod_info: PodInfo) -> Hashable | None:
    """Pods whose pod affinity terms select alike: the same four term lists (each term
    carries its namespaces), or ``None`` for a pod without any term."""
    if not pod_info.has_affinity():
        return None
    return (
        pod_info.required_affinity_terms,
        pod_info.required_anti_affinity_terms,
        pod_info.preferred_affinity_terms,
        pod_info.preferred_anti_affinity_terms,
    )


class PodGroup:
    """Pods of the snapshot with the same group key.

    ``sample`` is one of them (they all agree on what the key covers); ``count`` how
    many there are; ``nodes`` how many run on each node, by node name.
    """

    __slots__ = ("_domains", "count", "nodes", "sample")

    def __init__(self, sample: PodInfo) -> None:
        self.sample = sample
        self.count = 0
        self.nodes: dict[str, int] = {}
        self._domains: dict[str, dict[str, int]] = {}

    def __repr__(self) -> str:
        return f"PodGroup({self.sample.key}, count={self.count}, nodes={len(self.nodes)})"


class PodGroupIndex:
    """The pods of a snapshot's listed nodes in :class:`PodGroup` s, by ``group_of``.

    ``groups`` maps each key to its group (pods for which ``group_of`` answers ``None``
    are left out). :meth:`domains` answers, for a group and a node label key, how many
    of the group's pods run on nodes with each value of that label; nodes without the
    label are not counted. Counts are never zero: a domain without pods is absent.

    Read-only for plugins: the cache alone changes an index, between cycles.
    """

    __slots__ = ("_group_of", "_node_labels", "groups")

    def __init__(
        self, group_of: Callable[[PodInfo], Hashable | None], nodes: Iterable[NodeInfo] = ()
    ) -> None:
        self._group_of = group_of
        self.groups: dict[Hashable, PodGroup] = {}
        # The labels each node was counted with, so that a node whose labels change is
        # uncounted from the domains it was counted in.
        self._node_labels: dict[str, Mapping[str, str]] = {}
        for ni in nodes:
            self.add_node(ni)

    def domains(self, group: PodGroup, key: str) -> Mapping[str, int]:
        """The group's pod count per value of node label ``key`` (do not modify)."""
        counts = group._domains.get(key)
        if counts is None:
            counts = group._domains[key] = {}
            labels_of = self._node_labels
            for name, n in group.nodes.items():
                v = labels_of[name].get(key)
                if v is not None:
                    counts[v] = counts.get(v, 0) + n
        return counts

    def add_node(self, node_info: NodeInfo) -> None:
        """Count the pods of ``node_info`` (a node not counted yet)."""
        node = node_info.node
        labels = (node.metadata.labels if node is not None else None) or _NO_LABELS
        self._node_labels[node_info.name] = labels
        self._count(node_info.name, labels, node_info.pods, 1)

    def remove_node(self, node_info: NodeInfo) -> None:
        """Uncount the pods of ``node_info`` (as it was counted)."""
        labels = self._node_labels.pop(node_info.name, _NO_LABELS)
        self._count(node_info.name, labels, node_info.pods, -1)

    def replace_node(self, old: NodeInfo, new: NodeInfo) -> None:
        """``old`` (counted) became ``new``: count only the pods that changed when the
        Node object is the same, else recount the node under its new labels."""
        if old.node is not new.node or old.name != new.name:
            self.remove_node(old)
            self.add_node(new)
            return
        # NodeInfo copies share their PodInfos: a pod that did not change is the same object.
        before = {id(p): p for p in old.pods}
        after = {id(p): p for p in new.pods}
        if before.keys() == after.keys():
            return
        labels = self._node_labels.get(new.name, _NO_LABELS)
        self._count(new.name, labels, [p for i, p in before.items() if i not in after], -1)
        self._count(new.name, labels, [p for i, p in after.items() if i not in before], 1)

    def _count(
        self, name: str, labels: Mapping[str, str], pods: Iterable[PodInfo], sign: int
    ) -> None:
        groups = self.groups
        group_of = self._group_of
        for p in pods:
            key = group_of(p)
            if key is None:
                continue
            g = groups.get(key)
            if g is None:
                if sign < 0:
                    continue  # never counted (cannot happen with a consistent cache)
                g = groups[key] = PodGroup(p)
            g.count += sign
            n = g.nodes.get(name, 0) + sign
            if n > 0:
                g.nodes[name] = n
            else:
                g.nodes.pop(name, None)
            for topology_key, counts in g._domains.items():
                v = labels.get(topology_key)
                if v is not None:
                    _bump(counts, v, sign)
            if g.count <= 0:
                del groups[key]


def _bump(counts: dict[str, int], value: str, sign: int) -> None:
    n = counts.get(value, 0) + sign
    if n > 0:
        counts[value] = n
    else:
        counts.pop(value, None)
