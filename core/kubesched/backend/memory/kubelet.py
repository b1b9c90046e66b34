"""The kubelets: pods running to their end in virtual time, and node-pressure eviction."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api import (
    EPHEMERAL_STORAGE,
    MEMORY,
    KubeletConfiguration,
    Node,
    NodeCondition,
    Pod,
    parse_quantity,
    pod_requests,
)
from kubesched.api.kubelet import KUBELET_CONFIG_ANNOTATION, Threshold
from kubesched.backend.memory.evictions import BY_KUBELET, EvictionRecord, with_disruption_target
from kubesched.backend.memory.naming import EPOCH, timestamp
from kubesched.backend.protocol import EventType, RecordedEvent, WatchEvent
from kubesched.notices import notice

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "CAPACITY_ANNOTATION_PREFIX",
    "DEFAULT_JOB_POD_RUN_SECONDS",
    "EXIT_CODE_ANNOTATION",
    "HOUSEKEEPING_INTERVAL",
    "RUN_SECONDS_ANNOTATION",
    "USAGE_ANNOTATION_PREFIX",
    "KubeletEvictionManager",
    "PodRunner",
    "format_binary",
    "rank_pods",
]

USAGE_ANNOTATION_PREFIX = "usage.kubesched.io/"
"""Declared usage: on a Pod ``memory``, ``ephemeral-storage``, ``inodes``, ``pids`` (the pod's
working set, disk, inodes, processes; its requests, or 0, when absent); on a Node the same
for what runs outside pods (system daemons), plus ``imagefs`` (images on a dedicated
image filesystem)."""
CAPACITY_ANNOTATION_PREFIX = "capacity.kubesched.io/"
"""Node capacities the Node object does not carry: ``imagefs`` (a dedicated image
filesystem; without it images share nodefs), ``inodes`` (of nodefs), ``pids`` (pid_max).
A signal whose capacity is unknown is not observed, as the kubelet without stats."""

RUN_SECONDS_ANNOTATION = "kubesched.io/run-seconds"
"""On a Pod (or a workload's pod template): how many seconds its containers run once it
has started on a node, then they exit and the pod ends (``restartPolicy`` Never or
OnFailure); a duration such as ``90``, ``1.5``. Without it a pod runs on, except a Job's
pods within the run's time window (a timeline), which run
:data:`DEFAULT_JOB_POD_RUN_SECONDS`."""
EXIT_CODE_ANNOTATION = "kubesched.io/exit-code"
"""On a Pod (or pod template): the exit code its containers end with after their run;
``0`` (the default) makes the pod Succeeded, any other Failed."""
DEFAULT_JOB_POD_RUN_SECONDS = 60.0
"""How long a Job's pod runs when its template does not say (:data:`RUN_SECONDS_ANNOTATION`)."""

HOUSEKEEPING_INTERVAL = 10.0
"""``--housekeeping-interval``: how often the eviction manager synchronizes."""
IMMEDIATE_EVICTION_GRACE_PERIOD = 1
"""``immediateEvictionGracePeriodSeconds``: a hard threshold kills with 1 s."""
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""``scheduling.SystemCriticalPriority``: pods at or above it are never evicted."""

REASON_EVICTED = "Evicted"
NODE_LOW_FMT = "The node was low on resource: {}. "
THRESHOLD_MET_FMT = "Threshold quantity: {}, available: {}. "
CONTAINER_FMT = "Container {} was using {}, request is {}, has larger consumption of {}. "

SIGNAL_CONDITION = {
    "memory.available": "MemoryPressure",
    "nodefs.available": "DiskPressure",
    "nodefs.inodesFree": "DiskPressure",
    "imagefs.available": "DiskPressure",
    "imagefs.inodesFree": "DiskPressure",
    "pid.available": "PIDPressure",
}
SIGNAL_RESOURCE = {
    "memory.available": MEMORY,
    "nodefs.available": EPHEMERAL_STORAGE,
    "nodefs.inodesFree": "inodes",
    "imagefs.available": EPHEMERAL_STORAGE,
    "imagefs.inodesFree": "inodes",
    "pid.available": "pids",
}
# The kubelet's status texts per condition: (type, reason and message when True, when False).
_CONDITION_TEXT = {
    "MemoryPressure": (
        ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
        ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ),
    "DiskPressure": (
        ("KubeletHasDiskPressure", "kubelet has disk pressure"),
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ),
    "PIDPressure": (
        ("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
        ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ),
}

_BINARY_SUFFIXES = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)


def format_binary(n: int) -> str:
    """A byte count as Go's ``resource.NewQuantity(n, BinarySI).String()``: the largest
    binary suffix that divides it exactly (``1536Mi``), else the plain number."""
    if n == 0:
        return "0"
    for suffix, size in _BINARY_SUFFIXES:
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def _annotation(obj: Any, prefix: str, name: str) -> int | None:
    text = obj.metadata.annotations.get(prefix + name)
    if text is None:
        return None
    try:
        return parse_quantity(text).value()
    except ValueError:
        return None  # validated where it is written (the timeline); a bad manifest value is 0


def _is_critical(pod: Pod) -> bool:
    """``IsCriticalPod``: static, mirror, or system-critical priority."""
    ann = pod.metadata.annotations
    source = ann.get("kubernetes.io/config.source")
    static = source is not None and source != "api"
    return (
        static
        or "kubernetes.io/config.mirror" in ann
        or (pod.spec.priority or 0) >= SYSTEM_CRITICAL_PRIORITY
    )


@dataclass
class PodUsage:
    """A pod's usage and requests of the resource being reclaimed."""

    pod: Pod
    usage: int
    request: int

    @property
    def exceeds(self) -> bool:
        """Usage above requests: first in line."""
        return self.usage > self.request


def pod_usage(pod: Pod, resource: str) -> tuple[int, int]:
    """(usage, request) of ``resource`` (memory, ephemeral-storage, inodes, pids)."""
    request = pod_requests(pod).get(resource, 0) if resource in (MEMORY, EPHEMERAL_STORAGE) else 0
    usage = _annotation(pod, USAGE_ANNOTATION_PREFIX, resource)
    return (request if usage is None else usage), request


def _cmp(a: int | bool, b: int | bool) -> int:
    return (a > b) - (a < b)


def rank_pods(pods: list[Pod], resource: str) -> list[PodUsage]:
    """The kubelet's ranking for ``resource``: for memory and disk, pods whose usage
    exceeds their requests first, then lower priority, then larger usage above requests;
    for pids, priority only. Ties keep ``pods``' order (the kubelet's is unspecified)."""
    ranked = [PodUsage(p, *pod_usage(p, resource)) for p in pods]

    def compare(a: PodUsage, b: PodUsage) -> int:
        if resource != "pids":
            c = _cmp(b.exceeds, a.exceeds)
            if c:
                return c
        c = _cmp(a.pod.spec.priority or 0, b.pod.spec.priority or 0)
        if c or resource == "pids":
            return c
        return _cmp(b.usage - b.request, a.usage - a.request)

    ranked.sort(key=functools.cmp_to_key(compare))
    return ranked


@dataclass
class _NodeState:
    """One kubelet's eviction-manager memory."""

    first_observed: dict[Threshold, float] = field(default_factory=dict)
    conditions_last_observed: dict[str, float] = field(default_factory=dict)
    thresholds_met: list[Threshold] = field(default_factory=list)
    busy_until: float = -math.inf  # a kill in progress: no new eviction before
    tick: float | None = None


class KubeletEvictionManager:
    """Each node's kubelet eviction manager (``pkg/kubelet/eviction``), in virtual time.

    Every :data:`HOUSEKEEPING_INTERVAL` while something may change, a node's signals are
    observed from its capacity and the declared usage of its pods (their requests when
    not declared) and of the node itself; thresholds met (hard, or soft for their grace
    period; previously met ones until their minimum reclaim is reached) set the
    MemoryPressure / DiskPressure / PIDPressure conditions (kept for the pressure
    transition period) and evict at most one pod per pass, chosen by the kubelet's
    ranking. The pod gets ``DisruptionTarget`` (``TerminationByKubelet``), then after the
    grace period (1 s for a hard threshold, ``min(evictionMaxPodGracePeriod,
    terminationGracePeriodSeconds)`` for a soft one) phase ``Failed`` with reason
    ``Evicted`` and the kubelet's message. PDBs are not consulted; critical pods are
    skipped.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._states: dict[str, _NodeState] = {}
        self._configs: dict[str, KubeletConfiguration] = {}

    # -- configuration and observation -----------------------------------------------------

    def config_for(self, node: Node) -> KubeletConfiguration:
        """The node's KubeletConfiguration (annotation, else ``default``, else defaults)."""
        name = node.metadata.annotations.get(KUBELET_CONFIG_ANNOTATION, "default")
        cfg = self.cluster.try_get("KubeletConfiguration", None, name)
        if cfg is None:
            cfg = self._configs.get("")
            if cfg is None:
                cfg = self._configs[""] = KubeletConfiguration()
        return cfg  # type: ignore[return-value]

    def _pods_on(self, node: str) -> list[Pod]:
        return [
            p
            for p in self.cluster.pods_on_node(node)
            if p.status.phase not in ("Succeeded", "Failed")
        ]

    def observe(self, node: Node, pods: list[Pod]) -> dict[str, tuple[int, int]]:
        """``makeSignalObservations``: signal → (available, capacity), for the signals
        whose capacity is known."""

        def cap(name: str) -> int | None:
            q = node.status.capacity.get(name) or node.status.allocatable.get(name)
            return q.value() if q is not None else None

        def node_use(name: str) -> int:
            return _annotation(node, USAGE_ANNOTATION_PREFIX, name) or 0

        def pods_use(resource: str) -> int:
            return sum(pod_usage(p, resource)[0] for p in pods)

        obs: dict[str, tuple[int, int]] = {}
        mem = cap(MEMORY)
        if mem is not None:
            obs["memory.available"] = (max(0, mem - node_use(MEMORY) - pods_use(MEMORY)), mem)
        imagefs_cap = _annotation(node, CAPACITY_ANNOTATION_PREFIX, "imagefs")
        nodefs = cap(EPHEMERAL_STORAGE)
        if nodefs is not None:
            used = node_use(EPHEMERAL_STORAGE) + pods_use(EPHEMERAL_STORAGE)
            if imagefs_cap is None:
                used += node_use("imagefs")  # images share the node's filesystem
            obs["nodefs.available"] = (max(0, nodefs - used), nodefs)
        if imagefs_cap is not None:
            obs["imagefs.available"] = (max(0, imagefs_cap - node_use("imagefs")), imagefs_cap)
        elif "nodefs.available" in obs:
            obs["imagefs.available"] = obs["nodefs.available"]
        inodes = _annotation(node, CAPACITY_ANNOTATION_PREFIX, "inodes")
        if inodes is not None:
            free = max(0, inodes - node_use("inodes") - pods_use("inodes"))
            obs["nodefs.inodesFree"] = obs["imagefs.inodesFree"] = (free, inodes)
        pids = _annotation(node, CAPACITY_ANNOTATION_PREFIX, "pids")
        if pids is not None:
            obs["pid.available"] = (max(0, pids - node_use("pids") - pods_use("pids")), pids)
        return obs

    # -- watch -----------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Mark the nodes whose signals may have moved; their next pass evaluates them."""
        if kind == "Pod":
            for pod in (event.old, event.object):
                if pod is not None and pod.spec.node_name:  # type: ignore[attr-defined]
                    self._dirty(pod.spec.node_name)  # type: ignore[attr-defined]
        elif kind == "Node":
            if event.type is EventType.DELETED:
                self._states.pop(event.object.name, None)
            elif event.old is None or (
                event.old.metadata.annotations != event.object.metadata.annotations
                or event.old.status.capacity != event.object.status.capacity
                or event.old.status.allocatable != event.object.status.allocatable
            ):
                self._dirty(event.object.name)
        elif kind == "KubeletConfiguration":
            for node in self.cluster.iter_objects("Node"):
                self._dirty(node.name)

    def _dirty(self, node: str, earliest: float | None = None) -> None:
        state = self._states.setdefault(node, _NodeState())
        now = self.cluster.now() if earliest is None else earliest
        when = max(
            math.ceil(now / HOUSEKEEPING_INTERVAL - 1e-9) * HOUSEKEEPING_INTERVAL,
            state.busy_until,
        )
        if state.tick is not None and state.tick <= when:
            return
        state.tick = when

        def run() -> None:
            if state.tick == when:
                state.tick = None
                self.synchronize(node)

        self.cluster.call_at(when, run)

    # -- the pass --------------------------------------------------------------------------

    def synchronize(self, name: str) -> Pod | None:
        """One eviction-manager pass on node ``name``; the pod it evicted, if any."""
        cluster = self.cluster
        node: Node | None = cluster.try_get("Node", None, name)  # type: ignore[assignment]
        if node is None or cluster.node_lifecycle.is_silent(name):
            return None
        state = self._states.setdefault(name, _NodeState())
        now = cluster.now()
        cfg = self.config_for(node)
        pods = self._pods_on(name)
        obs = self.observe(node, pods)
        thresholds = [t for t in cfg.thresholds() if _met(t, obs, False)]
        for t in state.thresholds_met:  # not yet reclaimed past their minimum
            if t not in thresholds and _met(t, obs, True):
                thresholds.append(t)
        state.first_observed = {t: state.first_observed.get(t, now) for t in thresholds}
        for t in thresholds:
            state.conditions_last_observed[SIGNAL_CONDITION[t.signal]] = now
        period = cfg.pressure_transition_period()
        conditions = {c for c, at in state.conditions_last_observed.items() if now - at < period}
        state.conditions_last_observed = {
            c: at for c, at in state.conditions_last_observed.items() if c in conditions
        }
        due = [t for t in thresholds if now - state.first_observed[t] >= t.grace_period]
        state.thresholds_met = due
        self._write_conditions(node, conditions)
        pending = bool(thresholds) or bool(conditions)
        evicted = None
        if due and now >= state.busy_until:
            # byEvictionPriority: memory first; the rest in configuration order.
            reclaim = sorted(due, key=lambda t: t.signal != "memory.available")[0]
            evicted = self._evict(node, cfg, reclaim, pods, obs, due, state)
        if pending:
            nxt = max(now + HOUSEKEEPING_INTERVAL, state.busy_until)
            if thresholds and not due:  # a soft threshold waits for its grace period
                nxt = min(nxt, min(state.first_observed[t] + t.grace_period for t in thresholds))
            self._dirty(name, max(nxt, now + 1e-9))
        return evicted

    def _write_conditions(self, node: Node, true: set[str]) -> None:
        current = {c.type: c for c in node.status.conditions}
        new_conds = list(node.status.conditions)
        changed = False
        stamp = timestamp(self.cluster.now())
        for ctype, (yes, no) in _CONDITION_TEXT.items():
            status = "True" if ctype in true else "False"
            cur = current.get(ctype)
            if cur is None and status == "False":
                continue  # never reported: a manifest's node without the condition
            if cur is not None and cur.status == status:
                continue
            reason, message = yes if status == "True" else no
            cond = NodeCondition(
                type=ctype,
                status=status,
                reason=reason,
                message=message,
                last_heartbeat_time=stamp,
                last_transition_time=stamp,
            )
            new_conds = [c for c in new_conds if c.type != ctype] + [cond]
            changed = True
        if changed:
            new = node.model_copy(deep=True)
            new.status.conditions = new_conds
            self.cluster._write(new, node)

    def _evict(
        self,
        node: Node,
        cfg: KubeletConfiguration,
        threshold: Threshold,
        pods: list[Pod],
        obs: dict[str, tuple[int, int]],
        due: list[Threshold],
        state: _NodeState,
    ) -> Pod | None:
        cluster = self.cluster
        resource = SIGNAL_RESOURCE[threshold.signal]
        self._event(
            "Node", "", node.name, "EvictionThresholdMet", f"Attempting to reclaim {resource}"
        )
        active = [
            p
            for p in pods
            if not any(
                c.type == "DisruptionTarget" and c.reason == "TerminationByKubelet"
                for c in p.status.conditions
            )
        ]
        ranked = rank_pods(active, resource)
        available, capacity = obs[threshold.signal]
        quantity = threshold.value(capacity)
        for candidate in ranked:
            pod = candidate.pod
            if _is_critical(pod):
                continue
            if threshold.hard:
                grace = IMMEDIATE_EVICTION_GRACE_PERIOD
            else:
                grace = cfg.eviction_max_pod_grace_period
                if pod.spec.termination_grace_period_seconds is not None:
                    grace = min(grace, pod.spec.termination_grace_period_seconds)
            message = self._message(resource, threshold, quantity, available, candidate)
            self._kill(pod, grace, message)
            cluster.record_eviction(
                EvictionRecord.of(
                    pod,
                    time=cluster.now(),
                    node=node.name,
                    by=BY_KUBELET,
                    reason=_reason(threshold, resource, quantity, available, capacity),
                    message=message,
                    grace_period_seconds=float(grace),
                    details={
                        "signal": threshold.signal,
                        "resource": resource,
                        "threshold": threshold.text,
                        "thresholdQuantity": quantity,
                        "available": available,
                        "capacity": capacity,
                        "hard": threshold.hard,
                        "minimumReclaim": threshold.min_reclaim(capacity),
                        "ranking": [
                            {
                                "pod": r.pod.key,
                                "exceedsRequests": r.exceeds,
                                "priority": r.pod.spec.priority or 0,
                                "usage": r.usage,
                                "request": r.request,
                                "critical": _is_critical(r.pod),
                            }
                            for r in ranked[:10]
                        ],
                        "thresholdsMet": [t.text for t in due],
                    },
                )
            )
            state.busy_until = cluster.now() + grace
            return pod
        return None

    def _message(
        self, resource: str, threshold: Threshold, quantity: int, available: int, u: PodUsage
    ) -> str:
        """``evictionMessage``: the resource, the threshold, and each container whose usage
        exceeds its request (the pod's usage beyond its request counts against its first
        container)."""
        msg = NODE_LOW_FMT.format(resource)
        msg += THRESHOLD_MET_FMT.format(_fmt(resource, quantity), _fmt(resource, available))
        if resource in (MEMORY, EPHEMERAL_STORAGE):
            excess = u.usage - u.request
            for i, c in enumerate(u.pod.spec.containers):
                q = c.resources.requests.get(resource)
                request = q.value() if q is not None else 0
                usage = request + (excess if i == 0 else 0)
                if usage > request:
                    msg += CONTAINER_FMT.format(
                        c.name, format_binary(usage), _fmt_request(q), resource
                    )
        return msg

    def _kill(self, pod: Pod, grace: int, message: str) -> None:
        cluster = self.cluster
        cluster._write(
            with_disruption_target(pod, "TerminationByKubelet", message, cluster.now()), pod
        )
        self._event("Pod", pod.namespace, pod.name, REASON_EVICTED, message)
        uid = pod.metadata.uid

        def fail() -> None:
            cur: Pod | None = cluster.try_get("Pod", pod.namespace, pod.name)  # type: ignore[assignment]
            if (
                cur is None
                or cur.metadata.uid != uid
                or cur.status.phase in ("Succeeded", "Failed")
            ):
                return
            done = cur.model_copy(deep=True)
            done.status.phase = "Failed"
            done.status.reason = REASON_EVICTED
            done.status.message = message
            for c in done.status.conditions:
                if c.type == "Ready":
                    c.status = "False"
            cluster._write(done, cur)

        if grace <= 0:
            fail()
        else:
            cluster.call_at(cluster.now() + grace, fail)

    def _event(self, kind: str, namespace: str, name: str, reason: str, message: str) -> None:
        self.cluster.record_event(
            RecordedEvent(
                involved_kind=kind,
                involved_namespace=namespace,
                involved_name=name,
                type="Warning",
                reason=reason,
                message=message,
                reporting_controller="kubelet",
            )
        )


def _met(t: Threshold, obs: dict[str, tuple[int, int]], enforce_min_reclaim: bool) -> bool:
    """``thresholdsMet``: available below the threshold (plus its minimum reclaim)."""
    seen = obs.get(t.signal)
    if seen is None:
        return False
    available, capacity = seen
    quantity = t.value(capacity)
    if enforce_min_reclaim:
        quantity += t.min_reclaim(capacity)
    return quantity > available


def _reason(t: Threshold, resource: str, quantity: int, available: int, capacity: int) -> str:
    kind = "hard" if t.hard else "soft"
    if available < quantity:
        return f"{kind} eviction threshold {t.text} met (available {_fmt(resource, available)})"
    # Met again only through its minimum reclaim.
    target = quantity + t.min_reclaim(capacity)
    return (
        f"{kind} eviction threshold {t.text} not yet reclaimed: available "
        f"{_fmt(resource, available)} is below {_fmt(resource, target)} (threshold plus "
        "evictionMinimumReclaim)"
    )


def _fmt(resource: str, n: int) -> str:
    return format_binary(n) if resource in (MEMORY, EPHEMERAL_STORAGE) else str(n)


def _fmt_request(q: Any) -> str:
    return str(q) if q is not None else "0"


class PodRunner:
    """The kubelets running pods to their end, in virtual time.

    A pod bound to a node starts at once (phase Running, ``startTime``); one whose run
    has a length (:data:`RUN_SECONDS_ANNOTATION`, or a Job's pod within the run's time
    window) ends that long after
    its start: its containers exit with :data:`EXIT_CODE_ANNOTATION` and the pod becomes
    Succeeded (code 0) or Failed, ``Ready`` false with reason ``PodCompleted``. A pod
    whose ``restartPolicy`` is Always never ends (its container would restart); with
    OnFailure a non-zero exit fails the pod (the kubelet's restarts in place are not
    modelled). A pod deleted before its end goes as any deleted pod.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._noticed: set[str] = set()  # pods (or their controllers) told about

    def _notice(self, pod: Pod, message: str) -> None:
        """One notice per bare pod, or per controller for all its pods."""
        ref = pod.metadata.controller_ref
        key = ref.uid if ref is not None else (pod.metadata.uid or pod.key)
        if key in self._noticed:
            return
        self._noticed.add(key)
        who = f"{ref.kind} {pod.namespace}/{ref.name}" if ref is not None else f"Pod {pod.key}"
        notice(message, obj=who)

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Start the clock of a pod that has just started running."""
        if kind != "Pod" or event.type is EventType.DELETED:
            return
        pod: Pod = event.object  # type: ignore[assignment]
        old: Pod | None = event.old  # type: ignore[assignment]
        if not _running(pod) or (old is not None and _running(old)):
            return
        seconds = self.run_seconds(pod)
        if seconds is None:
            return
        if pod.spec.restart_policy == "Always":
            self._notice(
                pod,
                f"{RUN_SECONDS_ANNOTATION} is ignored: with restartPolicy Always the kubelet "
                "restarts the container, so the pod runs on",
            )
            return
        started = pod.status.start_time
        begin = (started - EPOCH).total_seconds() if started is not None else self.cluster.now()
        uid = pod.metadata.uid
        self.cluster.call_at(
            max(begin + seconds, self.cluster.now()),
            lambda: self._finish(pod.namespace, pod.name, uid),
            progress=True,
        )

    def run_seconds(self, pod: Pod) -> float | None:
        """How long ``pod`` runs once started, or None when it runs on."""
        text = pod.metadata.annotations.get(RUN_SECONDS_ANNOTATION)
        if text is not None:
            try:
                seconds = float(text)
            except ValueError:
                seconds = math.nan
            if math.isfinite(seconds) and seconds >= 0:
                return seconds
            self._notice(
                pod,
                f"{RUN_SECONDS_ANNOTATION}: {text!r} is not a number of seconds; the pod runs on",
            )
            return None
        ref = pod.metadata.controller_ref
        if ref is not None and ref.kind == "Job":
            if self.cluster.schedule_until is None:
                # No time window (no timeline): nothing says how long the run lasts, so a
                # snapshot's Job pods keep running, as they are seen when captured.
                self._notice(
                    pod,
                    f"its pods run on: without {RUN_SECONDS_ANNOTATION} on the template they "
                    f"run {DEFAULT_JOB_POD_RUN_SECONDS:g} s only within a --timeline's window",
                )
                return None
            return DEFAULT_JOB_POD_RUN_SECONDS
        return None

    def _finish(self, namespace: str, name: str, uid: str | None) -> None:
        cluster = self.cluster
        cur: Pod | None = cluster.try_get("Pod", namespace, name)  # type: ignore[assignment]
        if cur is None or cur.metadata.uid != uid or not _running(cur):
            return
        code = cur.metadata.annotations.get(EXIT_CODE_ANNOTATION, "0").strip()
        done = cur.model_copy(deep=True)
        done.status.phase = "Succeeded" if code in ("0", "") else "Failed"
        stamp = timestamp(cluster.now())
        for c in done.status.conditions:
            if c.type in ("Ready", "ContainersReady") and c.status != "False":
                c.status = "False"
                c.reason = "PodCompleted"
                c.last_transition_time = stamp
        cluster._write(done, cur)


def _running(pod: Pod) -> bool:
    return bool(pod.spec.node_name) and pod.status.phase == "Running"
