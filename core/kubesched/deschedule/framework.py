"""The descheduler's plugin framework: the plugin interface, its entry-point registry, and
the handle through which a strategy lists pods and evicts them (Eviction API, limits,
evictor filters)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import metadata as importlib_metadata
from typing import Any, Protocol

from kubesched.api import (
    Node,
    Pod,
    RequiredNodeAffinity,
    find_untolerated_taint,
    node_allocatable,
    pod_requests,
)
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.evictions import BY_DESCHEDULER, EvictionRecord
from kubesched.backend.memory.naming import EPOCH
from kubesched.errors import UserInputError

ENTRY_POINT_GROUP = "kubesched.descheduler_plugins"
"""The entry-point group of descheduler plugins, built-in or not."""

FINISHED = ("Succeeded", "Failed")
"""Phases of pods that hold no resources any more (not counted in utilisation)."""
RESOURCE_NAMES = ("cpu", "memory", "pods")
"""The resources utilisation is measured in (requests over allocatable)."""


class DeschedulerPlugin(Protocol):
    """What a descheduler plugin is: a class with a ``name``, an optional pydantic ``Args``
    model of its ``pluginConfig`` args, a constructor ``(args, handle)`` and one or more of
    the extension points, which the runner calls per profile in this order:

    - ``deschedule(nodes)``: evict pods that break a rule (taints, affinity, age);
    - ``balance(nodes)``: evict pods to even out (or pack) the nodes;
    - ``filter(pod) -> str | None`` and ``pre_eviction_filter(pod) -> str | None``: an
      evictor's veto, the reason a pod must not be evicted (None: it may).
    """

    name: str


@dataclass
class PluginEntry:
    """A registered descheduler plugin: its class and the extension points it implements."""

    name: str
    cls: type
    points: tuple[str, ...]


EXTENSION_POINTS = ("deschedule", "balance", "filter", "pre_eviction_filter")


def discover(group: str = ENTRY_POINT_GROUP) -> dict[str, PluginEntry]:
    """Every descheduler plugin of the entry-point ``group``, by name."""
    out: dict[str, PluginEntry] = {}
    for ep in importlib_metadata.entry_points(group=group):
        try:
            cls = ep.load()
        except Exception as err:  # a broken third-party package: say which, not a traceback
            raise UserInputError(
                f"cannot load descheduler plugin {ep.name} ({ep.value}): {err}"
            ) from err
        out[ep.name] = entry_of(cls, ep.name)
    return out


def entry_of(cls: type, name: str | None = None) -> PluginEntry:
    """The registry entry of a plugin class (its extension points found by method name)."""
    points = tuple(p for p in EXTENSION_POINTS if callable(getattr(cls, p, None)))
    return PluginEntry(name or cls.name, cls, points)  # type: ignore[attr-defined]


@dataclass
class Eviction:
    """One eviction a strategy asked for: the pod, its node, who and why, and whether the
    Eviction API took it (``refused``: the API's message, a PodDisruptionBudget's)."""

    pod: str
    uid: str
    node: str
    profile: str
    strategy: str
    reason: str
    refused: str | None = None


@dataclass
class EvictionLimits:
    """``maxNoOfPodsToEvict{PerNode,PerNamespace,Total}``, counted across all profiles."""

    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None
    by_node: dict[str, int] = field(default_factory=dict)
    by_namespace: dict[str, int] = field(default_factory=dict)
    count: int = 0

    def reached(self, pod: Pod, node: str) -> str | None:
        """Which limit forbids one more eviction of ``pod`` from ``node``, if any."""
        if self.total is not None and self.count >= self.total:
            return "maxNoOfPodsToEvictTotal"
        if self.per_node is not None and self.by_node.get(node, 0) >= self.per_node:
            return "maxNoOfPodsToEvictPerNode"
        ns = pod.namespace or ""
        if self.per_namespace is not None and self.by_namespace.get(ns, 0) >= self.per_namespace:
            return "maxNoOfPodsToEvictPerNamespace"
        return None

    def take(self, pod: Pod, node: str) -> None:
        """Count one eviction."""
        self.count += 1
        self.by_node[node] = self.by_node.get(node, 0) + 1
        ns = pod.namespace or ""
        self.by_namespace[ns] = self.by_namespace.get(ns, 0) + 1


class DeschedulerHandle:
    """What a descheduler plugin sees: the cluster's nodes and pods, the evictors' verdict
    on a pod, whether a pod fits a node, utilisation, and ``evict``.

    With ``dry_run`` an eviction is only counted (how the report measures what a strategy
    would still do after the pods were re-placed); the pod stays where it is.
    """

    def __init__(
        self,
        cluster: MemoryCluster,
        *,
        profile: str = "",
        limits: EvictionLimits | None = None,
        dry_run: bool = False,
        nodes: Callable[[], list[Node]] | None = None,
        reference: datetime | None = None,
    ) -> None:
        self.cluster = cluster
        self.reference = reference
        self.profile = profile
        self.limits = limits or EvictionLimits()
        self.dry_run = dry_run
        self.evictors: list[Any] = []
        self.evictions: list[Eviction] = []
        self.strategy = ""
        self._nodes = nodes
        self._gone: set[str] = set()

    # --- reading the cluster ------------------------------------------------------------

    def nodes(self) -> list[Node]:
        """The nodes the policy selects (its ``nodeSelector``), in name order."""
        if self._nodes is not None:
            return self._nodes()
        nodes = self.cluster.objects("Node")
        return sorted(nodes, key=lambda n: n.name)  # type: ignore[return-value]

    def pods_on_node(self, node: str) -> list[Pod]:
        """The pods bound to ``node`` and not terminating (nor evicted in a dry run)."""
        return [
            p
            for p in self.cluster.pods_on_node(node)
            if p.metadata.deletion_timestamp is None and p.metadata.uid not in self._gone
        ]

    def now_seconds(self) -> float:
        """The cluster's clock, as seconds since the embedded cluster's epoch."""
        return self.cluster.now()

    def pod_age(self, pod: Pod) -> float:
        """Seconds since the pod's ``creationTimestamp`` (0 without one)."""
        return self.age_of(pod.metadata.creation_timestamp) or 0.0

    def age_of(self, moment: datetime | None) -> float | None:
        """Seconds since ``moment`` (a timestamp of an object), None without one.

        A timestamp the run wrote (a replacement's) is timed on the embedded clock. An
        object read from a live cluster carries real timestamps: with a ``reference``
        (the real time the cluster was read) it is timed against that, plus the run's
        virtual time."""
        if moment is None:
            return None
        elapsed = self.now_seconds()
        if EPOCH <= moment <= EPOCH + timedelta(seconds=elapsed) or self.reference is None:
            return elapsed - (moment - EPOCH).total_seconds()
        return (self.reference - moment).total_seconds() + elapsed

    # --- evictors ------------------------------------------------------------------------

    def not_evictable(self, pod: Pod) -> str | None:
        """Why the evictors' Filter refuses ``pod`` (None: evictable)."""
        for ev in self.evictors:
            f = getattr(ev, "filter", None)
            if f is not None and (why := f(pod)) is not None:
                return why
        return None

    def pre_eviction_refusal(self, pod: Pod) -> str | None:
        """Why the evictors' PreEvictionFilter refuses ``pod`` just before it goes."""
        for ev in self.evictors:
            f = getattr(ev, "pre_eviction_filter", None)
            if f is not None and (why := f(pod)) is not None:
                return why
        return None

    def evictable_pods_on_node(self, node: str) -> list[Pod]:
        """``pods_on_node`` that the evictors' Filter accepts."""
        return [p for p in self.pods_on_node(node) if self.not_evictable(p) is None]

    # --- fitting -------------------------------------------------------------------------

    def node_usage(self, node: Node, extra: Iterable[Pod] = ()) -> dict[str, int]:
        """Requested cpu (millicores), memory (bytes) and pod count on ``node``."""
        usage = {"cpu": 0, "memory": 0, "pods": 0}
        for p in [*self.pods_on_node(node.name), *extra]:
            if p.status.phase in FINISHED:
                continue
            req = pod_requests(p)
            usage["cpu"] += req.get("cpu", 0)
            usage["memory"] += req.get("memory", 0)
            usage["pods"] += 1
        return usage

    def node_capacity(self, node: Node) -> dict[str, int]:
        """Allocatable cpu (millicores), memory (bytes) and pods of ``node``."""
        alloc = node_allocatable(node)
        return {r: alloc.get(r, 0) for r in RESOURCE_NAMES}

    def pod_fits_node(self, pod: Pod, node: Node, *, resources: bool = True) -> str | None:
        """Why ``pod`` could not be scheduled on ``node`` (None: it could), checked as the
        descheduler's ``nodeFit`` does: schedulable, taints tolerated, node selector and
        required node affinity, and (``resources``) the requests fit beside its pods."""
        if node.spec.unschedulable:
            return "node is unschedulable"
        taint = find_untolerated_taint(
            node.spec.taints, pod.spec.tolerations, ("NoSchedule", "NoExecute")
        )
        if taint is not None:
            return f"untolerated taint {{{taint.key}: {taint.value or ''}}}"
        if not RequiredNodeAffinity(pod).matches(node):
            return "node(s) didn't match Pod's node affinity/selector"
        if resources:
            others = [
                p
                for p in self.pods_on_node(node.name)
                if p.metadata.uid != pod.metadata.uid and p.status.phase not in FINISHED
            ]
            cap = self.node_capacity(node)
            used = {"cpu": 0, "memory": 0, "pods": len(others) + 1}
            for p in [*others, pod]:
                req = pod_requests(p)
                used["cpu"] += req.get("cpu", 0)
                used["memory"] += req.get("memory", 0)
            for r in ("cpu", "memory", "pods"):
                if used[r] > cap[r]:
                    return f"insufficient {r}"
        return None

    def fits_other_node(self, pod: Pod, nodes: Iterable[Node]) -> bool:
        """Whether ``pod`` fits any node of ``nodes`` other than its own."""
        return any(
            n.name != pod.spec.node_name and self.pod_fits_node(pod, n) is None for n in nodes
        )

    # --- evicting ------------------------------------------------------------------------

    def evict(self, pod: Pod, reason: str) -> bool:
        """Evict ``pod`` for the running strategy through the Eviction API (its
        PodDisruptionBudgets honoured), within the policy's limits and after the evictors'
        PreEvictionFilter. Returns whether it went."""
        node = pod.spec.node_name or ""
        if self.limits.reached(pod, node) is not None:
            return False
        if self.pre_eviction_refusal(pod) is not None:
            return False
        entry = Eviction(pod.key, pod.metadata.uid or "", node, self.profile, self.strategy, reason)
        if self.dry_run:
            self._gone.add(pod.metadata.uid or "")
            self.evictions.append(entry)
            self.limits.take(pod, node)
            return True
        result = self.cluster.evict_pod(pod)
        if result.code != 200:
            entry.refused = result.message or f"HTTP {result.code}"
            self.evictions.append(entry)
            return False
        self.limits.take(pod, node)
        self.evictions.append(entry)
        grace = pod.spec.termination_grace_period_seconds
        self.cluster.record_eviction(
            EvictionRecord.of(
                pod,
                time=self.cluster.now(),
                node=node,
                by=BY_DESCHEDULER,
                reason=f"{self.strategy}: {reason}",
                message="Eviction API: evicting",
                grace_period_seconds=float(30 if grace is None else grace),
                details={"profile": self.profile, "strategy": self.strategy},
            )
        )
        return True


def percent(used: int, capacity: int) -> float:
    """``used`` as a percentage of ``capacity`` (0 capacity: 0 used is 0 %, else 100 %)."""
    if capacity <= 0:
        return 0.0 if used <= 0 else 100.0
    return used * 100.0 / capacity
