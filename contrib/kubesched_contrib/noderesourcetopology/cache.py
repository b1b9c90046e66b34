"""What NodeResourceTopologyMatch believes each node has: the NRT objects, and its own bookings.

Upstream keeps one of three caches (``pkg/noderesourcetopology/cache``), chosen by the
args; this module models what each does that a scheduling decision can observe:

* **passthrough** (``cacheResyncPeriodSeconds: 0``, the default): the NRT object as the
  node's agent last wrote it. Pods this scheduler just placed are not in it until the
  agent updates the object.
* **overreserve** (``cacheResyncPeriodSeconds > 0``): the NRT object minus every pod
  reserved on the node since the object was read, taken from *every* NUMA zone (which
  zone the kubelet picks is unknown, so the view is pessimistic). Upstream forgets the
  bookings when a periodic resync finds the agent's object accounts for them (pod-set
  fingerprint); here they are forgotten when the object changes, and a booked pod stops
  counting once it left the node (deleted or preempted).
* **discard-reserved** (``discardReservedNodes: true``): a node with a pod reserved but
  not yet bound has no usable NRT data (Filter rejects it) until the bind completes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched import NodeInfo, NodeTable
from kubesched.api import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Pod

from .api import NODE_RESOURCE_TOPOLOGY_KIND, NodeResourceTopology
from .numa import (
    NUMANode,
    TopologyManagerConfig,
    numa_nodes,
    pod_effective_requests,
    topology_manager_config,
)

PASSTHROUGH = "passthrough"
OVERRESERVE = "overreserve"
DISCARD_RESERVED = "discard-reserved"

_ABSENT: tuple[None, bool] = (None, True)

_GROUPS_KEY = ("NodeResourceTopologyMatch", "groups")
_VERDICT_LIMIT = 64
"""Pod shapes whose verdicts a table's groups remember before they start afresh."""

# Resources every node reports (``util.ResourceList`` of NodeInfo.Allocatable).
_ALWAYS_REPORTED = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS})


def node_resources(node_info: NodeInfo) -> frozenset[str]:
    """The resources the node reports at all (Filter: a request for another one fails)."""
    return _ALWAYS_REPORTED.union(node_info.allocatable.scalar_resources)


@dataclass(frozen=True)
class NodeTopology:
    """A node's NRT data as the plugin uses it: the Topology Manager settings and the NUMA
    zones (with bookings taken off, for overreserve)."""

    config: TopologyManagerConfig
    numa: list[NUMANode]
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)
    """Verdicts already computed on this data, by pod shape (the plugin's to fill): the
    data is replaced, never changed, when the object or the bookings change."""

    def content(self) -> tuple[Any, ...]:
        """What the verdicts depend on, hashable: equal for equal data."""
        return (
            self.config,
            tuple(
                (n.numa_id, tuple(sorted(n.resources.items())), tuple(sorted(n.costs.items())))
                for n in self.numa
            ),
        )


