"""PodDisruptionBudget status (the disruption controller) and the Eviction API."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import TYPE_CHECKING

from kubesched.api import (
    KubeObject,
    LabelSelectorMatcher,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
    compile_label_selector,
)
from kubesched.api import PodCondition as ApiPodCondition
from kubesched.backend.memory.naming import timestamp
from kubesched.backend.protocol import EventType, EvictionResult, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "DELETION_TIMEOUT",
    "MSG_MULTIPLE_PDBS",
    "MSG_VIOLATES_PDB",
    "DisruptionController",
    "is_pod_ready",
    "scaled_value_from_int_or_percent",
]

MSG_VIOLATES_PDB = "Cannot evict pod as it would violate the pod's disruption budget."
MSG_MULTIPLE_PDBS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
DELETION_TIMEOUT = 120.0
"""Seconds an evicted pod stays out of ``currentHealthy`` while its deletion is awaited."""

_SCALED_KINDS = ("ReplicaSet", "ReplicationController", "StatefulSet", "Deployment")


def scaled_value_from_int_or_percent(value: int | str, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total``.

    A string that is not a percentage raises ``ValueError`` (as upstream).
    """
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(
            f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
        )
    try:
        pct = int(value[:-1])
    except ValueError:
        raise ValueError(f"invalid value for IntOrString: invalid value {value!r}") from None
    scaled = pct * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def is_pod_ready(pod: Pod) -> bool:
    """``IsPodReady``: the Ready condition is True.

    A Running pod with no Ready condition at all (a hand-written manifest) counts as
    ready; the embedded cluster sets the condition on every pod it starts.
    """
    for c in pod.status.conditions:
        if c.type == "Ready":
            return c.status == "True"
    return pod.status.phase == "Running"


def _selector(pdb: PodDisruptionBudget) -> LabelSelectorMatcher | None:
    try:
        return compile_label_selector(pdb.spec.selector)
    except ValueError:
        return None  # an invalid selector selects no pod


# A selected pod: (healthy, terminating, controller (kind, name, uid) or None).
_Entry = tuple[bool, bool, "tuple[str, str, str] | None"]


def _entry(pod: Pod) -> _Entry:
    terminating = pod.metadata.deletion_timestamp is not None
    ref = pod.metadata.controller_ref
    return (
        not terminating and is_pod_ready(pod),
        terminating,
        (ref.kind, ref.name, ref.uid) if ref is not None else None,
    )


class _Membership:
    """The pods one PDB selects, with the counts its status needs kept up to date."""

    __slots__ = ("controllers", "entries", "healthy", "selector")

    def __init__(self, selector: LabelSelectorMatcher | None) -> None:
        self.selector = selector
        self.entries: dict[str, _Entry] = {}
        self.healthy = 0
        self.controllers: dict[tuple[str, str, str], int] = {}

    def selects(self, pod: KubeObject) -> bool:
        return self.selector is not None and self.selector.matches(pod.metadata.labels)

    def update(self, key: str, entry: _Entry | None) -> bool:
        """Set (or with None remove) the pod's entry; True if anything changed."""
        old = self.entries.get(key)
        if old == entry:
            return False
        if old is not None:
            self.healthy -= old[0]
            if old[2] is not None:
                n = self.controllers[old[2]] - 1
                if n:
                    self.controllers[old[2]] = n
                else:
                    del self.controllers[old[2]]
        if entry is None:
            del self.entries[key]
            return True
        self.entries[key] = entry
        self.healthy += entry[0]
        if entry[2] is not None:
            self.controllers[entry[2]] = self.controllers.get(entry[2], 0) + 1
        return True


