"""Per-kind validation of every object the embedded cluster accepts, and its registry.

``validate_object(obj)`` returns every error of the object at once (an empty list when
it is valid); ``check_object(obj)`` raises :class:`InvalidObjectError`, whose text is the
API server's: ``Pod "x" is invalid: [spec.containers: Required value, ...]``. Kinds added
by plugins (or by later parts of kubesched) register their own rules with
:func:`register_validator`; a kind without a validator gets its ObjectMeta checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cluster import Lease, PodDisruptionBudget, PriorityClass, RuntimeClass
from ..core import Namespace, Node, Pod, Service
from ..meta import IntOrString, KubeObject, LabelSelector
from ..selectors import compile_label_selector
from ..workloads import (
    DaemonSet,
    Deployment,
    Job,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from .field import FieldError, forbidden, invalid, not_supported, required
from .meta import NameValidator, validate_label_selector, validate_object_meta
from .pod import (
    _JOB_RESTART_POLICIES,
    TAINT_EFFECTS,
    validate_pod_spec,
    validate_quantity,
    validate_tolerations,
)
from .syntax import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    is_valid_percent,
    min_error,
    validate_label_name,
    validate_labels,
)

__all__ = [
    "VALIDATORS",
    "InvalidObjectError",
    "check_object",
    "register_validator",
    "validate_object",
]

Validator = Callable[[Any], list[FieldError]]

VALIDATORS: dict[str, Validator] = {}
"""Validation rules by kind (the object's meta included)."""

SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000


class InvalidObjectError(ValueError):
    """An object kube-apiserver would refuse (HTTP 422), with every field error.

    ``kind`` is the qualified kind the API server names (``Pod``, ``Deployment.apps``,
    ``StorageClass.storage.k8s.io``).
    """

    def __init__(self, kind: str, name: str, errors: list[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors = errors
        super().__init__(str(self))

    @classmethod
    def of(cls, obj: KubeObject, errors: list[FieldError]) -> InvalidObjectError:
        """The error for ``obj``: its qualified kind (the group of its model, whatever
        apiVersion the document gave) and its name (or generateName)."""
        kind = obj.kind or type(obj).__name__
        api_version = type(obj).model_fields["api_version"].default or ""
        group = api_version.rpartition("/")[0]
        name = obj.metadata.name or obj.metadata.generate_name or ""
        return cls(f"{kind}.{group}" if group else kind, name, errors)

    def __str__(self) -> str:
        # errors.NewInvalid: one error bare, several in brackets, each text once
        # (ToAggregate drops repeats; the Status causes keep them).
        body = list(dict.fromkeys(str(e) for e in self.errors))
        detail = body[0] if len(body) == 1 else "[" + ", ".join(body) + "]"
        return f'{self.kind} "{self.name}" is invalid: {detail}'


def register_validator(kind: str) -> Callable[[Validator], Validator]:
    """Decorator: ``fn(obj) -> list[FieldError]`` validates objects of ``kind``."""

    def deco(fn: Validator) -> Validator:
        VALIDATORS[kind] = fn
        return fn

    return deco


def validate_object(obj: KubeObject) -> list[FieldError]:
    """Every validation error of ``obj`` (empty when kube-apiserver would accept it)."""
    fn = VALIDATORS.get(obj.kind or "")
    if fn is None:
        return validate_object_meta(obj.metadata, namespaced=type(obj).namespaced)
    return fn(obj)


def check_object(obj: KubeObject) -> None:
    """Raise :class:`InvalidObjectError` if ``obj`` is invalid."""
    errs = validate_object(obj)
    if errs:
        raise InvalidObjectError.of(obj, errs)


def _meta(obj: KubeObject, rule: NameValidator = is_dns1123_subdomain) -> list[FieldError]:
    return validate_object_meta(obj.metadata, namespaced=type(obj).namespaced, name_rule=rule)


@register_validator("Pod")
def _pod(pod: Pod) -> list[FieldError]:
    return _meta(pod) + validate_pod_spec(pod.spec, "spec", pod.metadata.labels)


@register_validator("Node")
def _node(node: Node) -> list[FieldError]:
    errs = _meta(node)
    # Upstream validates taints under metadata.taints (sic), kept for identical messages.
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(node.spec.taints):
        tpath = f"metadata.taints[{i}]"
        errs.extend(validate_label_name(taint.key, f"{tpath}.key"))
        errs.extend(
            invalid(f"{tpath}.value", taint.value, msg)
            for msg in is_valid_label_value(taint.value or "")
        )
        if not taint.effect:
            errs.append(required(f"{tpath}.effect"))
        elif taint.effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tpath}.effect", taint.effect, TAINT_EFFECTS))
        pair = (taint.key, taint.effect)
        if pair in seen:
            shown = {
                "Key": taint.key,
                "Value": taint.value or "",
                "Effect": taint.effect,
                "TimeAdded": None,
            }
            errs.append(
                FieldError(
                    "FieldValueDuplicate",
                    tpath,
                    shown,
                    "taints must be unique by key and effect pair",
                )
            )
        seen.add(pair)
    for section, amounts in (
        ("capacity", node.status.capacity),
        ("allocatable", node.status.allocatable),
    ):
        for name in sorted(amounts):
            errs.extend(validate_quantity(name, amounts[name], f"status.{section}.{name}"))
    return errs


@register_validator("Namespace")
def _namespace(ns: Namespace) -> list[FieldError]:
    return _meta(ns, is_dns1123_label)


@register_validator("Service")
def _service(svc: Service) -> list[FieldError]:
    # RelaxedServiceNameValidation (GA in v1.36): DNS-1123 labels.
    errs = _meta(svc, is_dns1123_label)
    if svc.spec.selector:
        errs.extend(validate_labels(svc.spec.selector, "spec.selector"))
    return errs


@register_validator("PriorityClass")
def _priority_class(pc: PriorityClass) -> list[FieldError]:
    errs = _meta(pc)
    name = pc.name
    if name.startswith("system-"):
        if SYSTEM_PRIORITY_CLASSES.get(name) != pc.value:
            errs.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: {name} is not a known system priority class",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if pc.preemption_policy not in ("PreemptLowerPriority", "Never"):
        errs.append(
            not_supported(
                "preemptionPolicy", pc.preemption_policy, ("PreemptLowerPriority", "Never")
            )
        )
    return errs


def _int_or_percent(value: IntOrString | None, path: str) -> list[FieldError]:
    # ValidatePositiveIntOrPercent + IsNotMoreThan100Percent.
    if value is None:
        return []
    if isinstance(value, int):
        return [] if value >= 0 else [invalid(path, value, min_error(0))]
    errs = [invalid(path, value, msg) for msg in is_valid_percent(value)]
    if not errs and int(value[:-1]) > 100:
        errs.append(invalid(path, value, "must not be greater than 100%"))
    return errs


def _selector_json(selector: LabelSelector | None) -> dict[str, Any] | None:
    return None if selector is None else selector.to_dict()


@register_validator("PodDisruptionBudget")
def _pdb(pdb: PodDisruptionBudget) -> list[FieldError]:
    errs = _meta(pdb)
    spec = pdb.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        shown = {
            "MinAvailable": spec.min_available,
            "Selector": _selector_json(spec.selector),
            "MaxUnavailable": spec.max_unavailable,
            "UnhealthyPodEvictionPolicy": spec.unhealthy_pod_eviction_policy,
        }
        errs.append(invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set"))
    errs.extend(_int_or_percent(spec.min_available, "spec.minAvailable"))
    errs.extend(_int_or_percent(spec.max_unavailable, "spec.maxUnavailable"))
    errs.extend(validate_label_selector(spec.selector, "spec.selector"))
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in ("AlwaysAllow", "IfHealthyBudget"):
        errs.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy", policy, ("AlwaysAllow", "IfHealthyBudget")
            )
        )
    return errs


@register_validator("RuntimeClass")
def _runtime_class(rc: RuntimeClass) -> list[FieldError]:
    errs = _meta(rc)
    errs.extend(invalid("handler", rc.handler, msg) for msg in is_dns1123_label(rc.handler))
    fixed = rc.overhead.pod_fixed if rc.overhead is not None else None
    for name in sorted(fixed or {}):
        errs.extend(validate_quantity(name, fixed[name], f"overhead.limits[{name}]"))  # type: ignore[index]
    if rc.scheduling is not None:
        if rc.scheduling.node_selector:
            errs.extend(validate_labels(rc.scheduling.node_selector, "scheduling.nodeSelector"))
        errs.extend(validate_tolerations(rc.scheduling.tolerations or [], "scheduling.tolerations"))
    return errs


@register_validator("Lease")
def _lease(lease: Lease) -> list[FieldError]:
    errs = _meta(lease)
    seconds = lease.spec.lease_duration_seconds
    if seconds is not None and seconds <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", seconds, "must be greater than 0"))
    return errs


# --- workloads ------------------------------------------------------------------------------


def _nonnegative(value: int | None, path: str) -> list[FieldError]:
    return [] if value is None or value >= 0 else [invalid(path, value, min_error(0))]


def _template(
    template: PodTemplateSpec,
    selector_matches: Callable[[dict[str, str]], bool] | None,
    restart_policies: tuple[str, ...] = ("Always",),
) -> list[FieldError]:
    errs: list[FieldError] = []
    labels = template.metadata.labels
    if selector_matches is not None and not selector_matches(labels):
        errs.append(
            invalid(
                "spec.template.metadata.labels",
                dict(sorted(labels.items())),
                "`selector` does not match template `labels`",
            )
        )
    if labels:
        errs.extend(validate_labels(labels, "spec.template.metadata.labels"))
    errs.extend(validate_pod_spec(template.spec, "spec.template.spec", labels, restart_policies))
    return errs


def _selector_and_template(
    selector: LabelSelector | None, template: PodTemplateSpec
) -> list[FieldError]:
    """The apps/v1 rule: a required, valid, non-empty selector matching the template."""
    errs: list[FieldError] = []
    matches: Callable[[dict[str, str]], bool]
    if selector is None:
        errs.append(required("spec.selector"))
        matches = lambda _labels: False  # noqa: E731 - a nil selector matches nothing
    else:
        sel_errs = validate_label_selector(selector, "spec.selector")
        errs.extend(sel_errs)
        if not selector.match_labels and not selector.match_expressions:
            errs.append(
                invalid(
                    "spec.selector", selector.to_dict(), "empty selector is invalid for deployment"
                )
            )
        if sel_errs:
            matches = lambda _labels: True  # noqa: E731 - already reported; don't pile on
        else:
            compiled = compile_label_selector(selector)
            matches = compiled.matches
    errs.extend(_template(template, matches))
    return errs


@register_validator("Deployment")
def _deployment(d: Deployment) -> list[FieldError]:
    errs = _meta(d) + _nonnegative(d.spec.replicas, "spec.replicas")
    return errs + _selector_and_template(d.spec.selector, d.spec.template)


@register_validator("ReplicaSet")
def _replica_set(rs: ReplicaSet) -> list[FieldError]:
    errs = _meta(rs) + _nonnegative(rs.spec.replicas, "spec.replicas")
    return errs + _selector_and_template(rs.spec.selector, rs.spec.template)


@register_validator("DaemonSet")
def _daemon_set(ds: DaemonSet) -> list[FieldError]:
    return _meta(ds) + _selector_and_template(ds.spec.selector, ds.spec.template)


@register_validator("StatefulSet")
def _stateful_set(ss: StatefulSet) -> list[FieldError]:
    errs = _meta(ss, is_dns1123_label)
    if ss.spec.pod_management_policy not in ("OrderedReady", "Parallel"):
        errs.append(
            invalid(
                "spec.podManagementPolicy",
                ss.spec.pod_management_policy,
                "must be 'OrderedReady' or 'Parallel'",
            )
        )
    errs.extend(_nonnegative(ss.spec.replicas, "spec.replicas"))
    return errs + _selector_and_template(ss.spec.selector, ss.spec.template)


@register_validator("ReplicationController")
def _replication_controller(rc: ReplicationController) -> list[FieldError]:
    errs = _meta(rc) + _nonnegative(rc.spec.replicas, "spec.replicas")
    selector = rc.spec.selector or {}
    if rc.spec.selector:
        errs.extend(validate_labels(rc.spec.selector, "spec.selector"))
    if rc.spec.template is None:
        errs.append(required("spec.template"))
        return errs
    # SetDefaults_ReplicationController: an empty selector is the template's labels.
    return errs + _template(
        rc.spec.template,
        lambda labels: all(labels.get(k) == v for k, v in selector.items()),
    )


@register_validator("Job")
def _job(job: Job) -> list[FieldError]:
    spec = job.spec
    errs = _meta(job)
    errs.extend(_nonnegative(spec.parallelism, "spec.parallelism"))
    errs.extend(_nonnegative(spec.completions, "spec.completions"))
    errs.extend(_nonnegative(spec.backoff_limit, "spec.backoffLimit"))
    errs.extend(_nonnegative(spec.active_deadline_seconds, "spec.activeDeadlineSeconds"))
    if spec.completion_mode not in ("NonIndexed", "Indexed"):
        errs.append(
            not_supported("spec.completionMode", spec.completion_mode, ("NonIndexed", "Indexed"))
        )
    if spec.selector is not None:
        errs.extend(validate_label_selector(spec.selector, "spec.selector"))
    # The Job controller generates the selector (manualSelector unset): no match check.
    return errs + _template(spec.template, None, _JOB_RESTART_POLICIES)
