"""AppGroup and NetworkTopology: the network-aware scheduling CRDs (diktyo.x-k8s.io).

Registered as object kinds through the ``kubesched.kinds`` entry point, so manifests with
``kind: AppGroup`` (``appgroup.diktyo.x-k8s.io/v1alpha1``) or ``kind: NetworkTopology``
(``networktopology.diktyo.x-k8s.io/v1alpha1``) load into the embedded cluster like any
built-in kind and are watched on a real cluster; the plugins read them with
``handle.lister.get_object(kind, namespace, name)``.

An AppGroup lists an application's workloads (each named by the value of its pods'
``appgroup.diktyo.x-k8s.io.workload`` label, its *selector*) and, per workload, the
workloads it talks to with the largest network cost it tolerates; its status carries
the order in which the workloads should be placed. A NetworkTopology gives the network
cost between regions and between zones.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from kubesched.api import KubeModel, KubeObject, Node, NullableList, Pod, Quantity

__all__ = [
    "APP_GROUP_KIND",
    "APP_GROUP_LABEL",
    "APP_GROUP_SELECTOR_LABEL",
    "NETPERF_COSTS",
    "NETWORK_TOPOLOGY_KIND",
    "REGION_LABEL",
    "USER_DEFINED",
    "ZONE_LABEL",
    "AppGroup",
    "AppGroupSpec",
    "AppGroupStatus",
    "AppGroupTopologyInfo",
    "AppGroupWorkload",
    "AppGroupWorkloadInfo",
    "CostInfo",
    "DependenciesInfo",
    "NetworkTopology",
    "NetworkTopologySpec",
    "NetworkTopologyStatus",
    "OriginInfo",
    "TopologyInfo",
    "WeightInfo",
    "node_region_zone",
    "pod_app_group",
    "pod_workload_selector",
]

APP_GROUP_KIND = "AppGroup"
NETWORK_TOPOLOGY_KIND = "NetworkTopology"

APP_GROUP_LABEL = "appgroup.diktyo.x-k8s.io"
"""The pod label naming the AppGroup a pod belongs to."""
APP_GROUP_SELECTOR_LABEL = APP_GROUP_LABEL + ".workload"
"""The pod label naming the pod's workload in its AppGroup (the workload's ``selector``)."""

NETPERF_COSTS = "NetperfCosts"
"""The weights the NetworkTopology controller computes from netperf measurements."""
USER_DEFINED = "UserDefined"
"""The weights written by hand (NetworkOverhead's default ``weightsName``)."""

REGION_LABEL = "topology.kubernetes.io/region"
"""The node label naming its region: the topology key of the costs between regions."""
ZONE_LABEL = "topology.kubernetes.io/zone"
"""The node label naming its zone: the topology key of the costs between zones."""


class AppGroupWorkloadInfo(KubeModel):
    """A workload of an AppGroup: its object, and the selector its pods are labelled with."""

    kind: str = ""
    name: str = ""
    selector: str = Field(
        default="",
        description="The value of the workload's pods' appgroup.diktyo.x-k8s.io.workload label.",
    )
    api_version: str | None = None
    namespace: str | None = None


class DependenciesInfo(KubeModel):
    """A workload another depends on, and how much network cost that link tolerates."""

    workload: AppGroupWorkloadInfo = Field(default_factory=AppGroupWorkloadInfo)
    min_bandwidth: Quantity | None = None
    max_network_cost: int = Field(
        default=0, description="The largest network cost allowed to this dependency's pods."
    )


class AppGroupWorkload(KubeModel):
    """One workload of the AppGroup and its dependencies."""

    workload: AppGroupWorkloadInfo = Field(default_factory=AppGroupWorkloadInfo)
    dependencies: NullableList[DependenciesInfo] = Field(default_factory=list)


class AppGroupSpec(KubeModel):
    """``AppGroupSpec``: the application's workloads and their dependencies."""

    num_members: int = 0
    topology_sorting_algorithm: str = ""
    workloads: NullableList[AppGroupWorkload] = Field(default_factory=list)


class AppGroupTopologyInfo(KubeModel):
    """A workload's place in the AppGroup's topology order (lower is placed first)."""

    workload: AppGroupWorkloadInfo = Field(default_factory=AppGroupWorkloadInfo)
    index: int = 0


class AppGroupStatus(KubeModel):
    """``AppGroupStatus`` (kept by the AppGroup controller): the topology order."""

    running_workloads: int = 0
    schedule_start_time: datetime | None = None
    topology_calculation_time: datetime | None = None
    topology_order: NullableList[AppGroupTopologyInfo] = Field(default_factory=list)


class AppGroup(KubeObject):
    """``appgroup.diktyo.x-k8s.io/v1alpha1.AppGroup``: pods labelled
    ``appgroup.diktyo.x-k8s.io: <name>`` belong to it."""

    api_version: str | None = "appgroup.diktyo.x-k8s.io/v1alpha1"
    kind: str | None = APP_GROUP_KIND
    spec: AppGroupSpec = Field(default_factory=AppGroupSpec)
    status: AppGroupStatus = Field(default_factory=AppGroupStatus)


class CostInfo(KubeModel):
    """The network cost from an origin to one destination."""

    destination: str = ""
    bandwidth_capacity: Quantity | None = None
    bandwidth_allocated: Quantity | None = None
    network_cost: int = 0


class OriginInfo(KubeModel):
    """The costs from one region or zone (``origin``) to others."""

    origin: str = ""
    cost_list: NullableList[CostInfo] = Field(default_factory=list)


class TopologyInfo(KubeModel):
    """The costs between the values of one topology key (region or zone label)."""

    topology_key: str = ""
    origin_list: NullableList[OriginInfo] = Field(default_factory=list)


class WeightInfo(KubeModel):
    """A named set of costs (``UserDefined``, ``NetperfCosts``, ...)."""

    name: str = ""
    topology_list: NullableList[TopologyInfo] = Field(default_factory=list)


class NetworkTopologySpec(KubeModel):
    """``NetworkTopologySpec``: the named sets of costs."""

    configmap_name: str | None = None
    weights: NullableList[WeightInfo] = Field(default_factory=list)


class NetworkTopologyStatus(KubeModel):
    """``NetworkTopologyStatus`` (kept by the NetworkTopology controller)."""

    node_count: int = 0
    weight_calculation_time: datetime | None = None


class NetworkTopology(KubeObject):
    """``networktopology.diktyo.x-k8s.io/v1alpha1.NetworkTopology``: network costs between
    the cluster's regions and zones."""

    api_version: str | None = "networktopology.diktyo.x-k8s.io/v1alpha1"
    kind: str | None = NETWORK_TOPOLOGY_KIND
    spec: NetworkTopologySpec = Field(default_factory=NetworkTopologySpec)
    status: NetworkTopologyStatus = Field(default_factory=NetworkTopologyStatus)


def pod_app_group(pod: Pod) -> str:
    """The AppGroup a pod belongs to ("" if none): upstream ``GetPodAppGroupLabel``."""
    return (pod.metadata.labels or {}).get(APP_GROUP_LABEL, "")


def pod_workload_selector(pod: Pod) -> str:
    """The pod's workload selector ("" if none): upstream ``GetPodAppGroupSelector``."""
    return (pod.metadata.labels or {}).get(APP_GROUP_SELECTOR_LABEL, "")


def node_region_zone(node: Node | None) -> tuple[str, str]:
    """The node's region and zone labels ("" when unset, or when there is no node)."""
    labels = (node.metadata.labels or {}) if node is not None else {}
    return labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
