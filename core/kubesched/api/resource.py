"""resource.k8s.io/v1 models (Dynamic Resource Allocation) and the claim helpers plugins share.

DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice as v1.36 serves
them, with the checks of upstream's validation that a scheduler depends on (a request
has exactly one of ``exactly`` / ``firstAvailable``, known allocation modes, positive
counts, request names that constraints and containers can refer to). The helpers at the
end are ``k8s.io/dynamic-resource-allocation/resourceclaim``'s: which claim a pod's
``spec.resourceClaims`` entry names, whether a claim belongs to the pod, whether it can
be reserved.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .core import NodeSelector, Pod
from .meta import KubeModel, KubeObject, NullableDict, NullableList, ObjectMeta
from .quantity import Quantity

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "POD_CLAIM_NAME_ANNOTATION",
    "RESOURCE_CLAIM_FINALIZER",
    "RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE",
    "AllocationResult",
    "CELDeviceSelector",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceToleration",
    "ExactDeviceRequest",
    "OpaqueDeviceConfiguration",
    "PodClaimError",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
    "can_be_reserved",
    "is_for_pod",
    "is_reserved_for_pod",
    "pod_claim_name",
]

API_GROUP = "resource.k8s.io"
API_VERSION = f"{API_GROUP}/v1"

RESOURCE_CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
"""Put on a claim by the scheduler when it allocates it (the resourceclaim controller
removes it once the claim is deallocated), so an allocated claim is not deleted in use."""

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""Set by the resourceclaim controller on a claim it generated: the pod's claim entry."""

RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
"""``ResourceClaimReservedForMaxSize``: at most this many consumers share one claim."""

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
_ALLOCATION_MODES = (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL)

# A request name is a DNS label (IsDNS1123Label), as upstream validates it.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _dns_label(value: str) -> str:
    if not value or len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(
            f"Invalid value: {value!r}: a lowercase RFC 1123 label must consist of lower case "
            "alphanumeric characters or '-', and must start and end with an alphanumeric "
            "character"
        )
    return value


def _required(value: str) -> str:
    if not value.strip():
        raise ValueError("Required value")
    return value


# --- selectors and configuration ---------------------------------------------------------


class CELDeviceSelector(KubeModel):
    """``CELDeviceSelector``: a CEL expression over ``device`` that must be true."""

    expression: str

    _expression = field_validator("expression")(lambda cls, v: _required(v))


class DeviceSelector(KubeModel):
    """``DeviceSelector``: today only ``cel``."""

    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(KubeModel):
    """``OpaqueDeviceConfiguration``: driver parameters the scheduler passes through."""

    driver: str
    parameters: Any = None


class DeviceClassConfiguration(KubeModel):
    """``DeviceClassConfiguration``."""

    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(KubeModel):
    """``DeviceClassSpec``: selectors every device of the class satisfies, configuration."""

    selectors: NullableList[DeviceSelector] = Field(default_factory=list)
    config: NullableList[DeviceClassConfiguration] = Field(default_factory=list)
    extended_resource_name: str | None = None


class DeviceClass(KubeObject):
    """``resource.k8s.io/v1`` DeviceClass (cluster-scoped)."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = API_VERSION
    kind: str | None = "DeviceClass"
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# --- claims ------------------------------------------------------------------------------


class DeviceToleration(KubeModel):
    """``DeviceToleration`` (device taints): kept for round-tripping."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class _RequestBody(KubeModel):
    """What ``exactly`` and a ``firstAvailable`` alternative have in common."""

    device_class_name: str
    selectors: NullableList[DeviceSelector] = Field(default_factory=list)
    allocation_mode: Literal["ExactCount", "All"] = ALLOCATION_MODE_EXACT_COUNT
    count: int | None = None
    tolerations: NullableList[DeviceToleration] = Field(default_factory=list)

    @model_validator(mode="after")
    def _default_count(self) -> _RequestBody:
        # SetDefaults: ExactCount without a count means one device; All takes no count.
        if self.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            if self.count is None:
                self.count = 1
            elif self.count <= 0:
                raise ValueError(f"count: Invalid value: {self.count}: must be greater than zero")
        elif self.count is not None and self.count != 0:
            raise ValueError(
                f"count: Invalid value: {self.count}: must not be specified when "
                "allocationMode is 'All'"
            )
        return self

    _class_name = field_validator("device_class_name")(lambda cls, v: _required(v))


