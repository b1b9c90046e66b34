"""resource.k8s.io/v1 models (Dynamic Resource Allocation) and the claim helpers plugins share.

DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice as v1.36 serves
them, with the API server's defaults (allocation mode ExactCount, count 1). Missing
fields read as Go's zero values; the API server's checks (a request has exactly one of
``exactly`` / ``firstAvailable``, known allocation modes, positive counts, request
names that constraints refer to...) are made by ``kubesched.api.validation``, in its
words. The helpers at the end are ``k8s.io/dynamic-resource-allocation/resourceclaim``'s:
which claim a pod's ``spec.resourceClaims`` entry names, whether a claim belongs to the
pod, whether it can be reserved.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field, model_validator

from .core import NodeSelector, Pod
from .meta import KubeModel, KubeObject, NullableDict, NullableList, ObjectMeta
from .quantity import Quantity
from .resources import is_extended_resource_name

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "DEVICE_CLASS_RESOURCE_PREFIX",
    "EXTENDED_RESOURCE_CLAIM_ANNOTATION",
    "POD_CLAIM_NAME_ANNOTATION",
    "RESOURCE_CLAIM_FINALIZER",
    "RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE",
    "TAINT_RULE_API_VERSIONS",
    "AllocatedDeviceStatus",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
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
    "DeviceTaint",
    "DeviceTaintRule",
    "DeviceTaintRuleSpec",
    "DeviceTaintRuleStatus",
    "DeviceTaintSelector",
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
    "extended_resource_classes",
    "is_dra_extended_resource_name",
    "is_for_pod",
    "is_reserved_for_pod",
    "pod_claim_name",
    "rule_matches_device",
    "with_rule_taints",
]

API_GROUP = "resource.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
TAINT_RULE_API_VERSIONS = (f"{API_GROUP}/v1beta2", f"{API_GROUP}/v1alpha3")
"""Where kube-apiserver v1.36 serves DeviceTaintRule (DRADeviceTaintRules, beta, off by
default), each only when enabled with ``--runtime-config``; the first is the preferred."""

RESOURCE_CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
"""Put on a claim by the scheduler when it allocates it (the resourceclaim controller
removes it once the claim is deallocated), so an allocated claim is not deleted in use."""

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
"""Set by the resourceclaim controller on a claim it generated: the pod's claim entry."""

DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
"""Every DeviceClass backs the extended resource of this prefix and its name."""

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
"""``"true"`` on the claim the scheduler creates for a pod's extended resources."""

RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256
"""``ResourceClaimReservedForMaxSize``: the API server refuses a claim reserved for more."""

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
_ALLOCATION_MODES = (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL)

# --- selectors and configuration ---------------------------------------------------------


class CELDeviceSelector(KubeModel):
    """``CELDeviceSelector``: a CEL expression over ``device`` that must be true."""

    expression: str = ""


class DeviceSelector(KubeModel):
    """``DeviceSelector``: today only ``cel``."""

    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(KubeModel):
    """``OpaqueDeviceConfiguration``: driver parameters the scheduler passes through."""

    driver: str = ""
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
    """``DeviceToleration``: lets a request's devices carry a matching ``DeviceTaint``
    (``ToleratesTaint``: an empty key with Exists matches every key, an empty effect
    every effect)."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class CapacityRequirements(KubeModel):
    """``CapacityRequirements`` (consumable capacity): how much of each named capacity
    of a device the request consumes."""

    requests: NullableDict[str, Quantity] = Field(default_factory=dict)


class _RequestBody(KubeModel):
    """What ``exactly`` and a ``firstAvailable`` alternative have in common."""

    device_class_name: str = ""
    selectors: NullableList[DeviceSelector] = Field(default_factory=list)
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int | None = None
    tolerations: NullableList[DeviceToleration] = Field(default_factory=list)
    capacity: CapacityRequirements | None = None

    @model_validator(mode="after")
    def _defaults(self) -> _RequestBody:
        # SetDefaults: no mode is ExactCount; ExactCount without a count (Go's zero, 0,
        # is "not set": the field is omitempty) means one device.
        if not self.allocation_mode:
            self.allocation_mode = ALLOCATION_MODE_EXACT_COUNT
        if self.allocation_mode == ALLOCATION_MODE_EXACT_COUNT and not self.count:
            self.count = 1
        return self


class ExactDeviceRequest(_RequestBody):
    """``ExactDeviceRequest``: devices of one class; ``adminAccess`` ignores allocations."""

    admin_access: bool | None = None


class DeviceSubRequest(_RequestBody):
    """``DeviceSubRequest``: one alternative of ``firstAvailable``, tried in order."""

    name: str = ""


class DeviceRequest(KubeModel):
    """``DeviceRequest``: a named request with ``exactly`` one or ``firstAvailable`` ones."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: NullableList[DeviceSubRequest] = Field(default_factory=list)


