"""One failure played on a settled cluster: the snapshot a worker sets up once, and the
timeline (nodes unreachable → taint eviction → re-placement) each failure plays on a
private copy of it."""

from __future__ import annotations

import gc
import json
import os
import pickle
import traceback
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api import KINDS, KubeObject, Pod, compile_label_selector, resolve_kind
from kubesched.backend.memory.evictions import BY_TAINT_MANAGER
from kubesched.config import EffectiveConfiguration, effective_configuration
from kubesched.config.loading import config_from_dict
from kubesched.config.serialize import config_to_dict
from kubesched.features import FeatureGates
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.resilience.failures import Failure
from kubesched.resilience.report import BudgetOutcome, FailureOutcome, WorkloadOutcome
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation
from kubesched.simulate.timeline import Timeline, TimelineRunner

__all__ = ["World", "payload", "play", "setup"]

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
"""The controllers whose replicas the report counts (a ReplicaSet a Deployment owns
counts as its Deployment)."""


def payload(
    objects: Iterable[KubeObject], config: EffectiveConfiguration, seed: int, window: float
) -> bytes:
    """The settled cluster as the workers rebuild it: its objects' manifests, the
    configuration and feature gates, the seed and the window, as zlib'd JSON: portable
    between machines, and small (0.7 MB for 1,000 nodes and 10,000 pods)."""
    doc = {
        "objects": [o.to_dict() for o in objects],
        "config": config_to_dict(config.config),
        "gates": dict(config.feature_gates.overrides),
        "seed": seed,
        "window": window,
    }
    return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 6)


@dataclass
class World:
    """A worker's settled cluster: the simulation every failure starts from."""

    sim: Simulation
    window: float
    before: _Census
    """Its pods as every failure finds them (counted once for all)."""


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def setup(data: bytes) -> World:
    """Rebuild the settled cluster and its scheduler from :func:`payload`'s bytes and run
    it until nothing more happens (nothing is left to schedule that could be)."""
    doc = json.loads(zlib.decompress(data))
    registry = _registry()
    gates = FeatureGates(doc["gates"])
    config = config_from_dict(doc["config"], registry, gates=gates)
    # The objects come from a cluster that validated them: parsed by kind, unchecked.
    objects = [
        (KINDS.get(d["kind"]) or resolve_kind(d["kind"])).model_validate(d) for d in doc["objects"]
    ]
    sim = Simulation(
        objects,
        config=effective_configuration(config, registry, gates=gates),
        registry=registry,
        seed=doc["seed"],
        detail=DETAIL_SUMMARY,
        # Nothing changes what pods use: the kubelets' eviction managers have nothing to do.
        node_pressure_eviction=False,
        validate=False,
        owned=True,
    )
    sim.run()
    before = _Census(sim.cluster)
    before.index_labels()
    return World(sim, doc["window"], before)


def play(world: World, failure: Failure) -> FailureOutcome:
    """Play ``failure`` on a private copy of ``world`` and return what it did.

    The copy is a forked child process: copy-on-write makes it cheap (0.04 CPU seconds
    for a world of 1,000 nodes and 10,000 pods, against 0.4 for the failure's play), and
    the world itself is never touched, so a failure's
    outcome is the same whatever was played before it on this worker. (Playing on the
    world and reverting, as ``capacity remove`` does, would have to undo the
    controllers' and the clock's state too.) The child sends the outcome back through a
    pipe and exits at once.
    """
    read_fd, write_fd = os.pipe()
    # Frozen objects are never traversed by the collector: neither process writes to
    # the world's pages just to look for cycles.
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its outcome is what the tests check
        os.close(read_fd)
        status = 0
        try:
            result: tuple[str, Any] = ("ok", _play_here(world, failure))
        except BaseException:
            result, status = ("error", traceback.format_exc()), 1
        try:
            with os.fdopen(write_fd, "wb") as out:
                pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            os._exit(status)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as inp:
        data = inp.read()
    _, wait_status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(
            f"playing failure {failure.name!r} ended the process "
            f"(status {os.waitstatus_to_exitcode(wait_status)})"
        )
    kind, value = pickle.loads(data)
    if kind == "error":
        raise RuntimeError(f"playing failure {failure.name!r} failed:\n{value}")
    return value


