"""The nominator: pods that preemption nominated to a node, waiting for victims to leave."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubesched.api import Pod
from kubesched.framework.types import PodInfo, pod_uid

__all__ = ["Nominator", "PodLister"]

_CHANGES_KEPT = 8192
"""How many recent changes ``nodes_changed_since`` can look back over, at most."""

PodLister = Callable[[str, str], Pod | None]
"""``lister(namespace, name)``: the current version of a pod, or ``None`` if it is gone."""


class Nominator:
    """Which pods are nominated to run on which node (upstream ``nominator``).

    A pod is nominated when preemption chose a node for it and evicts victims
    there; until it is bound, Filter plugins on that node count it as if it were
    running (for pods of equal or higher priority), so that the room freed by the
    victims is not taken by someone else. The nomination lives here as well as in
    ``pod.status.nominatedNodeName``, because the API object may lag behind.

    Thread-safe with its own lock: plugins read it during a scheduling cycle while
    event handlers change it. The scheduling queue owns one (``queue.nominator``)
    and keeps it current on pod add, update and delete.
    """

    def __init__(self, pod_lister: PodLister | None = None) -> None:
        """``pod_lister`` (optional) lets the nominator refuse pods that are gone or
        already bound, as upstream checks its pod lister."""
        self._lock = threading.Lock()
        self._pod_lister = pod_lister
        # node name -> {pod uid -> PodInfo}, in nomination order.
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        # pod uid -> node name
        self._node_of: dict[str, str] = {}
        # The keys of _by_node as nominated_node_names returns them, None when stale.
        self._names: frozenset[str] | None = None
        self.version = 0
        """Changes whenever a nomination does: what callers key their caches on."""
        # The node of each change, by version: _changed[i] changed at version
        # _changed_base + i (recent ones only; see nodes_changed_since).
        self._changed: list[str] = []
        self._changed_base = 1

    def add_nominated_pod(self, pod_info: PodInfo, nominated_node_name: str | None = None) -> None:
        """Nominate ``pod_info`` to ``nominated_node_name``.

        ``None`` means "whatever ``pod.status.nominatedNodeName`` says" (upstream's
        ``ModeNoop``); a string overrides it, and ``""`` clears the nomination. A pod
        already bound (``spec.nodeName`` set) is not nominated; any previous
        nomination of the pod is replaced.
        """
        with self._lock:
            self._add_locked(pod_info, nominated_node_name)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """Forget the nomination of ``pod`` (matched by uid), if any."""
        with self._lock:
            self._delete_locked(pod_uid(pod))

    def update_nominated_pod(self, old_pod: Pod, new_pod_info: PodInfo) -> None:
        """Replace ``old_pod`` by its new version.

        When neither version carries a ``nominatedNodeName`` but the nominator has
        one for the pod, it is kept: the status update that would carry it may not
        have arrived yet (upstream's rule).
        """
        with self._lock:
            override: str | None = None
            if not old_pod.status.nominated_node_name and not (
                new_pod_info.pod.status.nominated_node_name
            ):
                override = self._node_of.get(pod_uid(old_pod))
            self._delete_locked(pod_uid(old_pod))
            self._add_locked(new_pod_info, override)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to ``node_name``, in nomination order (a copy)."""
        with self._lock:
            return list(self._by_node.get(node_name, {}).values())

    def nominated_pods_by_node(self) -> dict[str, list[PodInfo]]:
        """Every node's nominated pods, in nomination order (a copy): one call for a
        caller that reads them all."""
        with self._lock:
            return {name: list(pods.values()) for name, pods in self._by_node.items()}

    def nodes_changed_since(self, version: int) -> set[str] | None:
        """The nodes whose nominated pods changed after :attr:`version` was ``version``
        (empty when it still is); ``None`` when that is further back than the nominator
        remembers, and the caller must look at every node."""
        with self._lock:
            start = version + 1 - self._changed_base
            if start < 0 or version > self.version:
                return None
            return set(self._changed[start:])

    def nominated_node_names(self) -> frozenset[str]:
        """The nodes that have at least one nominated pod (filters treat them apart)."""
        with self._lock:
            # Asked at every Filter run, changed only by nominations: kept until then.
            if self._names is None:
                self._names = frozenset(self._by_node)
            return self._names

    def nominated_node_name(self, pod: Pod | PodInfo) -> str | None:
        """The node ``pod`` is nominated to, or ``None``."""
        uid = pod.uid if isinstance(pod, PodInfo) else pod_uid(pod)
        with self._lock:
            return self._node_of.get(uid)

    def __len__(self) -> int:
        with self._lock:
            return len(self._node_of)

    # -- internals (lock held) --------------------------------------------------------
    def _add_locked(self, pod_info: PodInfo, nominated_node_name: str | None) -> None:
        # Always drop the old entry first so that a pod is never stored twice.
        self._delete_locked(pod_info.uid)
        node = (
            nominated_node_name
            if nominated_node_name is not None
            else pod_info.pod.status.nominated_node_name or ""
        )
        if not node or pod_info.node_name:
            return
        if self._pod_lister is not None:
            current = self._pod_lister(pod_info.namespace, pod_info.name)
            if current is None or current.spec.node_name:
                return
        self._node_of[pod_info.uid] = node
        self._by_node.setdefault(node, {})[pod_info.uid] = pod_info
        self._names = None
        self._bump(node)

    def _delete_locked(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        self._bump(node)
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[node]
                self._names = None

    def _bump(self, node: str) -> None:
        """A change to ``node``'s nominated pods: the next version, and its log entry."""
        self.version += 1
        changed = self._changed
        changed.append(node)
        if len(changed) > _CHANGES_KEPT:
            drop = len(changed) - _CHANGES_KEPT // 2
            del changed[:drop]
            self._changed_base += drop