class DeviceConstraint(KubeModel):
    """``DeviceConstraint``: the listed requests' devices share ``matchAttribute``'s value."""

    requests: NullableList[str] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(KubeModel):
    """``DeviceClaimConfiguration``: opaque configuration for some (or all) requests."""

    requests: NullableList[str] = Field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(KubeModel):
    """``DeviceClaim``: requests, constraints between them, configuration."""

    requests: NullableList[DeviceRequest] = Field(default_factory=list)
    constraints: NullableList[DeviceConstraint] = Field(default_factory=list)
    config: NullableList[DeviceClaimConfiguration] = Field(default_factory=list)


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
    binding_conditions: NullableList[str] = Field(default_factory=list)
    binding_failure_conditions: NullableList[str] = Field(default_factory=list)
    share_id: str | None = Field(default=None, alias="shareID")
    """Set when the device allows multiple allocations: tells this share from others."""
    consumed_capacity: NullableDict[str, Quantity] = Field(default_factory=dict)


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


class AllocatedDeviceStatus(KubeModel):
    """``AllocatedDeviceStatus``: what the driver reports of one allocated device; the
    scheduler reads its ``conditions`` (binding conditions)."""

    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = Field(default=None, alias="shareID")
    conditions: NullableList[dict[str, Any]] = Field(default_factory=list)
    data: Any = None
    network_data: Any = None


class ResourceClaimStatus(KubeModel):
    """``ResourceClaimStatus``: the allocation, who it is reserved for, device status."""

    allocation: AllocationResult | None = None
    reserved_for: NullableList[ResourceClaimConsumerReference] = Field(default_factory=list)
    devices: NullableList[AllocatedDeviceStatus] = Field(default_factory=list)


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

    @property
    def value(self) -> int | bool | str:
        """The attribute's value (a version is its string)."""
        for v in (self.int_, self.bool_, self.string, self.version):
            if v is not None:
                return v
        raise ValueError("exactly one value must be specified")


class CapacityRequestPolicyRange(KubeModel):
    """``CapacityRequestPolicyRange``: requests round up to ``min + n * step``, at most ``max``."""

    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(KubeModel):
    """``CapacityRequestPolicy``: the default amount a request consumes, and the amounts
    it may consume (a list or a range)."""

    default: Quantity | None = None
    valid_values: NullableList[Quantity] = Field(default_factory=list)
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(KubeModel):
    """``DeviceCapacity``: a quantity, and with consumable capacity how requests share it."""

    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


class Counter(KubeModel):
    """``Counter``: an amount of a shared counter."""

    value: Quantity


class CounterSet(KubeModel):
    """``CounterSet``: named counters that partitions of a device draw from."""

    name: str = ""
    counters: NullableDict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(KubeModel):
    """``DeviceCounterConsumption``: what allocating a device takes from a counter set."""

    counter_set: str = ""
    counters: NullableDict[str, Counter] = Field(default_factory=dict)


class DeviceTaint(KubeModel):
    """``DeviceTaint``: NoSchedule and NoExecute keep the device from requests that do
    not tolerate them (other effects, ``None`` included, are ignored)."""

    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: datetime | None = None


class Device(KubeModel):
    """``Device``: a name, attributes and capacities (keys are qualified names)."""

    name: str = ""
    attributes: NullableDict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: NullableDict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: NullableList[DeviceCounterConsumption] = Field(default_factory=list)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    allow_multiple_allocations: bool | None = None
    """Consumable capacity: several claims may hold the device, each consuming part of
    its capacity."""
    taints: NullableList[DeviceTaint] = Field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: NullableList[str] = Field(default_factory=list)
    binding_failure_conditions: NullableList[str] = Field(default_factory=list)


