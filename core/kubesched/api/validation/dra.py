"""Dynamic Resource Allocation kinds validated as kube-apiserver v1.36 does
(``pkg/apis/resource/validation``): DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice and DeviceTaintRule.

CEL selectors are compiled here (with the ``cel`` library the DynamicResources plugin
evaluates them with): an expression that does not compile is refused with upstream's
``compilation failed: ...``; the parser's detail after that prefix is the library's, not
cel-go's word for word. The fields of v1.36's beta DRA features (consumable capacity:
``allowMultipleAllocations``, ``requestPolicy``, ``capacity.requests``; device taints and
tolerations; binding conditions) and ``distinctAttribute`` are read by the scheduler but
not checked here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core import NodeSelector
from ..resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    DeviceTaintRule,
    OpaqueDeviceConfiguration,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from ..resources import is_extended_resource_name
from .field import FieldError, duplicate, invalid, not_supported, required, too_long, too_many
from .gates import gate_enabled
from .meta import validate_object_meta
from .objects import register_validator
from .pod import validate_node_selector
from .storage import validate_csi_driver_name
from .syntax import (
    is_c_identifier,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    validate_annotations,
    validate_label_name,
    validate_labels,
)

__all__ = ["SEMVER_RE", "cel_library", "compile_cel"]

SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
"""A semantic version (semver.org 2.0.0): major, minor, patch, pre-release, build."""

_RULE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
"""The effects a DeviceTaintRule's taint may have (sorted, as upstream lists them)."""
_MAX_SUBREQUESTS = 8
_MAX_DEVICES_PER_SLICE = 128
_POOL_NAME_MAX_LENGTH = 253
_NODE_FIELDS_DETAIL = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
_REFERENCE_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)


def cel_library() -> Any:
    """The ``cel`` library, imported on first use: its package imports its command-line
    interface (typer, prompt_toolkit), half a second that every kubesched command would
    pay at start-up although few objects have a CEL selector."""
    import cel

    return cel


def compile_cel(expression: str) -> tuple[Any, str | None]:
    """Compile a CEL device selector: ``(program, None)``, or ``(None, error)`` where the
    error reads as upstream's ``compilation failed: ERROR: <input>:...``."""
    try:
        return cel_library().compile(expression), None
    except Exception as err:  # the library raises ValueError, RuntimeError...
        text = str(err)
        # "Failed to parse expression '<expr>': ERROR: <input>:1:17: ..." -> cel-go's text.
        if text.startswith("Failed to parse expression"):
            text = text.split("': ", 1)[1]
        return None, f"compilation failed: {text}"


def _selectors(selectors: Sequence[DeviceSelector], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, selector in enumerate(selectors):
        spath = f"{path}[{i}]"
        if selector.cel is None:
            errs.append(required(f"{spath}.cel"))
            continue
        _program, error = compile_cel(selector.cel.expression)
        if error is not None:
            errs.append(invalid(f"{spath}.cel.expression", selector.cel.expression, error))
    return errs


def _opaque(opaque: OpaqueDeviceConfiguration | None, path: str) -> list[FieldError]:
    if opaque is None:
        return [required(path)]
    errs = validate_csi_driver_name(opaque.driver, f"{path}.driver")
    if opaque.parameters is None:
        errs.append(required(f"{path}.parameters"))
    return errs


@register_validator("DeviceClass")
def _device_class(dc: DeviceClass) -> list[FieldError]:
    errs = validate_object_meta(dc.metadata, namespaced=False)
    errs.extend(_selectors(dc.spec.selectors, "spec.selectors"))
    for i, config in enumerate(dc.spec.config):
        errs.extend(_opaque(config.opaque, f"spec.config[{i}].opaque"))
    name = dc.spec.extended_resource_name
    if name is not None and not is_extended_resource_name(name):
        errs.append(
            invalid("spec.extendedResourceName", name, "must be a valid extended resource name")
        )
    return errs


# --- claims --------------------------------------------------------------------------------


def _request_body(body: Any, path: str) -> list[FieldError]:
    """What ``exactly`` and a ``firstAvailable`` entry share: class, selectors, mode, count."""
    errs: list[FieldError] = []
    if not body.device_class_name:
        errs.append(required(f"{path}.deviceClassName"))
    else:
        errs.extend(
            invalid(f"{path}.deviceClassName", body.device_class_name, msg)
            for msg in is_dns1123_subdomain(body.device_class_name)
        )
    errs.extend(_selectors(body.selectors, f"{path}.selectors"))
    mode, count = body.allocation_mode, body.count
    if mode == ALLOCATION_MODE_EXACT_COUNT:
        if count is not None and count <= 0:
            errs.append(invalid(f"{path}.count", count, "must be greater than zero"))
    elif mode == ALLOCATION_MODE_ALL:
        if count:
            errs.append(
                invalid(
                    f"{path}.count", count, "must not be specified when allocationMode is 'All'"
                )
            )
    else:
        errs.append(
            not_supported(
                f"{path}.allocationMode", mode, (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT)
            )
        )
    return errs


def _label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, msg) for msg in is_dns1123_label(name)]


