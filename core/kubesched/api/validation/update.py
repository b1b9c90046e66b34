"""Update rules as kube-apiserver v1.36 applies them (``ValidateXUpdate``): what an update may
change in an object that exists.

``validate_update(new, old)`` is the new object's validation plus the kind's update rules.
The Pod's are upstream's ``ValidatePodUpdate``: the spec is immutable except container
images, tolerations (additions only; an existing one may change its tolerationSeconds),
scheduling gates (removals only), terminationGracePeriodSeconds, and while the pod is
gated, additions to its nodeSelector and to its required node affinity terms;
``spec.nodeName`` is set by a binding only. Node specs may change freely. Other kinds'
immutable fields are those a scheduler reads (a claim's spec, a class's parameters, a
PriorityClass's value, a workload's selector).

The refusal of a forbidden Pod spec change reads as upstream's, followed by a diff of
the spec; upstream diffs its internal Go structs, kubesched diffs its models (camelCase).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

from ..core import NodeSelectorTerm, Pod, PodSpec
from ..meta import KubeObject
from ..resource import RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE
from .field import FieldError, forbidden, invalid, too_many
from .objects import validate_object

__all__ = ["UPDATE_VALIDATORS", "register_update_validator", "validate_update"]

UpdateValidator = Callable[[Any, Any], list[FieldError]]

UPDATE_VALIDATORS: dict[str, UpdateValidator] = {}
"""Update rules by kind: ``fn(new, old)`` returns what the update may not change."""

POD_UPDATABLE_FIELDS = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)
FIELD_IS_IMMUTABLE = "field is immutable"


def register_update_validator(kind: str) -> Callable[[UpdateValidator], UpdateValidator]:
    """Decorator: ``fn(new, old) -> list[FieldError]`` holds the update rules of ``kind``."""

    def deco(fn: UpdateValidator) -> UpdateValidator:
        UPDATE_VALIDATORS[kind] = fn
        return fn

    return deco


def validate_update(new: KubeObject, old: KubeObject) -> list[FieldError]:
    """Every error of updating ``old`` to ``new``: ``new`` must be valid, and the kind's
    update rules must hold."""
    errs = validate_object(new)
    rules = UPDATE_VALIDATORS.get(new.kind or "")
    if rules is not None:
        errs.extend(rules(new, old))
    return errs


def _dump(value: Any) -> Any:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value.model_dump(by_alias=True, exclude_none=True, mode="json")


def _immutable(path: str, new: Any, old: Any) -> list[FieldError]:
    """``ValidateImmutableField``: the new value, shown, is refused if it differs."""
    if new == old:
        return []
    return [invalid(path, _dump(new), FIELD_IS_IMMUTABLE)]


# --- pods ---------------------------------------------------------------------------------


def _json_diff(old: Any, new: Any) -> str:
    """A unified diff of two JSON-like values, as upstream appends its ``cmp.Diff``."""
    before = json.dumps(old, indent=1, sort_keys=True).splitlines()
    after = json.dumps(new, indent=1, sort_keys=True).splitlines()
    lines = difflib.unified_diff(before, after, lineterm="", n=3)
    return "\n".join(line for line in lines if not line.startswith(("---", "+++"))) + "\n"


def _only_added_tolerations(new: PodSpec, old: PodSpec) -> list[FieldError]:
    # validateOnlyAddedTolerations: every old toleration is still there, its
    # tolerationSeconds aside.
    for t in old.tolerations:
        if not any(
            t.model_copy(update={"toleration_seconds": n.toleration_seconds}) == n
            for n in new.tolerations
        ):
            return [
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return []


def _go_term(term: NodeSelectorTerm) -> dict[str, Any]:
    def reqs(items: list[Any]) -> list[dict[str, Any]] | None:
        return [
            {"Key": r.key, "Operator": r.operator, "Values": r.values or None} for r in items
        ] or None

    return {
        "MatchExpressions": reqs(term.match_expressions),
        "MatchFields": reqs(term.match_fields),
    }


def _gated_node_affinity(new: PodSpec, old: PodSpec) -> list[FieldError]:
    """While gated, each required node-selector term may only gain requirements."""

    def terms(spec: PodSpec) -> list[NodeSelectorTerm] | None:
        na = spec.affinity.node_affinity if spec.affinity is not None else None
        req = na.required_during_scheduling_ignored_during_execution if na is not None else None
        return None if req is None else req.node_selector_terms

    old_terms, new_terms = terms(old), terms(new)
    if old_terms is None:
        return []
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    if new_terms is None or len(new_terms) != len(old_terms):
        return [
            invalid(
                f"{path}.nodeSelectorTerms",
                [_go_term(t) for t in new_terms or ()] or None,
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            )
        ]
    errs = []
    for i, (o, n) in enumerate(zip(old_terms, new_terms, strict=True)):
        kept = n.match_expressions[: len(o.match_expressions)] == o.match_expressions and (
            n.match_fields[: len(o.match_fields)] == o.match_fields
        )
        if not kept:
            errs.append(
                invalid(
                    f"{path}.nodeSelectorTerms[{i}]",
                    _go_term(n),
                    "only additions are allowed (no mutations or deletions)",
                )
            )
    return errs


@register_update_validator("Pod")
def _pod_update(new: Pod, old: Pod) -> list[FieldError]:
    errs: list[FieldError] = []
    ns, os_ = new.spec, old.spec
    for name, n_list, o_list in (
        ("containers", ns.containers, os_.containers),
        ("initContainers", ns.init_containers, os_.init_containers),
    ):
        if len(n_list) != len(o_list):
            return [forbidden(f"spec.{name}", "pod updates may not add or remove containers")]
    old_gates = {g.name for g in os_.scheduling_gates}
    for i, gate in enumerate(ns.scheduling_gates):
        if gate.name not in old_gates:
            errs.append(
                forbidden(
                    f"spec.schedulingGates[{i}].name",
                    f"only deletion is allowed, but found new scheduling gate '{gate.name}'",
                )
            )
    errs.extend(_only_added_tolerations(ns, os_))
    # What an update may change, copied from the new spec into the old one; any other
    # difference is refused.
    allowed: dict[str, Any] = {
        "containers": [
            o.model_copy(update={"image": n.image})
            for o, n in zip(os_.containers, ns.containers, strict=True)
        ],
        "init_containers": [
            o.model_copy(update={"image": n.image})
            for o, n in zip(os_.init_containers, ns.init_containers, strict=True)
        ],
        "tolerations": ns.tolerations,
        "scheduling_gates": ns.scheduling_gates,
        "termination_grace_period_seconds": ns.termination_grace_period_seconds,
    }
    if os_.scheduling_gates:
        # PodSchedulingReadiness: a gated pod's placement constraints may be narrowed.
        if any(ns.node_selector.get(k) != v for k, v in os_.node_selector.items()):
            errs.append(
                invalid(
                    "spec.nodeSelector",
                    dict(sorted(ns.node_selector.items())) or None,
                    "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                )
            )
        errs.extend(_gated_node_affinity(ns, os_))
        allowed["node_selector"] = ns.node_selector
        allowed["affinity"] = ns.affinity
    munged = os_.model_copy(update=allowed)
    if munged != ns:
        errs.append(
            forbidden("spec", f"{POD_UPDATABLE_FIELDS}\n{_json_diff(_dump(munged), _dump(ns))}")
        )
    return errs


# --- other kinds --------------------------------------------------------------------------


@register_update_validator("PriorityClass")
def _priority_class_update(new: Any, old: Any) -> list[FieldError]:
    if new.value != old.value:
        return [forbidden("value", "may not be changed in an update.")]
    return []


@register_update_validator("StorageClass")
def _storage_class_update(new: Any, old: Any) -> list[FieldError]:
    errs = []
    if new.parameters != old.parameters:
        errs.append(invalid("parameters", dict(sorted(new.parameters.items())), FIELD_IS_IMMUTABLE))
    for path, attr in (
        ("provisioner", "provisioner"),
        ("reclaimPolicy", "reclaim_policy"),
        ("volumeBindingMode", "volume_binding_mode"),
    ):
        if getattr(new, attr) != getattr(old, attr):
            errs.append(invalid(path, getattr(new, attr), FIELD_IS_IMMUTABLE))
    return errs


_PV_SOURCES = (
    "host_path",
    "gce_persistent_disk",
    "aws_elastic_block_store",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "azure_disk",
    "local",
    "csi",
)


@register_update_validator("PersistentVolume")
def _persistent_volume_update(new: Any, old: Any) -> list[FieldError]:
    before = {k: _dump(getattr(old.spec, k)) for k in _PV_SOURCES}
    after = {k: _dump(getattr(new.spec, k)) for k in _PV_SOURCES}
    if before == after:
        return []
    detail = "spec.persistentvolumesource is immutable after creation"
    return [forbidden("spec.persistentvolumesource", f"{detail}\n{_json_diff(before, after)}")]


@register_update_validator("ResourceClaim")
def _resource_claim_update(new: Any, old: Any) -> list[FieldError]:
    errs = _immutable("spec", new.spec, old.spec)
    reserved = len(new.status.reserved_for)
    if reserved > RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE:
        # The API server's limit: a 257th consumer is refused when it is written.
        errs.append(too_many("status.reservedFor", reserved, RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE))
    return errs


@register_update_validator("ResourceSlice")
def _resource_slice_update(new: Any, old: Any) -> list[FieldError]:
    errs = []
    for path, attr in (("spec.driver", "driver"), ("spec.nodeName", "node_name")):
        if getattr(new.spec, attr) != getattr(old.spec, attr):
            errs.append(invalid(path, getattr(new.spec, attr), FIELD_IS_IMMUTABLE))
    return errs


@register_update_validator("CSIDriver")
def _csi_driver_update(new: Any, old: Any) -> list[FieldError]:
    # Upstream's path has the typo "attachedRequired"; kept for identical messages.
    if new.spec.attach_required != old.spec.attach_required:
        return [invalid("spec.attachedRequired", new.spec.attach_required, FIELD_IS_IMMUTABLE)]
    return []


def _selector_update(new: Any, old: Any) -> list[FieldError]:
    return _immutable("spec.selector", new.spec.selector, old.spec.selector)


for _kind in ("Deployment", "ReplicaSet", "DaemonSet", "StatefulSet", "Job"):
    register_update_validator(_kind)(_selector_update)