def _play_here(world: World, failure: Failure) -> FailureOutcome:
    """Play ``failure`` on ``world`` itself (in the forked child)."""
    sim = world.sim
    cluster = sim.cluster
    start = cluster.now()
    failed = set(failure.nodes)
    before = world.before
    timeline = Timeline.model_validate(
        {
            "apiVersion": "kubesched.io/v1alpha1",
            "kind": "Timeline",
            "metadata": {"name": failure.name},
            "spec": {
                "runFor": start + world.window,
                "steps": [{"at": start, "action": "unreachable", "nodes": list(failure.nodes)}],
            },
        }
    )
    sim.attach_timeline(TimelineRunner(timeline, Path.cwd()))
    run = sim.run()
    # Only the pods that came or went are looked at closely: a full count of 10,000 pods
    # would cost a third of the failure.
    new, up_after = [], set()
    for p in cluster.pods():
        if _is_up(p, failed):
            up_after.add(p.metadata.uid)
        if p.metadata.uid not in before.uids:
            new.append(p)
    # The lowest point is right after the failure: the pods on the failed nodes serve
    # nobody from then on, and nothing replaces them before their tolerationSeconds.
    down = [p for n in failure.nodes for p in before.up_on_node.get(n, ())]
    down_per_owner = Counter(before.owner(p) for p in down)
    # Pods whose state the failure changed: only their workloads and budgets are reported.
    gone = [p for p in before.up if p.metadata.uid not in up_after]
    new_up = [p for p in new if p.metadata.uid in up_after]
    after = before.available - Counter(before.owner(p) for p in gone)
    after.update(before.owner(p) for p in new_up)
    touched = [*down, *new, *gone]
    evicted = Counter(
        before.owner_of_uid.get(r.uid)
        for r in cluster.evictions
        if r.by == BY_TAINT_MANAGER and r.time >= start
    )
    keys = {before.owner(p) for p in touched} | set(evicted)
    workloads = [
        _workload(key, before, after, down_per_owner, evicted, new, run)
        for key in sorted(k for k in keys if k is not None)
    ]
    workloads.sort(key=lambda w: (w.kept, w.after - w.before, w.kind, w.name))
    budgets = [
        _budget(pdb, cluster, before, down, gone, new_up)
        for pdb in cluster.objects("PodDisruptionBudget")
        if _selects_any(pdb, touched)
    ]
    budgets.sort(key=lambda o: (not o.violated, not o.violated_at_end, o.name))
    lost = [w for w in workloads if not w.kept]
    return FailureOutcome(
        failure=failure.name,
        nodes=list(failure.nodes),
        workloads_lost=len(lost),
        replicas_lost=sum(w.before - w.after for w in lost),
        budgets_violated=sum(1 for o in budgets if o.violated),
        pods_pending=sum(w.pending for w in workloads),
        pods_evicted=sum(evicted.values()),
        daemon_pods_down=sum(
            1
            for p in down
            if (ref := p.metadata.controller_ref) is not None and ref.kind == "DaemonSet"
        ),
        workloads=workloads,
        budgets=budgets,
        stop=run.stop_reason,
    )


def _workload(
    key: tuple[str, str],
    before: _Census,
    after: Counter[tuple[str, str] | None],
    down: Counter[tuple[str, str] | None],
    evicted: Counter[tuple[str, str] | None],
    new: list[Pod],
    run: Any,
) -> WorkloadOutcome:
    """What the failure did to one workload."""
    b, a = before.available.get(key, 0), after.get(key, 0)
    mine = [p for p in new if before.owner(p) == key]
    pending = [p for p in mine if not p.spec.node_name]
    reason = None
    if pending:
        attempts = run.attempts.get(pending[0].metadata.uid or "", [])
        reason = attempts[-1].message if attempts else "not attempted yet"
    return WorkloadOutcome(
        kind=key[0],
        name=key[1],
        desired=before.desired.get(key, 1),
        before=b,
        lowest=min(b - down.get(key, 0), a),
        after=a,
        kept=a >= b,
        evicted=evicted.get(key, 0),
        replaced=len(mine) - len(pending),
        pending=len(pending),
        pending_reason=reason,
    )


def _selects_any(pdb: Any, pods: list[Pod]) -> bool:
    selector = _selector(pdb)
    return selector is not None and any(
        p.metadata.namespace == pdb.metadata.namespace and selector.matches(p.metadata.labels)
        for p in pods
    )


def _selector(pdb: Any) -> Any:
    return None if pdb.spec.selector is None else compile_label_selector(pdb.spec.selector)


