"""The node lifecycle controller (conditions → taints, zone-limited NoExecute tainting) and
pod garbage collection of pods whose node is gone or never existed."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kubesched.api import Node, NodeCondition, Taint
from kubesched.backend.memory.evictions import BY_POD_GC, EvictionRecord, with_disruption_target
from kubesched.backend.memory.naming import timestamp
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "CONDITION_TAINTS",
    "EVICTION_LIMITER_QPS",
    "LARGE_CLUSTER_SIZE_THRESHOLD",
    "NODE_MONITOR_GRACE_PERIOD",
    "NODE_MONITOR_PERIOD",
    "NOT_READY_TAINT",
    "POD_GC_CHECK_PERIOD",
    "POD_GC_MESSAGE",
    "POD_GC_QUARANTINE",
    "SECONDARY_EVICTION_LIMITER_QPS",
    "UNHEALTHY_ZONE_THRESHOLD",
    "UNREACHABLE_TAINT",
    "NodeLifecycleController",
    "zone_key",
]

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

NODE_MONITOR_PERIOD = 5.0
"""``--node-monitor-period``: how often the controller looks at every node."""
NODE_MONITOR_GRACE_PERIOD = 50.0
"""``--node-monitor-grace-period`` (v1.36 default): a node silent this long is Unknown."""
EVICTION_LIMITER_QPS = 0.1
"""``--node-eviction-rate``: nodes per second given the NoExecute taint, per zone."""
SECONDARY_EVICTION_LIMITER_QPS = 0.01
"""``--secondary-node-eviction-rate``: the same in a partially disrupted zone."""
LARGE_CLUSTER_SIZE_THRESHOLD = 50
"""``--large-cluster-size-threshold``: smaller zones stop tainting when partially disrupted."""
UNHEALTHY_ZONE_THRESHOLD = 0.55
"""``--unhealthy-zone-threshold``: the fraction of not-Ready nodes (at least 3) that makes
a zone partially disrupted."""
POD_GC_QUARANTINE = 40.0
"""``quarantineTime``: seconds the pod garbage collector waits before deleting the pods of
a node that does not exist (deleted, or never created)."""
POD_GC_CHECK_PERIOD = 20.0
"""``gcCheckPeriod``: how often the pod garbage collector looks at every pod."""
POD_GC_MESSAGE = "PodGC: node no longer exists"
"""The message of the ``DisruptionTarget`` condition pod GC sets on an orphaned pod."""

CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY_TAINT,
    ("Ready", "Unknown"): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
"""``nodeConditionToTaintKeyStatusMap``: the NoSchedule taint each node condition gives."""

_NO_EXECUTE_KEYS = (NOT_READY_TAINT, UNREACHABLE_TAINT)

_NORMAL, _PARTIAL, _FULL = "Normal", "PartialDisruption", "FullDisruption"


def zone_key(node: Node) -> str:
    """``GetZoneKey``: region and zone labels (empty when the node has neither)."""
    labels = node.metadata.labels
    region = labels.get("topology.kubernetes.io/region", "")
    zone = labels.get("topology.kubernetes.io/zone", "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def ready_status(node: Node) -> str:
    """The Ready condition's status; a node without one (a hand-written manifest) is
    taken as Ready, as the embedded cluster's nodes are."""
    for c in node.status.conditions:
        if c.type == "Ready":
            return c.status
    return "True"


def _condition_taints(node: Node) -> set[str]:
    want = {
        CONDITION_TAINTS[(c.type, c.status)]
        for c in node.status.conditions
        if (c.type, c.status) in CONDITION_TAINTS
    }
    if node.spec.unschedulable:
        want.add(UNSCHEDULABLE_TAINT)
    return want


def _next_tick(now: float, period: float) -> float:
    return math.ceil(now / period - 1e-9) * period


