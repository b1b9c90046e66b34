"""Timelines: the ``kubesched.io/v1alpha1 Timeline`` kind and the runner that plays its
timed steps (failures, drains, usage, scaling) on a simulation in virtual time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kubesched.api import (
    KubeObject,
    LabelSelector,
    Node,
    Pod,
    Taint,
    compile_label_selector,
    load_manifests,
    parse_quantity,
)
from kubesched.backend.memory.evictions import BY_DRAIN, EvictionRecord
from kubesched.backend.memory.kubelet import CAPACITY_ANNOTATION_PREFIX, USAGE_ANNOTATION_PREFIX
from kubesched.backend.protocol import BackendError
from kubesched.config.duration import parse_duration
from kubesched.errors import FieldProblem, UserInputError, problems_from_validation_error

__all__ = [
    "DRAIN_RETRY_INTERVAL",
    "TIMELINE_API_VERSION",
    "StepOutcome",
    "Timeline",
    "TimelineRunner",
    "load_timeline",
]

TIMELINE_API_VERSION = "kubesched.io/v1alpha1"
DEFAULT_HORIZON = 3600.0
"""Without ``spec.runFor``, a timeline's run ends at the latest this long after its last
step (when evictions and replacements go on and on)."""
DRAIN_RETRY_INTERVAL = 5.0
"""Seconds ``kubectl drain`` waits before retrying an eviction a PDB refused (429)."""


def _seconds(value: Any) -> float:
    """A time offset: seconds as a number, or a Go duration (``90s``, ``1m30s``, ``2h``)."""
    if isinstance(value, bool):
        raise ValueError("expected seconds or a duration such as 90s or 1m30s")
    seconds = float(value) if isinstance(value, (int, float)) else parse_duration(str(value))
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


class _Model(BaseModel):
    # A timeline is configuration: a misspelt key is an error pointing at it.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def _quantity(value: Any) -> str:
    parse_quantity(value)  # raises ValueError naming the bad quantity
    return str(value)


class NodeUsage(_Model):
    """What runs outside pods on the node (system daemons, images)."""

    memory: str | None = Field(None, description="Working set outside pods (quantity).")
    ephemeral_storage: str | None = Field(None, description="nodefs used outside pods.")
    imagefs: str | None = Field(None, description="Images (on imagefs, or on nodefs).")
    inodes: int | None = Field(None, ge=0, description="nodefs inodes used outside pods.")
    pids: int | None = Field(None, ge=0, description="Processes outside pods.")
    imagefs_capacity: str | None = Field(None, description="Size of a dedicated imagefs.")
    inodes_capacity: int | None = Field(None, ge=0, description="nodefs inodes.")
    pids_capacity: int | None = Field(None, ge=0, description="pid_max.")

    _q = field_validator("memory", "ephemeral_storage", "imagefs", "imagefs_capacity")(
        lambda v: None if v is None else _quantity(v)
    )

    def annotations(self) -> dict[str, str]:
        """The node annotations that carry this usage."""
        out: dict[str, str] = {}
        for name, key in (
            ("memory", "memory"),
            ("ephemeral_storage", "ephemeral-storage"),
            ("imagefs", "imagefs"),
            ("inodes", "inodes"),
            ("pids", "pids"),
        ):
            value = getattr(self, name)
            if value is not None:
                out[USAGE_ANNOTATION_PREFIX + key] = str(value)
        for name, key in (
            ("imagefs_capacity", "imagefs"),
            ("inodes_capacity", "inodes"),
            ("pids_capacity", "pids"),
        ):
            value = getattr(self, name)
            if value is not None:
                out[CAPACITY_ANNOTATION_PREFIX + key] = str(value)
        return out


class PodUsage(_Model):
    """A pod's usage: working set, disk, inodes, processes."""

    memory: str | None = None
    ephemeral_storage: str | None = None
    inodes: int | None = Field(None, ge=0)
    pids: int | None = Field(None, ge=0)

    _q = field_validator("memory", "ephemeral_storage")(
        lambda v: None if v is None else _quantity(v)
    )

    def annotations(self) -> dict[str, str]:
        """The pod annotations that carry this usage."""
        pairs = (
            ("memory", self.memory),
            ("ephemeral-storage", self.ephemeral_storage),
            ("inodes", self.inodes),
            ("pids", self.pids),
        )
        return {USAGE_ANNOTATION_PREFIX + k: str(v) for k, v in pairs if v is not None}


