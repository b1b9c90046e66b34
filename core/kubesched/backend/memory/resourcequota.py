"""ResourceQuota: kube-controller-manager's quota controller and the ResourceQuota admission plugin.

A real cluster counts usage twice over: the quota controller recomputes each quota's
``status.used`` from the objects of its namespace, and the admission plugin refuses a new
object whose usage would take ``status.used`` past ``status.hard`` (it trusts the status: a
quota whose status the controller has not filled yet limits nothing). The embedded
cluster's controller is never late: a quota's status is set as it is stored, and the usage
of its namespace is kept up to date as objects are stored and removed, so admission sees
what the controller would eventually report.

Counted: pods (``pods``, ``count/pods``, ``requests.*``/``limits.*``/bare cpu, memory and
ephemeral-storage, hugepages, ``requests.<extended resource>``; a pod that finished counts
only in ``count/pods``), services (``services``, ``services.loadbalancers``), claims
(``persistentvolumeclaims``, ``requests.storage`` and their per-StorageClass forms), and
``count/<resource>.<group>`` for every stored kind. The quota scopes Terminating,
NotTerminating, BestEffort, NotBestEffort, PriorityClass and CrossNamespacePodAffinity
select pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kubesched.api import (
    KubeObject,
    PersistentVolumeClaim,
    Pod,
    Quantity,
    ResourceQuota,
    Service,
    is_extended_resource_name,
)
from kubesched.api.quota import ScopedResourceSelectorRequirement
from kubesched.api.validation.quota import POD_QUOTA_RESOURCES, POD_QUOTA_SCOPES
from kubesched.backend.memory.admission import (
    forbidden,
    go_add,
    is_best_effort,
    pod_resource_totals,
)

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["ResourceQuotaController", "object_usage"]

_ONE = Quantity("1")
_ZERO = Quantity("0")
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_CONSTRAINED = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
"""``validationSet``: quotas on these make every container state the matching value."""

_POD_RESOURCES = POD_QUOTA_RESOURCES
_POD_SCOPES = POD_QUOTA_SCOPES


def _compute_usage(
    requests: dict[str, Quantity], limits: dict[str, Quantity]
) -> dict[str, Quantity]:
    """``podComputeUsageHelper``: ``pods`` and the compute resources under their names."""
    out = {"pods": _ONE}
    for name in _COMPUTE:
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = q
        elif is_extended_resource_name(name):
            out[f"requests.{name}"] = q
    return out


def _pod_is_live(pod: Pod) -> bool:
    # QuotaV1Pod: a finished pod no longer counts (removed pods are gone from the store).
    return pod.status.phase not in ("Succeeded", "Failed")


def object_usage(obj: KubeObject, resource: str) -> dict[str, Quantity]:
    """What ``obj`` counts against a quota (``resource``: its REST resource, e.g.
    ``deployments.apps``): ``count/<resource>`` for any object, and each evaluator's
    own names for pods, services and claims."""
    out = {f"count/{resource}": _ONE}
    if isinstance(obj, Pod):
        if _pod_is_live(obj):
            out.update(
                _compute_usage(pod_resource_totals(obj), pod_resource_totals(obj, limits=True))
            )
    elif isinstance(obj, Service):
        out["services"] = _ONE
        if obj.spec.type == "LoadBalancer":
            out["services.loadbalancers"] = _ONE
    elif isinstance(obj, PersistentVolumeClaim):
        out["persistentvolumeclaims"] = _ONE
        sc = obj.spec.storage_class_name
        if sc:
            out[f"{sc}.storageclass.storage.k8s.io/persistentvolumeclaims"] = _ONE
        storage = obj.spec.resources.requests.get("storage")
        if storage is not None:
            out["requests.storage"] = storage
            if sc:
                out[f"{sc}.storageclass.storage.k8s.io/requests.storage"] = storage
    return out


def _missing_values(pod: Pod, required: set[str]) -> str | None:
    """``podEvaluator.Constraints``: the containers that do not state a value a quota on
    cpu or memory needs, as ``cpu for: a,b; limits.memory for: a``; None when all do."""
    missing: dict[str, set[str]] = {}
    for c in (*pod.spec.containers, *pod.spec.init_containers):
        have = _compute_usage(c.resources.requests, c.resources.limits)
        for name in required - have.keys():
            missing.setdefault(name, set()).add(c.name)
    if not missing:
        return None
    return "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


def _matches_scope(pod: Pod, req: ScopedResourceSelectorRequirement) -> bool:
    scope, op = req.scope_name, req.operator
    if scope == "PriorityClass":
        name = pod.spec.priority_class_name or ""
        if op == "Exists":
            return bool(name)
        if op == "DoesNotExist":
            return not name
        return (name in req.values) == (op == "In")
    if scope in ("Terminating", "NotTerminating"):
        deadline = pod.spec.active_deadline_seconds
        matched = deadline is not None and deadline >= 0
    elif scope in ("BestEffort", "NotBestEffort"):
        matched = is_best_effort(pod)
    elif scope == "CrossNamespacePodAffinity":
        matched = _cross_namespace_affinity(pod)
    else:
        return False
    if scope.startswith("Not"):
        matched = not matched
    return matched if op != "DoesNotExist" else not matched


def _cross_namespace_affinity(pod: Pod) -> bool:
    aff = pod.spec.affinity
    if aff is None:
        return False
    for pa in (aff.pod_affinity, aff.pod_anti_affinity):
        if pa is None:
            continue
        terms = [
            *pa.required_during_scheduling_ignored_during_execution,
            *(w.pod_affinity_term for w in pa.preferred_during_scheduling_ignored_during_execution),
        ]
        if any(t.namespaces or t.namespace_selector is not None for t in terms):
            return True
    return False


def _selectors(quota: ResourceQuota) -> list[ScopedResourceSelectorRequirement]:
    spec = quota.spec
    out = [ScopedResourceSelectorRequirement(scope_name=s, operator="Exists") for s in spec.scopes]
    if spec.scope_selector is not None:
        out.extend(spec.scope_selector.match_expressions)
    return out


def _quota_matches(quota: ResourceQuota, obj: KubeObject) -> bool:
    """``evaluator.Matches``: a quota with scopes counts only the pods they select."""
    selectors = _selectors(quota)
    if not selectors:
        return True
    if not isinstance(obj, Pod) or any(s.scope_name not in _POD_SCOPES for s in selectors):
        return False
    return all(_matches_scope(obj, s) for s in selectors)


def _restricted(hard: dict[str, Quantity], obj: KubeObject) -> set[str]:
    """``evaluator.MatchingResources``: the quota's resources the kind of ``obj`` uses."""
    if not isinstance(obj, Pod):
        return set(hard)
    return {
        name
        for name in hard
        if name in _POD_RESOURCES
        or name.startswith(("hugepages-", "requests.hugepages-"))
        or (name.startswith("requests.") and is_extended_resource_name(name[len("requests.") :]))
    }


