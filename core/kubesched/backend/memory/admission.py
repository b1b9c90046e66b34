"""Pod admission as kube-apiserver does it: priority, runtime class, defaults, affinity keys."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api import (
    Container,
    LabelSelectorRequirement,
    LimitRange,
    LimitRangeItem,
    Pod,
    PodAffinityTerm,
    PodSpec,
    PriorityClass,
    Quantity,
    RuntimeClass,
    Toleration,
    WorkloadPodGroup,
)
from kubesched.api.validation import InvalidObjectError, validate_object
from kubesched.backend.protocol import BackendError

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_TOLERATION_SECONDS",
    "LIMIT_RANGER_ANNOTATION",
    "PREEMPT_LOWER_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "AdmissionError",
    "PodAdmission",
    "forbidden",
    "go_add",
    "is_best_effort",
    "limit_range_violations",
    "pod_resource_totals",
    "validate_priority_class",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
DEFAULT_TOLERATION_SECONDS = 300
"""``--default-not-ready-toleration-seconds`` / ``--default-unreachable-toleration-seconds``."""

SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
"""The classes kube-apiserver creates at start-up; here they exist without being stored."""

_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"

# The tolerations admission adds, one instance shared by every admitted pod (about 1 KiB
# a pod otherwise). Stored objects are never changed in place (``MemoryCluster``): a
# writer deep-copies the pod first, which copies these too.
_ADMITTED_TOLERATIONS: dict[str, Toleration] = {
    _MEMORY_PRESSURE: Toleration(key=_MEMORY_PRESSURE, operator="Exists", effect="NoSchedule"),
    **{
        key: Toleration(
            key=key,
            operator="Exists",
            effect="NoExecute",
            toleration_seconds=DEFAULT_TOLERATION_SECONDS,
        )
        for key in (_NOT_READY, _UNREACHABLE)
    },
}


def is_best_effort(pod: Pod) -> bool:
    """``GetPodQOS(pod) == BestEffort``: no container (nor the pod) requests or limits
    CPU or memory."""
    reqs = [c.resources for c in (*pod.spec.init_containers, *pod.spec.containers)]
    if pod.spec.resources is not None:
        reqs.append(pod.spec.resources)
    for r in reqs:
        for values in (r.requests, r.limits):
            if any(name in ("cpu", "memory") for name in values or {}):
                return False
    return True


class AdmissionError(BackendError):
    """An admission plugin refused the object (HTTP 403 Forbidden), or the object its
    mutations made is invalid (422: a LimitRange's default limit below a request)."""

    def __init__(self, message: str, code: int = 403) -> None:
        super().__init__(message, code)


def forbidden(resource: str, name: str, reason: str) -> AdmissionError:
    """``admission.NewForbidden``: ``pods "x" is forbidden: <reason>``."""
    return AdmissionError(f'{resource} "{name}" is forbidden: {reason}')


def _pod_name(pod: Pod) -> str:
    # For generateName pods the name is not chosen yet when admission runs; upstream's
    # message then shows the prefix ('pods "web-5d59d67564-" is forbidden: ...').
    return pod.metadata.name or pod.metadata.generate_name or ""


def _default_priority_class(classes: Iterable[PriorityClass]) -> PriorityClass | None:
    # If a race left several defaults, upstream picks the lowest value.
    best: PriorityClass | None = None
    for pc in classes:
        if pc.global_default and (best is None or pc.value < best.value):
            best = pc
    return best


def validate_priority_class(pc: PriorityClass, existing: Iterable[PriorityClass]) -> None:
    """The Priority plugin's check of a PriorityClass create/update: one globalDefault only."""
    if not pc.global_default:
        return
    dpc = _default_priority_class(existing)
    if dpc is not None and dpc.name != pc.name:
        raise forbidden(
            "priorityclasses.scheduling.k8s.io",
            pc.name,
            f"PriorityClass {dpc.name} is already marked as default. Only one default can exist",
        )


def _merge_label_keys(term: PodAffinityTerm, labels: dict[str, str]) -> None:
    # applyMatchLabelKeysAndMismatchLabelKeys: a nil selector matches nothing and stays so.
    if (not term.match_label_keys and not term.mismatch_label_keys) or term.label_selector is None:
        return
    exprs = list(term.label_selector.match_expressions or [])
    for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            if key in labels:
                exprs.append(LabelSelectorRequirement(key=key, operator=op, values=[labels[key]]))
    term.label_selector.match_expressions = exprs


@dataclass
class PodAdmission:
    """The admission chain a new Pod goes through, with the cluster's classes as lookups.

    In order: the pod strategy's defaults (schedulerName, matchLabelKeys merged into pod
    affinity and topology spread selectors), ``LimitRanger``'s defaults (the namespace's
    LimitRanges' default requests and limits), ``Priority`` (priorityClassName → priority and
    preemptionPolicy, or the globalDefault class, else 0), ``RuntimeClass``
    (overhead, nodeSelector, tolerations) and ``DefaultTolerationSeconds``. A pod that
    LimitRanger's defaults changed is validated again, as kube-apiserver validates
    after the mutating plugins. The validating plugins (``LimitRanger``'s bounds,
    ``ResourceQuota``) run after the name is generated: :meth:`validate`.

    ``lenient`` accepts what kube-apiserver refuses but tests find handy: an explicit
    ``spec.priority`` with no class (kept as given) and an explicit ``spec.overhead``
    without a RuntimeClass.
    """

    priority_class: Callable[[str], PriorityClass | None]
    priority_classes: Callable[[], Iterable[PriorityClass]]
    runtime_class: Callable[[str], RuntimeClass | None]
    limit_ranges: Callable[[str], Iterable[LimitRange]] = lambda namespace: ()
    """The LimitRanges of a namespace."""
    lenient: bool = False
    default_toleration_seconds: bool = True
    memory_pressure_toleration: bool = True
    merge_spread_label_keys: bool = True
    """Merge topology spread constraints' ``matchLabelKeys`` into their selectors, as
    kube-apiserver does while its MatchLabelKeysInPodTopologySpreadSelectorMerge gate is on."""
    _previous: PodSpec | None = field(default=None, init=False, repr=False)
    """The last admitted pod's spec (``_share_with_previous``)."""

    def admit(self, pod: Pod, *, copy: bool = True) -> Pod:
        """Return the admitted (mutated) copy of ``pod``; raise ``AdmissionError`` if refused.

        ``copy=False`` admits ``pod`` itself, changing it in place (for a caller that
        hands the object over, see ``MemoryCluster.create``'s ``owned``).
        """
        if copy:
            pod = pod.model_copy(deep=True)
        self._defaults(pod)
        limit_ranges = list(self.limit_ranges(pod.namespace))
        if limit_ranges and _limit_range_defaults(pod, limit_ranges):
            errs = validate_object(pod)
            if errs:
                raise AdmissionError(str(InvalidObjectError.of(pod, errs)), 422)
        self._priority(pod)
        self._runtime_class(pod)
        if self.default_toleration_seconds:
            self._default_tolerations(pod)
        if self.memory_pressure_toleration and not is_best_effort(pod):
            self._memory_pressure_toleration(pod)
        self._share_with_previous(pod)
        return pod

    def admit_pod_group(self, group: WorkloadPodGroup) -> None:
        """The Workload API's PodGroup admission, in place: ``spec.priority`` from
        ``spec.priorityClassName`` (or the global default class, else 0) as the Priority
        admission plugin does for PodGroups, and ``spec.disruptionMode`` defaulted to
        ``Pod``, as kube-apiserver v1.36 stores them."""
        spec = group.spec
        name = spec.priority_class_name or ""
        if name:
            pc = self.priority_class(name)
            if pc is not None:
                priority = pc.value
            elif name in SYSTEM_PRIORITY_CLASSES:
                priority = SYSTEM_PRIORITY_CLASSES[name]
            else:
                raise forbidden(
                    "podgroups.scheduling.k8s.io",
                    group.name,
                    f"no PriorityClass with name {name} was found",
                )
        else:
            dpc = _default_priority_class(self.priority_classes())
            priority = dpc.value if dpc is not None else 0
        if spec.priority is None:
            spec.priority = priority
        if spec.disruption_mode is None:
            spec.disruption_mode = "Pod"

    def validate(self, pod: Pod) -> None:
        """``LimitRanger``'s validation: refuse ``pod`` (admitted, named) if it breaks a
        bound of a LimitRange of its namespace; the first such LimitRange (by name)
        gives the message, all of its violations in one."""
        for lr in sorted(self.limit_ranges(pod.namespace), key=lambda lr: lr.name):
            problems = limit_range_violations(pod, lr)
            if problems:
                text = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
                raise forbidden("pods", pod.name, text)

    def _share_with_previous(self, pod: Pod) -> None:
        # Not an admission step upstream: a saving of the embedded store. Pods come in
        # runs of identical ones (a controller's template, a bench): a spec equal to the
        # previous admitted pod's is replaced by that one (about 0.9 KiB a pod: the spec's
        # fields), and otherwise each container equal to the one at the same place in the
        # previous spec (about 1.4 KiB a pod: the container, its port and resources).
        # Stored objects are never changed in place (``MemoryCluster``): sharing is safe.
        spec, previous = pod.spec, self._previous
        if previous is not None and spec is not previous:
            for mine, theirs in (
                (spec.init_containers, previous.init_containers),
                (spec.containers, previous.containers),
            ):
                for i, (c, p) in enumerate(zip(mine, theirs, strict=False)):
                    if c is not p and c == p:
                        mine[i] = p
            if spec == previous:
                pod.spec = spec = previous
        self._previous = spec

    # -- the steps -------------------------------------------------------------------------

    def _defaults(self, pod: Pod) -> None:
        spec = pod.spec
        if not spec.scheduler_name:
            spec.scheduler_name = DEFAULT_SCHEDULER_NAME
        if spec.termination_grace_period_seconds is None:
            spec.termination_grace_period_seconds = 30
        elif spec.termination_grace_period_seconds < 0:
            # The pod strategy turns a negative grace period into 1 (kube-apiserver v1.36).
            spec.termination_grace_period_seconds = 1
        labels = pod.metadata.labels or {}
        # applyMatchLabelKeys of topology spread constraints, as kube-apiserver v1.36 does
        # with its MatchLabelKeysInPodTopologySpreadSelectorMerge gate on (the default):
        # each key the pod has becomes an "In" requirement of the constraint's selector.
        # With the gate off the selector is stored as sent (the scheduler merges itself).
        for tsc in (spec.topology_spread_constraints or ()) if self.merge_spread_label_keys else ():
            if tsc.label_selector is None:
                continue
            merged = [
                LabelSelectorRequirement(key=key, operator="In", values=[labels[key]])
                for key in tsc.match_label_keys
                if key in labels
            ]
            if merged:
                tsc.label_selector.match_expressions = [
                    *(tsc.label_selector.match_expressions or []),
                    *merged,
                ]
        aff = spec.affinity
        if aff is None:
            return
        for pa in (aff.pod_affinity, aff.pod_anti_affinity):
            if pa is None:
                continue
            for term in pa.required_during_scheduling_ignored_during_execution:
                _merge_label_keys(term, pod.metadata.labels)
            for wterm in pa.preferred_during_scheduling_ignored_during_execution:
                _merge_label_keys(wterm.pod_affinity_term, pod.metadata.labels)

    def _priority(self, pod: Pod) -> None:
        spec = pod.spec
        name = spec.priority_class_name or ""
        if not name:
            if self.lenient and spec.priority is not None:
                return
            dpc = _default_priority_class(self.priority_classes())
            if dpc is not None:
                spec.priority_class_name = dpc.name
                priority, policy = dpc.value, dpc.preemption_policy
            else:
                priority, policy = 0, PREEMPT_LOWER_PRIORITY
        else:
            pc = self.priority_class(name)
            if pc is not None:
                priority, policy = pc.value, pc.preemption_policy
            elif name in SYSTEM_PRIORITY_CLASSES:
                priority, policy = SYSTEM_PRIORITY_CLASSES[name], PREEMPT_LOWER_PRIORITY
            else:
                raise forbidden(
                    "pods", _pod_name(pod), f"no PriorityClass with name {name} was found"
                )
        if spec.priority is not None and spec.priority != priority:
            raise forbidden(
                "pods",
                _pod_name(pod),
                f"the integer value of priority ({spec.priority}) must not be provided in pod "
                f"spec; priority admission controller computed {priority} from the given "
                "PriorityClass name",
            )
        spec.priority = priority
        if policy:
            if spec.preemption_policy is not None and spec.preemption_policy != policy:
                raise forbidden(
                    "pods",
                    _pod_name(pod),
                    f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not "
                    f"be provided in pod spec; priority admission controller computed {policy} "
                    "from the given PriorityClass name",
                )
            spec.preemption_policy = policy

    def _runtime_class(self, pod: Pod) -> None:
        spec = pod.spec
        rc: RuntimeClass | None = None
        if spec.runtime_class_name:
            rc = self.runtime_class(spec.runtime_class_name)
            if rc is None:
                raise forbidden(
                    "pods",
                    _pod_name(pod),
                    f'pod rejected: RuntimeClass "{spec.runtime_class_name}" not found',
                )
        fixed = rc.overhead.pod_fixed if rc is not None and rc.overhead is not None else None
        if fixed is not None:
            if spec.overhead is not None and spec.overhead != fixed:
                raise forbidden(
                    "pods",
                    _pod_name(pod),
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                )
            spec.overhead = dict(fixed)
        elif spec.overhead is not None and not self.lenient:
            raise forbidden(
                "pods",
                _pod_name(pod),
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
                "Overhead",
            )
        sched = rc.scheduling if rc is not None else None
        if sched is None:
            return
        for key, value in (sched.node_selector or {}).items():
            pod_value = spec.node_selector.get(key)
            if pod_value is not None and pod_value != value:
                raise forbidden(
                    "pods",
                    _pod_name(pod),
                    f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                    f"pod.spec.nodeSelector[{key}] = {pod_value}",
                )
            spec.node_selector[key] = value
        for tol in sched.tolerations or ():
            # MergeTolerations, simplified: add what the pod does not already have verbatim.
            if tol not in spec.tolerations:
                spec.tolerations.append(tol.model_copy(deep=True))

    def _memory_pressure_toleration(self, pod: Pod) -> None:
        # The Kubernetes docs: "The control plane also adds the node.kubernetes.io/memory-pressure
        # toleration on pods that have a QoS class other than BestEffort" (upstream's
        # PodTolerationRestriction rule), so that only new BestEffort pods stay off a node
        # under memory pressure. MergeTolerations: not added when one already covers it.
        tol = _ADMITTED_TOLERATIONS[_MEMORY_PRESSURE]
        for t in pod.spec.tolerations:
            if t == tol or (
                (t.key == _MEMORY_PRESSURE or (not t.key and t.operator == "Exists"))
                and t.operator == "Exists"
                and (t.effect == "NoSchedule" or not t.effect)
            ):
                return
        pod.spec.tolerations.append(tol)

    def _default_tolerations(self, pod: Pod) -> None:
        # DefaultTolerationSeconds: pods tolerate not-ready/unreachable NoExecute for 300s
        # unless they already tolerate them (an empty key or effect counts).
        tols = pod.spec.tolerations

        def tolerates(key: str) -> bool:
            return any(
                (t.key == key or not t.key) and (t.effect == "NoExecute" or not t.effect)
                for t in tols
            )

        for key in (_NOT_READY, _UNREACHABLE):
            if not tolerates(key):
                tols.append(_ADMITTED_TOLERATIONS[key])


# -- LimitRanger ---------------------------------------------------------------------------

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
"""The annotation LimitRanger leaves on a pod it gave default requests or limits."""

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = 10**9
_MAX_MILLI = (2**63 - 1) // 1000
"""``resource.MaxMilliValue``."""


def go_add(a: Quantity, b: Quantity, sign: int = 1) -> Quantity:
    """``a.Add(b)`` (``a.Sub(b)`` with ``sign=-1``) as upstream: the result keeps ``a``'s
    format and reads as the API server prints it: ``256Mi + 2Gi`` is ``2304Mi``."""
    total = a.nanos + sign * b.nanos
    if str(a).endswith(_BINARY_SUFFIXES) and total % (1024 * _NANO) == 0 and total:
        return Quantity(Quantity(f"{total // (1024 * _NANO)}Ki").canonical())
    return Quantity(Quantity.from_nanos(total).canonical())


def _add_into(acc: dict[str, Quantity], values: Mapping[str, Quantity]) -> None:
    for name, q in values.items():
        cur = acc.get(name)
        acc[name] = q if cur is None else go_add(cur, q)


def _max_into(acc: dict[str, Quantity], values: Mapping[str, Quantity]) -> None:
    for name, q in values.items():
        cur = acc.get(name)
        if cur is None or q > cur:
            acc[name] = q


def _pod_level(name: str) -> bool:
    # The resources pod-level ``spec.resources`` may set (PodLevelResources).
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_resource_totals(pod: Pod, *, limits: bool = False) -> dict[str, Quantity]:
    """``resourcehelper.PodRequests`` (or ``PodLimits``) as quantities: the containers' sum,
    at least the largest init container's figure (with the sidecars started before it),
    sidecars added; pod-level values replace the sum; the overhead is added (to limits,
    only of the resources that have one)."""
    spec = pod.spec

    def of(c: Container) -> Mapping[str, Quantity]:
        return c.resources.limits if limits else c.resources.requests

    total: dict[str, Quantity] = {}
    for c in spec.containers:
        _add_into(total, of(c))
    init_max: dict[str, Quantity] = {}
    sidecars: dict[str, Quantity] = {}
    for c in spec.init_containers:
        if c.restart_policy == "Always":
            _add_into(total, of(c))
            _add_into(sidecars, of(c))
            use = dict(sidecars)
        else:
            use = dict(of(c))
            _add_into(use, sidecars)
        _max_into(init_max, use)
    _max_into(total, init_max)
    if spec.resources is not None:
        level = spec.resources.limits if limits else spec.resources.requests
        total.update({k: q for k, q in level.items() if _pod_level(k)})
    for name, q in (spec.overhead or {}).items():
        if not limits or name in total:
            _add_into(total, {name: q})
    return total


def _defaults_of(lr: LimitRange) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    for item in lr.spec.limits:
        if item.type == "Container":
            requests.update(item.default_request)
            limits.update(item.default)
    return requests, limits


def _limit_range_defaults(pod: Pod, limit_ranges: Iterable[LimitRange]) -> bool:
    """LimitRanger's mutation: each container's missing requests and limits from the
    LimitRanges' Container defaults, noted in the pod's annotation. Whether any was set."""
    notes: list[str] = []
    for lr in limit_ranges:
        requests, limits = _defaults_of(lr)
        if not requests and not limits:
            continue
        for what, containers in (
            ("container", pod.spec.containers),
            ("init container", pod.spec.init_containers),
        ):
            for c in containers:
                res = c.resources
                set_requests = sorted(k for k in requests if k not in res.requests)
                set_limits = sorted(k for k in limits if k not in res.limits)
                if set_requests:
                    res.requests = {**res.requests, **{k: requests[k] for k in set_requests}}
                    notes.append(f"{', '.join(set_requests)} request for {what} {c.name}")
                if set_limits:
                    res.limits = {**res.limits, **{k: limits[k] for k in set_limits}}
                    notes.append(f"{', '.join(set_limits)} limit for {what} {c.name}")
    if notes:
        pod.metadata.annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(
            notes
        )
    return bool(notes)


def _comparable(*qs: Quantity) -> list[int]:
    """Values at a common precision (thousandths when none overflows), as upstream."""
    if all(q.value() <= _MAX_MILLI for q in qs):
        return [q.milli_value() for q in qs]
    return [q.value() for q in qs]


def _bound_violations(
    item: LimitRangeItem,
    scope: str,
    requests: Mapping[str, Quantity],
    limits: Mapping[str, Quantity],
) -> list[str]:
    """The min, max and maxLimitRequestRatio violations of one container (or the pod)."""
    out: list[str] = []
    zero = Quantity("0")
    for name in sorted(item.min):
        bound, req, lim = item.min[name], requests.get(name), limits.get(name)
        r, li, b = _comparable(req or zero, lim or zero, bound)
        if req is None:
            out.append(
                f"minimum {name} usage per {scope} is {bound.canonical()}.  No request is specified"
            )
        elif r < b:
            out.append(
                f"minimum {name} usage per {scope} is {bound.canonical()}, but "
                f"request is {req.canonical()}"
            )
        elif lim is not None and li < b:
            out.append(
                f"minimum {name} usage per {scope} is {bound.canonical()}, but "
                f"limit is {lim.canonical()}"
            )
    for name in sorted(item.max):
        bound, req, lim = item.max[name], requests.get(name), limits.get(name)
        r, li, b = _comparable(req or zero, lim or zero, bound)
        if lim is None:
            out.append(
                f"maximum {name} usage per {scope} is {bound.canonical()}.  No limit is specified"
            )
        elif li > b:
            out.append(
                f"maximum {name} usage per {scope} is {bound.canonical()}, but "
                f"limit is {lim.canonical()}"
            )
        elif req is not None and r > b:
            out.append(
                f"maximum {name} usage per {scope} is {bound.canonical()}, but "
                f"request is {req.canonical()}"
            )
    for name in sorted(item.max_limit_request_ratio):
        bound, req, lim = item.max_limit_request_ratio[name], requests.get(name), limits.get(name)
        r, li = _comparable(req or zero, lim or zero)
        head = f"{name} max limit to request ratio per {scope} is {bound.canonical()}"
        if req is None or r == 0:
            out.append(f"{head}, but no request is specified or request is 0")
        elif lim is None or li == 0:
            out.append(f"{head}, but no limit is specified or limit is 0")
        else:
            ratio = li / r
            limit = bound.milli_value() / 1000 if bound.value() <= _MAX_MILLI else bound.value()
            if ratio > limit:
                out.append(f"{head}, but provided ratio is {ratio:f}")
    return out


def limit_range_violations(pod: Pod, lr: LimitRange) -> list[str]:
    """``PodValidateLimitFunc``: what of ``pod`` breaks ``lr``'s Container and Pod items,
    each as kube-apiserver words it (``maximum cpu usage per Container is 2, but limit
    is 3``)."""
    out: list[str] = []
    for item in lr.spec.limits:
        if item.type == "Container":
            for c in (*pod.spec.containers, *pod.spec.init_containers):
                res = c.resources
                out.extend(_bound_violations(item, "Container", res.requests, res.limits))
        elif item.type == "Pod":
            out.extend(
                _bound_violations(
                    item, "Pod", pod_resource_totals(pod), pod_resource_totals(pod, limits=True)
                )
            )
    return out
