"""Pod and pod-spec validation as kube-apiserver's ``ValidatePodSpec`` (v1.36) words it.

Covered: containers (names, images, ports, resources), volumes' names, restartPolicy,
nodeSelector, node and pod (anti-)affinity, scheduling gates, topology spread
constraints, service account / node / host names, tolerations, priorityClassName,
runtimeClassName, overhead and pod-level resources. Fields kubesched does not model are
checked on the decoded document (:mod:`.raw`): the enumerations the server validates
(DNS policy, image pull and termination message policies, probe schemes, proc mount,
seccomp profile type, OS name); their other rules (env, probes' numbers, security
contexts...) are not made.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core import (
    Affinity,
    Container,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    ResourceRequirements,
    Toleration,
    TopologySpreadConstraint,
)
from ..meta import LabelSelector
from ..quantity import Quantity, parse_quantity
from ..resources import is_extended_resource_name
from .field import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from .gates import gate_enabled
from .meta import validate_label_selector, validate_selector_requirement_values
from .raw import enum_check, register_raw_check
from .syntax import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    min_error,
    validate_label_name,
    validate_labels,
)

__all__ = [
    "TAINT_EFFECTS",
    "validate_node_selector",
    "validate_node_selector_term",
    "validate_pod_spec",
    "validate_quantity",
    "validate_tolerations",
]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_HUGEPAGES_PREFIX = "hugepages-"


# --- resources ------------------------------------------------------------------------------


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not name.startswith(_HUGEPAGES_PREFIX)


def validate_quantity(name: str, q: Quantity, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: non-negative, and whole for extended resources."""
    errs = []
    if q.nanos < 0:
        errs.append(invalid(path, q.canonical(), min_error(0)))
    if is_extended_resource_name(name) and q.milli_value() % 1000:
        errs.append(invalid(path, q.canonical(), "must be an integer"))
    return errs


