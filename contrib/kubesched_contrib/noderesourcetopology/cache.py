"""What NodeResourceTopologyMatch believes each node has: the NRT objects, and its own bookings.

Upstream keeps one of three caches (``pkg/noderesourcetopology/cache``), chosen by the
args; this module models what each does that a scheduling decision can observe:

* **passthrough** (``cacheResyncPeriodSeconds: 0``, the default): the NRT object as the
  node's agent last wrote it. Pods this scheduler just placed are not in it until the
  agent updates the object.
* **overreserve** (``cacheResyncPeriodSeconds > 0``): the NRT object as first read, minus
  every pod reserved on the node since, taken from *every* NUMA zone (which zone the
  kubelet picks is unknown, so the view is pessimistic). A pod another scheduler placed
  (a *foreign* pod, ``cache.foreignPodsDetect``) coming or going makes the node's data
  unusable. Once per period, a node with foreign pods or rejected by Filter is resynced:
  the agent's newest object replaces the view, and the bookings and the foreign mark go,
  if its pod-set fingerprint is that of the pods on the node (``cache.resyncMethod``).
* **discard-reserved** (``discardReservedNodes: true``): a node with a pod reserved but
  not yet bound has no usable NRT data (Filter rejects it) until the bind completes.

For NUMA-aware preemption the cache also decodes where each pinned container runs (the
agent's NUMA placement, :meth:`NRTCache.placement`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

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
from .numaplacement import NUMAPlacementError, PlacementInfo, decode, payload_from_nrt
from .resync import (
    RESYNC_AUTODETECT,
    exclusive_containers,
    fingerprint_matches,
    has_exclusive_resources,
    nrt_resource_names,
)

PASSTHROUGH = "passthrough"
OVERRESERVE = "overreserve"
DISCARD_RESERVED = "discard-reserved"

FOREIGN_NONE = "None"
FOREIGN_ALL = "All"
FOREIGN_ONLY_EXCLUSIVE = "OnlyExclusiveResources"

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
class _NodeView:
    """The overreserve cache's state of one node."""

    seen: NodeResourceTopology
    """The object the view starts from: the first one read, then the last one a resync
    found accounts for the pods on the node."""
    pods: dict[str, dict[str, int]] = field(default_factory=dict)
    """Pods reserved on the node since ``seen``, by uid: their requests."""
    foreign: bool = False
    """A pod of another scheduler came or went since ``seen``: the data is not usable."""
    maybe_overreserved: bool = False
    """Filter rejected the node since the last pod was reserved on it."""
    known_foreign: frozenset[str] = frozenset()
    """The foreign pods on the node when it was last looked at."""
    generation: int = -1
    """The NodeInfo generation ``known_foreign`` was taken at."""
    resync_tick: int = -1
    """The resync period in which a resync of the node was last tried."""
    view: NodeTopology | None = None
    """``seen``'s data with ``pods`` taken off (None: to be made again)."""

    def flush(self, nrt: NodeResourceTopology) -> None:
        """Start again from ``nrt``, which accounts for every pod on the node."""
        self.seen = nrt
        self.pods.clear()
        self.foreign = self.maybe_overreserved = False
        self.view = None


_FOREIGN_DETECTORS: WeakKeyDictionary[Any, set[str]] = WeakKeyDictionary()
"""By cluster (its lister): the profiles whose NodeResourceTopologyMatch detects foreign
pods; a pod of any of them is not foreign to the others (upstream keeps one such set per
scheduler process)."""


