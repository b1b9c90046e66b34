"""The taint eviction controller: pods on nodes with NoExecute taints, as upstream's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched.api import Pod, Taint, Toleration, toleration_tolerates_taint
from kubesched.backend.memory.evictions import (
    BY_TAINT_MANAGER,
    EvictionRecord,
    due_pod,
    pod_event,
    with_disruption_target,
)
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "CONTROLLER_NAME",
    "REASON_DELETION_BY_TAINT_MANAGER",
    "TaintEvictionController",
    "matching_tolerations",
    "min_toleration_seconds",
]

CONTROLLER_NAME = "taint-eviction-controller"
REASON_DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
MSG_DELETION = "Taint manager: deleting due to NoExecute taint"


def matching_tolerations(
    taints: list[Taint], tolerations: list[Toleration]
) -> tuple[bool, list[Toleration]]:
    """``GetMatchingTolerations``: whether every taint is tolerated and, per taint, the
    first toleration of the pod's list that tolerates it."""
    used: list[Toleration] = []
    for taint in taints:
        tol = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if tol is None:
            return False, []
        used.append(tol)
    return True, used


def min_toleration_seconds(tolerations: list[Toleration]) -> float | None:
    """``getMinTolerationTime``: the smallest ``tolerationSeconds`` of ``tolerations``
    (0 for none given or one ≤ 0), or None (forever) when none has tolerationSeconds."""
    if not tolerations:
        return 0.0
    least: int | None = None
    for t in tolerations:
        if t.toleration_seconds is None:
            continue
        if t.toleration_seconds <= 0:
            return 0.0
        if least is None or t.toleration_seconds < least:
            least = t.toleration_seconds
    return None if least is None else float(least)


def _no_execute(taints: list[Taint]) -> list[Taint]:
    return [t for t in taints if t.effect == "NoExecute"]


def _taint_text(t: Taint) -> str:
    value = f"={t.value}" if t.value else ""
    return f"{t.key}{value}:{t.effect}"


@dataclass
class _Work:
    """A scheduled deletion (``TimedWorker``): created at, fires at, and why."""

    created_at: float
    fire_at: float
    uid: str
    node: str
    reason: str
    details: dict


class TaintEvictionController:
    """Deletes pods from nodes with NoExecute taints, as upstream's taint eviction
    controller (``pkg/controller/tainteviction``).

    For each pod on a node with NoExecute taints: if a taint is not tolerated, the pod is
    deleted at once; otherwise, for each taint the first matching toleration of the pod
    counts, and the pod is deleted after the smallest ``tolerationSeconds`` of those
    (never if none has one). A scheduled deletion is kept when a later update would
    fire later (its start stays), and cancelled when the taints go, the pod leaves, or
    its tolerations become untimed. Deletion adds the ``DisruptionTarget`` condition
    (reason ``DeletionByTaintManager``) and deletes the pod with its own grace period.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._tainted: dict[str, list[Taint]] = {}
        self._work: dict[str, _Work] = {}

    # -- watch -----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Follow NoExecute taints of Nodes and the tolerations and node of Pods."""
        if kind == "Node":
            old = _no_execute(event.old.spec.taints) if event.old is not None else []
            new = _no_execute(event.object.spec.taints)
            if event.type is EventType.DELETED:
                self._tainted.pop(event.object.name, None)
            elif event.type is EventType.ADDED or old != new:
                self._node_updated(event.object.name, new)
        elif kind == "Pod":
            pod: Pod = event.object  # type: ignore[assignment]
            old_pod: Pod | None = event.old  # type: ignore[assignment]
            if event.type is EventType.DELETED:
                self._cancel(pod.key, pod.namespace, pod.name)
                return
            if (
                old_pod is not None
                and old_pod.spec.tolerations == pod.spec.tolerations
                and old_pod.spec.node_name == pod.spec.node_name
            ):
                return
            node = pod.spec.node_name
            taints = self._tainted.get(node or "")
            if node and taints:
                self._process(pod, node, taints, self.cluster.now())

    def _node_updated(self, node: str, taints: list[Taint]) -> None:
        if taints:
            self._tainted[node] = taints
        else:
            self._tainted.pop(node, None)
        pods = self.cluster.pods_on_node(node)
        now = self.cluster.now()
        for pod in pods:
            if not taints:
                self._cancel(pod.key, pod.namespace, pod.name)
            else:
                self._process(pod, node, taints, now)  # type: ignore[arg-type]

    # -- decisions -------------------------------------------------------------------------

    def _process(self, pod: Pod, node: str, taints: list[Taint], now: float) -> None:
        """``processPodOnNode``."""
        key = pod.key
        all_tolerated, used = matching_tolerations(taints, pod.spec.tolerations)
        if not all_tolerated:
            untolerated = next(
                t
                for t in taints
                if not any(toleration_tolerates_taint(tol, t) for tol in pod.spec.tolerations)
            )
            self._cancel(key, pod.namespace, pod.name)
            self._add(
                pod,
                node,
                now,
                now,
                f"NoExecute taint {_taint_text(untolerated)} not tolerated",
                {"taint": _taint_text(untolerated), "tolerationSeconds": None},
            )
            return
        seconds = min_toleration_seconds(used)
        if seconds is None:
            self._cancel(key, pod.namespace, pod.name)
            return
        trigger = now + seconds
        start = now
        work = self._work.get(key)
        if work is not None:
            start = work.created_at
            if start + seconds < trigger:
                return  # the earlier schedule stands, as upstream's
            self._cancel(key, pod.namespace, pod.name)
        # The taint whose toleration gave the smallest time: the one the report names.
        deciding = next(
            t
            for t, tol in zip(taints, used, strict=True)
            if tol.toleration_seconds is not None and max(tol.toleration_seconds, 0) == seconds
        )
        self._add(
            pod,
            node,
            start,
            trigger,
            f"NoExecute taint {_taint_text(deciding)} tolerated for {seconds:g}s",
            {"taint": _taint_text(deciding), "tolerationSeconds": seconds},
        )

    def _add(self, pod: Pod, node: str, created: float, fire: float, reason: str, details: dict):
        key = pod.key
        if key in self._work:
            return  # AddWork ignores existing work
        work = _Work(created, fire, pod.metadata.uid or "", node, reason, details)
        self._work[key] = work
        if fire <= self.cluster.now():
            self._fire(key, work)
        else:
            self.cluster.call_at(fire, lambda: self._fire(key, work))

    def _cancel(self, key: str, namespace: str, name: str) -> None:
        if self._work.pop(key, None) is not None:
            self._event(namespace, name, f"Cancelling deletion of Pod {namespace}/{name}")

    def _event(self, namespace: str, name: str, message: str) -> None:
        pod_event(self.cluster, namespace, name, "TaintManagerEviction", message, CONTROLLER_NAME)

    # -- deletion --------------------------------------------------------------------------

    def _fire(self, key: str, work: _Work) -> None:
        cluster = self.cluster
        pod = due_pod(cluster, self._work, key, work)
        if pod is None:
            return
        self._event(pod.namespace, pod.name, f"Marking for deletion Pod {key}")
        already = pod.metadata.deletion_timestamp is not None
        new = with_disruption_target(
            pod, REASON_DELETION_BY_TAINT_MANAGER, MSG_DELETION, cluster.now()
        )
        if any(
            (c.type, c.status, c.reason, c.message)
            == ("DisruptionTarget", "True", REASON_DELETION_BY_TAINT_MANAGER, MSG_DELETION)
            for c in pod.status.conditions
        ):
            new = pod  # UpdatePodCondition: nothing to write
        else:
            pod = cluster._write(new, pod)  # type: ignore[assignment]
        if not already:
            grace = pod.spec.termination_grace_period_seconds
            cluster.record_eviction(
                EvictionRecord.of(
                    pod,
                    time=cluster.now(),
                    node=work.node,
                    by=BY_TAINT_MANAGER,
                    reason=work.reason,
                    message=MSG_DELETION,
                    grace_period_seconds=float(grace if grace is not None else 30),
                    details={**work.details, "scheduledAt": work.created_at},
                )
            )
        cluster.delete_pod(pod)