def _resource_name_errors(name: str, path: str) -> list[FieldError]:
    # validateContainerResourceName: a qualified name, and a standard or extended one.
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith(_HUGEPAGES_PREFIX):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not is_extended_resource_name(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _hugepage_errors(name: str, q: Quantity, path: str) -> list[FieldError]:
    try:
        page = parse_quantity(name[len(_HUGEPAGES_PREFIX) :])
    except ValueError:
        return []
    if page.nanos <= 0 or q.nanos < 0 or q.nanos % page.nanos:
        return [
            invalid(
                path, q.canonical(), f"{q.canonical()} is not positive integer multiple of {name}"
            )
        ]
    return []


def validate_resource_requirements(res: ResourceRequirements, path: str) -> list[FieldError]:
    """``ValidateContainerResourceRequirements``: names, quantities, requests within
    limits (equal to them for extended resources and hugepages), hugepages rules."""
    errs: list[FieldError] = []
    limits, requests = res.limits, res.requests
    has_cpu_or_memory = False
    has_hugepages = False
    for name in sorted(limits):
        q = limits[name]
        kpath = f"{path}.limits[{name}]"
        errs.extend(_resource_name_errors(name, kpath))
        errs.extend(validate_quantity(name, q, kpath))
        if name.startswith(_HUGEPAGES_PREFIX):
            has_hugepages = True
            errs.extend(_hugepage_errors(name, q, kpath))
        has_cpu_or_memory |= name in ("cpu", "memory")
    for name in sorted(requests):
        q = requests[name]
        kpath = f"{path}.requests[{name}]"
        errs.extend(_resource_name_errors(name, kpath))
        errs.extend(validate_quantity(name, q, kpath))
        limit = limits.get(name)
        if limit is not None:
            if q != limit and not _overcommit_allowed(name):
                errs.append(
                    invalid(
                        f"{path}.requests",
                        q.canonical(),
                        f"must be equal to {name} limit of {limit.canonical()}",
                    )
                )
            elif q > limit:
                errs.append(
                    invalid(
                        f"{path}.requests",
                        q.canonical(),
                        f"must be less than or equal to {name} limit of {limit.canonical()}",
                    )
                )
        elif not _overcommit_allowed(name):
            errs.append(
                required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            )
        if name.startswith(_HUGEPAGES_PREFIX):
            has_hugepages = True
            errs.extend(_hugepage_errors(name, q, kpath))
        has_cpu_or_memory |= name in ("cpu", "memory")
    if has_hugepages and not has_cpu_or_memory:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


# --- containers -----------------------------------------------------------------------------


def _validate_container(
    c: Container, path: str, names: set[str], port_names: set[str]
) -> list[FieldError]:
    errs: list[FieldError] = []
    if not c.name:
        errs.append(required(f"{path}.name"))
    else:
        errs.extend(invalid(f"{path}.name", c.name, msg) for msg in is_dns1123_label(c.name))
        if c.name in names:
            errs.append(duplicate(f"{path}.name", c.name))
        names.add(c.name)
    if not c.image:
        errs.append(required(f"{path}.image"))
    for i, port in enumerate(c.ports):
        ppath = f"{path}.ports[{i}]"
        if port.name:
            errs.extend(
                invalid(f"{ppath}.name", port.name, msg) for msg in is_valid_port_name(port.name)
            )
            if port.name in port_names:
                errs.append(duplicate(f"{ppath}.name", port.name))
            port_names.add(port.name)
        if port.container_port == 0:
            errs.append(required(f"{ppath}.containerPort"))
        else:
            errs.extend(
                invalid(f"{ppath}.containerPort", port.container_port, msg)
                for msg in is_valid_port_num(port.container_port)
            )
        if port.host_port:
            errs.extend(
                invalid(f"{ppath}.hostPort", port.host_port, msg)
                for msg in is_valid_port_num(port.host_port)
            )
        if not port.protocol:
            errs.append(required(f"{ppath}.protocol"))
        elif port.protocol not in _PROTOCOLS:
            errs.append(not_supported(f"{ppath}.protocol", port.protocol, _PROTOCOLS))
    errs.extend(validate_resource_requirements(c.resources, f"{path}.resources"))
    return errs


def _host_port_conflicts(containers: Sequence[Container], path: str) -> list[FieldError]:
    # AccumulateUniqueHostPorts: one (protocol, hostIP, hostPort) per pod.
    seen: set[str] = set()
    errs = []
    for ci, c in enumerate(containers):
        for pi, port in enumerate(c.ports):
            if not port.host_port:
                continue
            key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
            if key in seen:
                errs.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


# --- node selection -------------------------------------------------------------------------


def _node_selector_requirement(req: NodeSelectorRequirement, path: str) -> list[FieldError]:
    if req.operator in ("Gt", "Lt"):
        errs = (
            []
            if len(req.values) == 1
            else [
                required(
                    f"{path}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            ]
        )
    else:
        errs = validate_selector_requirement_values(req.operator, req.values, path)
    errs.extend(validate_label_name(req.key, f"{path}.key"))
    return errs


def _node_field_requirement(req: NodeSelectorRequirement, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            errs.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        errs.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        errs.append(invalid(f"{path}.key", req.key, "not a valid field selector key"))
    else:
        for i, value in enumerate(req.values):
            errs.extend(
                invalid(f"{path}.values[{i}]", value, msg) for msg in is_dns1123_subdomain(value)
            )
    return errs


def validate_node_selector_term(term: NodeSelectorTerm, path: str) -> list[FieldError]:
    """``ValidateNodeSelectorTerm``: label expressions and ``metadata.name`` field ones."""
    errs: list[FieldError] = []
    for i, req in enumerate(term.match_expressions):
        errs.extend(_node_selector_requirement(req, f"{path}.matchExpressions[{i}]"))
    for i, req in enumerate(term.match_fields):
        errs.extend(_node_field_requirement(req, f"{path}.matchFields[{i}]"))
    return errs


def validate_node_selector(selector: NodeSelector, path: str) -> list[FieldError]:
    """``ValidateNodeSelector``: at least one term, each valid."""
    terms_path = f"{path}.nodeSelectorTerms"
    errs: list[FieldError] = []
    if not selector.node_selector_terms:
        errs.append(required(terms_path, "must have at least one node selector term"))
    for i, term in enumerate(selector.node_selector_terms):
        errs.extend(validate_node_selector_term(term, f"{terms_path}[{i}]"))
    return errs


def _weight(weight: int, path: str) -> list[FieldError]:
    if 1 <= weight <= 100:
        return []
    return [invalid(path, weight, "must be in the range 1-100")]


def _selector_keys(selector: LabelSelector | None) -> set[str]:
    if selector is None:
        return set()
    keys = set(selector.match_labels or ())
    keys.update(e.key for e in selector.match_expressions or ())
    return keys


def _label_keys_errors(
    lists: Iterable[tuple[str, Sequence[str]]],
    selector: LabelSelector | None,
    conflict_path: str,
    pod_labels: Mapping[str, str],
) -> list[FieldError]:
    """matchLabelKeys / mismatchLabelKeys: valid label names, none already in the
    selector; a key repeated (for a label the pod has) conflicts with its own merge."""
    errs: list[FieldError] = []
    keys = _selector_keys(selector)
    for name, values in lists:
        if values and selector is None:
            errs.append(forbidden(name, "must not be specified when labelSelector is not set"))
            continue
        for i, key in enumerate(values):
            errs.extend(validate_label_name(key, f"{name}[{i}]"))
    merged: set[str] = set()
    for _name, values in lists:
        if selector is None:
            continue
        for i, key in enumerate(values):
            if key in keys or key in merged:
                errs.append(
                    invalid(
                        f"{conflict_path}[{i}]",
                        key,
                        "exists in both matchLabelKeys and labelSelector",
                    )
                )
            elif key in pod_labels:
                merged.add(key)
    return errs


def _pod_affinity_term(
    term: PodAffinityTerm, path: str, pod_labels: Mapping[str, str]
) -> list[FieldError]:
    errs = validate_label_selector(term.label_selector, f"{path}.labelSelector")
    errs.extend(validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector"))
    for ns in term.namespaces:
        errs.extend(invalid(f"{path}.namespace", ns, msg) for msg in is_dns1123_label(ns))
    errs.extend(
        _label_keys_errors(
            (
                (f"{path}.matchLabelKeys", term.match_label_keys),
                (f"{path}.mismatchLabelKeys", term.mismatch_label_keys),
            ),
            term.label_selector,
            path,
            pod_labels,
        )
    )
    mismatch = set(term.mismatch_label_keys)
    for i, key in enumerate(term.match_label_keys):
        if key in mismatch:
            errs.append(
                invalid(
                    f"{path}.matchLabelKeys[{i}]",
                    key,
                    "exists in both matchLabelKeys and mismatchLabelKeys",
                )
            )
    if not term.topology_key:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs.extend(validate_label_name(term.topology_key, f"{path}.topologyKey"))
    return errs


def _pod_affinity(pa: PodAffinity, path: str, pod_labels: Mapping[str, str]) -> list[FieldError]:
    errs: list[FieldError] = []
    req_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(pa.required_during_scheduling_ignored_during_execution):
        errs.extend(_pod_affinity_term(term, f"{req_path}[{i}]", pod_labels))
    pref_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, wterm in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
        errs.extend(_weight(wterm.weight, f"{pref_path}[{i}].weight"))
        errs.extend(
            _pod_affinity_term(
                wterm.pod_affinity_term, f"{pref_path}[{i}].podAffinityTerm", pod_labels
            )
        )
    return errs


def _affinity(aff: Affinity, path: str, pod_labels: Mapping[str, str]) -> list[FieldError]:
    errs: list[FieldError] = []
    na = aff.node_affinity
    if na is not None:
        npath = f"{path}.nodeAffinity"
        req = na.required_during_scheduling_ignored_during_execution
        if req is not None:
            rpath = f"{npath}.requiredDuringSchedulingIgnoredDuringExecution"
            errs.extend(validate_node_selector(req, rpath))
        ppath = f"{npath}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, pterm in enumerate(na.preferred_during_scheduling_ignored_during_execution):
            errs.extend(_weight(pterm.weight, f"{ppath}[{i}].weight"))
            errs.extend(validate_node_selector_term(pterm.preference, f"{ppath}[{i}].preference"))
    if aff.pod_affinity is not None:
        errs.extend(_pod_affinity(aff.pod_affinity, f"{path}.podAffinity", pod_labels))
    if aff.pod_anti_affinity is not None:
        errs.extend(_pod_affinity(aff.pod_anti_affinity, f"{path}.podAntiAffinity", pod_labels))
    return errs


# --- tolerations, spread --------------------------------------------------------------------


def validate_tolerations(tolerations: Sequence[Toleration], path: str) -> list[FieldError]:
    """``validateTolerations``: key syntax, operator/value/effect combinations, and
    tolerationSeconds only with NoExecute."""
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        tpath = f"{path}[{i}]"
        key, operator, value = t.key or "", t.operator or "", t.value or ""
        if key:
            errs.extend(validate_label_name(key, f"{tpath}.key"))
        if not key and operator != "Exists":
            errs.append(
                invalid(
                    f"{tpath}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            errs.append(
                invalid(
                    f"{tpath}.effect",
                    t.effect or "",
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(invalid(f"{tpath}.operator", value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(
                    invalid(
                        f"{tpath}.operator",
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        elif operator in ("Lt", "Gt") and gate_enabled(COMPARISON_OPERATORS_GATE):
            errs.extend(_comparison_value(value, f"{tpath}.value"))
        else:
            # kube-apiserver v1.36 with TaintTolerationComparisonOperators off refuses Lt and
            # Gt naming them among the supported values, any other operator without them.
            supported = ("Equal", "Exists", "Lt", "Gt") if operator in ("Lt", "Gt") else ()
            errs.append(
                not_supported(f"{tpath}.operator", operator, supported or ("Equal", "Exists"))
            )
        if t.effect and t.effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tpath}.effect", t.effect, TAINT_EFFECTS))
    return errs


COMPARISON_OPERATORS_GATE = "TaintTolerationComparisonOperators"
"""kube-apiserver's gate that lets tolerations compare integers (``Lt``, ``Gt``)."""
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


def _comparison_value(value: str, path: str) -> list[FieldError]:
    """The value of an ``Lt``/``Gt`` toleration (TaintTolerationComparisonOperators on): a
    decimal integer in canonical form that Go's ``strconv.ParseInt`` reads as an int64."""
    errs: list[FieldError] = []
    if not value:
        errs.append(invalid(path, value, "must be non-empty"))
    elif not _GO_INT.fullmatch(value) or str(int(value)) != value:
        errs.append(invalid(path, value, "must be a valid decimal integer in canonical form"))
    if not _GO_INT.fullmatch(value):
        errs.append(invalid(path, value, f'strconv.ParseInt: parsing "{value}": invalid syntax'))
    elif int(value) not in _INT64:
        errs.append(
            invalid(path, value, f'strconv.ParseInt: parsing "{value}": value out of range')
        )
    return errs


def _spread_constraints(
    constraints: Sequence[TopologySpreadConstraint], path: str, pod_labels: Mapping[str, str]
) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, c in enumerate(constraints):
        cpath = f"{path}[{i}]"
        if c.max_skew <= 0:
            errs.append(invalid(f"{cpath}.maxSkew", c.max_skew, "must be greater than zero"))
        if not c.topology_key:
            errs.append(required(f"{cpath}.topologyKey", "can not be empty"))
        else:
            errs.extend(validate_label_name(c.topology_key, f"{cpath}.topologyKey"))
        if c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                not_supported(
                    f"{cpath}.whenUnsatisfiable",
                    c.when_unsatisfiable,
                    ("DoNotSchedule", "ScheduleAnyway"),
                )
            )
        if any(
            o.topology_key == c.topology_key and o.when_unsatisfiable == c.when_unsatisfiable
            for o in constraints[i + 1 :]
        ):
            errs.append(
                duplicate(
                    f"{cpath}.{{topologyKey, whenUnsatisfiable}}",
                    f"{{{c.topology_key}, {c.when_unsatisfiable}}}",
                )
            )
        if c.min_domains is not None:
            if c.min_domains <= 0:
                errs.append(
                    invalid(f"{cpath}.minDomains", c.min_domains, "must be greater than zero")
                )
            if c.when_unsatisfiable != "DoNotSchedule":
                errs.append(
                    invalid(
                        f"{cpath}.minDomains",
                        c.min_domains,
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
                        f"{c.when_unsatisfiable}",
                    )
                )
        for field_name, policy in (
            ("nodeAffinityPolicy", c.node_affinity_policy),
            ("nodeTaintsPolicy", c.node_taints_policy),
        ):
            if policy is not None and policy not in ("Honor", "Ignore"):
                errs.append(not_supported(f"{cpath}.{field_name}", policy, ("Honor", "Ignore")))
        errs.extend(
            _label_keys_errors(
                ((f"{cpath}.matchLabelKeys", c.match_label_keys),),
                c.label_selector,
                cpath,
                pod_labels,
            )
        )
        errs.extend(validate_label_selector(c.label_selector, f"{cpath}.labelSelector"))
    return errs


# --- the spec -------------------------------------------------------------------------------


def _named(path: str, value: str | None, rule: object) -> list[FieldError]:
    if not value:
        return []
    return [invalid(path, value, msg) for msg in rule(value)]  # type: ignore[operator]


def validate_pod_spec(
    spec: PodSpec,
    path: str,
    pod_labels: Mapping[str, str],
    restart_policies: Sequence[str] = _RESTART_POLICIES,
) -> list[FieldError]:
    """``ValidatePodSpec`` over the modelled fields, in upstream's order.

    ``pod_labels`` serve the matchLabelKeys checks; ``restart_policies`` narrows the
    allowed restartPolicy for workload templates (Deployments: Always only).
    """
    errs: list[FieldError] = []
    vol_names: set[str] = set()
    for i, vol in enumerate(spec.volumes):
        vpath = f"{path}.volumes[{i}].name"
        if not vol.name:
            errs.append(required(vpath))
        else:
            errs.extend(invalid(vpath, vol.name, msg) for msg in is_dns1123_label(vol.name))
            if vol.name in vol_names:
                errs.append(duplicate(vpath, vol.name))
            vol_names.add(vol.name)
    names: set[str] = set()
    port_names: set[str] = set()
    if not spec.containers:
        errs.append(required(f"{path}.containers"))
    for i, c in enumerate(spec.containers):
        errs.extend(_validate_container(c, f"{path}.containers[{i}]", names, port_names))
    errs.extend(_host_port_conflicts(spec.containers, f"{path}.containers"))
    init_port_names: set[str] = set()
    for i, c in enumerate(spec.init_containers):
        errs.extend(_validate_container(c, f"{path}.initContainers[{i}]", names, init_port_names))
    if spec.restart_policy not in restart_policies:
        if restart_policies == _JOB_RESTART_POLICIES:
            errs.append(required(f"{path}.restartPolicy", 'valid values: "OnFailure", "Never"'))
        else:
            errs.append(
                not_supported(f"{path}.restartPolicy", spec.restart_policy, restart_policies)
            )
    if spec.node_selector:
        errs.extend(validate_labels(spec.node_selector, f"{path}.nodeSelector"))
    if spec.affinity is not None:
        errs.extend(_affinity(spec.affinity, f"{path}.affinity", pod_labels))
    gates: set[str] = set()
    for i, gate in enumerate(spec.scheduling_gates):
        gpath = f"{path}.schedulingGates[{i}]"
        errs.extend(invalid(gpath, gate.name, msg) for msg in is_qualified_name(gate.name))
        if gate.name in gates:
            errs.append(duplicate(gpath, gate.name))
        gates.add(gate.name)
    if spec.scheduling_group is not None:
        group = spec.scheduling_group.pod_group_name
        gpath = f"{path}.schedulingGroup.podGroupName"
        if group is None:
            errs.append(invalid(gpath, None, "must specify one of: `podGroupName`"))
        else:
            errs.extend(invalid(gpath, group, msg) for msg in is_dns1123_subdomain(group))
    errs.extend(
        _spread_constraints(
            spec.topology_spread_constraints, f"{path}.topologySpreadConstraints", pod_labels
        )
    )
    errs.extend(
        _named(f"{path}.serviceAccountName", spec.service_account_name, is_dns1123_subdomain)
    )
    errs.extend(_named(f"{path}.nodeName", spec.node_name, is_dns1123_subdomain))
    errs.extend(_named(f"{path}.hostname", spec.hostname, is_dns1123_label))
    errs.extend(_named(f"{path}.subdomain", spec.subdomain, is_dns1123_label))
    errs.extend(validate_tolerations(spec.tolerations, f"{path}.tolerations"))
    errs.extend(_named(f"{path}.priorityClassName", spec.priority_class_name, is_dns1123_subdomain))
    errs.extend(_named(f"{path}.runtimeClassName", spec.runtime_class_name, is_dns1123_subdomain))
    errs.extend(_named(f"{path}.schedulerName", spec.scheduler_name, is_dns1123_subdomain))
    if spec.overhead:
        for name in sorted(spec.overhead):
            errs.extend(
                validate_quantity(name, spec.overhead[name], f"{path}.overhead.limits[{name}]")
            )
    if spec.resources is not None:
        errs.extend(validate_resource_requirements(spec.resources, f"{path}.resources"))
    return errs


_JOB_RESTART_POLICIES = ("OnFailure", "Never")
"""A Job's template: upstream words its refusal as a Required value listing these."""


# -- fields no model reads, checked on the decoded document ---------------------------------
_CORE = "io.k8s.api.core.v1."
enum_check(
    _CORE + "PodSpec", "dnsPolicy", ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
)
enum_check(_CORE + "Container", "imagePullPolicy", ("Always", "IfNotPresent", "Never"))
enum_check(_CORE + "Container", "terminationMessagePolicy", ("File", "FallbackToLogsOnError"))
enum_check(_CORE + "HTTPGetAction", "scheme", ("HTTP", "HTTPS"))
enum_check(_CORE + "SecurityContext", "procMount", ("Default", "Unmasked"))
enum_check(_CORE + "SeccompProfile", "type", ("Localhost", "RuntimeDefault", "Unconfined"))


@register_raw_check(_CORE + "PodSpec")
def _pod_os(spec: dict[str, object], where: Callable[[], str]) -> list[FieldError]:
    # Upstream names the error at spec.os, not spec.os.name.
    pod_os = spec.get("os")
    name = pod_os.get("name") if isinstance(pod_os, dict) else None
    if not name or name in ("linux", "windows"):
        return []
    return [not_supported(f"{where()}.os", name, ("linux", "windows"))]