class NRTCache:
    """The NRT view of one plugin instance (one profile), in one of the three modes."""

    def __init__(
        self,
        handle: Any,
        mode: str,
        *,
        resync_period: int = 0,
        foreign_pods_detect: str = FOREIGN_ALL,
        resync_method: str = RESYNC_AUTODETECT,
    ) -> None:
        self.handle = handle
        self.mode = mode
        self.resync_period = resync_period
        self.foreign_pods_detect = foreign_pods_detect
        self.resync_method = resync_method
        # Parsed objects, by node: reused while the lister returns the same object.
        self._parsed: dict[str, tuple[NodeResourceTopology, NodeTopology]] = {}
        self._views: dict[str, _NodeView] = {}
        self._reserved: dict[str, set[str]] = {}
        # Decoded NUMA placements, by node: (object, NodeInfo generation, placement).
        self._placements: dict[str, tuple[NodeResourceTopology, int, PlacementInfo | None]] = {}
        self._ours: set[str] = {handle.profile_name}
        if mode == OVERRESERVE and foreign_pods_detect != FOREIGN_NONE:
            if handle.lister is not None:
                self._ours = _FOREIGN_DETECTORS.setdefault(handle.lister, set())
            self._ours.add(handle.profile_name)

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
        it may be used at all (False: a discard-reserved node with a pod in flight, an
        overreserve node with foreign pods)."""
        name = node_info.name
        if self.mode == DISCARD_RESERVED and self._reserved.get(name):
            return None, False
        nrt = self.nrt(name)
        if nrt is None and name not in self._views:
            return _ABSENT
        if self.mode != OVERRESERVE:
            return self._parse(name, nrt), True
        return self._overreserved(node_info, nrt)

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

    def _snapshot_info(self, node_info: NodeInfo) -> NodeInfo:
        """The cycle snapshot's NodeInfo of the node (``node_info`` itself outside a
        cycle, or when it is the snapshot's)."""
        snapshot = self.handle.snapshot
        found = snapshot.get(node_info.name) if snapshot is not None else None
        return found if found is not None else node_info

    # -- NUMA placement (preemption) ------------------------------------------------------------
    def source(self, node_name: str) -> NodeResourceTopology | None:
        """The object the node's data comes from: the one the overreserve view started
        from, else the node's object."""
        state = self._views.get(node_name) if self.mode == OVERRESERVE else None
        return state.seen if state is not None else self.nrt(node_name)

    def placement(self, node_info: NodeInfo) -> PlacementInfo | None:
        """Which NUMA node each exclusive container on the node runs on, decoded from the
        :meth:`source` object's NUMA placement; None when it has none or it cannot be
        decoded.

        Decoding needs the set of containers the agent encoded, so it is done only when
        the object's pod-set fingerprint is that of the pods on the node (upstream decodes
        when a resync takes an object, on the same condition). The result is kept for the
        object, as upstream keeps it until the next resync, even as pods come and go.
        The pods are the snapshot's: preemption's dry run hands Filter a copy of the node
        without its victims."""
        name = node_info.name
        node_info = self._snapshot_info(node_info)
        nrt = self.source(name)
        if nrt is None:
            return None
        known = self._placements.get(name)
        # A failed decoding is tried again once the node's pods change.
        if (
            known is not None
            and known[0] is nrt
            and (known[2] is not None or known[1] == node_info.generation)
        ):
            return known[2]
        info = self._decode_placement(nrt, node_info)
        self._placements[name] = (nrt, node_info.generation, info)
        return info

    def _decode_placement(
        self, nrt: NodeResourceTopology, node_info: NodeInfo
    ) -> PlacementInfo | None:
        pods = [pi.pod for pi in node_info.pods]
        try:
            payload = payload_from_nrt(nrt)
            if payload is None or not fingerprint_matches(nrt, pods, self.resync_method):
                return None
            resources = nrt_resource_names(nrt)
            containers = [
                (pod.metadata.namespace or "default", pod.metadata.name, c.name)
                for pod in pods
                for c in exclusive_containers(pod, resources)
            ]
            return decode(payload, containers)
        except NUMAPlacementError:
            return None

    # -- overreserve ---------------------------------------------------------------------------
    def _overreserved(
        self, node_info: NodeInfo, nrt: NodeResourceTopology | None
    ) -> tuple[NodeTopology | None, bool]:
        name = node_info.name
        state = self._views.get(name)
        if state is None:
            assert nrt is not None  # get() answered a node without either
            state = self._new_view(name, nrt)
        # The node's real pods: a what-if copy (preemption's victims removed, nominated
        # pods added) must neither mark nor resync the node.
        node_info = self._snapshot_info(node_info)
        self._look_for_foreign_pods(state, node_info)
        if state.foreign or state.maybe_overreserved:
            self._resync(state, node_info, nrt)
        if state.foreign:
            return None, False
        topology = self._parse(name, state.seen)
        if not state.pods:
            return topology, True
        if state.view is None:
            numa = [n.copy() for n in topology.numa]
            for reqs in state.pods.values():
                for n in numa:
                    for res, amount in reqs.items():
                        if res in n.resources:
                            n.resources[res] = max(n.resources[res] - amount, 0)
            state.view = NodeTopology(topology.config, numa)
        return state.view, True

    def _resync_tick(self) -> int:
        clock = self.handle.clock
        now = clock.now() if clock is not None else time.monotonic()
        return int(now // self.resync_period)

    def _new_view(self, node_name: str, nrt: NodeResourceTopology) -> _NodeView:
        # The resync of the current period has run already (upstream's loop starts with
        # the scheduler): the next one comes with the next period.
        state = self._views[node_name] = _NodeView(nrt, resync_tick=self._resync_tick())
        return state

    def _foreign_pods(self, state: _NodeView, node_info: NodeInfo) -> frozenset[str]:
        only_exclusive = self.foreign_pods_detect == FOREIGN_ONLY_EXCLUSIVE
        resources = nrt_resource_names(state.seen) if only_exclusive else frozenset()
        return frozenset(
            pi.uid
            for pi in node_info.pods
            if pi.pod.spec.scheduler_name not in self._ours
            and (not only_exclusive or has_exclusive_resources(pi.pod, resources))
        )

    def _look_for_foreign_pods(self, state: _NodeView, node_info: NodeInfo) -> None:
        # Upstream watches the pods: any add or delete of a pod another scheduler placed
        # marks the node. Here the node's pods are compared with those of the last look.
        if self.foreign_pods_detect == FOREIGN_NONE or state.generation == node_info.generation:
            return
        foreign = self._foreign_pods(state, node_info)
        if foreign != state.known_foreign:
            state.foreign = True
            state.known_foreign = foreign
        state.generation = node_info.generation

    def _resync(
        self, state: _NodeView, node_info: NodeInfo, nrt: NodeResourceTopology | None
    ) -> None:
        # Upstream's resync loop, once per cacheResyncPeriodSeconds over the nodes that
        # have foreign pods or were rejected: the agent's newest object is taken only if
        # its pod-set fingerprint is that of the pods on the node.
        tick = self._resync_tick()
        if tick == state.resync_tick or nrt is None:
            return
        state.resync_tick = tick
        if fingerprint_matches(nrt, (pi.pod for pi in node_info.pods), self.resync_method):
            state.flush(nrt)

    def rejected(self, node_name: str) -> None:
        """Filter rejected the node (overreserve: it becomes a resync candidate)."""
        state = self._views.get(node_name)
        if state is not None:
            state.maybe_overreserved = True

    # -- bookings -----------------------------------------------------------------------------
    def reserve(self, node_name: str, pod: Pod, uid: str) -> None:
        """Book the pod on the node (overreserve), or hold the node (discard-reserved)."""
        if self.mode == DISCARD_RESERVED:
            self._reserved.setdefault(node_name, set()).add(uid)
        elif self.mode == OVERRESERVE:
            state = self._views.get(node_name)
            if state is None:
                nrt = self.nrt(node_name)
                if nrt is None:
                    return
                state = self._new_view(node_name, nrt)
            state.pods[uid] = pod_effective_requests(pod)
            state.view = None
            state.maybe_overreserved = False

    def unreserve(self, node_name: str, uid: str) -> None:
        """Undo ``reserve`` (a failed or rejected binding)."""
        reserved = self._reserved.get(node_name)
        if reserved is not None:
            reserved.discard(uid)
        state = self._views.get(node_name)
        if state is not None and state.pods.pop(uid, None) is not None:
            state.view = None

    def bound(self, node_name: str, uid: str) -> None:
        """The pod is bound: a discard-reserved node is usable again."""
        reserved = self._reserved.get(node_name)
        if reserved is not None:
            reserved.discard(uid)