class DisruptionController:
    """Keeps every PDB's status current, synchronously, and answers evictions.

    Follows upstream's disruption controller: ``expectedPods`` and ``desiredHealthy``
    from ``minAvailable`` (an int: selected pods; a percentage: the owners' scale,
    rounded up) or ``maxUnavailable`` (the owners' scale minus the int or rounded-up
    percentage), ``currentHealthy`` = selected pods that are ready and not
    terminating, ``disruptionsAllowed`` = current - desired (0 when negative or when
    no pods are expected). A pod owned by a controller without a scale (Job,
    DaemonSet) makes the status fail safe: ``disruptionsAllowed`` 0.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        # PDBs to recompute once the current burst of events is delivered (key -> None).
        self._dirty: dict[str, None] = {}
        # namespace -> PDB key -> its selected pods and running counts.
        self._by_namespace: dict[str, dict[str, _Membership]] = {}

    # -- status ----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Track the change and mark the PDBs it affects; :meth:`flush` recomputes them.

        Each PDB keeps its selected pods with running counts (healthy pods, pods per
        controller), so a pod event costs O(PDBs of its namespace) and a recomputation
        O(controllers), however many pods there are. The cluster flushes when a write's
        events are all delivered.
        """
        obj = event.object
        if kind == "Pod":
            ns = obj.namespace
            members = self._by_namespace.get(ns)
            if not members:
                return
            key = obj.key
            entry = None if event.type == EventType.DELETED else _entry(obj)  # type: ignore[arg-type]
            for pdb_key, m in members.items():
                if m.update(key, entry if entry is not None and m.selects(obj) else None):
                    self._dirty[pdb_key] = None
        elif kind == "PodDisruptionBudget":
            ns_members = self._by_namespace.setdefault(obj.namespace, {})
            if event.type == EventType.DELETED:
                ns_members.pop(obj.key, None)
                return
            old = event.old
            if old is not None and old.metadata.generation == obj.metadata.generation:
                return  # a status write, ours
            ns_members[obj.key] = self._build(obj)  # type: ignore[arg-type]
            self._dirty[obj.key] = None
        elif kind in _SCALED_KINDS:
            # The scale of an owner feeds expectedPods of percentage / maxUnavailable PDBs.
            for pdb_key in self._by_namespace.get(obj.namespace, {}):
                self._dirty[pdb_key] = None

    def _build(self, pdb: PodDisruptionBudget) -> _Membership:
        m = _Membership(_selector(pdb))
        for pod in self.cluster.iter_objects("Pod", pdb.namespace):
            if m.selects(pod):
                m.update(pod.key, _entry(pod))  # type: ignore[arg-type]
        return m

    def _membership(self, pdb: PodDisruptionBudget) -> _Membership:
        ns_members = self._by_namespace.setdefault(pdb.namespace, {})
        m = ns_members.get(pdb.key)
        if m is None:
            m = ns_members[pdb.key] = self._build(pdb)
        return m

    def flush(self) -> bool:
        """Recompute the marked PDBs; True if a status was written."""
        wrote = False
        while self._dirty:
            key = next(iter(self._dirty))
            del self._dirty[key]
            ns, _, name = key.partition("/")
            pdb = self.cluster.try_get("PodDisruptionBudget", ns, name)
            if pdb is not None:
                wrote |= self.sync(pdb)  # type: ignore[arg-type]
        return wrote

    def sync_all(self) -> None:
        """Recompute every PDB."""
        for pdb in self.cluster.list_pod_disruption_budgets():
            self.sync(pdb)

    def _controller_scale(self, namespace: str, ref: tuple[str, str, str]) -> tuple[str, int]:
        """The uid and scale of a scalable controller (an RS under a Deployment: the
        Deployment's); ``ValueError`` when there is none (a Job, a missing owner)."""
        kind, name, uid = ref
        owner = self.cluster.try_get(kind, namespace, name) if kind in _SCALED_KINDS else None
        if owner is None or owner.metadata.uid != uid:
            raise ValueError(f"found no controllers for {kind} {name!r}")
        if kind == "ReplicaSet":
            dref = owner.metadata.controller_ref
            if dref is not None and dref.kind == "Deployment":
                d = self.cluster.try_get("Deployment", namespace, dref.name)
                if d is not None and d.metadata.uid == dref.uid:
                    return d.metadata.uid or "", d.spec.replicas  # type: ignore[attr-defined]
        return owner.metadata.uid or "", owner.spec.replicas  # type: ignore[attr-defined]

    def _expected_scale(self, namespace: str, m: _Membership) -> int:
        # Unmanaged pods are left out, as upstream; each controller counts once.
        scales = dict(self._controller_scale(namespace, ref) for ref in m.controllers)
        return sum(scales.values())

    def _expected_and_desired(self, pdb: PodDisruptionBudget, m: _Membership) -> tuple[int, int]:
        spec = pdb.spec
        if spec.max_unavailable is not None:
            expected = self._expected_scale(pdb.namespace, m)
            max_unavailable = scaled_value_from_int_or_percent(spec.max_unavailable, expected, True)
            return expected, max(0, expected - max_unavailable)
        if spec.min_available is not None:
            if isinstance(spec.min_available, int):
                return len(m.entries), spec.min_available
            expected = self._expected_scale(pdb.namespace, m)
            return expected, scaled_value_from_int_or_percent(spec.min_available, expected, True)
        return 0, 0

    def compute_status(self, pdb: PodDisruptionBudget) -> PodDisruptionBudgetStatus:
        """The status the disruption controller would write for ``pdb`` now."""
        m = self._membership(pdb)
        try:
            expected, desired = self._expected_and_desired(pdb, m)
        except ValueError:
            # failSafe: only disruptionsAllowed is forced to 0.
            return pdb.status.model_copy(update={"disruptions_allowed": 0})
        now = timestamp(self.cluster.now())
        disrupted = {}
        healthy = m.healthy
        prefix = pdb.namespace + "/"
        for name, t in pdb.status.disrupted_pods.items():
            entry = m.entries.get(prefix + name)
            # Kept while the pod exists, is not terminating and the timeout has not passed.
            if entry is not None and not entry[1] and t + timedelta(seconds=DELETION_TIMEOUT) > now:
                disrupted[name] = t
                if entry[0]:
                    healthy -= 1
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        return PodDisruptionBudgetStatus(
            disruptions_allowed=allowed,
            current_healthy=healthy,
            desired_healthy=desired,
            expected_pods=expected,
            disrupted_pods=disrupted,
            observed_generation=pdb.metadata.generation,
        )

    def sync(self, pdb: PodDisruptionBudget) -> bool:
        """Write ``pdb``'s status if it changed; True if it did."""
        status = self.compute_status(pdb)
        if status == pdb.status:
            return False
        self._write_status(pdb, status)
        return True

    def _write_status(self, pdb: PodDisruptionBudget, status: PodDisruptionBudgetStatus) -> None:
        new = pdb.model_copy(deep=True)
        new.status = status
        self.cluster._write(new, pdb)

    # -- eviction --------------------------------------------------------------------------

    def _pdbs_for(self, pod: Pod) -> list[PodDisruptionBudget]:
        out = []
        for pdb in self.cluster.list_pod_disruption_budgets(pod.namespace):
            sel = _selector(pdb)
            if sel is not None and sel.matches(pod.metadata.labels):
                out.append(pdb)
        return out

    def evict(self, pod: Pod) -> EvictionResult:
        """The pods/eviction subresource: 200 (deleted), 429, 500 or 404.

        Finished, pending or terminating pods are deleted without looking at budgets; a
        pod under two PDBs is refused (500); a ready pod needs ``disruptionsAllowed`` > 0,
        which the eviction decrements; an unready pod may go when its budget is met (or
        with ``unhealthyPodEvictionPolicy: AlwaysAllow``). The pod gets the condition
        ``DisruptionTarget`` (reason ``EvictionByEvictionAPI``) and is deleted with its
        grace period.
        """
        cluster = self.cluster
        if self._dirty:
            self.flush()  # an eviction from inside a watch handler reads a fresh status
        cur: Pod | None = cluster.try_get("Pod", pod.namespace, pod.name)  # type: ignore[assignment]
        if cur is None or (pod.metadata.uid and cur.metadata.uid != pod.metadata.uid):
            return EvictionResult(404, f'pods "{pod.name}" not found')
        if (
            cur.status.phase in ("Succeeded", "Failed", "Pending")
            or cur.metadata.deletion_timestamp is not None
        ):
            self._delete(cur)
            return EvictionResult(200)
        pdbs = self._pdbs_for(cur)
        if len(pdbs) > 1:
            return EvictionResult(500, MSG_MULTIPLE_PDBS, tuple(p.name for p in pdbs))
        if not pdbs:
            self._delete(cur)
            return EvictionResult(200)
        pdb = pdbs[0]
        st = pdb.status
        if not is_pod_ready(cur) and (
            pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow"
            or (st.current_healthy >= st.desired_healthy and st.desired_healthy > 0)
        ):
            self._delete(cur)
            return EvictionResult(200)
        if (st.observed_generation or 0) < (pdb.metadata.generation or 0):
            return EvictionResult(429, MSG_VIOLATES_PDB, (pdb.name,))
        if st.disruptions_allowed <= 0:
            return EvictionResult(429, MSG_VIOLATES_PDB, (pdb.name,))
        new_status = st.model_copy(deep=True)
        new_status.disruptions_allowed -= 1
        new_status.disrupted_pods[cur.name] = timestamp(cluster.now())
        self._write_status(pdb, new_status)
        self._delete(cur)
        return EvictionResult(200)

    def _delete(self, pod: Pod) -> None:
        cluster = self.cluster
        if pod.metadata.deletion_timestamp is None:
            new = pod.model_copy(deep=True)
            now = timestamp(cluster.now())
            cond = ApiPodCondition(
                type="DisruptionTarget",
                status="True",
                reason="EvictionByEvictionAPI",
                message="Eviction API: evicting",
                last_transition_time=now,
            )
            new.status.conditions = [c for c in new.status.conditions if c.type != cond.type]
            new.status.conditions.append(cond)
            pod = cluster._write(new, pod)  # type: ignore[assignment]
        cluster.delete_pod(pod)
