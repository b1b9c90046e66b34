"""The AppGroup and NetworkTopology controllers, run by the embedded cluster.

On a real cluster the network-aware plugins read what two controllers of their ecosystem
write (scheduler-plugins' ``pkg/controllers`` AppGroup controller, diktyo-io's
networktopology-controller). ``kubesched simulate`` runs the same work here, registered
through the ``kubesched.controllers`` entry points:

* :class:`AppGroupController` keeps an AppGroup's ``status.runningWorkloads`` (its pods,
  labelled ``appgroup.diktyo.x-k8s.io: <name>``, in phase Running) and computes its
  ``status.topologyOrder`` with ``spec.topologySortingAlgorithm`` when
  ``status.topologyCalculationTime`` is unset, then again once it is 24 hours old;
* :class:`NetworkTopologyController` keeps a NetworkTopology's ``status.nodeCount``.
  (diktyo's controller also rewrites the ``NetperfCosts`` weights from measured latencies
  in a ConfigMap; kubesched does not: give those costs in the manifest.)
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from kubesched import ControllerCluster
from kubesched.api import KubeObject, Pod

from .api import (
    APP_GROUP_KIND,
    NETWORK_TOPOLOGY_KIND,
    AppGroup,
    AppGroupTopologyInfo,
    AppGroupWorkloadInfo,
    NetworkTopology,
    pod_app_group,
)
from .toposort import KAHN_SORT, SORTING_ALGORITHMS, CycleError

__all__ = [
    "TOPOLOGY_RECALCULATION",
    "AppGroupController",
    "NetworkTopologyController",
    "topology_order",
]

log = logging.getLogger(__name__)

TOPOLOGY_RECALCULATION = timedelta(hours=24)
"""How old a topology order gets before the AppGroup controller computes it again."""


def topology_order(app_group: AppGroup) -> list[AppGroupTopologyInfo]:
    """The AppGroup's topology order as its controller computes it, sorted by selector.

    The dependency tree names workloads by ``name``, and each is then found by
    ``selector`` (upstream's lookup): an AppGroup whose workloads' names and selectors
    differ, or whose dependencies form a cycle, gets the default order, the workloads'
    order in the spec.
    """
    workloads = app_group.spec.workloads
    tree: dict[str, list[str]] = {}
    for w in workloads:
        for dependency in w.dependencies:
            tree.setdefault(w.workload.name, []).append(dependency.workload.name)
    sort = SORTING_ALGORITHMS.get(app_group.spec.topology_sorting_algorithm)
    if sort is None:
        sort = SORTING_ALGORITHMS[KAHN_SORT]
    by_selector: dict[str, AppGroupWorkloadInfo] = {}
    for w in sorted(workloads, key=lambda w: w.workload.selector):
        by_selector.setdefault(w.workload.selector, w.workload)
    order: list[AppGroupTopologyInfo] = []
    try:
        for index, name in enumerate(sort(tree), start=1):
            found = by_selector.get(name)
            if found is None:
                raise CycleError(f"unable to find workload {name!r} by selector")
            order.append(AppGroupTopologyInfo(workload=found.model_copy(), index=index))
    except CycleError as err:
        log.info("AppGroup %s: %s; using the default topology order", app_group.key, err)
        order = [
            AppGroupTopologyInfo(workload=w.workload.model_copy(), index=index)
            for index, w in enumerate(workloads, start=1)
        ]
    return sorted(order, key=lambda t: t.workload.selector)


class AppGroupController:
    """Keeps each AppGroup's running workloads and topology order."""

    name = "AppGroupController"
    kinds = (APP_GROUP_KIND, "Pod")

    def __init__(self, cluster: ControllerCluster) -> None:
        self.cluster = cluster
        # (namespace, AppGroup name) -> keys of its running pods, kept from the pod
        # events: a pod change that leaves the count as it was costs no sync.
        self._running: dict[tuple[str, str], set[str]] = {}

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """An AppGroup changed, or a pod of one started or stopped running: sync it."""
        if kind == APP_GROUP_KIND:
            if not deleted:
                self.sync(obj.metadata.namespace or "", obj.metadata.name or "")
            return
        if not isinstance(obj, Pod):
            return
        namespace = obj.metadata.namespace or ""
        if isinstance(old, Pod) and pod_app_group(old) not in ("", pod_app_group(obj)):
            self._count(namespace, pod_app_group(old), old.key, running=False)
        name = pod_app_group(obj)
        if name:
            running = not deleted and obj.status.phase == "Running"
            self._count(namespace, name, obj.key, running=running)

    def _count(self, namespace: str, name: str, pod_key: str, *, running: bool) -> None:
        keys = self._running.setdefault((namespace, name), set())
        if running == (pod_key in keys):
            return
        if running:
            keys.add(pod_key)
        else:
            keys.discard(pod_key)
        self.sync(namespace, name)

    def resync_all(self) -> None:
        """Count every AppGroup's running pods again and sync every AppGroup."""
        self._running.clear()
        for pod in self.cluster.list_objects("Pod"):
            name = pod_app_group(pod) if isinstance(pod, Pod) else ""
            if name and pod.status.phase == "Running":
                key = (pod.metadata.namespace or "", name)
                self._running.setdefault(key, set()).add(pod.key)
        for ag in self.cluster.list_objects(APP_GROUP_KIND):
            self.sync(ag.metadata.namespace or "", ag.metadata.name or "")

    def sync(self, namespace: str, name: str) -> None:
        """Upstream's ``syncHandler``: write the AppGroup's status when it changes."""
        ag = self.cluster.get_object(APP_GROUP_KIND, namespace, name)
        if not isinstance(ag, AppGroup):
            return
        # Upstream counts the running pods, in a field named for workloads.
        changes: dict[str, Any] = {
            "running_workloads": len(self._running.get((namespace, name), ()))
        }
        now = self.cluster.now_timestamp()
        calculated = ag.status.topology_calculation_time
        if calculated is None or now - calculated > TOPOLOGY_RECALCULATION:
            changes["topology_order"] = topology_order(ag)
            changes["topology_calculation_time"] = now
        _write_status(self.cluster, ag, changes)


class NetworkTopologyController:
    """Keeps each NetworkTopology's node count."""

    name = "NetworkTopologyController"
    kinds = (NETWORK_TOPOLOGY_KIND, "Node")

    def __init__(self, cluster: ControllerCluster) -> None:
        self.cluster = cluster
        # Kept from the node events, as upstream's controller keeps its nodeCount.
        self.node_count = len(cluster.list_objects("Node"))

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """A NetworkTopology changed, or a node came or went: sync them."""
        if kind == NETWORK_TOPOLOGY_KIND:
            if not deleted:
                self.sync(obj.metadata.namespace or "", obj.metadata.name or "")
        elif deleted or old is None:
            self.node_count += -1 if deleted else 1
            self._sync_all()

    def resync_all(self) -> None:
        """Count the nodes again and sync every NetworkTopology."""
        self.node_count = len(self.cluster.list_objects("Node"))
        self._sync_all()

    def _sync_all(self) -> None:
        for nt in self.cluster.list_objects(NETWORK_TOPOLOGY_KIND):
            self.sync(nt.metadata.namespace or "", nt.metadata.name or "")

    def sync(self, namespace: str, name: str) -> None:
        """Write the NetworkTopology's status when it changes."""
        nt = self.cluster.get_object(NETWORK_TOPOLOGY_KIND, namespace, name)
        if not isinstance(nt, NetworkTopology):
            return
        _write_status(self.cluster, nt, {"node_count": self.node_count})


def _write_status(
    cluster: ControllerCluster, obj: AppGroup | NetworkTopology, changes: dict[str, Any]
) -> None:
    """Write ``obj``'s status with ``changes`` (field name: value) unless it already has
    them: no write, no event, so a controller reacting to its own write finds nothing to
    do."""
    if all(getattr(obj.status, field) == value for field, value in changes.items()):
        return
    status = obj.status.model_copy(update=changes)
    cluster.update_status(obj.model_copy(update={"status": status}))