class TaintSpec(_Model):
    """A taint to add: key, optional value, effect."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class _Step(_Model):
    at: float = Field(description="When: seconds, or a duration (90s, 5m, 1h30m).")
    note: str | None = Field(None, description="Free text shown in the report.")

    _at = field_validator("at", mode="before")(lambda v: _seconds(v))

    def describe(self) -> str:
        """One line for the report."""
        return self.action  # type: ignore[attr-defined]


class _NodeStep(_Step):
    nodes: list[str] = Field(default_factory=list, description="Node names.")
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Nodes with all these labels."
    )

    @model_validator(mode="after")
    def _targets(self) -> _NodeStep:
        if not self.nodes and not self.node_selector:
            raise ValueError("give nodes or nodeSelector")
        return self

    def describe(self) -> str:
        """The action and its nodes."""
        who = ", ".join(self.nodes)
        if self.node_selector:
            sel = ",".join(f"{k}={v}" for k, v in self.node_selector.items())
            who = f"{who} + nodes {sel}" if who else f"nodes {sel}"
        return f"{self.action} {who}"  # type: ignore[attr-defined]


class TaintStep(_NodeStep):
    """Add a taint to the nodes."""

    action: Literal["taint"]
    taint: TaintSpec

    def describe(self) -> str:
        """The taint and the nodes."""
        t = self.taint
        value = f"={t.value}" if t.value else ""
        return f"{super().describe()} with {t.key}{value}:{t.effect}"


class UntaintStep(_NodeStep):
    """Remove the taints with this key (and effect, if given) from the nodes."""

    action: Literal["untaint"]
    key: str = Field(min_length=1)
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class CordonStep(_NodeStep):
    """Mark the nodes unschedulable."""

    action: Literal["cordon"]


class UncordonStep(_NodeStep):
    """Mark the nodes schedulable again."""

    action: Literal["uncordon"]


class DrainStep(_NodeStep):
    """``kubectl drain --ignore-daemonsets``: cordon, then evict every pod through the
    Eviction API (PDBs honoured), retrying refused evictions every 5 s."""

    action: Literal["drain"]
    force: bool = Field(False, description="Also evict pods no controller manages.")
    timeout: float | None = Field(None, description="Give up after this long (default: never).")

    _timeout = field_validator("timeout", mode="before")(
        lambda v: None if v is None else _seconds(v)
    )


class DeleteNodeStep(_NodeStep):
    """Delete the Node objects (their pods are garbage-collected 40 s later)."""

    action: Literal["deleteNode"]


class NotReadyStep(_NodeStep):
    """The kubelets report Ready=False."""

    action: Literal["notReady"]
    reason: str = "KubeletNotReady"
    message: str = "container runtime is down"


class UnreachableStep(_NodeStep):
    """The kubelets stop posting status (Ready becomes Unknown after the grace period)."""

    action: Literal["unreachable"]


class RestoreStep(_NodeStep):
    """The kubelets post Ready=True again."""

    action: Literal["restore"]


class SetNodeUsageStep(_NodeStep):
    """Set what runs outside pods on the nodes (and capacities the Node lacks)."""

    action: Literal["setNodeUsage"]
    usage: NodeUsage


class SetPodUsageStep(_Step):
    """Set the usage of pods (by name, or by namespace and labels)."""

    action: Literal["setPodUsage"]
    pods: list[str] = Field(default_factory=list, description="namespace/name or name.")
    namespace: str | None = Field(None, description="With podSelector: the namespace.")
    pod_selector: dict[str, str] = Field(default_factory=dict, description="Pod labels.")
    usage: PodUsage

    @model_validator(mode="after")
    def _targets(self) -> SetPodUsageStep:
        if not self.pods and not self.pod_selector:
            raise ValueError("give pods or podSelector")
        return self

    def describe(self) -> str:
        """The pods and the usage."""
        who = ", ".join(self.pods) or ",".join(f"{k}={v}" for k, v in self.pod_selector.items())
        usage = ", ".join(f"{k}={v}" for k, v in self.usage.model_dump(exclude_none=True).items())
        return f"setPodUsage {who}: {usage}"


class ScaleStep(_Step):
    """Set a workload's replicas."""

    action: Literal["scale"]
    kind: Literal["Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"]
    name: str
    namespace: str = "default"
    replicas: int = Field(ge=0)

    def describe(self) -> str:
        """The workload and its new scale."""
        return f"scale {self.kind} {self.namespace}/{self.name} to {self.replicas}"


