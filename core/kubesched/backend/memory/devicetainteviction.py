"""The device taint eviction controller: pods using devices with NoExecute taints, as upstream's.

kube-controller-manager's ``device-taint-eviction-controller`` (DRADeviceTaints, on by
default in v1.36) deletes the pods whose allocated ResourceClaims hold a device with a
``NoExecute`` taint their claim does not tolerate, as the taint eviction controller
does for nodes. For each allocated claim the eviction time is the earliest, over its
devices' NoExecute taints, of the taint's ``timeAdded`` plus the smallest
``tolerationSeconds`` of the allocation result's NoExecute tolerations that tolerate it
(a matching toleration without ``tolerationSeconds`` tolerates the taint for ever; no
matching toleration: at once). A bound pod for which one of its claims, reserved for
it, has an eviction time is deleted then: a ``DeviceTaintManagerEviction`` event
("Marking for deletion"), the ``DisruptionTarget`` condition (reason
``DeletionByDeviceTaintManager``), and a deletion with the pod's own grace period; the
cluster's eviction records (the report's ``evictions``) name the claim, the device and
the taint. When the taint goes (or the pod stops using the claim) before that, the
deletion is cancelled ("Cancelling deletion").

With DRADeviceTaintRules (:attr:`DeviceTaintEvictionController.taint_rules`) the taints
of DeviceTaintRules with the ``NoExecute`` effect count too, for every allocated device
their selector matches (published in a slice or not), from the rule's ``timeAdded``. The
controller keeps each rule's ``EvictionInProgress`` condition as upstream's: set at once
when the rule is created or its spec changes, then, while pods are evicted because of
it, at most every 10 seconds (``PodsPendingEviction``, ``Completed``, ``NotStarted``; for
the ``None`` effect, once, what ``NoExecute`` would do: ``NoEffect``; for
``NoSchedule``, ``OtherEffect``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kubesched.api import (
    DeviceTaintRule,
    Pod,
    PodClaimError,
    ResourceClaim,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_name,
    rule_matches_device,
    toleration_tolerates_taint,
)
from kubesched.backend.memory.evictions import (
    BY_DEVICE_TAINT_MANAGER,
    EvictionRecord,
    due_pod,
    pod_event,
    with_disruption_target,
)
from kubesched.backend.memory.naming import EPOCH, timestamp
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "CONTROLLER_NAME",
    "REASON_DELETION_BY_DEVICE_TAINT_MANAGER",
    "DeviceTaintEvictionController",
]

CONTROLLER_NAME = "device-taint-eviction-controller"
REASON_DELETION_BY_DEVICE_TAINT_MANAGER = "DeletionByDeviceTaintManager"
MSG_DELETION = "Device Taint manager: deleting due to NoExecute taint"
EVENT_REASON = "DeviceTaintManagerEviction"
CONDITION_EVICTION_IN_PROGRESS = "EvictionInProgress"
RULE_STATUS_PERIOD = 10.0
"""Seconds between two status updates of a DeviceTaintRule while it evicts pods
(upstream's ``ruleStatusPeriod``)."""

_Pool = tuple[str, str]


@dataclass
class _Work:
    """A scheduled deletion: the pod's uid, when it fires (virtual seconds), and the
    claim, device and taint that decided that time (for the eviction record)."""

    uid: str
    fire_at: float
    cause: _Cause
    rules: frozenset[str] = frozenset()
    """The DeviceTaintRules among the taints the pod is evicted for (their status counts
    the pod)."""


@dataclass(frozen=True)
class _Cause:
    """The claim's device whose taint gives the earliest eviction time, and how long the
    allocation tolerates it (None: not at all)."""

    claim: str
    device: str
    taint: str
    toleration_seconds: int | None
    rule: str | None = None
    """The DeviceTaintRule the taint comes from (None: the device's slice)."""

    def reason(self) -> str:
        """The eviction's one-line reason."""
        how = (
            "not tolerated"
            if self.toleration_seconds is None
            else f"tolerated for {self.toleration_seconds}s"
        )
        origin = f" (DeviceTaintRule {self.rule})" if self.rule else ""
        return (
            f"{REASON_DELETION_BY_DEVICE_TAINT_MANAGER}: NoExecute taint {self.taint}{origin} "
            f"of device {self.device} (claim {self.claim}) {how}"
        )


@dataclass(frozen=True)
class _Eviction:
    """When pods using a claim (or a pod) must go, the taint that says so, and every
    DeviceTaintRule among the taints that evict it."""

    when: float
    cause: _Cause
    rules: frozenset[str]


class DeviceTaintEvictionController:
    """Deletes pods whose claims' devices have NoExecute taints they do not tolerate."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._taints: dict[_Pool, dict[str, list[Any]]] = {}
        """The NoExecute taints of each pool's newest generation, by device name."""
        self._first_seen: dict[tuple[Any, ...], float] = {}
        """When a taint without ``timeAdded`` was first seen (the API server would have
        stamped it then)."""
        self._work: dict[str, _Work] = {}
        self._rules: dict[str, DeviceTaintRule] = {}
        """The DeviceTaintRules with the NoExecute effect, by name."""
        self._evicted: dict[str, int] = {}
        """Pods evicted because of each DeviceTaintRule (by uid) since the start."""
        self._status_due: dict[str, float] = {}
        """The DeviceTaintRules (by uid) whose status update is scheduled, and when."""
        self.enabled = True
        """False: the controller does nothing, as a cluster whose kube-controller-manager
        does not run it (``--controllers=-device-taint-eviction-controller``)."""
        self.taint_rules = False
        """DRADeviceTaintRules: DeviceTaintRules are read, and their status kept."""

    # -- watch -----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Follow device taints, claims' allocations and reservations, and pods."""
        if not self.enabled:
            return
        if kind == "ResourceSlice":
            self._slice_changed(event)
        elif kind == "DeviceTaintRule":
            if self.taint_rules:
                self._rule_changed(event)
        elif kind == "ResourceClaim":
            for claim in (event.old, None if event.type is EventType.DELETED else event.object):
                if claim is not None:
                    self._pods_of(claim)  # type: ignore[arg-type]
        elif kind == "Pod":
            pod: Pod = event.object  # type: ignore[assignment]
            if event.type is EventType.DELETED:
                self._work.pop(pod.key, None)
                return
            old: Pod | None = event.old  # type: ignore[assignment]
            if (
                old is not None
                and old.status.resource_claim_statuses == pod.status.resource_claim_statuses
                and old.spec.node_name == pod.spec.node_name
            ):
                return  # nothing about its claims changed (nor the eviction's own write)
            self._handle(pod)

    def _slice_changed(self, event: WatchEvent) -> None:
        sl = event.object
        pool = (sl.spec.driver, sl.spec.pool.name)  # type: ignore[attr-defined]
        slices = [
            s
            for s in self.cluster.objects("ResourceSlice")
            if (s.spec.driver, s.spec.pool.name) == pool  # type: ignore[attr-defined]
        ]
        newest = max((s.spec.pool.generation for s in slices), default=None)  # type: ignore[attr-defined]
        taints: dict[str, list[Any]] = {}
        for s in slices:
            if s.spec.pool.generation != newest:  # type: ignore[attr-defined]
                continue
            for device in s.spec.devices:  # type: ignore[attr-defined]
                no_execute = [t for t in device.taints if t.effect == "NoExecute"]
                if no_execute:
                    taints[device.name] = no_execute
        if taints == self._taints.get(pool, {}):
            return
        if taints:
            self._taints[pool] = taints
        else:
            self._taints.pop(pool, None)
        for claim in self.cluster.objects("ResourceClaim"):
            alloc = claim.status.allocation  # type: ignore[attr-defined]
            if alloc is not None and any((r.driver, r.pool) == pool for r in alloc.devices.results):
                self._pods_of(claim)  # type: ignore[arg-type]

    def _rule_changed(self, event: WatchEvent) -> None:
        """``handleRuleChange``: a status update at once for a new rule or a new spec
        (before any pod is deleted because of it, as upstream's queue runs it first);
        then every allocated claim's pods are decided again."""
        old: DeviceTaintRule | None = event.old  # type: ignore[assignment]
        rule: DeviceTaintRule = event.object  # type: ignore[assignment]
        if event.type is EventType.DELETED:
            self._rules.pop(rule.name, None)
            self._evicted.pop(rule.metadata.uid or "", None)
        else:
            if old is not None and old.metadata.uid == rule.metadata.uid and old.spec == rule.spec:
                return  # a status (or metadata) write: nothing to decide again
            if rule.spec.taint.effect == "NoExecute":
                self._rules[rule.name] = rule
            else:
                self._rules.pop(rule.name, None)
            self._schedule_status(rule, self.cluster.now())
        for claim in self.cluster.objects("ResourceClaim"):
            if claim.status.allocation is not None:  # type: ignore[attr-defined]
                self._pods_of(claim)  # type: ignore[arg-type]

    def _pods_of(self, claim: ResourceClaim) -> None:
        """``handlePods``: re-decide for every pod the claim is reserved for."""
        for ref in claim.status.reserved_for:
            if ref.api_group or ref.resource != "pods":
                continue
            pod: Pod | None = self.cluster.try_get("Pod", claim.namespace, ref.name)  # type: ignore[assignment]
            if pod is not None and pod.metadata.uid == ref.uid:
                self._handle(pod)

    # -- decisions -------------------------------------------------------------------------

    def _eviction_time(
        self, claim: ResourceClaim, rules: dict[str, DeviceTaintRule] | None = None
    ) -> _Eviction | None:
        """``claimEvictionTime``: when pods using ``claim`` must go (virtual seconds), the
        device taint that says so and the rules among its evicting taints; None if they
        may stay. ``rules``: the NoExecute DeviceTaintRules (default: the cluster's)."""
        alloc = claim.status.allocation
        rules = self._rules if rules is None else rules
        if alloc is None or not (self._taints or rules):
            return None
        earliest: tuple[float, _Cause] | None = None
        names: set[str] = set()
        for result in alloc.devices.results:
            pool = (result.driver, result.pool)
            taints: list[tuple[Any, str | None]] = [
                (t, None) for t in self._taints.get(pool, {}).get(result.device, ())
            ]
            taints += [
                (r.spec.taint, r.name)
                for r in rules.values()
                if rule_matches_device(r, result.driver, result.pool, result.device)
            ]
            for taint, rule in taints:
                added = self._time_added(pool, result.device, taint)
                seconds: int | None = None
                forever = False
                for tol in result.tolerations:
                    if tol.effect != "NoExecute" or not toleration_tolerates_taint(tol, taint):  # type: ignore[arg-type]
                        continue
                    if tol.toleration_seconds is None:
                        forever = True
                        break
                    wait = max(tol.toleration_seconds, 0)
                    seconds = wait if seconds is None else min(seconds, wait)
                if forever:
                    continue
                if rule is not None:
                    names.add(rule)
                when = added + (seconds or 0)
                if earliest is None or when < earliest[0]:
                    value = f"={taint.value}" if taint.value else ""
                    cause = _Cause(
                        claim.name,
                        f"{result.driver}/{result.pool}/{result.device}",
                        f"{taint.key}{value}:{taint.effect}",
                        seconds,
                        rule,
                    )
                    earliest = (when, cause)
        if earliest is None:
            return None
        return _Eviction(earliest[0], earliest[1], frozenset(names))

    def _time_added(self, pool: _Pool, device: str, taint: Any) -> float:
        if taint.time_added is not None:
            return (taint.time_added - EPOCH).total_seconds()
        key = (*pool, device, taint.key, taint.value, taint.effect)
        return self._first_seen.setdefault(key, self.cluster.now())

    def _pod_eviction(
        self, pod: Pod, rules: dict[str, DeviceTaintRule] | None = None
    ) -> _Eviction | None:
        """``podEvictionTime``: the earliest eviction of the claims reserved for a bound
        pod, with the rules of all of them; None if it may stay."""
        if not pod.spec.node_name:
            return None
        earliest: _Eviction | None = None
        names: set[str] = set()
        for pc in pod.spec.resource_claims:
            try:
                name, check_owner = pod_claim_name(pod, pc)
            except PodClaimError:
                continue
            if name is None:
                continue
            claim: ResourceClaim | None = self.cluster.try_get("ResourceClaim", pod.namespace, name)  # type: ignore[assignment]
            if claim is None or claim.status.allocation is None:
                continue
            if check_owner:
                try:
                    is_for_pod(pod, claim)
                except PodClaimError:
                    continue
            if not is_reserved_for_pod(pod, claim):
                continue
            due = self._eviction_time(claim, rules)
            if due is None:
                continue
            names |= due.rules
            if earliest is None or due.when < earliest.when:
                earliest = due
        if earliest is None:
            return None
        return _Eviction(earliest.when, earliest.cause, frozenset(names))

    def _handle(self, pod: Pod) -> None:
        """``handlePod``: schedule the pod's deletion at its claims' earliest eviction
        time, or cancel a scheduled one."""
        due = self._pod_eviction(pod)
        key = pod.key
        if due is None:
            if self._work.pop(key, None) is not None:
                self._event(pod, "Cancelling deletion")
            return
        work = self._work.get(key)
        if work is not None and work.fire_at == due.when:
            return
        work = self._work[key] = _Work(pod.metadata.uid or "", due.when, due.cause, due.rules)
        if due.when <= self.cluster.now():
            self._fire(key, work)
        else:
            self.cluster.call_at(due.when, lambda: self._fire(key, work))

    def _event(self, pod: Pod, message: str) -> None:
        pod_event(self.cluster, pod.namespace, pod.name, EVENT_REASON, message, CONTROLLER_NAME)

    # -- deletion --------------------------------------------------------------------------

    def _fire(self, key: str, work: _Work) -> None:
        cluster = self.cluster
        pod = due_pod(cluster, self._work, key, work)
        if pod is None:
            return
        self._event(pod, "Marking for deletion")
        if not any(
            (c.type, c.status, c.reason, c.message)
            == ("DisruptionTarget", "True", REASON_DELETION_BY_DEVICE_TAINT_MANAGER, MSG_DELETION)
            for c in pod.status.conditions
        ):
            new = with_disruption_target(
                pod, REASON_DELETION_BY_DEVICE_TAINT_MANAGER, MSG_DELETION, cluster.now()
            )
            pod = cluster.update(new)  # type: ignore[assignment]
        if pod.metadata.deletion_timestamp is None:
            grace = pod.spec.termination_grace_period_seconds
            cause = work.cause
            cluster.record_eviction(
                EvictionRecord.of(
                    pod,
                    time=cluster.now(),
                    node=pod.spec.node_name or "",
                    by=BY_DEVICE_TAINT_MANAGER,
                    reason=cause.reason(),
                    message=MSG_DELETION,
                    grace_period_seconds=float(grace if grace is not None else 30),
                    details={
                        "conditionReason": REASON_DELETION_BY_DEVICE_TAINT_MANAGER,
                        "claim": cause.claim,
                        "device": cause.device,
                        "taint": cause.taint,
                        "tolerationSeconds": cause.toleration_seconds,
                        **({"deviceTaintRule": cause.rule} if cause.rule else {}),
                    },
                )
            )
            cluster.delete_pod(pod)
            # Each rule's status tells how many pods it evicted, a while after the fact.
            for name in sorted(work.rules):
                rule = cluster.try_get("DeviceTaintRule", None, name)
                if rule is not None:
                    uid = rule.metadata.uid or ""
                    self._evicted[uid] = self._evicted.get(uid, 0) + 1
                    self._schedule_status(rule, cluster.now() + RULE_STATUS_PERIOD)  # type: ignore[arg-type]

    # -- DeviceTaintRule status ------------------------------------------------------------

    def _schedule_status(self, rule: DeviceTaintRule, at: float) -> None:
        """Update the rule's status at ``at`` (virtual seconds), or earlier if already due."""
        uid = rule.metadata.uid or ""
        due = self._status_due.get(uid)
        if due is not None and due <= at:
            return
        self._status_due[uid] = at
        name = rule.name

        def run() -> None:
            if self._status_due.get(uid) != at:
                return  # superseded by an earlier update
            del self._status_due[uid]
            self._update_status(name, uid)

        if at <= self.cluster.now():
            run()
        else:
            self.cluster.call_at(at, run)

    def _update_status(self, name: str, uid: str) -> None:
        """``maybeUpdateRuleStatus``: write the rule's ``EvictionInProgress`` condition
        if it changed; not twice within :data:`RULE_STATUS_PERIOD` for one generation."""
        cluster = self.cluster
        rule: DeviceTaintRule | None = cluster.try_get("DeviceTaintRule", None, name)  # type: ignore[assignment]
        if rule is None or rule.metadata.uid != uid:
            return
        now = cluster.now()
        existing = next(
            (c for c in rule.status.conditions if c.get("type") == CONDITION_EVICTION_IN_PROGRESS),
            None,
        )
        generation = rule.metadata.generation or 1
        if existing is not None and existing.get("observedGeneration") == generation:
            since = now - _seconds(existing.get("lastTransitionTime"))
            if since < RULE_STATUS_PERIOD:
                self._schedule_status(rule, now + RULE_STATUS_PERIOD - since)
                return
        condition = self._condition(rule)
        condition["observedGeneration"] = generation
        if existing is not None:
            condition["lastTransitionTime"] = existing.get("lastTransitionTime")
            if condition == existing:
                return
        condition["lastTransitionTime"] = timestamp(now).strftime("%Y-%m-%dT%H:%M:%SZ")
        others = [
            c for c in rule.status.conditions if c.get("type") != CONDITION_EVICTION_IN_PROGRESS
        ]
        status = rule.status.model_copy(update={"conditions": [*others, condition]})
        cluster.update_status(rule.model_copy(update={"status": status}))

    def _condition(self, rule: DeviceTaintRule) -> dict[str, Any]:
        """The rule's ``EvictionInProgress`` condition now (without its times)."""
        effect = rule.spec.taint.effect
        evicted = self._evicted.get(rule.metadata.uid or "", 0)
        status, message = "False", ""
        if effect == "NoExecute":
            pods, namespaces = self._pending(rule, self._rules)
            if pods:
                status, reason = "True", "PodsPendingEviction"
                message = (
                    ("1 pod needs" if pods == 1 else f"{pods} pods need")
                    + " to be evicted in "
                    + ("1 namespace." if namespaces == 1 else f"{namespaces} different namespaces.")
                )
            else:
                reason = "Completed" if evicted else "NotStarted"
        elif effect == "None":
            reason = "NoEffect"
            # What NoExecute would do: the rule counted as evicting, alone of its kind.
            as_no_execute = rule.model_copy(
                update={
                    "spec": rule.spec.model_copy(
                        update={"taint": rule.spec.taint.model_copy(update={"effect": "NoExecute"})}
                    )
                }
            )
            pods, namespaces = self._pending(rule, {**self._rules, rule.name: as_no_execute})
            published, allocated = self._selected_devices(rule)
            message = (
                _count(published, "published device", "published devices")
                + " selected. "
                + _count(allocated, "allocated device", "allocated devices")
                + " selected. "
                + ("1 pod" if pods == 1 else f"{pods} pods")
                + " would be evicted in "
                + ("1 namespace " if namespaces == 1 else f"{namespaces} different namespaces ")
                + "if the effect was NoExecute. This information will not be updated again. "
                "Recreate the DeviceTaintRule to trigger an update."
            )
        else:
            reason = "OtherEffect"
            message = "Eviction only happens for the NoExecute effect."
        if evicted:
            message += (
                (" " if message else "")
                + ("1 pod " if evicted == 1 else f"{evicted} pods ")
                + "evicted since starting the controller."
            )
        return {
            "type": CONDITION_EVICTION_IN_PROGRESS,
            "status": status,
            "reason": reason,
            "message": message,
        }

    def _pending(self, rule: DeviceTaintRule, rules: dict[str, DeviceTaintRule]) -> tuple[int, int]:
        """``countPendingPods``: the pods not being deleted that ``rule`` (among ``rules``)
        evicts or will evict, and their namespaces."""
        pods = 0
        namespaces: set[str] = set()
        for pod in self.cluster.objects("Pod"):
            if pod.metadata.deletion_timestamp is not None:
                continue
            due = self._pod_eviction(pod, rules)  # type: ignore[arg-type]
            if due is not None and rule.name in due.rules:
                pods += 1
                namespaces.add(pod.namespace or "")
        return pods, len(namespaces)

    def _selected_devices(self, rule: DeviceTaintRule) -> tuple[int, int]:
        """``countTaintedDevices``: the devices of the pools' newest slices the rule
        selects, and the allocated devices it selects."""
        newest: dict[_Pool, int] = {}
        slices = list(self.cluster.objects("ResourceSlice"))
        for s in slices:
            pool = (s.spec.driver, s.spec.pool.name)  # type: ignore[attr-defined]
            newest[pool] = max(newest.get(pool, s.spec.pool.generation), s.spec.pool.generation)  # type: ignore[attr-defined]
        published = sum(
            1
            for s in slices
            if s.spec.pool.generation == newest[(s.spec.driver, s.spec.pool.name)]  # type: ignore[attr-defined]
            for d in s.spec.devices  # type: ignore[attr-defined]
            if rule_matches_device(rule, s.spec.driver, s.spec.pool.name, d.name)  # type: ignore[attr-defined]
        )
        allocated = sum(
            1
            for c in self.cluster.objects("ResourceClaim")
            if c.status.allocation is not None  # type: ignore[attr-defined]
            for r in c.status.allocation.devices.results  # type: ignore[attr-defined]
            if rule_matches_device(rule, r.driver, r.pool, r.device)
        )
        return published, allocated


def _count(n: int, one: str, many: str) -> str:
    return f"1 {one}" if n == 1 else f"{n} {many}"


def _seconds(when: Any) -> float:
    """Virtual seconds of a condition's ``lastTransitionTime`` (an RFC 3339 string)."""
    if not when:
        return float("-inf")
    parsed = datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    return (parsed - EPOCH).total_seconds()
