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

from kubesched import NodeBatch, NodeInfo
from kubesched.api import Pod

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

NO_NRT = object()
"""``passthrough_verdicts``' verdict for a node without a NodeResourceTopology object."""
_MISSING = object()
_VERDICTS_KEY = ("NodeResourceTopologyMatch", "verdicts")
_VERDICT_LIMIT = 64
"""Pod shapes remembered per node before its verdicts start afresh."""


@dataclass(frozen=True)
class NodeTopology:
    """A node's NRT data as the plugin uses it: the Topology Manager settings and the NUMA
    zones (with bookings taken off, for overreserve)."""

    config: TopologyManagerConfig
    numa: list[NUMANode]
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)
    """Verdicts already computed on this data, by pod shape (the plugin's to fill): the
    data is replaced, never changed, when the object or the bookings change."""


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

    def passthrough_verdicts(
        self, nodes: NodeBatch, key: Any, compute: Callable[[int, NodeTopology], Any]
    ) -> list[Any] | None:
        """For the passthrough cache, per node of ``nodes``: the verdict ``key`` on its NRT
        data (``NO_NRT`` without an object), ``compute(position, topology)`` the first
        time; None for the other caches. Verdicts are kept per node with the object they
        were computed on, and dropped whenever a Node object changes (the resources it
        reports count in Filter)."""
        lister = self.handle.lister
        if self.mode != PASSTHROUGH or lister is None:
            return None
        memo = nodes.table.derived(_VERDICTS_KEY, lambda _table: {})
        get_object = lister.get_object
        out: list[Any] = []
        append = out.append
        # The hot loop of a large cluster: one lookup of the object, two of the memo.
        for i, name in enumerate(nodes.names):
            nrt = get_object(NODE_RESOURCE_TOPOLOGY_KIND, None, name)
            if nrt is None:
                append(NO_NRT)
                continue
            entry = memo.get(name)
            if entry is None or entry[0] is not nrt:
                entry = memo[name] = (nrt, {})
            verdicts = entry[1]
            verdict = verdicts.get(key, _MISSING)
            if verdict is _MISSING:
                verdict = compute(i, self._parse(name, nrt))
                if len(verdicts) >= _VERDICT_LIMIT:
                    verdicts.clear()
                verdicts[key] = verdict
            append(verdict)
        return out

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
