"""The scheduler's cache: pods aggregated per node, the assume/bind state machine, snapshots."""

from __future__ import annotations

import logging
import threading
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubesched.api import Node
from kubesched.cache.node_tree import NodeTree
from kubesched.cache.snapshot import Snapshot
from kubesched.clock import Clock
from kubesched.framework.node_table import NodeTable
from kubesched.framework.types import ImageStateSummary, NodeInfo, PodInfo, next_generation
from kubesched.metrics import Metrics

__all__ = ["Cache", "CacheDump", "CacheError", "PodState"]

log = logging.getLogger(__name__)


class CacheError(Exception):
    """An event the cache's pod state machine does not allow, or an inconsistency it found.

    The messages are upstream kube-scheduler's, with the pod as ``uid(namespace/name)``.
    """


@dataclass(slots=True)
class PodState:
    """What the cache knows about one pod.

    ``deadline`` is when an assumed pod whose binding finished expires (``None``
    while binding is in progress, for a confirmed pod, or when the TTL is 0);
    ``binding_finished`` says whether ``finish_binding`` was called.
    """

    pod_info: PodInfo
    deadline: float | None = None
    binding_finished: bool = False


@dataclass
class CacheDump:
    """A copy of the cache for debugging: every NodeInfo (ghosts included) and the
    uids of the assumed pods."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    assumed_pods: set[str] = field(default_factory=set)


class _NodeItem:
    """A NodeInfo in the cache's recency list (head = most recently changed)."""

    __slots__ = ("info", "next", "prev")

    def __init__(self, info: NodeInfo) -> None:
        self.info = info
        self.next: _NodeItem | None = None
        self.prev: _NodeItem | None = None


def _ref(pi: PodInfo) -> str:
    # Upstream formats a pod as "%v(%v)" with its key (the UID) and klog.KObj (ns/name).
    return f"{pi.uid}({pi.key})"