class _FileStep(_Step):
    file: str = Field(description="A manifest file, relative to the timeline's folder.")

    def describe(self) -> str:
        """The action and its file."""
        return f"{self.action} {self.file}"  # type: ignore[attr-defined]


class CreateStep(_FileStep):
    """Create (or replace) the objects of a manifest file: new nodes, workloads, ..."""

    action: Literal["create"]


class DeleteStep(_FileStep):
    """Delete the objects a manifest file names."""

    action: Literal["delete"]


Step = Annotated[
    TaintStep
    | UntaintStep
    | CordonStep
    | UncordonStep
    | DrainStep
    | DeleteNodeStep
    | NotReadyStep
    | UnreachableStep
    | RestoreStep
    | SetNodeUsageStep
    | SetPodUsageStep
    | ScaleStep
    | CreateStep
    | DeleteStep,
    Field(discriminator="action"),
]


class TimelineSpec(_Model):
    """The steps, and how long the run lasts at least."""

    steps: list[Step] = Field(min_length=1)
    run_for: float | None = Field(
        None,
        description="How long the run lasts: time runs until then even when nothing is "
        "due, and the run stops there (default: when nothing more can happen, at most an "
        "hour after the last step).",
    )

    _run_for = field_validator("run_for", mode="before")(
        lambda v: None if v is None else _seconds(v)
    )


class TimelineMetadata(_Model):
    """The timeline's name."""

    name: str = "timeline"


class Timeline(_Model):
    """``kubesched.io/v1alpha1 Timeline``: timed steps played on a simulation."""

    api_version: Literal["kubesched.io/v1alpha1"]
    kind: Literal["Timeline"]
    metadata: TimelineMetadata = Field(default_factory=TimelineMetadata)
    spec: TimelineSpec

    @model_validator(mode="after")
    def _run_for_covers_the_steps(self) -> Timeline:
        last = max(s.at for s in self.spec.steps)
        if self.spec.run_for is not None and self.spec.run_for < last:
            raise ValueError(
                f"spec.runFor ({self.spec.run_for:g}s) ends before the last step ({last:g}s)"
            )
        return self

    def ordered_steps(self) -> list[Any]:
        """The steps by time (steps at the same time in file order)."""
        return sorted(self.spec.steps, key=lambda s: s.at)


_ACTIONS = frozenset(
    cls.model_fields["action"].annotation.__args__[0]  # type: ignore[union-attr]
    for cls in Step.__origin__.__args__  # type: ignore[attr-defined]
)


def _without_action_tag(problem: FieldProblem) -> FieldProblem:
    """pydantic names the union member in the path (``steps[0].taint.at``); the user
    wrote ``steps[0].at``."""
    parts = problem.path.split(".")
    kept = [
        p
        for i, p in enumerate(parts)
        if not (i and parts[i - 1].startswith("steps[") and p in _ACTIONS)
    ]
    return FieldProblem(".".join(kept), problem.message)