def _fully_qualified(name: str, path: str) -> list[FieldError]:
    # validateFullyQualifiedName: a DNS-subdomain domain, "/", a C identifier.
    if "/" not in name:
        return [
            invalid(
                path,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        ]
    domain, ident = name.split("/", 1)
    return _domain_and_identifier(domain, ident, path)


def _domain_and_identifier(domain: str | None, ident: str, path: str) -> list[FieldError]:
    # Each part is reported with its own value, as upstream does.
    errs = (
        [] if domain is None else [invalid(path, domain, m) for m in is_dns1123_subdomain(domain)]
    )
    return errs + [invalid(path, ident, msg) for msg in is_c_identifier(ident)]


def _unknown_references(refs: Sequence[str], known: set[str], path: str) -> list[FieldError]:
    """The request names (``request`` or ``request/subrequest``) the claim does not have."""
    return [
        invalid(f"{path}[{j}]", ref, _REFERENCE_DETAIL)
        for j, ref in enumerate(refs)
        if ref not in known
    ]


def _device_claim(claim: DeviceClaim, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    known: set[str] = set()
    names: set[str] = set()
    for i, req in enumerate(claim.requests):
        rpath = f"{path}.requests[{i}]"
        errs.extend(_label_name(req.name, f"{rpath}.name"))
        if req.exactly is None and not req.first_available:
            errs.append(required(rpath, "exactly one of `exactly` or `firstAvailable` is required"))
        elif req.exactly is not None and req.first_available:
            errs.append(
                invalid(
                    rpath,
                    None,
                    "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                    "fields are set",
                )
            )
        if req.exactly is not None:
            errs.extend(_request_body(req.exactly, f"{rpath}.exactly"))
        if len(req.first_available) > _MAX_SUBREQUESTS:
            errs.append(
                too_many(f"{rpath}.firstAvailable", len(req.first_available), _MAX_SUBREQUESTS)
            )
        sub_names: set[str] = set()
        for j, sub in enumerate(req.first_available):
            spath = f"{rpath}.firstAvailable[{j}]"
            errs.extend(_label_name(sub.name, f"{spath}.name"))
            errs.extend(_request_body(sub, spath))
            if sub.name in sub_names:
                errs.append(duplicate(spath, sub.name))
            sub_names.add(sub.name)
            known.add(f"{req.name}/{sub.name}")
        if req.name in names:
            errs.append(duplicate(rpath, req.name))
        names.add(req.name)
    known |= names
    for i, constraint in enumerate(claim.constraints):
        cpath = f"{path}.constraints[{i}]"
        errs.extend(_unknown_references(constraint.requests, known, f"{cpath}.requests"))
        if constraint.match_attribute is None and not gate_enabled("DRAConsumableCapacity"):
            # Without distinctAttribute (its gate off) matchAttribute is simply required.
            errs.append(required(f"{cpath}.matchAttribute"))
        elif constraint.match_attribute is None and constraint.distinct_attribute is None:
            errs.append(
                required(
                    cpath,
                    'exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                    "multiple fields are set",
                )
            )
        elif constraint.match_attribute is not None:
            errs.extend(_fully_qualified(constraint.match_attribute, f"{cpath}.matchAttribute"))
    for i, config in enumerate(claim.config):
        cpath = f"{path}.config[{i}]"
        errs.extend(_unknown_references(config.requests, known, f"{cpath}.requests"))
        errs.extend(_opaque(config.opaque, f"{cpath}.opaque"))
    return errs


@register_validator("ResourceClaim")
def _resource_claim(claim: ResourceClaim) -> list[FieldError]:
    errs = validate_object_meta(claim.metadata, namespaced=True)
    return errs + _device_claim(claim.spec.devices, "spec.devices")


@register_validator("ResourceClaimTemplate")
def _resource_claim_template(template: ResourceClaimTemplate) -> list[FieldError]:
    errs = validate_object_meta(template.metadata, namespaced=True)
    meta = template.spec.metadata
    if meta.labels:
        errs.extend(validate_labels(meta.labels, "spec.metadata.labels"))
    if meta.annotations:
        errs.extend(validate_annotations(meta.annotations, "spec.metadata.annotations"))
    return errs + _device_claim(template.spec.spec.devices, "spec.spec.devices")


# --- slices --------------------------------------------------------------------------------


def _go_node_selector_terms(selector: NodeSelector) -> list[dict[str, Any]]:
    """The terms as the API server prints its internal Go structs in a message."""

    def reqs(items: Sequence[Any]) -> list[dict[str, Any]] | None:
        return [
            {"Key": r.key, "Operator": r.operator, "Values": r.values or None} for r in items
        ] or None

    return [
        {"MatchExpressions": reqs(t.match_expressions), "MatchFields": reqs(t.match_fields)}
        for t in selector.node_selector_terms
    ]


def _go_attribute(attr: DeviceAttribute) -> dict[str, Any]:
    return {
        "IntValue": attr.int_,
        "BoolValue": attr.bool_,
        "StringValue": attr.string,
        "VersionValue": attr.version,
        "IntValues": None,
        "BoolValues": None,
        "StringValues": None,
        "VersionValues": None,
    }


def _qualified_key(key: str, path: str) -> list[FieldError]:
    # An attribute or capacity name: a C identifier, optionally behind a DNS-subdomain domain.
    domain, slash, ident = key.rpartition("/")
    return _domain_and_identifier(domain if slash else None, ident, path)


def _pool_name(name: str, path: str) -> list[FieldError]:
    if not name:
        return [required(path)]
    errs: list[FieldError] = []
    if len(name) > _POOL_NAME_MAX_LENGTH:
        errs.append(too_long(path, name, _POOL_NAME_MAX_LENGTH))
    for segment in name.split("/"):
        errs.extend(invalid(path, segment, msg) for msg in is_dns1123_subdomain(segment))
    return errs


@register_validator("ResourceSlice")
def _resource_slice(rs: ResourceSlice) -> list[FieldError]:
    errs = validate_object_meta(rs.metadata, namespaced=False)
    spec = rs.spec
    errs.extend(validate_csi_driver_name(spec.driver, "spec.driver"))
    errs.extend(_pool_name(spec.pool.name, "spec.pool.name"))
    if spec.pool.resource_slice_count <= 0:
        errs.append(
            invalid(
                "spec.pool.resourceSliceCount",
                spec.pool.resource_slice_count,
                "must be greater than zero",
            )
        )
    if spec.pool.generation < 0:
        errs.append(
            invalid(
                "spec.pool.generation",
                spec.pool.generation,
                "must be greater than or equal to zero",
            )
        )
    chosen = [
        name
        for name, value in (
            ("nodeName", spec.node_name),
            ("nodeSelector", spec.node_selector is not None),
            ("allNodes", spec.all_nodes),
            ("perDeviceNodeSelection", spec.per_device_node_selection),
        )
        if value
    ]
    if not chosen:
        errs.append(required("spec", _NODE_FIELDS_DETAIL))
    elif len(chosen) > 1:
        shown = "{" + ", ".join(f"`{name}`" for name in chosen) + "}"
        errs.append(invalid("spec", shown, f"{_NODE_FIELDS_DETAIL}, but multiple fields are set"))
    if spec.node_name:
        errs.extend(
            invalid("spec.nodeName", spec.node_name, msg)
            for msg in is_dns1123_subdomain(spec.node_name)
        )
    if spec.node_selector is not None:
        errs.extend(validate_node_selector(spec.node_selector, "spec.nodeSelector"))
        if len(spec.node_selector.node_selector_terms) != 1:
            errs.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    _go_node_selector_terms(spec.node_selector),
                    "must have exactly one node selector term",
                )
            )
    if spec.devices and spec.shared_counters:
        # v1.36 keeps counter sets and the devices drawing from them in separate slices.
        errs.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    if len(spec.devices) > _MAX_DEVICES_PER_SLICE:
        errs.append(too_many("spec.devices", len(spec.devices), _MAX_DEVICES_PER_SLICE))
    names: set[str] = set()
    for i, device in enumerate(spec.devices):
        dpath = f"spec.devices[{i}]"
        errs.extend(_label_name(device.name, f"{dpath}.name"))
        for key in sorted(device.attributes):
            errs.extend(_qualified_key(key, f"{dpath}.attributes"))
            attr = device.attributes[key]
            values = [
                v for v in (attr.int_, attr.bool_, attr.string, attr.version) if v is not None
            ]
            apath = f"{dpath}.attributes[{key}]"
            if not values:
                errs.append(invalid(apath, "", "exactly one value must be specified"))
            elif len(values) > 1:
                errs.append(
                    invalid(apath, _go_attribute(attr), "exactly one value must be specified")
                )
            elif attr.version is not None and not SEMVER_RE.match(attr.version):
                errs.append(
                    invalid(
                        f"{apath}.version",
                        attr.version,
                        "must be a string compatible with semver.org spec 2.0.0",
                    )
                )
        for key in sorted(device.capacity):
            errs.extend(_qualified_key(key, f"{dpath}.capacity"))
        if device.name in names:
            errs.append(duplicate(dpath, device.name))
        names.add(device.name)
    return errs


@register_validator("DeviceTaintRule")
def _device_taint_rule(rule: DeviceTaintRule) -> list[FieldError]:
    errs = validate_object_meta(rule.metadata, namespaced=False)
    sel = rule.spec.device_selector
    if sel is not None:
        path = "spec.deviceSelector"
        if sel.driver is not None:
            errs.extend(validate_csi_driver_name(sel.driver, f"{path}.driver"))
        if sel.pool is not None:
            errs.extend(_pool_name(sel.pool, f"{path}.pool"))
        if sel.device is not None:
            errs.extend(_label_name(sel.device, f"{path}.device"))
    taint = rule.spec.taint
    errs.extend(validate_label_name(taint.key, "spec.taint.key"))
    if taint.value:
        errs.extend(
            invalid("spec.taint.value", taint.value, msg)
            for msg in is_valid_label_value(taint.value)
        )
    if not taint.effect:
        errs.append(required("spec.taint.effect"))
    elif taint.effect not in _RULE_TAINT_EFFECTS:
        errs.append(not_supported("spec.taint.effect", taint.effect, _RULE_TAINT_EFFECTS))
    return errs