class ExactDeviceRequest(_RequestBody):
    """``ExactDeviceRequest``: devices of one class; ``adminAccess`` ignores allocations."""

    admin_access: bool | None = None


class DeviceSubRequest(_RequestBody):
    """``DeviceSubRequest``: one alternative of ``firstAvailable``, tried in order."""

    name: str

    _name = field_validator("name")(lambda cls, v: _dns_label(v))


class DeviceRequest(KubeModel):
    """``DeviceRequest``: a named request with ``exactly`` one or ``firstAvailable`` ones."""

    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: NullableList[DeviceSubRequest] = Field(default_factory=list)

    _name = field_validator("name")(lambda cls, v: _dns_label(v))

    @model_validator(mode="after")
    def _one_of(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise ValueError("exactly one of `exactly` or `firstAvailable` is required")
        if len(self.first_available) > 8:
            raise ValueError(
                f"firstAvailable: Too many: {len(self.first_available)}: must have at most 8 items"
            )
        names = [s.name for s in self.first_available]
        for n in names:
            if names.count(n) > 1:
                raise ValueError(f"firstAvailable: Duplicate value: {n!r}")
        return self


class DeviceConstraint(KubeModel):
    """``DeviceConstraint``: the listed requests' devices share ``matchAttribute``'s value."""

    requests: NullableList[str] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> DeviceConstraint:
        if (self.match_attribute is None) == (self.distinct_attribute is None):
            raise ValueError("exactly one of `matchAttribute` or `distinctAttribute` is required")
        attr = self.match_attribute or self.distinct_attribute or ""
        if "/" not in attr:
            raise ValueError(
                f"Invalid value: {attr!r}: must include a domain (a fully qualified name)"
            )
        return self


class DeviceClaimConfiguration(KubeModel):
    """``DeviceClaimConfiguration``: opaque configuration for some (or all) requests."""

    requests: NullableList[str] = Field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(KubeModel):
    """``DeviceClaim``: requests, constraints between them, configuration."""

    requests: NullableList[DeviceRequest] = Field(default_factory=list)
    constraints: NullableList[DeviceConstraint] = Field(default_factory=list)
    config: NullableList[DeviceClaimConfiguration] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> DeviceClaim:
        names = [r.name for r in self.requests]
        for n in names:
            if names.count(n) > 1:
                raise ValueError(f"requests: Duplicate value: {n!r}")
        known = set(names)
        for r in self.requests:
            known.update(f"{r.name}/{s.name}" for s in r.first_available)
        for i, c in enumerate(self.constraints):
            for ref in c.requests:
                if ref not in known:
                    raise ValueError(
                        f"constraints[{i}].requests: Invalid value: {ref!r}: "
                        "must be the name of a request in the claim or the name of a request "
                        "and the subrequest separated with '/'"
                    )
        return self


class ResourceClaimSpec(KubeModel):
    """``ResourceClaimSpec``."""

    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(KubeModel):
    """``DeviceRequestAllocationResult``: one allocated device for one request."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: NullableList[DeviceToleration] = Field(default_factory=list)


class DeviceAllocationConfiguration(KubeModel):
    """``DeviceAllocationConfiguration``: configuration copied from class or claim."""

    source: str
    requests: NullableList[str] = Field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(KubeModel):
    """``DeviceAllocationResult``."""

    results: NullableList[DeviceRequestAllocationResult] = Field(default_factory=list)
    config: NullableList[DeviceAllocationConfiguration] = Field(default_factory=list)


class AllocationResult(KubeModel):
    """``AllocationResult``: the devices, and the nodes where they are usable."""

    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: datetime | None = None


class ResourceClaimConsumerReference(KubeModel):
    """``ResourceClaimConsumerReference``: a pod (or other consumer) using the claim."""

    api_group: str = ""
    resource: str = "pods"
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(KubeModel):
    """``ResourceClaimStatus``: the allocation and who it is reserved for."""

    allocation: AllocationResult | None = None
    reserved_for: NullableList[ResourceClaimConsumerReference] = Field(default_factory=list)


class ResourceClaim(KubeObject):
    """``resource.k8s.io/v1`` ResourceClaim."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = API_VERSION
    kind: str | None = "ResourceClaim"
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(KubeModel):
    """``ResourceClaimTemplateSpec``: metadata and spec copied into each generated claim."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(KubeObject):
    """``resource.k8s.io/v1`` ResourceClaimTemplate."""

    namespaced: ClassVar[bool] = True

    api_version: str | None = API_VERSION
    kind: str | None = "ResourceClaimTemplate"
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


# --- slices ------------------------------------------------------------------------------


class DeviceAttribute(KubeModel):
    """``DeviceAttribute``: exactly one of int, bool, string, version (semver)."""

    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> DeviceAttribute:
        set_ = [v for v in (self.int_, self.bool_, self.string, self.version) if v is not None]
        if len(set_) != 1:
            raise ValueError("exactly one value must be specified")
        return self

    @property
    def value(self) -> int | bool | str:
        """The attribute's value (a version is its string)."""
        for v in (self.int_, self.bool_, self.string, self.version):
            if v is not None:
                return v
        raise AssertionError("validated: one value is set")


class DeviceCapacity(KubeModel):
    """``DeviceCapacity``: a quantity (``requestPolicy`` is consumable capacity, alpha)."""

    value: Quantity


class Counter(KubeModel):
    """``Counter``: an amount of a shared counter."""

    value: Quantity


class CounterSet(KubeModel):
    """``CounterSet``: named counters that partitions of a device draw from."""

    name: str
    counters: NullableDict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(KubeModel):
    """``DeviceCounterConsumption``: what allocating a device takes from a counter set."""

    counter_set: str
    counters: NullableDict[str, Counter] = Field(default_factory=dict)


class Device(KubeModel):
    """``Device``: a name, attributes and capacities (keys are qualified names)."""

    name: str
    attributes: NullableDict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: NullableDict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: NullableList[DeviceCounterConsumption] = Field(default_factory=list)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None

    _name = field_validator("name")(lambda cls, v: _dns_label(v))


class ResourcePool(KubeModel):
    """``ResourcePool``: the slices of one pool; only the newest generation counts."""

    name: str
    generation: int = 0
    resource_slice_count: int = 1

    @field_validator("resource_slice_count")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"Invalid value: {v}: must be greater than zero")
        return v