def _budget(
    pdb: Any, cluster: Any, before: _Census, down: list[Pod], gone: list[Pod], new_up: list[Pod]
) -> BudgetOutcome:
    """What the failure did to one PodDisruptionBudget: its healthy pods (ready, not
    being deleted, on a node that is up) against desiredHealthy."""
    desired = cluster.disruption.compute_status(pdb).desired_healthy
    selector = _selector(pdb)
    ns = pdb.metadata.namespace

    def healthy(pods: Iterable[Pod]) -> int:
        return sum(
            1 for p in pods if p.metadata.namespace == ns and selector.matches(p.metadata.labels)
        )

    b = healthy(before.candidates(pdb))
    # The pods up before and still up are the same: only those that went and came count.
    a = b - healthy(gone) + healthy(new_up)
    lowest = min(b - healthy(down), a)
    return BudgetOutcome(
        name=pdb.key,
        desired_healthy=desired,
        before=b,
        lowest=lowest,
        after=a,
        violated=lowest < desired and lowest < b,
        violated_at_end=a < desired,
    )


def _is_up(pod: Pod, failed: frozenset[str] | set[str]) -> bool:
    """The pod serves: bound to a node that is not ``failed``, not finished, not being
    deleted and not marked not ready (upstream's node lifecycle controller marks the pods
    of an unreachable node not ready, so they serve nobody even before they are evicted;
    a pod copied from a cluster, or written bound in a manifest, may carry no status at
    all: it counts as ready)."""
    node = pod.spec.node_name
    return (
        bool(node)
        and node not in failed
        and pod.metadata.deletion_timestamp is None
        and pod.status.phase not in ("Succeeded", "Failed")
        and not any(c.type == "Ready" and c.status != "True" for c in pod.status.conditions)
    )


class _Census:
    """The cluster's pods at one moment, those up (:func:`_is_up`) by node and by label,
    and the available ones per workload."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.pods: list[Pod] = cluster.pods()
        self._owners: dict[str, tuple[str, str] | None] = {}
        self.desired: dict[tuple[str, str], int] = {}
        self.owner_of_uid: dict[str | None, tuple[str, str] | None] = {}
        self.available: Counter[tuple[str, str]] = Counter()
        self.up: list[Pod] = []
        self.up_on_node: dict[str, list[Pod]] = {}
        self.uids = {p.metadata.uid for p in self.pods}
        self._up_by_label: dict[tuple[str | None, str, str], list[Pod]] | None = None
        for pod in self.pods:
            key = self.owner(pod)
            self.owner_of_uid[pod.metadata.uid] = key
            up = _is_up(pod, frozenset())
            if up:
                self.up.append(pod)
                self.up_on_node.setdefault(pod.spec.node_name, []).append(pod)  # type: ignore[arg-type]
            if key is not None:
                self.available[key] += up

    def owner(self, pod: Pod) -> tuple[str, str] | None:
        """(kind, namespace/name) of the workload the pod counts for; None for a
        DaemonSet's or a Job's pod."""
        ref = pod.metadata.controller_ref
        if ref is None:
            if pod.status.phase in ("Succeeded", "Failed"):
                return None
            return ("Pod", pod.key)
        cache_key = f"{ref.kind}/{pod.namespace}/{ref.name}"
        if cache_key in self._owners:
            return self._owners[cache_key]
        key: tuple[str, str] | None = None
        owner = self.cluster.try_get(ref.kind, pod.namespace, ref.name)
        if ref.kind in WORKLOAD_KINDS and owner is not None:
            top = owner.metadata.controller_ref
            if ref.kind == "ReplicaSet" and top is not None and top.kind == "Deployment":
                deployment = self.cluster.try_get("Deployment", pod.namespace, top.name)
                if deployment is not None:
                    owner = deployment
            key = (owner.kind or "", owner.key)
            replicas = owner.spec.replicas  # type: ignore[attr-defined]
            self.desired[key] = 1 if replicas is None else replicas
        self._owners[cache_key] = key
        return key

    def candidates(self, pdb: Any) -> list[Pod]:
        """The up pods that may match ``pdb``'s selector: those with one of its
        ``matchLabels`` (a cluster-wide scan per budget would cost more than the failure)."""
        match = pdb.spec.selector.match_labels if pdb.spec.selector is not None else None
        if not match:
            return self.up
        k, v = next(iter(match.items()))
        return self.index_labels().get((pdb.metadata.namespace, k, v), [])

    def index_labels(self) -> dict[tuple[str | None, str, str], list[Pod]]:
        """The up pods by (namespace, label, value), made on first use."""
        if self._up_by_label is None:
            self._up_by_label = {}
            for p in self.up:
                for k, v in p.metadata.labels.items():
                    self._up_by_label.setdefault((p.metadata.namespace, k, v), []).append(p)
        return self._up_by_label
