"""LimitRange and ResourceQuota validated as kube-apiserver v1.36 does (``core/validation``)."""

from __future__ import annotations

from ..quantity import Quantity
from ..quota import LimitRange, ResourceQuota
from .field import FieldError, duplicate, forbidden, invalid, required
from .meta import validate_object_meta
from .objects import register_validator
from .pod import _overcommit_allowed, _resource_name_errors, validate_quantity
from .syntax import is_qualified_name

__all__ = [
    "LIMIT_TYPES",
    "POD_QUOTA_RESOURCES",
    "POD_QUOTA_SCOPES",
    "QUOTA_SCOPES",
    "STANDARD_QUOTA_RESOURCES",
    "STANDARD_RESOURCES",
]

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
"""The standard ``LimitRangeItem.type`` values."""

STANDARD_QUOTA_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "requests.storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
    }
)
"""``helper.IsStandardQuotaResourceName`` (with the hugepages names)."""

STANDARD_RESOURCES = STANDARD_QUOTA_RESOURCES | {"storage"}
"""``helper.IsStandardResourceName`` (with the hugepages names)."""

QUOTA_SCOPES = (
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
)
"""The standard ResourceQuota scopes."""

_POD_COUNT_RESOURCES = frozenset({"pods", "count/pods"})
_POD_COMPUTE_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
        "ephemeral-storage",
        "requests.ephemeral-storage",
        "limits.ephemeral-storage",
    }
)
POD_QUOTA_RESOURCES = _POD_COUNT_RESOURCES | _POD_COMPUTE_RESOURCES
"""The quota resources a pod's own evaluator counts (besides hugepages and extended ones)."""
POD_QUOTA_SCOPES = QUOTA_SCOPES[:-1]
"""The scopes that select pods (all but VolumeAttributesClass)."""
_PVC_RESOURCES = frozenset(
    {"persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage"}
)
_SELECTOR_OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")


