"""The AppGroup and NetworkTopology controllers, run by the embedded cluster.

On a real cluster the network-aware plugins read what two controllers of their ecosystem
write (scheduler-plugins' ``pkg/controllers`` AppGroup controller, diktyo-io's
networktopology-controller). ``kubesched simulate`` runs the same work here, registered
through the ``kubesched.controllers`` entry points:

* :class:`AppGroupController` keeps an AppGroup's ``status.runningWorkloads`` (its pods,
  labelled ``appgroup.diktyo.x-k8s.io: <name>``, in phase Running) and computes its
  ``status.topologyOrder`` with ``spec.topologySortingAlgorithm`` when
  ``status.topologyCalculationTime`` is unset, then again once it is 24 hours old;
* :class:`NetworkTopologyController` computes, for a NetworkTopology that names a
  ConfigMap of netperf latencies (``spec.configmapName``), its ``NetperfCosts`` weights
  (:mod:`.netperf`), with the bandwidth allocated between regions and zones to the pods
  of AppGroups, and its ``status.nodeCount``; again when the NetworkTopology changes
  and its ``status.weightCalculationTime`` is more than 5 minutes old.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from kubesched import ControllerCluster, notice
from kubesched.api import KubeObject, Node, Pod, Quantity

from .api import (
    APP_GROUP_KIND,
    NETWORK_TOPOLOGY_KIND,
    AppGroup,
    AppGroupTopologyInfo,
    AppGroupWorkloadInfo,
    NetworkTopology,
    node_region_zone,
    pod_app_group,
    pod_workload_selector,
)
from .netperf import netperf_key, netperf_weights
from .toposort import KAHN_SORT, SORTING_ALGORITHMS, CycleError

__all__ = [
    "TOPOLOGY_RECALCULATION",
    "WEIGHTS_RECALCULATION",
    "AppGroupController",
    "NetworkTopologyController",
    "topology_order",
]

log = logging.getLogger(__name__)

TOPOLOGY_RECALCULATION = timedelta(hours=24)
"""How old a topology order gets before the AppGroup controller computes it again."""
WEIGHTS_RECALCULATION = timedelta(minutes=5)
"""How old a NetworkTopology's weights get before its controller computes them again."""

_ZERO = Quantity("0")


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
    """Keeps each NetworkTopology's node count and its ``NetperfCosts`` weights (diktyo's
    networktopology-controller)."""

    name = "NetworkTopologyController"
    kinds = (NETWORK_TOPOLOGY_KIND, "Node", "Pod")

    def __init__(self, cluster: ControllerCluster) -> None:
        self.cluster = cluster
        # Kept from the node events, as upstream's controller keeps its nodeCount.
        self.node_count = 0
        self._located: dict[str, tuple[str, str]] = {}  # node name -> (region, zone)
        # Zone pairs found in one region; like upstream's ZoneMap, never forgotten.
        self.zone_pairs: set[tuple[str, str]] = set()
        # The bandwidth accounting: (origin, destination) region or zone -> allocated,
        # the placed pods of each (namespace, AppGroup, selector) by node, and what each
        # placed pod reserved (so that its deletion gives exactly that back).
        self.allocated: dict[tuple[str, str], Quantity] = {}
        self._placed: dict[str, tuple[str, str, str, str]] = {}
        self._on_node: dict[tuple[str, str, str], dict[str, int]] = {}
        self._reserved: dict[str, list[tuple[tuple[str, str], Quantity]]] = {}
        self._noticed: set[tuple[str, str, str]] = set()
        self._count_nodes()

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """A NetworkTopology changed: sync it. A node came or went, or a pod of an
        AppGroup was placed or deleted: count it (upstream syncs a NetworkTopology only
        when it changes)."""
        if kind == NETWORK_TOPOLOGY_KIND:
            if not deleted:
                self.sync(obj.metadata.namespace or "", obj.metadata.name or "")
        elif isinstance(obj, Pod):
            self._pod_changed(obj, deleted)
        elif isinstance(obj, Node):
            name = obj.metadata.name or ""
            if deleted:
                self.node_count -= 1
                self._located.pop(name, None)
            else:
                if old is None:
                    self.node_count += 1
                self._located[name] = node_region_zone(obj)

    def resync_all(self) -> None:
        """Count the nodes and the placed pods again, and sync every NetworkTopology (as
        upstream's informers deliver every object when the controller starts)."""
        self._count_nodes()
        self.allocated.clear()
        self._placed.clear()
        self._on_node.clear()
        self._reserved.clear()
        placed = [
            p
            for p in self.cluster.list_objects("Pod")
            if isinstance(p, Pod) and p.spec.node_name and pod_app_group(p)
        ]
        for pod in placed:
            self._place(pod)
        for pod in placed:
            self._reserve(pod)
        for nt in self.cluster.list_objects(NETWORK_TOPOLOGY_KIND):
            self.sync(nt.metadata.namespace or "", nt.metadata.name or "")

    def _count_nodes(self) -> None:
        nodes = self.cluster.list_objects("Node")
        self.node_count = len(nodes)
        self._located = {n.metadata.name or "": node_region_zone(n) for n in nodes}

    def _pod_changed(self, pod: Pod, deleted: bool) -> None:
        was = self._placed.get(pod.key)
        group = pod_app_group(pod)
        now = (
            None
            if deleted or not pod.spec.node_name or not group
            else (
                pod.metadata.namespace or "",
                group,
                pod_workload_selector(pod),
                pod.spec.node_name,
            )
        )
        if now == was:
            return
        if was is not None:
            self._unplace(pod.key, was)
        if now is not None:
            self._place(pod)
            self._reserve(pod)

    def _place(self, pod: Pod) -> None:
        namespace, node = pod.metadata.namespace or "", pod.spec.node_name or ""
        placed = (namespace, pod_app_group(pod), pod_workload_selector(pod), node)
        self._placed[pod.key] = placed
        on_node = self._on_node.setdefault(placed[:3], {})
        on_node[node] = on_node.get(node, 0) + 1

    def _unplace(self, key: str, placed: tuple[str, str, str, str]) -> None:
        del self._placed[key]
        on_node = self._on_node[placed[:3]]
        on_node[placed[3]] -= 1
        if not on_node[placed[3]]:
            del on_node[placed[3]]
        for cost_key, amount in self._reserved.pop(key, ()):
            self.allocated[cost_key] = self.allocated[cost_key] - amount

    def _reserve(self, pod: Pod) -> None:
        """Upstream's ``podAdded``: for each dependency of the pod's workload, add its
        ``minBandwidth`` between the pod's region (or zone, in one region) and that of
        every placed pod of the dependency on another node."""
        namespace, group, selector, node = self._placed[pod.key]
        app_group = self.cluster.get_object(APP_GROUP_KIND, namespace, group)
        if not isinstance(app_group, AppGroup) or node not in self._located:
            return
        region, zone = self._located[node]
        reserved = []
        for w in app_group.spec.workloads:
            if w.workload.selector != selector:
                continue
            for d in w.dependencies:
                # Adding nothing would leave every cost as it is: skip the search.
                if d.min_bandwidth is None or d.min_bandwidth.is_zero():
                    continue
                placed = self._on_node.get((namespace, group, d.workload.selector), {})
                for other, count in placed.items():
                    if other == node or other not in self._located:
                        continue
                    other_region, other_zone = self._located[other]
                    if not other_region and not other_zone:
                        continue
                    if region != other_region:
                        cost_key = (region, other_region)
                    elif zone != other_zone:
                        cost_key = (zone, other_zone)
                    else:
                        continue
                    for _ in range(count):
                        self.allocated[cost_key] = (
                            self.allocated.get(cost_key, _ZERO) + d.min_bandwidth
                        )
                        reserved.append((cost_key, d.min_bandwidth))
        if reserved:
            self._reserved[pod.key] = reserved

    def sync(self, namespace: str, name: str) -> None:
        """Upstream's ``syncHandler``: write the node count and, when they were never
        computed or are more than 5 minutes old, the weights from the NetworkTopology's
        ConfigMap. Without that ConfigMap nothing is written."""
        nt = self.cluster.get_object(NETWORK_TOPOLOGY_KIND, namespace, name)
        if not isinstance(nt, NetworkTopology):
            return
        configmap_name = nt.spec.configmap_name or ""
        if not configmap_name:
            return  # costs written by hand only: nothing to compute
        configmap = self.cluster.get_object("ConfigMap", namespace, configmap_name)
        if configmap is None:
            self._notice_once(
                nt,
                configmap_name,
                f"ConfigMap {namespace}/{configmap_name} (spec.configmapName) not found: "
                "the NetworkTopology controller leaves its weights and status as written",
            )
            return
        now = self.cluster.now_timestamp()
        calculated = nt.status.weight_calculation_time
        if calculated is not None and now - calculated <= WEIGHTS_RECALCULATION:
            _write_status(self.cluster, nt, {"node_count": self.node_count})
            return
        nodes = [n for n in self.cluster.list_objects("Node") if isinstance(n, Node)]
        data = getattr(configmap, "data", None) or {}
        weights, missing = netperf_weights(
            nodes, data, nt.spec.weights, self.allocated, self.zone_pairs
        )
        if missing:
            n1, n2 = missing[0]
            self._notice_once(
                nt,
                f"missing {len(missing)} {n1} {n2}",
                f"ConfigMap {namespace}/{configmap_name} has no integer latency for "
                f"{len(missing)} of the {len(nodes) * (len(nodes) - 1)} node pairs (first: "
                f"{netperf_key(n1, n2)}); each counts as cost 0, as the NetworkTopology "
                "controller counts it",
            )
        status = nt.status.model_copy(
            update={"node_count": self.node_count, "weight_calculation_time": now}
        )
        spec = nt.spec.model_copy(update={"weights": weights})
        self.cluster.update(nt.model_copy(update={"spec": spec, "status": status}))

    def _notice_once(self, nt: NetworkTopology, what: str, message: str) -> None:
        """Say ``message`` about ``nt`` once per NetworkTopology and ``what``."""
        key = (nt.metadata.namespace or "", nt.metadata.name or "", what)
        if key not in self._noticed:
            self._noticed.add(key)
            notice(message, obj=f"NetworkTopology {key[0]}/{key[1]}")


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
