"""PodDisruptionBudget status (the disruption controller) and the Eviction API."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import TYPE_CHECKING

from kubesched.api import (
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

    # -- status ----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Recompute the PDBs a change may affect."""
        obj = event.object
        if kind == "Pod":
            ns = obj.namespace
            pdbs = self.cluster.list_pod_disruption_budgets(ns)
            if not pdbs:
                return
            label_sets = [obj.metadata.labels]
            if event.old is not None:
                label_sets.append(event.old.metadata.labels)
            for pdb in pdbs:
                sel = _selector(pdb)
                if sel is not None and any(sel.matches(ls) for ls in label_sets):
                    self.sync(pdb)
        elif kind == "PodDisruptionBudget":
            if event.type == EventType.DELETED:
                return
            old = event.old
            if old is not None and old.metadata.generation == obj.metadata.generation:
                return  # a status write, ours
            cur = self.cluster.try_get(kind, obj.metadata.namespace, obj.name)
            if cur is not None:
                self.sync(cur)  # type: ignore[arg-type]
        elif kind in _SCALED_KINDS:
            # The scale of an owner feeds expectedPods of percentage / maxUnavailable PDBs.
            for pdb in self.cluster.list_pod_disruption_budgets(obj.namespace):
                self.sync(pdb)

    def sync_all(self) -> None:
        """Recompute every PDB."""
        for pdb in self.cluster.list_pod_disruption_budgets():
            self.sync(pdb)

    def _selected_pods(self, pdb: PodDisruptionBudget) -> list[Pod]:
        sel = _selector(pdb)
        if sel is None:
            return []
        return [p for p in self.cluster.pods(pdb.namespace) if sel.matches(p.metadata.labels)]

    def _controller_scale(self, pod: Pod) -> tuple[str, int] | None:
        """The uid and scale of the pod's scalable controller (RS under a Deployment: the
        Deployment's), or None when there is none."""
        ref = pod.metadata.controller_ref
        if ref is None or ref.kind not in _SCALED_KINDS:
            return None
        owner = self.cluster.try_get(ref.kind, pod.namespace, ref.name)
        if owner is None or owner.metadata.uid != ref.uid:
            return None
        if ref.kind == "ReplicaSet":
            dref = owner.metadata.controller_ref
            if dref is not None and dref.kind == "Deployment":
                d = self.cluster.try_get("Deployment", pod.namespace, dref.name)
                if d is not None and d.metadata.uid == dref.uid:
                    return d.metadata.uid or "", d.spec.replicas  # type: ignore[attr-defined]
        return owner.metadata.uid or "", owner.spec.replicas  # type: ignore[attr-defined]

    def _expected_scale(self, pods: list[Pod]) -> int:
        scales: dict[str, int] = {}
        for pod in pods:
            if pod.metadata.controller_ref is None:
                continue  # unmanaged pods are left out, as upstream
            found = self._controller_scale(pod)
            if found is None:
                raise ValueError(f'found no controllers for pod "{pod.name}"')
            scales[found[0]] = found[1]
        return sum(scales.values())

    def _expected_and_desired(self, pdb: PodDisruptionBudget, pods: list[Pod]) -> tuple[int, int]:
        spec = pdb.spec
        if spec.max_unavailable is not None:
            expected = self._expected_scale(pods)
            max_unavailable = scaled_value_from_int_or_percent(spec.max_unavailable, expected, True)
            return expected, max(0, expected - max_unavailable)
        if spec.min_available is not None:
            if isinstance(spec.min_available, int):
                return len(pods), spec.min_available
            expected = self._expected_scale(pods)
            return expected, scaled_value_from_int_or_percent(spec.min_available, expected, True)
        return 0, 0

    def compute_status(self, pdb: PodDisruptionBudget) -> PodDisruptionBudgetStatus:
        """The status the disruption controller would write for ``pdb`` now."""
        pods = self._selected_pods(pdb)
        try:
            expected, desired = self._expected_and_desired(pdb, pods)
        except ValueError:
            # failSafe: only disruptionsAllowed is forced to 0.
            return pdb.status.model_copy(update={"disruptions_allowed": 0})
        now = timestamp(self.cluster.now())
        disrupted = {}
        for pod in pods:
            t = pdb.status.disrupted_pods.get(pod.name)
            if (
                t is not None
                and pod.metadata.deletion_timestamp is None
                and t + timedelta(seconds=DELETION_TIMEOUT) > now
            ):
                disrupted[pod.name] = t
        healthy = sum(
            1
            for p in pods
            if p.metadata.deletion_timestamp is None and p.name not in disrupted and is_pod_ready(p)
        )
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

    def sync(self, pdb: PodDisruptionBudget) -> None:
        """Write ``pdb``'s status if it changed."""
        status = self.compute_status(pdb)
        if status != pdb.status:
            self._write_status(pdb, status)

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
