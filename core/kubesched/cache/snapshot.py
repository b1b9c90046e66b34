"""The read-only view of the cache a scheduling cycle works on, and its node lister."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from kubesched.api import Node, Pod
from kubesched.framework.node_table import NodeTable
from kubesched.framework.pod_groups import PodGroupIndex, affinity_group_key, label_group_key
from kubesched.framework.types import ImageStateSummary, NodeInfo, PodInfo

__all__ = ["Snapshot", "new_snapshot"]


class Snapshot:
    """Copies of the cache's NodeInfos, taken at the start of each scheduling cycle.

    The cache fills it with ``Cache.update_snapshot``, which copies only what changed
    since the previous update (``generation`` is the newest NodeInfo generation the
    snapshot has seen). Between two updates nothing in it changes, so a cycle reads
    it without locks while the cache keeps taking events.

    * ``node_info_map``: node name to NodeInfo, for the nodes that have a Node object.
    * ``node_info_list``: the same NodeInfos in the cache's node tree order (zones
      interleaved); ``table`` holds their numpy columns, row ``i`` being
      ``node_info_list[i]``.
    * ``have_pods_with_affinity_node_info_list`` /
      ``have_pods_with_required_anti_affinity_node_info_list``: the nodes (in list
      order) running at least one pod with pod (anti-)affinity terms / required
      anti-affinity terms.
    * ``used_pvc_set``: ``namespace/name`` of every PVC a pod on a listed node uses.
    * ``pods_by_labels()`` / ``pods_by_affinity_terms()``: the listed nodes' pods in
      groups that match alike, with per-topology-domain counts (``PodGroupIndex``),
      built on first use and then kept current by the cache from the changed nodes.

    A NodeInfo that changed is replaced by a new copy, never modified in place, so an
    unchanged node keeps the very same NodeInfo object across updates.
    """

    __slots__ = (
        "_aff_rows",
        "_anti_rows",
        "_image_generation",
        "_images",
        "_pod_groups",
        "_pvc_counts",
        "_tree_version",
        "generation",
        "have_pods_with_affinity_node_info_list",
        "have_pods_with_required_anti_affinity_node_info_list",
        "node_info_list",
        "node_info_map",
        "table",
        "used_pvc_set",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity_node_info_list: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_node_info_list: list[NodeInfo] = []
        self.used_pvc_set: set[str] = set()
        self.generation = 0
        self.table: NodeTable = NodeTable([])
        # Bookkeeping that lets Cache.update_snapshot work in O(changed nodes):
        # the rows (indices into node_info_list) of the two affinity lists, sorted and
        # aligned with them; per PVC, how many listed nodes use it; this snapshot's own
        # image summaries (shared by its NodeInfos, counts kept current); the node
        # tree version the list was built from; the newest image change applied.
        self._aff_rows: list[int] = []
        self._anti_rows: list[int] = []
        self._pvc_counts: dict[str, int] = {}
        self._images: dict[str, ImageStateSummary] = {}
        self._tree_version = -1
        self._image_generation = 0
        # The pod group indexes built so far, by name; dropped when the lists are rebuilt.
        self._pod_groups: dict[str, PodGroupIndex] = {}

    @classmethod
    def from_objects(
        cls, pods: Iterable[Pod | PodInfo] = (), nodes: Iterable[Node] = ()
    ) -> Snapshot:
        """A snapshot of ``nodes`` running ``pods`` (upstream ``NewSnapshot``), for tests.

        Built through a scratch cache, so it is exactly what the scheduler would see:
        nodes in node tree order, image states, affinity lists, used PVCs. Pods whose
        node is not among ``nodes`` are kept out of every list, as the cache keeps
        pods of a deleted node.
        """
        # Imported here: the cache module imports this one.
        from kubesched.cache.cache import Cache
        from kubesched.clock import FakeClock

        cache = Cache(FakeClock(), ttl=0)
        for node in nodes:
            cache.add_node(node)
        for pod in pods:
            cache.add_pod(pod if isinstance(pod, PodInfo) else PodInfo(pod))
        snapshot = cls()
        cache.update_snapshot(snapshot)
        return snapshot

    # --- the node lister (upstream NodeInfoLister / StorageInfoLister) ---------------

    def node_infos(self) -> Snapshot:
        """The NodeInfo lister: the snapshot itself."""
        return self

    def storage_infos(self) -> Snapshot:
        """The storage lister (``is_pvc_used_by_pods``): the snapshot itself."""
        return self

    def list(self) -> list[NodeInfo]:
        """All schedulable nodes in node tree order (do not modify the list)."""
        return self.node_info_list

    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        """The nodes with at least one pod that has pod affinity or anti-affinity terms."""
        return self.have_pods_with_affinity_node_info_list

    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        """The nodes with at least one pod that has required pod anti-affinity terms."""
        return self.have_pods_with_required_anti_affinity_node_info_list

    def pods_by_labels(self) -> PodGroupIndex:
        """The pods of the listed nodes grouped by namespace and labels: what a pod
        affinity term or a spread constraint's selector decides per group."""
        return self._pod_group_index("labels", label_group_key)

    def pods_by_affinity_terms(self) -> PodGroupIndex:
        """The pods with pod (anti-)affinity terms, grouped by their four term lists: what
        matching existing pods' terms against the incoming pod decides per group."""
        return self._pod_group_index("affinity", affinity_group_key)

    def pods_grouped(
        self, name: str, group_of: Callable[[PodInfo], Hashable | None]
    ) -> PodGroupIndex:
        """The pods of the listed nodes grouped by ``group_of`` (None: left out), under
        ``name`` (a plugin's own, e.g. ``"CapacityScheduling/requests"``; one
        ``group_of`` per name): built on first use, then kept current by the cache from
        the nodes that change, so that a plugin reads counts per group without walking
        every pod or node each cycle."""
        return self._pod_group_index(name, group_of)

    def _pod_group_index(self, name: str, group_of: Any) -> PodGroupIndex:
        index = self._pod_groups.get(name)
        if index is None:
            index = self._pod_groups[name] = PodGroupIndex(group_of, self.node_info_list)
        return index

    def get(self, node_name: str) -> NodeInfo:
        """The NodeInfo of ``node_name``; ``KeyError`` if the snapshot has no such node."""
        ni = self.node_info_map.get(node_name)
        if ni is None or ni.node is None:
            raise KeyError(f'nodeinfo not found for node name "{node_name}"')
        return ni

    def num_nodes(self) -> int:
        """How many nodes the snapshot lists."""
        return len(self.node_info_list)

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether a pod on one of the nodes uses PVC ``key`` (``namespace/name``)."""
        return key in self.used_pvc_set

    def __len__(self) -> int:
        return len(self.node_info_list)

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self.node_info_list)}, generation={self.generation})"


def new_snapshot(pods: Iterable[Pod | PodInfo] = (), nodes: Iterable[Node] = ()) -> Snapshot:
    """``Snapshot.from_objects(pods, nodes)``: a ready snapshot for tests."""
    return Snapshot.from_objects(pods, nodes)