class ResourceSliceSpec(KubeModel):
    """``ResourceSliceSpec``: one driver's devices, for one node, some nodes or all."""

    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: NullableList[Device] = Field(default_factory=list)
    shared_counters: NullableList[CounterSet] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_node_field(self) -> ResourceSliceSpec:
        chosen = [
            f
            for f, v in (
                ("nodeName", self.node_name),
                ("nodeSelector", self.node_selector),
                ("allNodes", self.all_nodes),
                ("perDeviceNodeSelection", self.per_device_node_selection),
            )
            if v
        ]
        if len(chosen) != 1:
            raise ValueError(
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required"
            )
        if self.devices and self.shared_counters:
            # v1.36 keeps counter sets and the devices drawing from them in separate slices.
            raise ValueError("only one of `sharedCounters` or `devices` is allowed")
        return self


class ResourceSlice(KubeObject):
    """``resource.k8s.io/v1`` ResourceSlice (cluster-scoped), published by a DRA driver."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = API_VERSION
    kind: str | None = "ResourceSlice"
    spec: ResourceSliceSpec


# --- the pod side ------------------------------------------------------------------------


class PodClaimError(Exception):
    """Why a pod's claim cannot be used yet (the text is upstream's, shown to users)."""


def pod_claim_name(pod: Pod, pod_claim: Any) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim a ``spec.resourceClaims`` entry refers to.

    Returns ``(name, must_check_owner)``: a template's claim is named in the pod's
    ``status.resourceClaimStatuses`` once the controller created it, and must be owned
    by the pod. ``(None, False)`` when the controller decided no claim is needed.
    Raises :class:`PodClaimError` while the claim is not created yet.
    """
    if pod_claim.resource_claim_name:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise PodClaimError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise PodClaimError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.name}": '
        "none of the supported fields are set"
    )


def is_for_pod(pod: Pod, claim: ResourceClaim) -> None:
    """``resourceclaim.IsForPod``: raise :class:`PodClaimError` unless the pod owns it."""
    uid = pod.metadata.uid
    for ref in claim.metadata.owner_references:
        if ref.controller and ref.uid == uid:
            return
    raise PodClaimError(
        f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod "
        f"{pod.namespace}/{pod.name} (Pod is not owner)"
    )


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """``resourceclaim.IsReservedForPod``."""
    uid = pod.metadata.uid
    return any(r.uid == uid for r in claim.status.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    """``resourceclaim.CanBeReserved``: fewer consumers than the maximum."""
    return len(claim.status.reserved_for) < RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE
