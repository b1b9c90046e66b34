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

from kubesched import ControllerCluster
from kubesched.api import KubeObject, Pod

from .api import (
    APP_GROUP_KIND,
    APP_GROUP_LABEL,
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

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """An AppGroup, or a pod of one, changed: sync the AppGroup."""
        if kind == APP_GROUP_KIND:
            if not deleted:
                self.sync(obj.metadata.namespace or "", obj.metadata.name or "")
        elif isinstance(obj, Pod):
            name = pod_app_group(obj)
            if name:
                self.sync(obj.metadata.namespace or "", name)

    def resync_all(self) -> None:
        """Sync every AppGroup."""
        for ag in self.cluster.list_objects(APP_GROUP_KIND):
            self.sync(ag.metadata.namespace or "", ag.metadata.name or "")

    def sync(self, namespace: str, name: str) -> None:
        """Upstream's ``syncHandler``: write the AppGroup's status when it changes."""
        ag = self.cluster.get_object(APP_GROUP_KIND, namespace, name)
        if not isinstance(ag, AppGroup):
            return
        pods = self.cluster.list_pods_with_label(namespace, APP_GROUP_LABEL, name)
        status = ag.status.model_copy(deep=True)
        # Upstream counts the running pods, in a field named for workloads.
        status.running_workloads = sum(1 for p in pods if p.status.phase == "Running")
        now = self.cluster.now_timestamp()
        calculated = status.topology_calculation_time
        if calculated is None or now - calculated > TOPOLOGY_RECALCULATION:
            status.topology_order = topology_order(ag)
            status.topology_calculation_time = now
        if status != ag.status:
            self.cluster.update(ag.model_copy(update={"status": status}))


class NetworkTopologyController:
    """Keeps each NetworkTopology's node count."""

    name = "NetworkTopologyController"
    kinds = (NETWORK_TOPOLOGY_KIND, "Node")

    def __init__(self, cluster: ControllerCluster) -> None:
        self.cluster = cluster

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """A NetworkTopology changed, or a node came or went: sync them."""
        if kind == NETWORK_TOPOLOGY_KIND:
            if not deleted:
                self.sync(obj.metadata.namespace or "", obj.metadata.name or "")
        elif old is None or deleted:
            self.resync_all()

    def resync_all(self) -> None:
        """Sync every NetworkTopology."""
        for nt in self.cluster.list_objects(NETWORK_TOPOLOGY_KIND):
            self.sync(nt.metadata.namespace or "", nt.metadata.name or "")

    def sync(self, namespace: str, name: str) -> None:
        """Write the NetworkTopology's status when it changes."""
        nt = self.cluster.get_object(NETWORK_TOPOLOGY_KIND, namespace, name)
        if not isinstance(nt, NetworkTopology):
            return
        status = nt.status.model_copy(deep=True)
        status.node_count = len(self.cluster.list_objects("Node"))
        if status != nt.status:
            self.cluster.update(nt.model_copy(update={"status": status}))