def _pretty(values: dict[str, Quantity]) -> str:
    return ",".join(f"{k}={values[k].canonical()}" for k in sorted(values))


def _plus(a: dict[str, Quantity], b: dict[str, Quantity], sign: int = 1) -> None:
    for name, q in b.items():
        a[name] = go_add(a.get(name, _ZERO), q, sign) if name in a or sign < 0 else q


def _same_usage(old: KubeObject, new: KubeObject) -> bool:
    """Whether a write cannot have changed what the object counts (binds, conditions)."""
    if isinstance(old, Pod) and isinstance(new, Pod):
        return old.spec is new.spec and _pod_is_live(old) == _pod_is_live(new)
    return False


class ResourceQuotaController:
    """Each ResourceQuota's usage and status, and the ResourceQuota admission check.

    The store calls :meth:`observe` as it stores or removes any object (so usage is
    current even for objects created while watch events are queued), then :meth:`flush`
    once the write's event is out, which writes the quotas whose usage changed.
    """

    def __init__(self, cluster: MemoryCluster, resource_name: Callable[[str], str]) -> None:
        self.cluster = cluster
        self._resource_name = resource_name
        # namespace -> quota name -> the usage of the objects that quota counts
        self._usage: dict[str, dict[str, dict[str, Quantity]]] = {}
        self._dirty: set[str] = set()

    def _quotas(self, namespace: str) -> list[ResourceQuota]:
        return sorted(
            self.cluster.iter_objects("ResourceQuota", namespace),  # type: ignore[arg-type]
            key=lambda q: q.name,
        )

    def _usage_of(self, obj: KubeObject) -> dict[str, Quantity]:
        return object_usage(obj, self._resource_name(obj.kind or ""))

    def _namespace_objects(self, namespace: str) -> Iterator[KubeObject]:
        for kind, store in list(self.cluster._objects.items()):
            if kind != "ResourceQuota" and store and type(next(iter(store.values()))).namespaced:
                yield from self.cluster.iter_objects(kind, namespace)

    # -- the controller ---------------------------------------------------------------------

    def prepare(self, quota: ResourceQuota) -> None:
        """Fill the status of a quota about to be stored (created or changed): ``hard``
        from the spec, ``used`` for each of its resources (0 when nothing uses it),
        counted from the objects of its namespace it selects."""
        totals: dict[str, Quantity] = {}
        for obj in self._namespace_objects(quota.namespace):
            if _quota_matches(quota, obj):
                _plus(totals, self._usage_of(obj))
        self._usage.setdefault(quota.namespace, {})[quota.name] = totals
        quota.status.hard = dict(quota.spec.hard)
        quota.status.used = {k: totals.get(k, _ZERO) for k in quota.spec.hard}

    def observe(self, old: KubeObject | None, new: KubeObject | None) -> None:
        """Account for a write: ``old`` replaced by ``new`` (either None)."""
        obj = new if new is not None else old
        if obj is None or not type(obj).namespaced:
            return
        ledgers = self._usage.get(obj.namespace)
        if ledgers is None:
            return  # no quota there
        if isinstance(obj, ResourceQuota):
            if new is None:
                ledgers.pop(obj.name, None)
            return
        if old is not None and new is not None and _same_usage(old, new):
            return
        for quota in self._quotas(obj.namespace):
            totals = ledgers.get(quota.name)
            if totals is None:
                continue
            if old is not None and _quota_matches(quota, old):
                _plus(totals, self._usage_of(old), -1)
            if new is not None and _quota_matches(quota, new):
                _plus(totals, self._usage_of(new))
        self._dirty.add(obj.namespace)

    def flush(self) -> None:
        """Write the status of the quotas whose usage changed."""
        while self._dirty:
            namespace = self._dirty.pop()
            ledgers = self._usage.get(namespace, {})
            for quota in self._quotas(namespace):
                totals = ledgers.get(quota.name, {})
                used = {k: totals.get(k, _ZERO) for k in quota.status.hard}
                if used != quota.status.used:
                    new = quota.model_copy(deep=True)
                    new.status.used = used
                    self.cluster._write(new, quota)

    # -- admission --------------------------------------------------------------------------

    def admit(self, obj: KubeObject) -> None:
        """``ResourceQuota`` admission of a new object: refuse it (403) if a quota of its
        namespace that counts it would go over, or (pods) if a container does not state
        a value a quota on cpu or memory needs. Quotas are checked by name; the first
        refusal is the message."""
        if not type(obj).namespaced or obj.namespace not in self._usage:
            return
        resource = self._resource_name(obj.kind or "")
        usage = {k: q for k, q in self._usage_of(obj).items() if not q.is_zero()}
        for quota in self._quotas(obj.namespace):
            if not _quota_matches(quota, obj):
                continue
            hard = quota.status.hard
            if isinstance(obj, Pod):
                missing = _missing_values(obj, _restricted(hard, obj) & _CONSTRAINED)
                if missing is not None:
                    raise forbidden(
                        resource, obj.name, f"failed quota: {quota.name}: must specify {missing}"
                    )
            requested = {k: q for k, q in usage.items() if k in hard}
            used = quota.status.used
            exceeded = sorted(
                k
                for k, q in requested.items()
                if (go_add(used[k], q) if k in used else q) > hard[k]
            )
            if exceeded:
                raise forbidden(
                    resource,
                    obj.name,
                    f"exceeded quota: {quota.name}, requested: "
                    f"{_pretty({k: requested[k] for k in exceeded})}, used: "
                    f"{_pretty({k: used[k] for k in exceeded if k in used})}, limited: "
                    f"{_pretty({k: hard[k] for k in exceeded})}",
                )