class NodeLifecycleController:
    """Upstream's node lifecycle controller, for the node failures a timeline causes.

    * Taint nodes by condition: the NoSchedule taints of :data:`CONDITION_TAINTS` and
      ``node.kubernetes.io/unschedulable`` follow the conditions and ``spec.unschedulable``
      at once.
    * Heartbeats: a node whose kubelet stopped posting (:meth:`stop_heartbeats`) has all
      its conditions set ``Unknown`` by the first monitor pass (every 5 s) after the
      50 s grace period.
    * Taint-based eviction: a not-Ready node gets ``not-ready:NoExecute``, an Unknown one
      ``unreachable:NoExecute`` (swapped at once when it has the other), through a
      per-zone queue limited to 0.1 node/s (0.01 in a partially disrupted zone of more
      than 50 nodes, none in a smaller one; none at all, and every such taint removed,
      when every zone is fully disrupted); a Ready node loses them at once.
    * Pod GC (``gcOrphaned``): the pods of a deleted node are marked Failed and deleted
      40 s later; a pod bound to a node that never existed is found by the collector's
      next pass (every 20 s), and deleted the same way once the node has been missing
      for the 40 s quarantine (at the first pass after it).
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._silent_since: dict[str, float] = {}
        self._queues: dict[str, dict[str, None]] = {}  # zone -> nodes awaiting the taint
        self._next_token: dict[str, float] = {}  # zone -> when its limiter has a token
        self._ticks: set[float] = set()
        self._deleted: set[str] = set()  # nodes deleted during the run
        self._gc_due: set[tuple[str, float]] = set()  # (missing node, pod GC pass) set
        self.pod_gc = True
        """Whether the pod garbage collector runs (kube-controller-manager's
        ``pod-garbage-collector`` controller, on by default): off, as on a control plane
        without it, the pods of a missing node stay as they are."""

    # -- the timeline's handles ------------------------------------------------------------

    def set_ready(self, name: str, status: str, reason: str, message: str) -> None:
        """The kubelet posts Ready=``status`` (heartbeats resume); pressure conditions that
        were Unknown become False, and the pod deletions it could not confirm complete."""
        if self._silent_since.pop(name, None) is not None:
            self.cluster.release_terminating(name)
        node: Node = self.cluster.get("Node", None, name)  # type: ignore[assignment]
        new = node.model_copy(deep=True)
        now = timestamp(self.cluster.now())
        conds = [c for c in new.status.conditions if c.type != "Ready"]
        for c in conds:
            if c.status == "Unknown":
                c.status, c.last_transition_time = "False", now
        old_ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
        changed = old_ready is None or old_ready.status != status
        conds.insert(
            0,
            NodeCondition(
                type="Ready",
                status=status,
                reason=reason,
                message=message,
                last_heartbeat_time=now,
                last_transition_time=now if changed else old_ready.last_transition_time,
            ),
        )
        new.status.conditions = conds
        self.cluster._write(new, node)
        self._schedule(_next_tick(self.cluster.now(), NODE_MONITOR_PERIOD))

    def is_silent(self, name: str) -> bool:
        """Whether the node's kubelet has stopped posting status."""
        return name in self._silent_since

    def stop_heartbeats(self, name: str) -> None:
        """The kubelet stops posting status (the node is unreachable from now on)."""
        self.cluster.get("Node", None, name)
        now = self.cluster.now()
        self._silent_since.setdefault(name, now)
        self._schedule(_next_tick(now + NODE_MONITOR_GRACE_PERIOD, NODE_MONITOR_PERIOD))

    # -- watch -----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Taint nodes by condition; GC the pods of deleted or missing nodes."""
        if kind == "Pod":
            self._quarantine_missing_node(event)
            return
        if kind != "Node":
            return
        node: Node = event.object  # type: ignore[assignment]
        if event.type is EventType.DELETED:
            self._deleted.add(node.name)
            self._silent_since.pop(node.name, None)
            for q in self._queues.values():
                q.pop(node.name, None)
            when = self.cluster.now() + POD_GC_QUARANTINE
            self.cluster.call_at(when, lambda: self._gc_orphans(node.name))
            return
        self._deleted.discard(node.name)
        old: Node | None = event.old  # type: ignore[assignment]
        if old is not None:
            self._no_schedule_pass(old, node)
        if old is None or ready_status(old) != ready_status(node):
            self._schedule(_next_tick(self.cluster.now(), NODE_MONITOR_PERIOD))

    def _no_schedule_pass(self, old: Node, node: Node) -> None:
        """``doNoScheduleTaintingPass``, for what changed: the taint of a condition (or of
        ``spec.unschedulable``) that turned on is added, one that turned off removed.
        Taints a manifest wrote by hand on a node are left as they are."""
        before, want = _condition_taints(old), _condition_taints(node)
        if before == want:
            return
        have = {t.key for t in node.spec.taints if t.effect == "NoSchedule"}
        drop = before - want
        now = timestamp(self.cluster.now())
        taints = [t for t in node.spec.taints if not (t.effect == "NoSchedule" and t.key in drop)]
        taints += [Taint(key=k, effect="NoSchedule", time_added=now) for k in sorted(want - have)]
        if taints != node.spec.taints:
            self._write_taints(node, taints)

    def _write_taints(self, node: Node, taints: list[Taint]) -> None:
        new = node.model_copy(deep=True)
        new.spec.taints = taints
        new.metadata.resource_version = None
        self.cluster.update(new)

    # -- monitor ---------------------------------------------------------------------------

    def _schedule(self, when: float) -> None:
        if when in self._ticks:
            return
        self._ticks.add(when)

        def tick() -> None:
            self._ticks.discard(when)
            self._monitor()

        self.cluster.call_at(when, tick)

    def _monitor(self) -> None:
        """``monitorNodeHealth`` + ``handleDisruption`` + ``doNoExecuteTaintingPass``."""
        cluster = self.cluster
        now = cluster.now()
        for name, since in list(self._silent_since.items()):
            node = cluster.try_get("Node", None, name)
            if node is None:
                del self._silent_since[name]
            elif now - since >= NODE_MONITOR_GRACE_PERIOD and ready_status(node) != "Unknown":
                self._mark_unknown(node)  # type: ignore[arg-type]
            elif now - since < NODE_MONITOR_GRACE_PERIOD:
                self._schedule(_next_tick(since + NODE_MONITOR_GRACE_PERIOD, NODE_MONITOR_PERIOD))
        nodes: list[Node] = cluster.objects("Node")  # type: ignore[assignment]
        states = self._zone_states(nodes)
        all_full = bool(states) and all(s == _FULL for s, _ in states.values())
        if all_full:
            # "Entering master disruption mode": every NoExecute lifecycle taint goes and
            # no node is tainted until some zone recovers.
            self._queues.clear()
            for node in nodes:
                if any(c.type == "Ready" for c in node.status.conditions):
                    self._untaint_no_execute(node)
            return
        for node in nodes:
            if not any(c.type == "Ready" for c in node.status.conditions):
                # A manifest's node that reports nothing: its taints are the manifest's.
                continue
            status = ready_status(node)
            zone = zone_key(node)
            if status == "True":
                self._queues.get(zone, {}).pop(node.name, None)
                self._untaint_no_execute(node)
                continue
            want = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
            other = UNREACHABLE_TAINT if want == NOT_READY_TAINT else NOT_READY_TAINT
            keys = {t.key for t in node.spec.taints if t.effect == "NoExecute"}
            if want in keys:
                continue
            if other in keys:  # SwapNodeControllerTaint: not rate limited
                self._set_no_execute(node, want)
                continue
            self._queues.setdefault(zone, {})[node.name] = None
        for zone, queue in self._queues.items():
            state, size = states.get(zone, (_NORMAL, 0))
            qps = EVICTION_LIMITER_QPS
            if state == _PARTIAL:
                qps = SECONDARY_EVICTION_LIMITER_QPS if size > LARGE_CLUSTER_SIZE_THRESHOLD else 0.0
            while queue and qps > 0:
                token = self._next_token.get(zone, -math.inf)
                if token > now:
                    self._schedule(token)
                    break
                name = next(iter(queue))
                del queue[name]
                node = cluster.try_get("Node", None, name)
                if node is None or ready_status(node) == "True":  # type: ignore[arg-type]
                    continue
                want = NOT_READY_TAINT if ready_status(node) == "False" else UNREACHABLE_TAINT  # type: ignore[arg-type]
                self._set_no_execute(node, want)  # type: ignore[arg-type]
                self._next_token[zone] = now + 1.0 / qps

    def _zone_states(self, nodes: list[Node]) -> dict[str, tuple[str, int]]:
        """``ComputeZoneState`` per zone: (state, zone size)."""
        counts: dict[str, list[int]] = {}
        for node in nodes:
            c = counts.setdefault(zone_key(node), [0, 0])
            c[0 if ready_status(node) == "True" else 1] += 1
        out = {}
        for zone, (ready, not_ready) in counts.items():
            if ready == 0 and not_ready > 0:
                state = _FULL
            elif not_ready > 2 and not_ready / (ready + not_ready) >= UNHEALTHY_ZONE_THRESHOLD:
                state = _PARTIAL
            else:
                state = _NORMAL
            out[zone] = (state, ready + not_ready)
        return out

    def _mark_unknown(self, node: Node) -> None:
        new = node.model_copy(deep=True)
        now = timestamp(self.cluster.now())
        conds = new.status.conditions
        if not any(c.type == "Ready" for c in conds):
            conds.insert(0, NodeCondition(type="Ready", status="True"))
        for c in conds:
            if c.type in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
                c.status = "Unknown"
                c.reason = "NodeStatusUnknown"
                c.message = "Kubelet stopped posting node status."
                c.last_transition_time = now
        self.cluster._write(new, node)

    def _set_no_execute(self, node: Node, key: str) -> None:
        current = self.cluster.get("Node", None, node.name)
        taints = [
            t
            for t in current.spec.taints
            if not (t.effect == "NoExecute" and t.key in _NO_EXECUTE_KEYS)
        ]  # type: ignore[attr-defined]
        taints.append(Taint(key=key, effect="NoExecute", time_added=timestamp(self.cluster.now())))
        self._write_taints(current, taints)  # type: ignore[arg-type]

    def _untaint_no_execute(self, node: Node) -> None:
        if any(t.effect == "NoExecute" and t.key in _NO_EXECUTE_KEYS for t in node.spec.taints):
            taints = [
                t
                for t in node.spec.taints
                if not (t.effect == "NoExecute" and t.key in _NO_EXECUTE_KEYS)
            ]
            self._write_taints(node, taints)

    # -- pod GC ----------------------------------------------------------------------------

    def _quarantine_missing_node(self, event: WatchEvent) -> None:
        """A pod newly bound to a node that does not exist: the collector's next pass
        puts the node in quarantine, and the first pass after it deletes the pod (if the
        node is still missing). Pods of a node deleted during the run are handled by the
        node's deletion (and counted as evicted: they ran there)."""
        if event.type is EventType.DELETED:
            return
        pod = event.object
        node_name = pod.spec.node_name  # type: ignore[attr-defined]
        if not node_name or (event.old is not None and event.old.spec.node_name == node_name):  # type: ignore[attr-defined]
            return
        if node_name in self._deleted or self.cluster.try_get("Node", None, node_name) is not None:
            return
        seen = _next_tick(self.cluster.now(), POD_GC_CHECK_PERIOD)
        due = _next_tick(seen + POD_GC_QUARANTINE, POD_GC_CHECK_PERIOD)
        if (node_name, due) in self._gc_due:
            return
        self._gc_due.add((node_name, due))

        def gc() -> None:
            self._gc_due.discard((node_name, due))
            self._gc_orphans(node_name, deleted=False)

        self.cluster.call_at(due, gc)

    def _gc_orphans(self, node_name: str, deleted: bool = True) -> None:
        """``gcOrphaned``: the node is still gone, so its pods are marked Failed (with
        ``DisruptionTarget``, reason ``DeletionByPodGC``) and deleted at once. The pods
        of a node ``deleted`` during the run count as evicted; those of a node that
        never existed never ran, and are simply deleted."""
        cluster = self.cluster
        if not self.pod_gc or cluster.try_get("Node", None, node_name) is not None:
            return
        message = POD_GC_MESSAGE
        for pod in cluster.pods_on_node(node_name):
            new = with_disruption_target(pod, "DeletionByPodGC", message, cluster.now())
            if new.status.phase not in ("Succeeded", "Failed"):
                new.status.phase = "Failed"
            if deleted:
                cluster.record_eviction(
                    EvictionRecord.of(
                        pod,
                        time=cluster.now(),
                        node=node_name,
                        by=BY_POD_GC,
                        reason=f"node {node_name} was deleted",
                        message=message,
                        grace_period_seconds=0.0,
                    )
                )
            cluster._write(new, pod)
            cur = cluster.try_get("Pod", pod.namespace, pod.name)
            if cur is not None:
                cluster.delete_pod(cur, 0)  # type: ignore[arg-type]