def load_timeline(path: str | Path) -> tuple[Timeline, Path]:
    """Read and validate a timeline file; returns it and the folder its files are read
    from. ``UserInputError`` names the file, the timeline and each bad field's path."""
    p = Path(path)
    source = str(p)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as err:
        raise UserInputError(f"cannot read file: {err.strerror}", source=source) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UserInputError(f"invalid YAML{where}", source=source) from None
    if not isinstance(doc, dict):
        raise UserInputError("expected a Timeline mapping", source=source)
    name = (
        (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    )
    try:
        timeline = Timeline.model_validate(doc)
    except ValidationError as err:
        raise UserInputError(
            "invalid timeline",
            source=source,
            obj=f"Timeline {name}" if name else "Timeline",
            problems=[_without_action_tag(p) for p in problems_from_validation_error(err)],
        ) from None
    base = p.parent
    for i, step in enumerate(timeline.spec.steps):
        if isinstance(step, _FileStep) and not (base / step.file).is_file():
            raise UserInputError(
                f"spec.steps[{i}].file: no such file {step.file!r}",
                source=source,
                obj=f"Timeline {timeline.metadata.name}",
            )
    return timeline, base


# -- running ---------------------------------------------------------------------------------


@dataclass
class BlockedEviction:
    """A pod a drain could not evict yet, and the PDB that refused it."""

    pod: str
    pdb: str
    attempts: int
    message: str
    evicted: bool = False


@dataclass
class StepOutcome:
    """What one step did: when, what, on which objects, and what went wrong."""

    index: int
    at: float
    action: str
    description: str
    note: str | None = None
    targets: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    blocked: dict[str, BlockedEviction] = field(default_factory=dict)
    finished_at: float | None = None
    pending_after: list[str] = field(default_factory=list)


class TimelineRunner:
    """Plays a timeline's steps on a :class:`~kubesched.simulate.driver.Simulation`'s
    cluster when virtual time reaches them; the simulation asks :meth:`next_time`."""

    def __init__(self, timeline: Timeline, base_dir: Path) -> None:
        self.timeline = timeline
        self.base_dir = base_dir
        self._steps = timeline.ordered_steps()
        self._next = 0
        self.outcomes: list[StepOutcome] = []
        self.cluster: Any = None

    def next_time(self) -> float | None:
        """When the next step (or the end of ``runFor``) is due, or None."""
        if self._next < len(self._steps):
            return self._steps[self._next].at
        run_for = self.timeline.spec.run_for
        if run_for is not None and self.cluster is not None and self.cluster.now() < run_for:
            return run_for
        return None

    def horizon(self) -> float:
        """When the run stops at the latest."""
        run_for = self.timeline.spec.run_for
        if run_for is not None:
            return run_for
        return max(s.at for s in self._steps) + DEFAULT_HORIZON

    def apply_due(self, now: float) -> bool:
        """Apply every step due at ``now``; True if any was."""
        applied = False
        while self._next < len(self._steps) and self._steps[self._next].at <= now:
            step = self._steps[self._next]
            self._finish_window()
            outcome = StepOutcome(
                index=self._next,
                at=now,
                action=step.action,
                description=step.describe(),
                note=step.note,
            )
            self.outcomes.append(outcome)
            self._next += 1
            try:
                getattr(self, "_" + step.action)(step, outcome)
            except BackendError as err:
                outcome.errors.append(str(err))
            applied = True
        return applied

    def finish(self) -> None:
        """Close the last window (at the end of the run)."""
        self._finish_window()

    def _finish_window(self) -> None:
        if not self.outcomes or self.outcomes[-1].finished_at is not None:
            return
        last = self.outcomes[-1]
        last.finished_at = self.cluster.now()
        last.pending_after = sorted(
            p.key
            for p in self.cluster.iter_objects("Pod")
            if not p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")
        )

    # -- targets ---------------------------------------------------------------------------

    def _nodes(self, step: _NodeStep, outcome: StepOutcome) -> list[Node]:
        out: dict[str, Node] = {}
        for name in step.nodes:
            node = self.cluster.try_get("Node", None, name)
            if node is None:
                outcome.errors.append(f'nodes "{name}" not found')
            else:
                out[name] = node
        if step.node_selector:
            sel = step.node_selector
            for node in self.cluster.objects("Node"):
                labels = node.metadata.labels
                if all(labels.get(k) == v for k, v in sel.items()):
                    out[node.name] = node
            if not any(
                all(n.metadata.labels.get(k) == v for k, v in sel.items()) for n in out.values()
            ):
                outcome.errors.append(
                    "no node matches nodeSelector " + ",".join(f"{k}={v}" for k, v in sel.items())
                )
        outcome.targets = sorted(out)
        return [out[k] for k in sorted(out)]

    def _update_node(self, node: Node, change: Any) -> None:
        new = node.model_copy(deep=True)
        change(new)
        new.metadata.resource_version = None
        self.cluster.update(new)

    # -- node steps ------------------------------------------------------------------------

    def _taint(self, step: TaintStep, outcome: StepOutcome) -> None:
        from kubesched.backend.memory.naming import timestamp

        t = step.taint
        for node in self._nodes(step, outcome):
            taint = Taint(
                key=t.key, value=t.value, effect=t.effect, time_added=timestamp(self.cluster.now())
            )

            def change(n: Node, taint: Taint = taint) -> None:
                n.spec.taints = [
                    x
                    for x in n.spec.taints
                    if not (x.key == taint.key and x.effect == taint.effect)
                ] + [taint]

            self._update_node(node, change)

    def _untaint(self, step: UntaintStep, outcome: StepOutcome) -> None:
        for node in self._nodes(step, outcome):

            def change(n: Node) -> None:
                n.spec.taints = [
                    x
                    for x in n.spec.taints
                    if not (x.key == step.key and (step.effect is None or x.effect == step.effect))
                ]

            self._update_node(node, change)

    def _set_unschedulable(self, step: _NodeStep, outcome: StepOutcome, value: bool) -> list[Node]:
        nodes = self._nodes(step, outcome)
        for node in nodes:
            if node.spec.unschedulable != value:

                def change(n: Node) -> None:
                    n.spec.unschedulable = value

                self._update_node(node, change)
        return nodes

    def _cordon(self, step: CordonStep, outcome: StepOutcome) -> None:
        self._set_unschedulable(step, outcome, True)

    def _uncordon(self, step: UncordonStep, outcome: StepOutcome) -> None:
        self._set_unschedulable(step, outcome, False)

    def _deleteNode(self, step: DeleteNodeStep, outcome: StepOutcome) -> None:
        for node in self._nodes(step, outcome):
            self.cluster.delete("Node", None, node.name)

    def _notReady(self, step: NotReadyStep, outcome: StepOutcome) -> None:
        for node in self._nodes(step, outcome):
            self.cluster.node_lifecycle.set_ready(node.name, "False", step.reason, step.message)

    def _unreachable(self, step: UnreachableStep, outcome: StepOutcome) -> None:
        for node in self._nodes(step, outcome):
            self.cluster.node_lifecycle.stop_heartbeats(node.name)

    def _restore(self, step: RestoreStep, outcome: StepOutcome) -> None:
        for node in self._nodes(step, outcome):
            self.cluster.node_lifecycle.set_ready(
                node.name, "True", "KubeletReady", "kubelet is posting ready status"
            )

    def _setNodeUsage(self, step: SetNodeUsageStep, outcome: StepOutcome) -> None:
        annotations = step.usage.annotations()
        for node in self._nodes(step, outcome):

            def change(n: Node) -> None:
                n.metadata.annotations = {**n.metadata.annotations, **annotations}

            self._update_node(node, change)

    # -- pods and workloads ----------------------------------------------------------------

    def _setPodUsage(self, step: SetPodUsageStep, outcome: StepOutcome) -> None:
        pods: dict[str, Pod] = {}
        for ref in step.pods:
            ns, _, name = ref.rpartition("/")
            pod = self.cluster.try_get("Pod", ns or "default", name)
            if pod is None:
                outcome.errors.append(f'pods "{ref}" not found')
            else:
                pods[pod.key] = pod
        if step.pod_selector:
            sel = compile_label_selector(LabelSelector(match_labels=step.pod_selector))
            for pod in self.cluster.iter_objects("Pod", step.namespace):
                if sel.matches(pod.metadata.labels) and pod.status.phase not in (
                    "Succeeded",
                    "Failed",
                ):
                    pods[pod.key] = pod
        outcome.targets = sorted(pods)
        if not pods:
            outcome.errors.append("no pod matched")
        annotations = step.usage.annotations()
        for pod in pods.values():
            new = pod.model_copy(deep=True)
            new.metadata.annotations = {**new.metadata.annotations, **annotations}
            new.metadata.resource_version = None
            self.cluster.update(new)

    def _scale(self, step: ScaleStep, outcome: StepOutcome) -> None:
        obj = self.cluster.try_get(step.kind, step.namespace, step.name)
        outcome.targets = [f"{step.kind} {step.namespace}/{step.name}"]
        if obj is None:
            outcome.errors.append(f"{step.kind} {step.namespace}/{step.name} not found")
            return
        new = obj.model_copy(deep=True)
        new.spec.replicas = step.replicas
        new.metadata.resource_version = None
        self.cluster.update(new)

    def _objects(self, step: _FileStep) -> list[KubeObject]:
        return load_manifests([self.base_dir / step.file])

    def _create(self, step: CreateStep, outcome: StepOutcome) -> None:
        objects = self._objects(step)
        outcome.targets = [f"{o.kind} {o.key}" for o in objects]
        for rej in self.cluster.apply(objects):
            outcome.errors.append(str(rej))

    def _delete(self, step: DeleteStep, outcome: StepOutcome) -> None:
        objects = self._objects(step)
        outcome.targets = [f"{o.kind} {o.key}" for o in objects]
        for o in objects:
            try:
                self.cluster.delete(o.kind or "", o.metadata.namespace, o.name)
            except BackendError as err:
                outcome.errors.append(f"{o.kind} {o.key}: {err}")

    # -- drain -----------------------------------------------------------------------------

    def _drain(self, step: DrainStep, outcome: StepOutcome) -> None:
        nodes = self._set_unschedulable(step, outcome, True)
        deadline = None if step.timeout is None else self.cluster.now() + step.timeout
        for node in nodes:
            pods = []
            for pod in self.cluster.pods_on_node(node.name):
                ref = pod.metadata.controller_ref
                if ref is not None and ref.kind == "DaemonSet":
                    continue  # --ignore-daemonsets
                if "kubernetes.io/config.mirror" in pod.metadata.annotations:
                    continue
                if ref is None and not step.force:
                    outcome.errors.append(
                        f"cannot delete Pods that declare no controller (use force): {pod.key}"
                    )
                    continue
                pods.append(pod)
            for pod in pods:
                self._evict(pod, node.name, outcome, deadline)

    def _evict(self, pod: Pod, node: str, outcome: StepOutcome, deadline: float | None) -> None:
        cluster = self.cluster
        cur = cluster.try_get("Pod", pod.namespace, pod.name)
        if cur is None or cur.metadata.uid != pod.metadata.uid:
            return
        if cur.metadata.deletion_timestamp is not None:
            return
        result = cluster.evict_pod(cur)
        if result.code == 200:
            blocked = outcome.blocked.get(cur.key)
            if blocked is not None:
                blocked.evicted = True
            grace = cur.spec.termination_grace_period_seconds
            cluster.record_eviction(
                EvictionRecord.of(
                    cur,
                    time=cluster.now(),
                    node=node,
                    by=BY_DRAIN,
                    reason=f"drain of node {node} (Eviction API)"
                    + (
                        f" after {blocked.attempts} refusals by PDB {blocked.pdb}"
                        if blocked
                        else ""
                    ),
                    message="Eviction API: evicting",
                    grace_period_seconds=float(30 if grace is None else grace),
                    details={"step": outcome.index, "pdb": blocked.pdb if blocked else None},
                )
            )
            return
        if result.code == 404:
            return
        pdb = ", ".join(result.blocking_pdbs) or "?"
        entry = outcome.blocked.get(cur.key)
        if entry is None:
            entry = outcome.blocked[cur.key] = BlockedEviction(cur.key, pdb, 0, result.message)
        entry.attempts += 1
        if result.code != 429:
            outcome.errors.append(f"{cur.key}: {result.message}")
            return
        retry = cluster.now() + DRAIN_RETRY_INTERVAL
        if deadline is not None and retry > deadline:
            outcome.errors.append(f"drain timed out: {cur.key} still blocked by PDB {pdb}")
            return
        cluster.call_at(retry, lambda: self._evict(pod, node, outcome, deadline))