class Cache:
    """Pods the scheduler counts on nodes (assumed or bound) and the nodes themselves.

    The pod state machine (upstream's)::

                  +--------------------------------------------+  +----+
                  |                  add                       |  |    | update
                  +                                            v  v    |
        Initial --assume--> Assumed --add-----------------> Added <----+
           ^                   |  |                          |   |
           |                   |  +--expire--> Expired --add-+   | remove
           +-------forget------+                                 v
                                                              Deleted

    * ``assume_pod``: the scheduling cycle chose a node; the pod counts there from now.
    * ``finish_binding``: the binding cycle is done; the pod expires ``ttl`` seconds
      later unless its Add event (``add_pod``) confirms it. A pod still binding never
      expires; ``ttl=0`` means assumed pods never expire.
    * ``forget_pod``: undo ``assume_pod`` (binding failed, Permit rejected, ...).
    * ``add_pod`` / ``update_pod`` / ``remove_pod``: the pod informer's events.

    Nodes: a pod may arrive before its Node (the NodeInfo then has no Node); a node
    removed while pods remain stays as such a NodeInfo until its last pod goes.
    Nodes without a Node are never offered to scheduling (not in the node tree nor in
    snapshots).

    ``update_snapshot`` copies into a :class:`Snapshot` only the NodeInfos changed
    since that snapshot's last update: NodeInfos sit in a doubly linked list, most
    recently changed first, and the walk stops at the first one the snapshot has.

    All methods take one lock: the scheduling loop, the concurrent binding cycles, the
    event handlers and the cleanup loop share the cache.
    """

    def __init__(self, clock: Clock, ttl: float = 30.0, metrics: Metrics | None = None) -> None:
        if ttl < 0:
            raise ValueError(f"ttl must not be negative, got {ttl}")
        self._clock = clock
        self._ttl = float(ttl)
        self._metrics = metrics
        self._lock = threading.Lock()
        # Assumed pod uids; a dict used as an ordered set so expiry runs in a
        # reproducible order (simulations must not depend on string hashing).
        self._assumed: dict[str, None] = {}
        self._pod_states: dict[str, PodState] = {}
        self._nodes: dict[str, _NodeItem] = {}
        self._head: _NodeItem | None = None
        self._tree = NodeTree()
        # Image name -> its summary, shared by every cache NodeInfo having the image
        # (num_nodes kept current), and the set of node names having it.
        self._images: dict[str, ImageStateSummary] = {}
        self._image_nodes: dict[str, set[str]] = {}
        # Image name -> generation of its last node-count change, oldest first, so a
        # snapshot finds the changes it has not seen by walking from the end.
        self._image_changes: dict[str, int] = {}

    @property
    def ttl(self) -> float:
        """Seconds an assumed pod whose binding finished waits for its Add event."""
        return self._ttl

    # --- pods -------------------------------------------------------------------------

    def assume_pod(self, pod_info: PodInfo) -> None:
        """Count ``pod_info`` on ``pod_info.node_name`` before it is bound.

        ``CacheError`` if the cache already has the pod or the pod has no node name.
        """
        key = pod_info.uid
        with self._lock:
            if key in self._pod_states:
                raise CacheError(f"pod {_ref(pod_info)} is in the cache, so can't be assumed")
            if not pod_info.node_name:
                raise CacheError(f"pod {_ref(pod_info)} has no node name, so can't be assumed")
            self._add_pod_locked(pod_info, assumed=True)

    def finish_binding(self, pod_info: PodInfo, now: float | None = None) -> bool:
        """Start the expiry timer of an assumed pod: it expires at ``now + ttl``.

        Returns whether the pod was assumed. As upstream, any other pod is ignored
        (not an error): its Add or Delete event may legitimately arrive before the
        binding cycle gets here.
        """
        key = pod_info.uid
        with self._lock:
            state = self._pod_states.get(key)
            if state is None or key not in self._assumed:
                log.debug("finish binding of pod %s, which is not assumed: ignored", _ref(pod_info))
                return False
            if now is None:
                now = self._clock.now()
            state.deadline = None if self._ttl == 0 else now + self._ttl
            state.binding_finished = True
            log.debug("finished binding for pod %s, it can expire", _ref(pod_info))
            return True

    def forget_pod(self, pod_info: PodInfo) -> None:
        """Undo ``assume_pod``: the pod no longer counts on its node.

        ``CacheError`` if the pod is not assumed, or was assumed on another node.
        """
        key = pod_info.uid
        with self._lock:
            state = self._pod_states.get(key)
            if state is not None and state.pod_info.node_name != pod_info.node_name:
                raise CacheError(
                    f"pod {_ref(pod_info)} was assumed on {pod_info.node_name} "
                    f"but assigned to {state.pod_info.node_name}"
                )
            if state is None or key not in self._assumed:
                raise CacheError(f"pod {_ref(pod_info)} wasn't assumed so cannot be forgotten")
            self._remove_pod_locked(state.pod_info)

    def add_pod(self, pod_info: PodInfo) -> None:
        """The pod informer saw a pod bound to a node.

        Confirms an assumed pod (moving it if it landed on another node than assumed,
        and replacing the assumed version by this one), re-adds a pod that expired, or
        adds a pod the scheduler never assumed. ``CacheError`` if the pod was already
        added or has no node name.
        """
        key = pod_info.uid
        with self._lock:
            if not pod_info.node_name:
                raise CacheError(f"pod {_ref(pod_info)} has no node name, so can't be added")
            state = self._pod_states.get(key)
            if state is not None and key in self._assumed:
                if state.pod_info.node_name != pod_info.node_name:
                    log.info(
                        "pod %s was added to a different node than it was assumed: "
                        "assumed on %s, added to %s",
                        _ref(pod_info),
                        state.pod_info.node_name,
                        pod_info.node_name,
                    )
                self._remove_pod_locked(state.pod_info)
                self._add_pod_locked(pod_info, assumed=False)
            elif state is None:
                # A new pod, or one that expired: add it (back).
                self._add_pod_locked(pod_info, assumed=False)
            else:
                raise CacheError(f"pod {_ref(pod_info)} was already in added state")

    def update_pod(self, old_pod_info: PodInfo, new_pod_info: PodInfo) -> None:
        """Replace an added pod by its new version.

        ``CacheError`` if the pod is not in the cache, is only assumed (an assumed
        pod gets Add before Update), or moved to another node (upstream exits the
        process there: the cache is corrupted).
        """
        key = old_pod_info.uid
        with self._lock:
            state = self._pod_states.get(key)
            if state is None:
                raise CacheError(
                    f"pod {_ref(old_pod_info)} is not added to scheduler cache, "
                    "so cannot be updated"
                )
            if key in self._assumed:
                raise CacheError(f"assumed pod {_ref(old_pod_info)} should not be updated")
            if state.pod_info.node_name != new_pod_info.node_name:
                log.error(
                    "pod %s updated on a different node than previously added to",
                    _ref(old_pod_info),
                )
                raise CacheError(
                    f"pod {_ref(old_pod_info)} updated on a different node than previously "
                    f"added to ({state.pod_info.node_name} -> {new_pod_info.node_name}): "
                    "scheduler cache is corrupted and can badly affect scheduling decisions"
                )
            self._remove_pod_locked(state.pod_info)
            self._add_pod_locked(new_pod_info, assumed=False)

    def remove_pod(self, pod_info: PodInfo) -> None:
        """The pod was deleted: it no longer counts on its node (assumed or added).

        ``CacheError`` if the cache does not have it, or has it on another node
        (upstream exits the process there). An empty node name is accepted: a missed
        Delete event is replayed from the informer's last known state.
        """
        key = pod_info.uid
        with self._lock:
            state = self._pod_states.get(key)
            if state is None:
                raise CacheError(
                    f"pod {_ref(pod_info)} is not found in scheduler cache, "
                    "so cannot be removed from it"
                )
            if state.pod_info.node_name != pod_info.node_name:
                log.error(
                    "pod %s was assumed to be on %s but got removed from %s",
                    _ref(pod_info),
                    state.pod_info.node_name,
                    pod_info.node_name,
                )
                if pod_info.node_name:
                    raise CacheError(
                        f"pod {_ref(pod_info)} was added to {state.pod_info.node_name} but "
                        f"removed from {pod_info.node_name}: scheduler cache is corrupted "
                        "and can badly affect scheduling decisions"
                    )
            self._remove_pod_locked(state.pod_info)

    def is_assumed_pod(self, pod_info: PodInfo) -> bool:
        """Whether the pod is assumed (not yet confirmed by its Add event)."""
        with self._lock:
            return pod_info.uid in self._assumed

    def assumed_pod_info(self, uid: str) -> PodInfo | None:
        """The PodInfo of the assumed pod with ``uid``, or ``None`` if it is not assumed."""
        with self._lock:
            if uid not in self._assumed:
                return None
            return self._pod_states[uid].pod_info

    def get_pod(self, pod_info: PodInfo) -> PodInfo:
        """The cache's version of the pod (possibly on a deleted node); ``CacheError`` if absent."""
        with self._lock:
            state = self._pod_states.get(pod_info.uid)
            if state is None:
                raise CacheError(f"pod {_ref(pod_info)} does not exist in scheduler cache")
            return state.pod_info

    def pod_state(self, pod_info: PodInfo) -> PodState | None:
        """A copy of the pod's state record, or ``None`` (for tests and debugging)."""
        with self._lock:
            state = self._pod_states.get(pod_info.uid)
            if state is None:
                return None
            return PodState(state.pod_info, state.deadline, state.binding_finished)

    def cleanup_assumed_pods(self, now: float | None = None) -> list[PodInfo]:
        """Expire the assumed pods whose binding finished and whose deadline passed.

        ``now`` defaults to the clock's time. Pods still binding never expire. Returns
        the expired pods, in the order they were assumed. The cleanup loop calls this
        every second; it also refreshes the cache size metrics.
        """
        with self._lock:
            if now is None:
                now = self._clock.now()
            expired: list[PodInfo] = []
            for key in list(self._assumed):
                state = self._pod_states.get(key)
                if state is None:
                    log.error("pod %s is in the assumed set but not in the pod states", key)
                    del self._assumed[key]
                    continue
                if not state.binding_finished:
                    log.debug("pod %s cannot expire: binding is still in progress", key)
                    continue
                if self._ttl != 0 and state.deadline is not None and now > state.deadline:
                    log.warning("pod %s expired", _ref(state.pod_info))
                    try:
                        self._remove_pod_locked(state.pod_info)
                    except CacheError:
                        log.exception("expiring pod %s failed", _ref(state.pod_info))
                        continue
                    expired.append(state.pod_info)
            self._update_metrics_locked()
            return expired

    def run_cleanup_loop(self, stop: threading.Event, period: float = 1.0) -> threading.Thread:
        """Start a daemon thread expiring assumed pods every ``period`` seconds until ``stop``."""

        def loop() -> None:
            while not stop.wait(period):
                try:
                    self.cleanup_assumed_pods()
                except Exception:  # the loop must survive a bug in one pass
                    log.exception("cleaning up assumed pods failed")

        thread = threading.Thread(target=loop, name="kubesched-cache-cleanup", daemon=True)
        thread.start()
        return thread

    # --- nodes ------------------------------------------------------------------------

    def add_node(self, node: Node) -> NodeInfo:
        """A Node was added (or re-listed); returns a copy of its NodeInfo."""
        with self._lock:
            return self._detached_clone(self._set_node_locked(node))

    def update_node(self, old_node: Node | None, new_node: Node) -> NodeInfo:
        """A Node changed; returns a copy of its NodeInfo.

        The cache moves the node in the node tree from the zone it has it under, so
        ``old_node`` is only informative (it may be ``None``). An unknown node is added.
        """
        with self._lock:
            return self._detached_clone(self._set_node_locked(new_node))

    def remove_node(self, node: Node) -> None:
        """A Node was deleted. ``CacheError`` if the cache does not know it.

        Its pods may still be here (their Delete events come on another watch): the
        NodeInfo then stays, without Node, until the last of them is removed. Either
        way the node leaves the node tree and so every later snapshot.
        """
        name = node.metadata.name or ""
        with self._lock:
            item = self._nodes.get(name)
            if item is None:
                raise CacheError(f"node {name} is not found")
            known = item.info.node
            item.info.remove_node()
            item.info.image_states = {}
            if item.info.pods:
                self._move_to_head(item)
            else:
                self._unlink(name)
            self._remove_node_image_states(known if known is not None else node)
            try:
                self._tree.remove_node(node)
            except KeyError as e:
                raise CacheError(e.args[0]) from None

    def get_node(self, name: str) -> NodeInfo:
        """A copy of node ``name``'s NodeInfo (even without Node); ``CacheError`` if absent."""
        with self._lock:
            item = self._nodes.get(name)
            if item is None:
                raise CacheError(f"node {name} does not exist in scheduler cache")
            return self._detached_clone(item.info)

    # --- counts, dump, metrics --------------------------------------------------------

    def node_count(self) -> int:
        """How many NodeInfos the cache has (nodes without a Node included)."""
        with self._lock:
            return len(self._nodes)

    def pod_count(self) -> int:
        """How many pods count on the cache's nodes (assumed included)."""
        with self._lock:
            return sum(len(item.info.pods) for item in self._nodes.values())

    def assumed_pod_count(self) -> int:
        """How many pods are assumed."""
        with self._lock:
            return len(self._assumed)

    def node_names(self) -> list[str]:
        """The names of the nodes that have a Node, in node tree (snapshot) order."""
        with self._lock:
            return self._tree.list()

    def dump(self) -> CacheDump:
        """Copies of all NodeInfos and the assumed pods' uids (slow: for debugging)."""
        with self._lock:
            return CacheDump(
                nodes={name: self._detached_clone(item.info) for name, item in self._nodes.items()},
                assumed_pods=set(self._assumed),
            )

    def update_metrics(self) -> None:
        """Set the ``scheduler_cache_size`` gauges (nodes, pods, assumed_pods)."""
        with self._lock:
            self._update_metrics_locked()

    def _update_metrics_locked(self) -> None:
        if self._metrics is None:
            return
        gauge = self._metrics.cache_size
        gauge.labels(type="assumed_pods").set(len(self._assumed))
        gauge.labels(type="pods").set(len(self._pod_states))
        gauge.labels(type="nodes").set(len(self._nodes))

    # --- snapshot ---------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date with the cache, copying only what changed.

        Walks the NodeInfos changed since ``snapshot.generation`` (most recent first)
        and replaces their copies; unchanged nodes keep their NodeInfo objects. The node
        list and table are rebuilt when the set or order of nodes changed (a node added,
        removed or moved to another zone); otherwise the changed rows are patched in
        place, and the affinity lists and the used PVC set are patched per node, so an
        update after a few pod events costs O(changed nodes).

        If the result is inconsistent with the node tree (a bug), or patching it
        raised, the snapshot is rebuilt from scratch and ``CacheError`` is raised
        afterwards, as upstream returns an error after repairing: the current cycle
        should fail, the next one gets a good snapshot. A row of its table that cannot
        be written is fenced instead (see ``NodeTable``): the node is passed over.
        """
        with self._lock:
            generation = snapshot.generation
            update_all = snapshot._tree_version != self._tree.version
            changes: list[tuple[str, NodeInfo | None, NodeInfo]] = []
            item = self._head
            while item is not None and item.info.generation > generation:
                info = item.info
                if info.node is not None:
                    name = info.node.metadata.name or ""
                    old = snapshot.node_info_map.get(name)
                    clone = self._snapshot_clone(snapshot, info, old)
                    snapshot.node_info_map[name] = clone
                    if old is None:
                        update_all = True
                    changes.append((name, old, clone))
                item = item.next
            if self._head is not None:
                snapshot.generation = self._head.info.generation
            self._apply_image_changes(snapshot)

            # Deleted nodes leave the tree at once but may stay in the cache as long as
            # pods remain on them; either way they leave the snapshot.
            if len(snapshot.node_info_map) > self._tree.num_nodes:
                self._remove_deleted_nodes_from_snapshot(snapshot)
                update_all = True
            try:
                if update_all or not self._patch_snapshot(snapshot, changes):
                    self._rebuild_snapshot_lists(snapshot)
            except Exception as err:
                # Half-patched, with its generation already moved on: the rows not yet
                # patched would stay stale. Copy everything afresh (the next update starts
                # from scratch should that fail too), and fail this cycle.
                msg = f"updating the snapshot failed ({type(err).__name__}: {err}), rebuilt it"
                log.error(msg)
                if self._metrics is not None:
                    self._metrics.cache_update_errors.inc()
                snapshot.generation = 0
                snapshot._tree_version = -1
                self._recopy_snapshot(snapshot)
                raise CacheError(msg) from err

            if len(snapshot.node_info_list) != self._tree.num_nodes:
                msg = (
                    "snapshot state is not consistent, length of NodeInfoList="
                    f"{len(snapshot.node_info_list)} not equal to length of nodes in "
                    f"tree={self._tree.num_nodes} , length of NodeInfoMap="
                    f"{len(snapshot.node_info_map)}, length of nodes in cache="
                    f"{len(self._nodes)}, trying to recover"
                )
                log.error(msg)
                self._recopy_snapshot(snapshot)
                raise CacheError(msg)

    def _snapshot_clone(self, snapshot: Snapshot, info: NodeInfo, old: NodeInfo | None) -> NodeInfo:
        clone = info.clone()
        if old is not None and old.node is info.node:
            # Same Node object, same images: reuse the dict of the snapshot's summaries.
            clone.image_states = old.image_states
            return clone
        images = snapshot._images
        states: dict[str, ImageStateSummary] = {}
        for name in info.image_states:
            summary = images.get(name)
            if summary is None:
                live = self._images[name]
                summary = images[name] = ImageStateSummary(live.size, live.num_nodes)
            states[name] = summary
        clone.image_states = states
        return clone

    def _apply_image_changes(self, snapshot: Snapshot) -> None:
        # A snapshot's NodeInfos share one summary per image; when an image's node
        # count changed, updating that one object updates every node having it, with
        # no NodeInfo copied. The summaries change only here, between cycles.
        seen = snapshot._image_generation
        newest = seen
        images = snapshot._images
        for name in reversed(self._image_changes):
            changed_at = self._image_changes[name]
            if changed_at <= seen:
                break
            newest = max(newest, changed_at)
            summary = images.get(name)
            if summary is None:
                continue
            live = self._images.get(name)
            if live is None:
                del images[name]
            else:
                # The size too: an image gone from its last node and back (a node update
                # with a new sizeBytes) is a new image state, as upstream recreates it.
                summary.size = live.size
                summary.num_nodes = live.num_nodes
        snapshot._image_generation = newest

    def _remove_deleted_nodes_from_snapshot(self, snapshot: Snapshot) -> None:
        to_delete = len(snapshot.node_info_map) - self._tree.num_nodes
        for name in list(snapshot.node_info_map):
            if to_delete <= 0:
                break
            item = self._nodes.get(name)
            if item is None or item.info.node is None:
                del snapshot.node_info_map[name]
                to_delete -= 1

    def _patch_snapshot(
        self, snapshot: Snapshot, changes: list[tuple[str, NodeInfo | None, NodeInfo]]
    ) -> bool:
        """Patch the lists and the table for changed nodes; False if a rebuild is needed."""
        table = snapshot.table
        rows = table.index
        infos = snapshot.node_info_list
        aff = snapshot.have_pods_with_affinity_node_info_list
        anti = snapshot.have_pods_with_required_anti_affinity_node_info_list
        pvc_counts = snapshot._pvc_counts
        pod_groups = snapshot._pod_groups.values()
        for name, old, new in changes:
            i = rows.get(name)
            if old is None or i is None or i >= len(infos) or infos[i] is not old:
                return False
            infos[i] = new
            for index in pod_groups:
                index.replace_node(old, new)
            if not table.update_row(i, new):
                self._report_fenced(name, table.fence_errors[name])
            if not _patch_row_list(
                aff,
                snapshot._aff_rows,
                i,
                bool(old.pods_with_affinity),
                bool(new.pods_with_affinity),
                new,
            ) or not _patch_row_list(
                anti,
                snapshot._anti_rows,
                i,
                bool(old.pods_with_required_anti_affinity),
                bool(new.pods_with_required_anti_affinity),
                new,
            ):
                return False
            if old.pvc_ref_counts.keys() != new.pvc_ref_counts.keys():
                for claim in old.pvc_ref_counts:
                    n = pvc_counts[claim] - 1
                    if n:
                        pvc_counts[claim] = n
                    else:
                        del pvc_counts[claim]
                        snapshot.used_pvc_set.discard(claim)
                for claim in new.pvc_ref_counts:
                    pvc_counts[claim] = pvc_counts.get(claim, 0) + 1
                    snapshot.used_pvc_set.add(claim)
        return True

    def _rebuild_snapshot_lists(self, snapshot: Snapshot) -> None:
        infos: list[NodeInfo] = []
        aff: list[NodeInfo] = []
        aff_rows: list[int] = []
        anti: list[NodeInfo] = []
        anti_rows: list[int] = []
        pvc_counts: dict[str, int] = {}
        node_map = snapshot.node_info_map
        for name in self._tree.list():
            ni = node_map.get(name)
            if ni is None:
                log.error(
                    "node %r exists in the node tree but not in the snapshot's NodeInfo map, "
                    "this should not happen",
                    name,
                )
                continue
            i = len(infos)
            infos.append(ni)
            if ni.pods_with_affinity:
                aff.append(ni)
                aff_rows.append(i)
            if ni.pods_with_required_anti_affinity:
                anti.append(ni)
                anti_rows.append(i)
            for claim in ni.pvc_ref_counts:
                pvc_counts[claim] = pvc_counts.get(claim, 0) + 1
        snapshot.node_info_list = infos
        snapshot.have_pods_with_affinity_node_info_list = aff
        snapshot.have_pods_with_required_anti_affinity_node_info_list = anti
        snapshot._aff_rows = aff_rows
        snapshot._anti_rows = anti_rows
        snapshot._pvc_counts = pvc_counts
        snapshot.used_pvc_set = set(pvc_counts)
        snapshot.table = NodeTable(infos)
        for name, error in snapshot.table.fence_errors.items():
            self._report_fenced(name, error)
        snapshot._pod_groups = {}
        snapshot._tree_version = self._tree.version

    def _report_fenced(self, name: str, error: str) -> None:
        """A node's row could not be written: say so (the table fenced the node)."""
        log.error(
            "node %r: its totals could not be written into the scheduling snapshot (%s); "
            "it is unschedulable until its next update",
            name,
            error,
        )
        if self._metrics is not None:
            self._metrics.cache_update_errors.inc()

    def _recopy_snapshot(self, snapshot: Snapshot) -> None:
        """Repair: copy every node afresh, as into a new snapshot."""
        snapshot.node_info_map = {}
        snapshot._images = {}
        for item in self._iter_items():
            info = item.info
            if info.node is not None:
                name = info.node.metadata.name or ""
                snapshot.node_info_map[name] = self._snapshot_clone(snapshot, info, None)
        snapshot.generation = self._head.info.generation if self._head is not None else 0
        snapshot._image_generation = max(self._image_changes.values(), default=0)
        self._rebuild_snapshot_lists(snapshot)

    # --- internals (lock held) --------------------------------------------------------

    def _add_pod_locked(self, pod_info: PodInfo, assumed: bool) -> None:
        name = pod_info.node_name
        item = self._nodes.get(name)
        if item is None:
            # The pod's Node has not been seen (yet): a NodeInfo without Node.
            item = self._nodes[name] = _NodeItem(NodeInfo())
        item.info.add_pod(pod_info)
        self._move_to_head(item)
        self._pod_states[pod_info.uid] = PodState(pod_info)
        if assumed:
            self._assumed[pod_info.uid] = None

    def _remove_pod_locked(self, pod_info: PodInfo) -> None:
        """Remove the cache's own ``pod_info`` from its node and forget its state."""
        name = pod_info.node_name
        item = self._nodes.get(name)
        if item is None:
            log.error("node %s not found when trying to remove pod %s", name, _ref(pod_info))
        else:
            try:
                item.info.remove_pod(pod_info)
            except KeyError as e:
                raise CacheError(e.args[0]) from None
            if not item.info.pods and item.info.node is None:
                self._unlink(name)
            else:
                self._move_to_head(item)
        self._pod_states.pop(pod_info.uid, None)
        self._assumed.pop(pod_info.uid, None)

    def _set_node_locked(self, node: Node) -> NodeInfo:
        name = node.metadata.name or ""
        item = self._nodes.get(name)
        if item is None:
            item = self._nodes[name] = _NodeItem(NodeInfo())
            self._tree.add_node(node)
        else:
            known = item.info.node
            if known is None:
                self._tree.add_node(node)
            else:
                self._remove_node_image_states(known)
                self._tree.update_node(known, node)
        self._move_to_head(item)
        self._add_node_image_states(node, item.info)
        item.info.set_node(node)
        return item.info

    def _add_node_image_states(self, node: Node, info: NodeInfo) -> None:
        name = node.metadata.name or ""
        states: dict[str, ImageStateSummary] = {}
        for image in node.status.images:
            for image_name in image.names:
                summary = self._images.get(image_name)
                if summary is None:
                    summary = self._images[image_name] = ImageStateSummary(image.size_bytes, 0)
                    self._image_nodes[image_name] = set()
                nodes = self._image_nodes[image_name]
                if name not in nodes:
                    nodes.add(name)
                    summary.num_nodes = len(nodes)
                    self._touch_image(image_name)
                states.setdefault(image_name, summary)
        info.image_states = states

    def _remove_node_image_states(self, node: Node) -> None:
        name = node.metadata.name or ""
        for image in node.status.images:
            for image_name in image.names:
                nodes = self._image_nodes.get(image_name)
                if nodes is None or name not in nodes:
                    continue
                nodes.discard(name)
                summary = self._images[image_name]
                summary.num_nodes = len(nodes)
                if not nodes:
                    # Drop unused images: len(images) is the number of distinct images.
                    del self._image_nodes[image_name]
                    del self._images[image_name]
                self._touch_image(image_name)

    def _touch_image(self, image_name: str) -> None:
        self._image_changes.pop(image_name, None)
        self._image_changes[image_name] = next_generation()

    @staticmethod
    def _detached_clone(info: NodeInfo) -> NodeInfo:
        # Callers get image summaries of their own, not the cache's live ones.
        clone = info.clone()
        clone.image_states = {
            k: ImageStateSummary(v.size, v.num_nodes) for k, v in info.image_states.items()
        }
        return clone

    def _move_to_head(self, item: _NodeItem) -> None:
        if item is self._head:
            return
        if item.prev is not None:
            item.prev.next = item.next
        if item.next is not None:
            item.next.prev = item.prev
        if self._head is not None:
            self._head.prev = item
        item.next = self._head
        item.prev = None
        self._head = item

    def _unlink(self, name: str) -> None:
        item = self._nodes.pop(name)
        if item.prev is not None:
            item.prev.next = item.next
        if item.next is not None:
            item.next.prev = item.prev
        if item is self._head:
            self._head = item.next
        item.prev = item.next = None

    def _iter_items(self) -> Iterable[_NodeItem]:
        item = self._head
        while item is not None:
            yield item
            item = item.next

    def __repr__(self) -> str:
        return (
            f"Cache(nodes={len(self._nodes)}, pods={len(self._pod_states)}, "
            f"assumed={len(self._assumed)})"
        )


def _patch_row_list(
    lst: list[NodeInfo], rows: list[int], i: int, had: bool, has: bool, new: NodeInfo
) -> bool:
    """Keep ``lst`` (aligned with the sorted ``rows``) right for row ``i``; False if broken."""
    if not had and not has:
        return True
    pos = bisect_left(rows, i)
    present = pos < len(rows) and rows[pos] == i
    if had != present:
        return False
    if had and has:
        lst[pos] = new
    elif had:
        del lst[pos]
        del rows[pos]
    else:
        lst.insert(pos, new)
        rows.insert(pos, i)
    return True