def _is_hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name(name: str, path: str) -> list[FieldError]:
    """``validateResourceName``: qualified, and standard unless it has a domain."""
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if "/" not in name and name not in STANDARD_RESOURCES and not _is_hugepages(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


# --- LimitRange ------------------------------------------------------------------------------


def _limit_resource_name(limit_type: str, name: str, path: str) -> list[FieldError]:
    # validateLimitRangeResourceName: container rules for Pod and Container items.
    if limit_type in ("Pod", "Container"):
        return _resource_name_errors(name, path)
    return _resource_name(name, path)


def _limit_type_errors(value: str, path: str) -> list[FieldError]:
    errs = [invalid(path, value, msg) for msg in is_qualified_name(value)]
    if "/" not in value and value not in LIMIT_TYPES:
        errs.append(invalid(path, value, "must be a standard limit type or fully qualified"))
    return errs


def _ratio_bound(ratio: Quantity, lo: Quantity, hi: Quantity) -> tuple[float, float]:
    """The ratio and max/min as upstream compares them (in thousandths when they fit)."""
    if max(ratio.value(), lo.value(), hi.value()) < _MAX_MILLI:
        return ratio.milli_value() / 1000, hi.milli_value() / lo.milli_value()
    return float(ratio.value()), hi.value() / lo.value()


_MAX_MILLI = (2**63 - 1) // 1000
"""``resource.MaxMilliValue``: the largest value whose thousandths fit an int64."""


def _item_errors(item_path: str, bounds: dict[str, dict[str, Quantity]]) -> list[FieldError]:
    """The cross-field rules of one item, resource by resource (sorted)."""
    errs: list[FieldError] = []
    keys = sorted({k for field in bounds.values() for k in field})
    for k in keys:
        lo, hi = bounds["min"].get(k), bounds["max"].get(k)
        dflt, dreq = bounds["default"].get(k), bounds["defaultRequest"].get(k)
        ratio = bounds["maxLimitRequestRatio"].get(k)
        if lo is not None and hi is not None and lo > hi:
            errs.append(
                invalid(
                    f"{item_path}.min[{k}]",
                    lo.canonical(),
                    f"min value {lo.canonical()} is greater than max value {hi.canonical()}",
                )
            )
        dreq_path = f"{item_path}.defaultRequest[{k}]"
        if dreq is not None:
            for other, what, bad in (
                (lo, "min value {o} is greater than default request value {d}", lo and lo > dreq),
                (hi, "default request value {d} is greater than max value {o}", hi and dreq > hi),
                (
                    dflt,
                    "default request value {d} is greater than default limit value {o}",
                    dflt and dreq > dflt,
                ),
            ):
                if bad:
                    assert other is not None
                    msg = what.format(o=other.canonical(), d=dreq.canonical())
                    errs.append(invalid(dreq_path, dreq.canonical(), msg))
        if dflt is not None and lo is not None and lo > dflt:
            errs.append(
                invalid(
                    f"{item_path}.default[{k}]",
                    lo.canonical(),
                    f"min value {lo.canonical()} is greater than default value {dflt.canonical()}",
                )
            )
        if dflt is not None and hi is not None and dflt > hi:
            # Upstream shows the max as the invalid value here (sic).
            errs.append(
                invalid(
                    f"{item_path}.default[{k}]",
                    hi.canonical(),
                    f"default value {dflt.canonical()} is greater than max value {hi.canonical()}",
                )
            )
        ratio_path = f"{item_path}.maxLimitRequestRatio[{k}]"
        if ratio is not None and ratio < Quantity("1"):
            errs.append(
                invalid(ratio_path, ratio.canonical(), f"ratio {ratio.canonical()} is less than 1")
            )
        if ratio is not None and lo is not None and hi is not None and not lo.is_zero():
            value, bound = _ratio_bound(ratio, lo, hi)
            if value > bound:
                errs.append(
                    invalid(
                        ratio_path,
                        ratio.canonical(),
                        f"ratio {ratio.canonical()} is greater than max/min = {bound:f}",
                    )
                )
        if not _overcommit_allowed(k) and dflt is not None and dreq is not None and dflt != dreq:
            errs.append(
                invalid(
                    dreq_path,
                    dreq.canonical(),
                    f"default value {dflt.canonical()} must equal to defaultRequest value "
                    f"{dreq.canonical()} in {k}",
                )
            )
    return errs


@register_validator("LimitRange")
def _limit_range(lr: LimitRange) -> list[FieldError]:
    errs = validate_object_meta(lr.metadata, namespaced=True)
    seen: set[str] = set()
    for i, item in enumerate(lr.spec.limits):
        path = f"spec.limits[{i}]"
        errs.extend(_limit_type_errors(item.type, f"{path}.type"))
        if item.type in seen:
            errs.append(duplicate(f"{path}.type", item.type))
        seen.add(item.type)
        bounds: dict[str, dict[str, Quantity]] = {"min": item.min, "max": item.max}
        fields = ["max", "min"]
        if item.type == "Pod":
            for name, values in (
                ("default", item.default),
                ("defaultRequest", item.default_request),
            ):
                if values:
                    errs.append(
                        forbidden(f"{path}.{name}", "may not be specified when `type` is 'Pod'")
                    )
            bounds.update(default={}, defaultRequest={})
        else:
            bounds.update(default=item.default, defaultRequest=item.default_request)
            fields += ["default", "defaultRequest"]
        if item.type == "PersistentVolumeClaim" and not (
            "storage" in item.min or "storage" in item.max
        ):
            errs.append(
                required(
                    f"{path}.limits",
                    "either minimum or maximum storage value is required, but neither was provided",
                )
            )
        bounds["maxLimitRequestRatio"] = item.max_limit_request_ratio
        fields.append("maxLimitRequestRatio")
        for name in fields:
            for k in sorted(bounds[name]):
                errs.extend(_limit_resource_name(item.type, k, f"{path}.{name}[{k}]"))
        errs.extend(_item_errors(path, bounds))
    return errs


# --- ResourceQuota ---------------------------------------------------------------------------


def _scope_valid_for(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``."""
    if scope in (
        "Terminating",
        "NotTerminating",
        "NotBestEffort",
        "PriorityClass",
        "CrossNamespacePodAffinity",
    ):
        return resource in _POD_COUNT_RESOURCES or resource in _POD_COMPUTE_RESOURCES
    if scope == "BestEffort":
        return resource in _POD_COUNT_RESOURCES
    if scope == "VolumeAttributesClass":
        return resource in _PVC_RESOURCES
    return True


def _is_standard_quota(name: str) -> bool:
    return name in STANDARD_QUOTA_RESOURCES or _is_hugepages(name)


@register_validator("ResourceQuota")
def _resource_quota(rq: ResourceQuota) -> list[FieldError]:
    errs = validate_object_meta(rq.metadata, namespaced=True)
    spec = rq.spec
    for k in sorted(spec.hard):
        path = f"spec.hard[{k}]"
        errs.extend(_resource_name(k, path))
        if "/" not in k and not _is_standard_quota(k):
            errs.append(invalid(path, k, "must be a standard resource for quota"))
        errs.extend(validate_quantity(k, spec.hard[k], path))
    if spec.scopes:
        for scope in spec.scopes:
            if scope not in QUOTA_SCOPES:
                errs.append(invalid("spec.scopes", spec.scopes, "unsupported scope"))
            for k in sorted(spec.hard):
                if _is_standard_quota(k) and not _scope_valid_for(scope, k):
                    errs.append(
                        invalid("spec.scopes", spec.scopes, "unsupported scope applied to resource")
                    )
        for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
            if set(pair) <= set(spec.scopes):
                errs.append(invalid("spec.scopes", spec.scopes, "conflicting scopes"))
    selector = spec.scope_selector
    for req in selector.match_expressions if selector is not None else ():
        # Upstream names no index here (sic).
        path = "spec.scopeSelector.matchExpressions"
        if req.scope_name not in QUOTA_SCOPES:
            errs.append(invalid(f"{path}.scopeName", req.scope_name, "unsupported scope"))
        if req.operator not in _SELECTOR_OPERATORS:
            errs.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
        elif req.operator in ("In", "NotIn") and not req.values:
            errs.append(
                required(
                    f"{path}.values",
                    "must be at least one value when `operator` is 'In' or 'NotIn' for scope "
                    "selector",
                )
            )
        elif req.operator in ("Exists", "DoesNotExist") and req.values:
            errs.append(
                invalid(
                    f"{path}.values",
                    req.values,
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope "
                    "selector",
                )
            )
    return errs
