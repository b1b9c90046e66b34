"""core/v1 models the scheduler reads: Pod, Node, Namespace, Service and their parts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from .meta import (
    KubeModel,
    KubeObject,
    LabelSelector,
    NullableDict,
    NullableList,
)
from .quantity import Quantity
from .volumes import CSIVolumeSource, EphemeralVolumeSource, InTreeVolumeSources

__all__ = [
    "Affinity",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "ContainerResourceClaim",
    "ContainerState",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "Namespace",
    "NamespaceSpec",
    "NamespaceStatus",
    "Node",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "NodeSystemInfo",
    "PersistentVolumeClaimVolumeSource",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodExtendedResourceClaimStatus",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSchedulingGate",
    "PodSchedulingGroup",
    "PodSpec",
    "PodStatus",
    "PreferredSchedulingTerm",
    "ResourceRequirements",
    "Service",
    "ServiceSpec",
    "Taint",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
]


# --- containers -------------------------------------------------------------------------


class ContainerPort(KubeModel):
    """``v1.ContainerPort``; ``protocol`` defaults to TCP as the API server defaults it."""

    name: str | None = None
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = Field(default="", alias="hostIP")


class ContainerResourceClaim(KubeModel):
    """``v1.ResourceClaim`` of a container: a ``spec.resourceClaims`` entry it uses
    (all of the claim's devices, or only those of ``request``)."""

    name: str
    request: str | None = None


class ResourceRequirements(KubeModel):
    """``v1.ResourceRequirements``: requests and limits by resource name, DRA claims."""

    requests: NullableDict[str, Quantity] = Field(default_factory=dict)
    limits: NullableDict[str, Quantity] = Field(default_factory=dict)
    claims: NullableList[ContainerResourceClaim] = Field(default_factory=list)


class ContainerRestartRule(KubeModel):
    """``v1.ContainerRestartRule``: what the kubelet does when a container exits; only the
    ``action`` matters to scheduling (``RestartAllContainers`` needs a node declaring the
    feature, see NodeDeclaredFeatures)."""

    action: str = ""


class PodSeccompProfile(KubeModel):
    """``v1.SeccompProfile``: ``type`` RuntimeDefault, Unconfined or Localhost (then
    ``localhostProfile`` is the profile's path on the node)."""

    type: str = ""
    localhost_profile: str | None = None


class SecurityContext(KubeModel):
    """``v1.SecurityContext`` and ``v1.PodSecurityContext``: only the seccomp profile is
    read (plugins that place pods by their syscalls, such as SySched)."""

    seccomp_profile: PodSeccompProfile | None = None


class Container(KubeModel):
    """``v1.Container``; ``restart_policy: Always`` on an init container makes it a sidecar."""

    name: str = ""
    image: str | None = None
    image_pull_policy: str | None = None
    ports: NullableList[ContainerPort] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = None
    restart_policy_rules: NullableList[ContainerRestartRule] = Field(default_factory=list)
    security_context: SecurityContext | None = None


# --- node selection ---------------------------------------------------------------------


class NodeSelectorRequirement(KubeModel):
    """``v1.NodeSelectorRequirement``: operators In, NotIn, Exists, DoesNotExist, Gt, Lt."""

    # Missing fields read as Go's zero values; validation words the refusal.
    key: str = ""
    operator: str = ""
    values: NullableList[str] = Field(default_factory=list)


class NodeSelectorTerm(KubeModel):
    """``v1.NodeSelectorTerm``: expressions on labels AND expressions on fields."""

    match_expressions: NullableList[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: NullableList[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(KubeModel):
    """``v1.NodeSelector``: the terms are ORed."""

    node_selector_terms: NullableList[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(KubeModel):
    """``v1.PreferredSchedulingTerm``: a weight (1-100) for nodes matching ``preference``."""

    weight: int = 0
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeAffinity(KubeModel):
    """``v1.NodeAffinity``."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: NullableList[PreferredSchedulingTerm] = (
        Field(default_factory=list)
    )


class PodAffinityTerm(KubeModel):
    """``v1.PodAffinityTerm``: pods matching the selector, in a topology domain."""

    label_selector: LabelSelector | None = None
    namespaces: NullableList[str] = Field(default_factory=list)
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: NullableList[str] = Field(default_factory=list)
    mismatch_label_keys: NullableList[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(KubeModel):
    """``v1.WeightedPodAffinityTerm``."""

    weight: int = 0
    pod_affinity_term: PodAffinityTerm = Field(default_factory=PodAffinityTerm)


class PodAffinity(KubeModel):
    """``v1.PodAffinity``."""

    required_during_scheduling_ignored_during_execution: NullableList[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: NullableList[WeightedPodAffinityTerm] = (
        Field(default_factory=list)
    )


class PodAntiAffinity(PodAffinity):
    """``v1.PodAntiAffinity`` (same shape as ``PodAffinity``)."""


class Affinity(KubeModel):
    """``v1.Affinity``."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class Toleration(KubeModel):
    """``v1.Toleration``. An empty/None operator means Equal; empty key with Exists matches all."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Taint(KubeModel):
    """``v1.Taint``: effect NoSchedule, PreferNoSchedule or NoExecute."""

    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: datetime | None = None


class TopologySpreadConstraint(KubeModel):
    """``v1.TopologySpreadConstraint``; None policies mean upstream's defaults (Honor / Ignore)."""

    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: NullableList[str] = Field(default_factory=list)


class PodSchedulingGate(KubeModel):
    """``v1.PodSchedulingGate``: while any gate remains, the pod is not scheduled."""

    name: str = ""


class PodSchedulingGroup(KubeModel):
    """``v1.PodSchedulingGroup`` (``spec.schedulingGroup``, GenericWorkload): the
    ``scheduling.k8s.io`` PodGroup of the pod's namespace that the pod belongs to."""

    pod_group_name: str | None = None


# --- volumes ----------------------------------------------------------------------------


class PersistentVolumeClaimVolumeSource(KubeModel):
    """``v1.PersistentVolumeClaimVolumeSource``."""

    claim_name: str
    read_only: bool = False


class Volume(InTreeVolumeSources):
    """``v1.Volume`` with the sources the volume plugins read; other sources (configMap,
    emptyDir, ...) are kept as-is in ``model_extra``."""

    model_config = ConfigDict(extra="allow")

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    csi: CSIVolumeSource | None = None

    def source(self, key: str) -> Any:
        """A source kubesched does not model, raw, under its camelCase ``key`` (e.g.
        ``"configMap"``), or None."""
        extra = self.model_extra or {}
        return extra.get(key)


# --- pod --------------------------------------------------------------------------------


class PodResourceClaim(KubeModel):
    """``v1.PodResourceClaim``: a claim the pod uses, named or made from a template."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> PodResourceClaim:
        if bool(self.resource_claim_name) == bool(self.resource_claim_template_name):
            raise ValueError(
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )
        return self


class PodResourceClaimStatus(KubeModel):
    """``v1.PodResourceClaimStatus``: the claim generated for a template entry (None:
    the controller decided none is needed)."""

    name: str
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(KubeModel):
    """``v1.ContainerExtendedResourceRequest``: which request of the extended-resource
    claim serves a container's extended resource."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(KubeModel):
    """``v1.PodExtendedResourceClaimStatus``: the claim the scheduler made for the pod's
    extended resources backed by DRA, and which of its requests serves which container."""

    request_mappings: NullableList[ContainerExtendedResourceRequest] = Field(default_factory=list)
    resource_claim_name: str = ""


class PodSpec(KubeModel):
    """``v1.PodSpec`` with the API server's defaults that matter for scheduling."""

    containers: NullableList[Container] = Field(default_factory=list)
    init_containers: NullableList[Container] = Field(default_factory=list)
    node_name: str | None = None
    node_selector: NullableDict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: NullableList[Toleration] = Field(default_factory=list)
    topology_spread_constraints: NullableList[TopologySpreadConstraint] = Field(
        default_factory=list
    )
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    scheduler_name: str = "default-scheduler"
    scheduling_gates: NullableList[PodSchedulingGate] = Field(default_factory=list)
    scheduling_group: PodSchedulingGroup | None = None
    overhead: dict[str, Quantity] | None = None
    resources: ResourceRequirements | None = None
    """Pod-level requests and limits (``spec.resources``, PodLevelResources)."""
    runtime_class_name: str | None = None
    volumes: NullableList[Volume] = Field(default_factory=list)
    resource_claims: NullableList[PodResourceClaim] = Field(default_factory=list)
    """DRA claims (``spec.resourceClaims``): by name, or generated from a template."""
    termination_grace_period_seconds: int | None = 30
    active_deadline_seconds: int | None = None
    host_network: bool = False
    host_users: bool | None = None
    """``spec.hostUsers``: False runs the pod in a user namespace."""
    restart_policy: str = "Always"
    service_account_name: str | None = None
    hostname: str | None = None
    subdomain: str | None = None
    security_context: SecurityContext | None = None

    @model_validator(mode="after")
    def _default_host_network_ports(self) -> PodSpec:
        # SetDefaults_PodSpec: with hostNetwork, an unset hostPort equals containerPort.
        if self.host_network:
            for c in (*self.init_containers, *self.containers):
                for p in c.ports:
                    if not p.host_port:
                        p.host_port = p.container_port
        return self


class PodCondition(KubeModel):
    """``v1.PodCondition`` (e.g. ``PodScheduled=False`` with reason ``Unschedulable``)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_probe_time: datetime | None = None
    last_transition_time: datetime | None = None


class ContainerStateWaiting(KubeModel):
    """``v1.ContainerStateWaiting``: why a container is not running yet."""

    reason: str | None = None
    message: str | None = None


class ContainerStateTerminated(KubeModel):
    """``v1.ContainerStateTerminated``: how a container ended."""

    exit_code: int = 0
    reason: str | None = None
    message: str | None = None


class ContainerState(KubeModel):
    """``v1.ContainerState``: at most one of waiting / terminated (running is not read)."""

    waiting: ContainerStateWaiting | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(KubeModel):
    """``v1.ContainerStatus``: the parts the descheduler reads (state, restarts)."""

    name: str = ""
    state: ContainerState = Field(default_factory=ContainerState)
    restart_count: int = 0


class PodStatus(KubeModel):
    """``v1.PodStatus``: the parts the scheduler reads and writes."""

    phase: str | None = None
    conditions: NullableList[PodCondition] = Field(default_factory=list)
    nominated_node_name: str | None = None
    start_time: datetime | None = None
    reason: str | None = None
    message: str | None = None
    resource_claim_statuses: NullableList[PodResourceClaimStatus] = Field(default_factory=list)
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None
    container_statuses: NullableList[ContainerStatus] = Field(default_factory=list)
    init_container_statuses: NullableList[ContainerStatus] = Field(default_factory=list)


class Pod(KubeObject):
    """``v1.Pod``.

    As the API server's ``SetDefaults_Pod``, a container (or init container) with a limit
    but no request for a resource gets the limit as its request; so do the pod-level
    ``spec.resources``.
    """

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "Pod"
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @model_validator(mode="after")
    def _default_requests_from_limits(self) -> Pod:
        requirements = [c.resources for c in (*self.spec.containers, *self.spec.init_containers)]
        if self.spec.resources is not None:
            requirements.append(self.spec.resources)
        for res in requirements:
            if res.limits and not res.limits.keys() <= res.requests.keys():
                res.requests = {**res.limits, **res.requests}
        return self


# --- node -------------------------------------------------------------------------------


class NodeSpec(KubeModel):
    """``v1.NodeSpec``."""

    unschedulable: bool = False
    taints: NullableList[Taint] = Field(default_factory=list)
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    provider_id: str | None = Field(default=None, alias="providerID")


class ContainerImage(KubeModel):
    """``v1.ContainerImage``: an image present on the node (for ImageLocality)."""

    names: NullableList[str] = Field(default_factory=list)
    size_bytes: int = 0


class NodeCondition(KubeModel):
    """``v1.NodeCondition`` (Ready, MemoryPressure, ...)."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_heartbeat_time: datetime | None = None
    last_transition_time: datetime | None = None


class NodeSystemInfo(KubeModel):
    """``v1.NodeSystemInfo``: what the kubelet reports of its machine (the parts read)."""

    operating_system: str | None = None
    architecture: str | None = None


class NodeStatus(KubeModel):
    """``v1.NodeStatus``: capacity, allocatable, images, conditions."""

    capacity: NullableDict[str, Quantity] = Field(default_factory=dict)
    allocatable: NullableDict[str, Quantity] = Field(default_factory=dict)
    images: NullableList[ContainerImage] = Field(default_factory=list)
    conditions: NullableList[NodeCondition] = Field(default_factory=list)
    node_info: NodeSystemInfo | None = None
    declared_features: NullableList[str] = Field(default_factory=list)
    """The node features the kubelet declares (``status.declaredFeatures``), which
    NodeDeclaredFeatures matches against what a pod needs."""


class Node(KubeObject):
    """``v1.Node`` (cluster-scoped)."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "v1"
    kind: str | None = "Node"
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


# --- namespace, service -----------------------------------------------------------------


class NamespaceSpec(KubeModel):
    """``v1.NamespaceSpec``."""

    finalizers: NullableList[str] = Field(default_factory=list)


class NamespaceStatus(KubeModel):
    """``v1.NamespaceStatus``: phase Active or Terminating."""

    phase: str | None = None


class Namespace(KubeObject):
    """``v1.Namespace`` (cluster-scoped); its labels feed ``namespaceSelector``."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "v1"
    kind: str | None = "Namespace"
    spec: NamespaceSpec = Field(default_factory=NamespaceSpec)
    status: NamespaceStatus = Field(default_factory=NamespaceStatus)


class ServiceSpec(KubeModel):
    """``v1.ServiceSpec``: the selector is what default topology spreading uses."""

    selector: NullableDict[str, str] = Field(default_factory=dict)
    type: str | None = None
    cluster_ip: str | None = Field(default=None, alias="clusterIP")


class Service(KubeObject):
    """``v1.Service``."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = "v1"
    kind: str | None = "Service"
    spec: ServiceSpec = Field(default_factory=ServiceSpec)