class TopologyGroups:
    """The rows of a node table grouped by equal NRT data (and equal reported
    resources), with each group's verdicts by pod shape: a pod is decided once per
    group, and the verdicts spread to the rows with numpy.

    Group numbers stay stable while the table lives, so verdicts computed before an NRT
    object changed stay valid for the groups they were computed on.
    """

    def __init__(self, rows: int) -> None:
        self.generation = -1
        """The lister's NodeResourceTopology generation the rows were read at."""
        self.ids = np.full(rows, -1, dtype=np.intp)
        """Per row: its group's number (``topologies[number - 1]``); 0 for a node without
        an NRT object."""
        self.topologies: list[NodeTopology] = []
        self.resources: list[frozenset[str]] = []
        self._seen: list[Any] = [None] * rows
        self._numbers: dict[tuple[Any, ...], int] = {}
        self._verdicts: dict[Any, tuple[np.ndarray, np.ndarray]] = {}

    def refresh(
        self,
        infos: Sequence[NodeInfo],
        lister: Any,
        parse: Callable[[str, NodeResourceTopology], NodeTopology],
    ) -> None:
        """Read every row's NRT object again; rows whose object is the same keep their
        group."""
        get_object, seen, ids, numbers = lister.get_object, self._seen, self.ids, self._numbers
        for row, ni in enumerate(infos):
            nrt = get_object(NODE_RESOURCE_TOPOLOGY_KIND, None, ni.name)
            if nrt is seen[row] and ids[row] >= 0:
                continue
            seen[row] = nrt
            if nrt is None:
                ids[row] = 0
                continue
            topology = parse(ni.name, nrt)
            reported = node_resources(ni)
            key = (topology.content(), reported)
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = len(self.topologies) + 1
                self.topologies.append(topology)
                self.resources.append(reported)
            ids[row] = number

    def verdicts(
        self,
        key: Any,
        ids: np.ndarray,
        compute: Callable[[NodeTopology, frozenset[str]], Any],
        absent: Any,
        dtype: Any,
    ) -> np.ndarray:
        """Per row of ``ids`` (a slice of :attr:`ids`), the verdict ``key`` on its group's
        data (``absent`` without an object); ``compute(topology, reported resources)`` for
        a group the first time."""
        entry = self._verdicts.get(key)
        size = len(self.topologies) + 1
        if entry is None or len(entry[0]) < size:
            if entry is None and len(self._verdicts) >= _VERDICT_LIMIT:
                self._verdicts.clear()
            lut = np.empty(size, dtype=dtype)
            known = np.zeros(size, dtype=bool)
            if entry is not None:
                lut[: len(entry[0])] = entry[0]
                known[: len(entry[1])] = entry[1]
            lut[0], known[0] = absent, True
            entry = self._verdicts[key] = (lut, known)
        lut, known = entry
        missing = ~known[ids]
        if missing.any():
            for number in np.unique(ids[missing]).tolist():
                lut[number] = compute(self.topologies[number - 1], self.resources[number - 1])
                known[number] = True
        return lut[ids]


@dataclass
class _Bookings:
    """Pods reserved on one node since its NRT object ``seen`` was read."""

    seen: NodeResourceTopology
    pods: dict[str, dict[str, int]] = field(default_factory=dict)
    generation: int = -1
    """The NodeInfo generation at which ``pods`` was last pruned."""
    view: NodeTopology | None = None
    """The object's data with ``pods`` taken off (None: to be made again)."""

    def changed(self) -> None:
        """Forget the view after ``pods`` changed."""
        self.view = None


