"""Validation of the Workload API's PodGroups and Workloads (``scheduling.k8s.io/v1alpha2``)
as kube-apiserver v1.36 does it, with its messages."""

from __future__ import annotations

from typing import Any

from ..meta import KubeObject
from ..podgroups import (
    PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy,
    PodGroupTemplate,
    Workload,
    WorkloadPodGroup,
)
from .field import FieldError, duplicate, invalid, not_supported, required, too_many
from .meta import validate_object_meta
from .objects import register_validator
from .syntax import is_dns1123_label, is_qualified_name, min_error

__all__ = ["DISRUPTION_MODES", "MAX_POD_GROUP_TEMPLATES"]

DISRUPTION_MODES = ("Pod", "PodGroup")
MAX_POD_GROUP_TEMPLATES = 8
_MAX_TOPOLOGY_CONSTRAINTS = 1


def _policy(policy: PodGroupSchedulingPolicy | None, path: str) -> list[FieldError]:
    """Exactly one of ``basic`` and ``gang``; a gang's ``minCount`` is at least 1 (0 is
    unset on the wire, hence Required)."""
    basic = policy is not None and policy.basic is not None
    gang = policy.gang if policy is not None else None
    if basic and gang is not None:
        return [invalid(path, "{basic, gang}", "must specify exactly one of: `basic`, `gang`")]
    if not basic and gang is None:
        return [invalid(path, "", "must specify one of: `basic`, `gang`")]
    if gang is None:
        return []
    if not gang.min_count:
        return [required(f"{path}.gang.minCount")]
    if gang.min_count < 1:
        return [invalid(f"{path}.gang.minCount", gang.min_count, min_error(1))]
    return []


def _constraints(constraints: PodGroupSchedulingConstraints | None, path: str) -> list[FieldError]:
    if constraints is None:
        return []
    topology = constraints.topology
    if len(topology) > _MAX_TOPOLOGY_CONSTRAINTS:
        return [too_many(f"{path}.topology", len(topology), _MAX_TOPOLOGY_CONSTRAINTS)]
    errs: list[FieldError] = []
    for i, constraint in enumerate(topology):
        kpath = f"{path}.topology[{i}].key"
        if not constraint.key:
            errs.append(required(kpath))
        else:
            errs.extend(
                invalid(kpath, constraint.key, m) for m in is_qualified_name(constraint.key)
            )
    return errs


def _disruption_mode(mode: str | None, path: str) -> list[FieldError]:
    if mode is None or mode in DISRUPTION_MODES:
        return []
    return [not_supported(path, mode, DISRUPTION_MODES)]


@register_validator("PodGroup")
def _pod_group(obj: KubeObject) -> list[FieldError]:
    # Coscheduling's PodGroup (scheduling.x-k8s.io) shares the kind name: a CRD, whose
    # objects the API server checks for their metadata only.
    errs = validate_object_meta(obj.metadata, namespaced=True)
    if not isinstance(obj, WorkloadPodGroup):
        return errs
    spec = obj.spec
    errs += _policy(spec.scheduling_policy, "spec.schedulingPolicy")
    errs += _constraints(spec.scheduling_constraints, "spec.schedulingConstraints")
    errs += _disruption_mode(spec.disruption_mode, "spec.disruptionMode")
    return errs


def _template_json(template: PodGroupTemplate) -> dict[str, Any]:
    """A template as upstream shows a duplicate: its Go struct's JSON, in field order."""
    dump = {"exclude_none": True, "by_alias": True, "mode": "json"}
    policy, constraints = template.scheduling_policy, template.scheduling_constraints
    return {
        "name": template.name,
        "schedulingPolicy": policy.model_dump(**dump) if policy is not None else None,
        "schedulingConstraints": (
            constraints.model_dump(**dump) if constraints is not None else None
        ),
    }


@register_validator("Workload")
def _workload(obj: Workload) -> list[FieldError]:
    errs = validate_object_meta(obj.metadata, namespaced=True)
    templates = obj.spec.pod_group_templates
    path = "spec.podGroupTemplates"
    if not templates:
        return [*errs, required(path)]
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        return [*errs, too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES)]
    seen: set[str] = set()
    for i, template in enumerate(templates):
        tpath = f"{path}[{i}]"
        if not template.name:
            errs.append(required(f"{tpath}.name"))
        else:
            errs.extend(
                invalid(f"{tpath}.name", template.name, m) for m in is_dns1123_label(template.name)
            )
        if template.name in seen:
            errs.append(duplicate(tpath, _template_json(template)))
        seen.add(template.name)
        errs += _policy(template.scheduling_policy, f"{tpath}.schedulingPolicy")
        errs += _constraints(template.scheduling_constraints, f"{tpath}.schedulingConstraints")
        errs += _disruption_mode(template.disruption_mode, f"{tpath}.disruptionMode")
    return errs
