"""The fields the embedded API server drops while their feature gate is off, as kube-apiserver.

kube-apiserver v1.36 reads some of the gates kube-scheduler reads: while one is off, its
registry strategies (``dropDisabledFields``) clear the gate's fields of an object before
validating and storing it, on create, and on update unless the stored object already uses
one of them. ``tests/fixtures/apiserver/gated-fields.json`` records what the real server
keeps, gate by gate; :class:`GatedFields` does the same and says what it dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kubesched.api import (
    CronJob,
    DeviceClass,
    KubeObject,
    Node,
    Pod,
    PodSpec,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubesched.api.meta import KubeModel
from kubesched.api.resource import ResourceClaimSpec
from kubesched.features import FeatureGates

__all__ = ["GATED_FIELDS", "GatedField", "GatedFields"]


@dataclass(frozen=True)
class Spot:
    """One set gated field: its JSON path in the object, and where it lives (``attr`` of
    ``owner``)."""

    path: str
    owner: KubeModel
    attr: str


Finder = Callable[[KubeObject], Iterator[Spot]]


@dataclass(frozen=True)
class GatedField:
    """The fields of ``gate`` that kube-apiserver clears while it is off; ``find`` yields
    those set in an object (none for an object of another kind)."""

    gate: str
    find: Finder


def _set(owner: KubeModel, attr: str) -> bool:
    value = getattr(owner, attr)
    return value is not None and value != [] and value != {}


def _spots(prefix: str, owner: KubeModel | None, attrs: dict[str, str]) -> Iterator[Spot]:
    """The ``attrs`` (python name → JSON name) of ``owner`` that are set."""
    if owner is None:
        return
    for attr, name in attrs.items():
        if _set(owner, attr):
            yield Spot(f"{prefix}.{name}", owner, attr)


# -- pods and the pod templates of workloads ---------------------------------------------


def _pod_specs(obj: KubeObject) -> Iterator[tuple[str, PodSpec]]:
    """The pod specs of ``obj``: a Pod's own, a workload's template (kube-apiserver's
    workload strategies drop the template's gated fields as the pod strategy does)."""
    if isinstance(obj, Pod):
        yield "spec", obj.spec
    elif isinstance(obj, CronJob):
        yield "spec.jobTemplate.spec.template.spec", obj.spec.job_template.spec.template.spec
    else:
        template = getattr(getattr(obj, "spec", None), "template", None)
        if template is not None and isinstance(getattr(template, "spec", None), PodSpec):
            yield "spec.template.spec", template.spec


def _pod_level_resources(obj: KubeObject) -> Iterator[Spot]:
    for prefix, spec in _pod_specs(obj):
        if spec.resources is not None and (spec.resources.requests or spec.resources.limits):
            yield Spot(f"{prefix}.resources", spec, "resources")


def _spread_match_label_keys(obj: KubeObject) -> Iterator[Spot]:
    for prefix, spec in _pod_specs(obj):
        for i, tsc in enumerate(spec.topology_spread_constraints or ()):
            yield from _spots(
                f"{prefix}.topologySpreadConstraints[{i}]",
                tsc,
                {"match_label_keys": "matchLabelKeys"},
            )


# -- DRA: ResourceSlices, claims and their templates, DeviceClasses ----------------------


def _slice_devices(obj: KubeObject, attrs: dict[str, str]) -> Iterator[Spot]:
    if isinstance(obj, ResourceSlice):
        for i, device in enumerate(obj.spec.devices):
            yield from _spots(f"spec.devices[{i}]", device, attrs)


def _claim_specs(obj: KubeObject) -> Iterator[tuple[str, ResourceClaimSpec]]:
    if isinstance(obj, ResourceClaim):
        yield "spec", obj.spec
    elif isinstance(obj, ResourceClaimTemplate):
        yield "spec.spec", obj.spec.spec


def _request_bodies(obj: KubeObject, attrs: dict[str, str]) -> Iterator[Spot]:
    """``attrs`` of every request of the claims of ``obj``: ``exactly`` and each
    ``firstAvailable`` subrequest."""
    for prefix, spec in _claim_specs(obj):
        for i, request in enumerate(spec.devices.requests):
            path = f"{prefix}.devices.requests[{i}]"
            yield from _spots(f"{path}.exactly", request.exactly, attrs)
            for j, sub in enumerate(request.first_available):
                yield from _spots(f"{path}.firstAvailable[{j}]", sub, attrs)


def _device_taints(obj: KubeObject) -> Iterator[Spot]:
    yield from _slice_devices(obj, {"taints": "taints"})
    yield from _request_bodies(obj, {"tolerations": "tolerations"})


def _partitionable_devices(obj: KubeObject) -> Iterator[Spot]:
    if isinstance(obj, ResourceSlice):
        yield from _spots(
            "spec",
            obj.spec,
            {
                "shared_counters": "sharedCounters",
                "per_device_node_selection": "perDeviceNodeSelection",
            },
        )
    yield from _slice_devices(
        obj,
        {
            "consumes_counters": "consumesCounters",
            "node_name": "nodeName",
            "node_selector": "nodeSelector",
            "all_nodes": "allNodes",
        },
    )


def _binding_conditions(obj: KubeObject) -> Iterator[Spot]:
    yield from _slice_devices(
        obj,
        {
            "binds_to_node": "bindsToNode",
            "binding_conditions": "bindingConditions",
            "binding_failure_conditions": "bindingFailureConditions",
        },
    )


def _consumable_capacity(obj: KubeObject) -> Iterator[Spot]:
    yield from _slice_devices(obj, {"allow_multiple_allocations": "allowMultipleAllocations"})
    if isinstance(obj, ResourceSlice):
        for i, device in enumerate(obj.spec.devices):
            for name, capacity in device.capacity.items():
                yield from _spots(
                    f"spec.devices[{i}].capacity.{name}",
                    capacity,
                    {"request_policy": "requestPolicy"},
                )
    yield from _request_bodies(obj, {"capacity": "capacity"})
    for prefix, spec in _claim_specs(obj):
        for i, constraint in enumerate(spec.devices.constraints):
            yield from _spots(
                f"{prefix}.devices.constraints[{i}]",
                constraint,
                {"distinct_attribute": "distinctAttribute"},
            )


def _prioritized_list(obj: KubeObject) -> Iterator[Spot]:
    for prefix, spec in _claim_specs(obj):
        for i, request in enumerate(spec.devices.requests):
            yield from _spots(
                f"{prefix}.devices.requests[{i}]", request, {"first_available": "firstAvailable"}
            )


def _extended_resource(obj: KubeObject) -> Iterator[Spot]:
    if isinstance(obj, DeviceClass):
        yield from _spots("spec", obj.spec, {"extended_resource_name": "extendedResourceName"})


def _declared_features(obj: KubeObject) -> Iterator[Spot]:
    if isinstance(obj, Node):
        yield from _spots("status", obj.status, {"declared_features": "declaredFeatures"})


GATED_FIELDS: tuple[GatedField, ...] = (
    GatedField("PodLevelResources", _pod_level_resources),
    GatedField("MatchLabelKeysInPodTopologySpread", _spread_match_label_keys),
    GatedField("DRADeviceTaints", _device_taints),
    GatedField("DRAPartitionableDevices", _partitionable_devices),
    GatedField("DRADeviceBindingConditions", _binding_conditions),
    GatedField("DRAConsumableCapacity", _consumable_capacity),
    GatedField("DRAPrioritizedList", _prioritized_list),
    GatedField("DRAExtendedResource", _extended_resource),
    GatedField("NodeDeclaredFeatures", _declared_features),
)
"""Every gate whose fields the embedded API server drops while it is off, and its fields
(checked against kube-apiserver v1.36.2: ``tests/fixtures/apiserver/gated-fields.json``)."""


class GatedFields:
    """The gated fields of ``gates`` that are off, and what dropping them does.

    With every gate at its default (on) nothing is dropped, and :meth:`off` is empty: a
    create then costs nothing more.
    """

    def __init__(self, gates: FeatureGates) -> None:
        self.off = tuple(g for g in GATED_FIELDS if not gates.enabled(g.gate))
        """The :data:`GATED_FIELDS` whose gate is off."""

    def set_in(self, obj: KubeObject, old: KubeObject | None = None) -> list[tuple[str, Spot]]:
        """The gated fields ``obj`` sets that kube-apiserver would drop, with their gate:
        those of a gate that is off, unless ``old`` (the stored object ``obj`` replaces)
        uses one of that gate's fields already (then they are all kept)."""
        out: list[tuple[str, Spot]] = []
        for gated in self.off:
            if old is not None and next(gated.find(old), None) is not None:
                continue
            out.extend((gated.gate, spot) for spot in gated.find(obj))
        return out

    def drop(self, obj: KubeObject, old: KubeObject | None = None) -> list[tuple[str, str]]:
        """Clear in ``obj`` the fields :meth:`set_in` finds; the ``(gate, path)`` of each."""
        found = self.set_in(obj, old)
        for _, spot in found:
            field = type(spot.owner).model_fields[spot.attr]
            setattr(spot.owner, spot.attr, field.get_default(call_default_factory=True))
        return [(gate, spot.path) for gate, spot in found]