class NRTCache:
    """The NRT view of one plugin instance (one profile), in one of the three modes."""

    def __init__(self, handle: Any, mode: str) -> None:
        self.handle = handle
        self.mode = mode
        # Parsed objects, by node: reused while the lister returns the same object.
        self._parsed: dict[str, tuple[NodeResourceTopology, NodeTopology]] = {}
        self._bookings: dict[str, _Bookings] = {}
        self._reserved: dict[str, set[str]] = {}

    def nrt(self, node_name: str) -> NodeResourceTopology | None:
        """The node's NRT object (None when it has none)."""
        lister = self.handle.lister
        if lister is None:
            return None
        return lister.get_object(NODE_RESOURCE_TOPOLOGY_KIND, None, node_name)  # type: ignore[return-value]

    def _parse(self, node_name: str, nrt: NodeResourceTopology) -> NodeTopology:
        cached = self._parsed.get(node_name)
        if cached is not None and cached[0] is nrt:
            return cached[1]
        topology = NodeTopology(topology_manager_config(nrt), numa_nodes(nrt.zones))
        self._parsed[node_name] = (nrt, topology)
        return topology

    def get(self, node_info: NodeInfo) -> tuple[NodeTopology | None, bool]:
        """``(topology, fresh)``: the node's data (None without an NRT object) and whether
        it may be used at all (False: a discard-reserved node with a pod in flight)."""
        name = node_info.name
        if self.mode == DISCARD_RESERVED and self._reserved.get(name):
            return None, False
        nrt = self.nrt(name)
        if nrt is None:
            return _ABSENT
        topology = self._parse(name, nrt)
        if self.mode != OVERRESERVE:
            return topology, True
        bookings = self._current_bookings(node_info, nrt)
        if bookings is None or not bookings.pods:
            return topology, True
        if bookings.view is None:
            numa = [n.copy() for n in topology.numa]
            for reqs in bookings.pods.values():
                for n in numa:
                    for res, amount in reqs.items():
                        if res in n.resources:
                            n.resources[res] = max(n.resources[res] - amount, 0)
            bookings.view = NodeTopology(topology.config, numa)
        return bookings.view, True

    def get_many(self, infos: Sequence[NodeInfo]) -> list[tuple[NodeTopology | None, bool]]:
        """``get`` for each node, in order."""
        lister = self.handle.lister
        if self.mode != PASSTHROUGH or lister is None:
            return [self.get(ni) for ni in infos]
        # The hot loop of a large cluster: one lookup of the object and one of its parse.
        get_object, parsed, parse = lister.get_object, self._parsed, self._parse
        out: list[tuple[NodeTopology | None, bool]] = []
        append = out.append
        for ni in infos:
            name = ni.name
            nrt = get_object(NODE_RESOURCE_TOPOLOGY_KIND, None, name)
            if nrt is None:
                append(_ABSENT)
                continue
            cached = parsed.get(name)
            topology = cached[1] if cached is not None and cached[0] is nrt else parse(name, nrt)
            append((topology, True))
        return out

    def passthrough_groups(self, table: NodeTable) -> TopologyGroups | None:
        """For the passthrough cache, the NRT data of every row of ``table`` as groups of
        equal data (None for the other caches). Kept on the table (until a Node object
        changes) and brought up to date only when the lister reports a change of the
        NodeResourceTopology kind: a cycle then looks nothing up per node."""
        lister = self.handle.lister
        if self.mode != PASSTHROUGH or lister is None:
            return None
        groups: TopologyGroups = table.derived(_GROUPS_KEY, lambda t: TopologyGroups(len(t)))
        generation = lister.kind_generation(NODE_RESOURCE_TOPOLOGY_KIND)
        if groups.generation != generation:
            groups.refresh(table.infos, lister, self._parse)
            groups.generation = generation
        return groups

    def _current_bookings(self, node_info: NodeInfo, nrt: NodeResourceTopology) -> _Bookings | None:
        bookings = self._bookings.get(node_info.name)
        if bookings is None:
            return None
        if bookings.seen is not nrt:
            # The agent wrote the object again: it accounts for what ran by then.
            del self._bookings[node_info.name]
            return None
        if bookings.generation != node_info.generation:
            present = {pi.uid for pi in node_info.pods}
            gone = [uid for uid in bookings.pods if uid not in present]
            for uid in gone:
                del bookings.pods[uid]
            if gone:
                bookings.changed()
            bookings.generation = node_info.generation
        return bookings

    # -- bookings -----------------------------------------------------------------------------
    def reserve(self, node_name: str, pod: Pod, uid: str) -> None:
        """Book the pod on the node (overreserve), or hold the node (discard-reserved)."""
        if self.mode == DISCARD_RESERVED:
            self._reserved.setdefault(node_name, set()).add(uid)
        elif self.mode == OVERRESERVE:
            nrt = self.nrt(node_name)
            if nrt is None:
                return
            bookings = self._bookings.get(node_name)
            if bookings is None or bookings.seen is not nrt:
                bookings = self._bookings[node_name] = _Bookings(nrt)
            bookings.pods[uid] = pod_effective_requests(pod)
            bookings.changed()
            # Not pruned yet: the pod joins the node's NodeInfo only with the next snapshot.
            bookings.generation = -1

    def unreserve(self, node_name: str, uid: str) -> None:
        """Undo ``reserve`` (a failed or rejected binding)."""
        reserved = self._reserved.get(node_name)
        if reserved is not None:
            reserved.discard(uid)
        bookings = self._bookings.get(node_name)
        if bookings is not None and bookings.pods.pop(uid, None) is not None:
            bookings.changed()

    def bound(self, node_name: str, uid: str) -> None:
        """The pod is bound: a discard-reserved node is usable again."""
        reserved = self._reserved.get(node_name)
        if reserved is not None:
            reserved.discard(uid)