class DeviceTaintSelector(KubeModel):
    """``DeviceTaintSelector``: the devices a DeviceTaintRule taints, by driver, pool and
    device name; a field left out matches every value (an empty selector, every device)."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(KubeModel):
    """``DeviceTaintRuleSpec``: one taint and the devices it applies to (none without a
    selector)."""

    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = Field(default_factory=DeviceTaint)


class DeviceTaintRuleStatus(KubeModel):
    """``DeviceTaintRuleStatus``: the ``EvictionInProgress`` condition (``metav1.Condition``
    dicts) that kube-controller-manager's device taint eviction controller maintains."""

    conditions: NullableList[dict] = Field(default_factory=list)


class DeviceTaintRule(KubeObject):
    """``resource.k8s.io/v1beta2`` DeviceTaintRule (cluster-scoped, DRADeviceTaintRules):
    a taint on every device its selector matches, as if the driver had published it in
    the device's ResourceSlice."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = TAINT_RULE_API_VERSIONS[0]
    kind: str | None = "DeviceTaintRule"
    spec: DeviceTaintRuleSpec = Field(default_factory=DeviceTaintRuleSpec)
    status: DeviceTaintRuleStatus = Field(default_factory=DeviceTaintRuleStatus)


def rule_matches_device(rule: DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    """``ruleMatchesDevice``: whether ``rule`` taints the device ``driver/pool/device``."""
    sel = rule.spec.device_selector
    if sel is None:
        return False
    return (
        (sel.driver is None or sel.driver == driver)
        and (sel.pool is None or sel.pool == pool)
        and (sel.device is None or sel.device == device)
    )


class ResourcePool(KubeModel):
    """``ResourcePool``: the slices of one pool; only the newest generation counts."""

    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(KubeModel):
    """``ResourceSliceSpec``: one driver's devices, for one node, some nodes or all."""

    driver: str = ""
    pool: ResourcePool = Field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: NullableList[Device] = Field(default_factory=list)
    shared_counters: NullableList[CounterSet] = Field(default_factory=list)


class ResourceSlice(KubeObject):
    """``resource.k8s.io/v1`` ResourceSlice (cluster-scoped), published by a DRA driver."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = API_VERSION
    kind: str | None = "ResourceSlice"
    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)


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


def is_dra_extended_resource_name(name: str) -> bool:
    """``IsDRAExtendedResourceName``: an extended resource, or a DeviceClass's implicit
    ``deviceclass.resource.kubernetes.io/<class>``."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


def extended_resource_classes(classes: Iterable[DeviceClass]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that backs it (DRAExtendedResource):
    each class's ``spec.extendedResourceName`` and its implicit
    ``deviceclass.resource.kubernetes.io/<class>``. Of classes naming the same resource,
    the newest (then the last by name) wins, as the last informer event does upstream."""
    mapping: dict[str, str] = {}
    for cls in sorted(classes, key=lambda c: (str(c.metadata.creation_timestamp or ""), c.name)):
        if cls.spec.extended_resource_name:
            mapping[cls.spec.extended_resource_name] = cls.name
        mapping[DEVICE_CLASS_RESOURCE_PREFIX + cls.name] = cls.name
    return mapping


def with_rule_taints(
    slices: Iterable[ResourceSlice], rules: Iterable[DeviceTaintRule]
) -> list[ResourceSlice]:
    """The slices as the scheduler sees them with DRADeviceTaintRules (upstream's
    ResourceSlice tracker): each rule's taint appended to the taints of every device it
    matches, rules in name order. A slice no rule touches is returned as is."""
    ordered = sorted(rules, key=lambda r: r.name)
    out: list[ResourceSlice] = []
    for sl in slices:
        driver, pool = sl.spec.driver, sl.spec.pool.name
        devices = list(sl.spec.devices)
        changed = False
        for i, device in enumerate(devices):
            extra = [
                r.spec.taint for r in ordered if rule_matches_device(r, driver, pool, device.name)
            ]
            if extra:
                devices[i] = device.model_copy(update={"taints": [*device.taints, *extra]})
                changed = True
        if changed:
            spec = sl.spec.model_copy(update={"devices": devices})
            sl = sl.model_copy(update={"spec": spec})
        out.append(sl)
    return out
