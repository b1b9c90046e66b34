"""The versioned simulation report (pydantic models → JSON Schema) and how a run becomes one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kubesched.api import (
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    KubeObject,
    Pod,
    pod_requests,
)
from kubesched.api.manifests import kept_kinds
from kubesched.api.resources import node_allocatable
from kubesched.api.volumeutil import pod_claim_names
from kubesched.backend.memory.autoscaling import HPA_KIND
from kubesched.backend.memory.evictions import EvictedBy
from kubesched.backend.memory.nodelifecycle import POD_GC_QUARANTINE
from kubesched.backend.protocol import BackendError, EventType, RecordedEvent, WatchEvent
from kubesched.errors import UserInputError
from kubesched.notices import Notice
from kubesched.scheduler.records import AttemptRecord
from kubesched.simulate.driver import DETAIL_FULL, DETAIL_SUMMARY
from kubesched.simulate.whatif import build_evictions, build_timeline

SCHEMA_VERSION = "kubesched.io/simulation/v1"
"""The ``schemaVersion`` of reports this module writes. A change that removes or renames a
field, or changes a field's meaning or unit, needs a new version; adding an optional field
does not."""

ZONE_LABEL = "topology.kubernetes.io/zone"
"""The node label that names a node's zone."""


PodResult = Literal[
    "scheduled", "pending", "nodeMissing", "rejected", "preempted", "deleted", "evicted"
]

LIVE_RESULTS = frozenset({"scheduled", "pending", "nodeMissing"})
"""The results of pods that still exist at the end of the run."""


class _Model(BaseModel):
    # A report is output: camelCase on the wire, and a typo in a consumer's hand-made
    # report is an error rather than a silently dropped field.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=False)


# -- resources ------------------------------------------------------------------------------


class Resources(_Model):
    """Amounts of resources, as integers in the scheduler's units."""

    cpu: int = Field(0, description="CPU in millicores (1 core = 1000).")
    memory: int = Field(0, description="Memory in bytes.")
    ephemeral_storage: int = Field(
        0, alias="ephemeralStorage", description="Ephemeral storage in bytes."
    )
    pods: int = Field(0, description="Number of pods.")
    scalar: dict[str, int] = Field(
        default_factory=dict,
        description="Extended and other scalar resources (e.g. nvidia.com/gpu, hugepages-2Mi) "
        "by name, in their base unit (a count, or bytes for hugepages).",
    )

    @classmethod
    def from_dict(cls, values: dict[str, int], pods: int | None = None) -> Resources:
        """From a ``{resource name: scheduler units}`` mapping (``pod_requests`` shape)."""
        scalar = {
            k: v for k, v in values.items() if k not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
        }
        return cls(
            cpu=values.get(CPU, 0),
            memory=values.get(MEMORY, 0),
            ephemeralStorage=values.get(EPHEMERAL_STORAGE, 0),
            pods=values.get(PODS, 0) if pods is None else pods,
            scalar=dict(sorted(scalar.items())),
        )


# -- per pod ----------------------------------------------------------------------------------


class FilterStatus(_Model):
    """Why a Filter (or PreFilter) plugin rejected one node in the pod's last attempt."""

    node: str = Field(description="The node's name.")
    plugin: str | None = Field(
        description="The plugin that rejected the node (the first that did: filters stop at "
        "the first rejection per node); null when a scheduler extender rejected it (see "
        "history[].extenders)."
    )
    code: str = Field(
        description="The status code as upstream spells it: Unschedulable, "
        "UnschedulableAndUnresolvable (preemption cannot help), Error, Pending."
    )
    reasons: list[str] = Field(description="The plugin's reasons, e.g. 'Insufficient cpu'.")
    details: list[str] = Field(
        default_factory=list,
        description="Further explanation, not part of the diagnosis (DynamicResources: per "
        "device request, how many devices matched, how many were free, how many wanted).",
    )


class PluginScoreReport(_Model):
    """One Score plugin's verdict on one feasible node."""

    plugin: str
    raw: int = Field(description="What the plugin's Score returned.")
    normalized: int = Field(description="After NormalizeScore: 0..100.")
    weight: int = Field(description="The plugin's weight in the profile.")
    weighted: int = Field(description="normalized × weight; the node's total sums these.")


class NodeScoreReport(_Model):
    """The scores of one feasible node in the pod's last attempt."""

    node: str
    total: int = Field(description="Sum of the plugins' weighted scores.")
    plugins: list[PluginScoreReport]


class ExtenderCallReport(_Model):
    """One call of a scheduler extender in an attempt, and what it answered."""

    extender: str = Field(description="The extender's urlPrefix.")
    verb: Literal["filter", "prioritize", "preempt", "bind"] = Field(
        description="Which call: Filter, Prioritize, preemption or Bind."
    )
    result: str = Field(
        description="The answer in words (e.g. '2 of 4 node(s) passed', 'bound to n1', "
        "or the error, and whether the extender was passed over as ignorable)."
    )
    failed_nodes: dict[str, str] = Field(
        default_factory=dict,
        alias="failedNodes",
        description="filter: the message of each node the extender failed.",
    )


class AttemptReport(_Model):
    """One scheduling attempt of the pod."""

    attempt: int = Field(description="1 for the first attempt of the pod.")
    profile: str
    started_at: float = Field(alias="startedAt", description="Virtual time, in seconds.")
    finished_at: float | None = Field(
        None, alias="finishedAt", description="Virtual time, in seconds."
    )
    result: Literal["scheduled", "unschedulable", "error"] = Field(
        description="The result label of scheduler_schedule_attempts_total."
    )
    node: str | None = Field(None, description="The node chosen (result scheduled).")
    message: str = Field("", description="The FailedScheduling message of a failed attempt.")
    all_nodes: int = Field(0, alias="allNodes", description="Nodes in the snapshot.")
    evaluated_nodes: int = Field(
        0,
        alias="evaluatedNodes",
        description="Nodes the filters ran on: fewer than allNodes when percentageOfNodesToScore "
        "stopped the search early.",
    )
    feasible_nodes: int = Field(0, alias="feasibleNodes", description="Nodes that passed.")
    nominated_node: str | None = Field(
        None, alias="nominatedNode", description="The node PostFilter (preemption) nominated."
    )
    extenders: list[ExtenderCallReport] = Field(
        default_factory=list,
        description="The scheduler extenders' calls in this attempt, in order (empty "
        "without extenders).",
    )


class VictimReport(_Model):
    """A pod deleted to make room for the preemptor."""

    namespace: str
    name: str
    node: str = Field(description="The node it ran on.")


class CandidateReport(_Model):
    """A node preemption considered, and the pods it would have evicted there."""

    node: str
    victims: list[str] = Field(default_factory=list, description="Pod keys, namespace/name.")
    num_pdb_violations: int = Field(0, alias="numPDBViolations")


class PreemptionReport(_Model):
    """What preemption did, or tried, for this pod (the preemptor)."""

    victims: list[VictimReport] = Field(default_factory=list)
    candidates: list[CandidateReport] = Field(
        default_factory=list,
        description="The candidate nodes the last preemption attempt found, with the "
        "victims each would need (empty when the PostFilter plugin does not explain itself).",
    )
    chosen: str | None = Field(None, description="The node chosen among the candidates.")
    decided_by: str | None = Field(
        None,
        alias="decidedBy",
        description="The rule that singled the chosen node out (fewest PDB violations, "
        "lowest highest victim priority, ...).",
    )
    message: str | None = Field(None, description="The PostFilter status message.")


class EvictionReport(_Model):
    """One eviction: who evicted which pod, when, why, and what became of it."""

    time: float = Field(description="Virtual time, in seconds.")
    pod: str = Field(description="namespace/name of the evicted pod.")
    uid: str | None = None
    node: str = Field(description="The node it was evicted from.")
    by: EvictedBy = Field(
        description="taint-manager: a NoExecute taint (tolerationSeconds elapsed or not "
        "tolerated); device-taint-manager: a NoExecute taint of a device held by one of "
        "the pod's ResourceClaims (DRA), not tolerated (long enough); kubelet: "
        "node-pressure eviction; drain: the Eviction API during a "
        "timeline's drain (PDBs honoured); pod-gc: the node was deleted; preemption: a "
        "higher-priority pod needed the room; descheduler: a strategy of "
        "kubesched deschedule, through the Eviction API."
    )
    reason: str = Field(description="Why, in one line: the taint, the threshold, the drain.")
    message: str = Field("", description="The evictor's own message (the kubelet's status).")
    grace_period_seconds: float | None = Field(
        None, alias="gracePeriodSeconds", description="Termination grace period given."
    )
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="The evidence: taint and tolerationSeconds; signal, threshold, available "
        "and the kubelet's ranking; the PDB that delayed a drain.",
    )
    outcome: str = Field(
        "",
        description="What became of the pod: its replacement and where it runs, or why "
        "the replacement is pending, or that nothing replaces it.",
    )
    replacement: str | None = Field(
        None, description="namespace/name of the pod its controller created in its place."
    )
    replacement_node: str | None = Field(None, alias="replacementNode")
    replaced_at: float | None = Field(
        None, alias="replacedAt", description="When the replacement was bound (virtual s)."
    )


class ClaimReport(_Model):
    """One PersistentVolumeClaim of a pod at the end of the run, and its volume."""

    name: str = Field(description="The claim's name (in the pod's namespace).")
    phase: str | None = Field(
        description="Pending, Bound or Lost; null when the claim does not exist."
    )
    storage_class: str | None = Field(None, alias="storageClass")
    request: str | None = Field(None, description="spec.resources.requests.storage.")
    volume: str | None = Field(None, description="The PersistentVolume it is bound to.")
    provisioned: bool = Field(
        False, description="True when the volume was provisioned for the claim (not a static PV)."
    )
    selected_node: str | None = Field(
        None,
        alias="selectedNode",
        description="The node the scheduler chose for provisioning (WaitForFirstConsumer).",
    )
    topology: list[str] = Field(
        default_factory=list,
        description="The volume's node affinity, one 'key in (values)' per requirement of "
        "its first term: where the volume can be used from.",
    )


class DeviceReport(_Model):
    """One device allocated to one of the pod's ResourceClaims."""

    claim: str = Field(description="The ResourceClaim's name.")
    request: str = Field(description="The request (request/subrequest for firstAvailable).")
    driver: str
    pool: str
    device: str
    slice: str | None = Field(None, description="The ResourceSlice that publishes the device.")


class PodReport(_Model):
    """One pod of the run and what happened to it."""

    namespace: str
    name: str
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    profile: str | None = Field(
        description="spec.schedulerName. Null for a rejected pod whose spec is unknown."
    )
    served: bool = Field(
        True, description="False when no profile has this schedulerName: the pod is left alone."
    )
    priority: int | None = None
    result: PodResult = Field(
        description="scheduled: bound to a node at the end; pending: not placed; "
        "nodeMissing: given bound (spec.nodeName) to a node that does not exist, so no "
        "kubelet runs it and it stays Pending (the scheduler leaves bound pods alone); "
        "rejected: refused by admission (see message); preempted: deleted as a preemption victim; "
        "evicted: evicted by the taint manager, the device taint manager, the kubelet, a "
        "drain or pod GC (see "
        "eviction); deleted: deleted for another reason (e.g. a controller scaled down)."
    )
    node: str | None = Field(
        description="The node the pod ends on (for preempted/deleted: the node it ran on); "
        "null when it was never placed."
    )
    attempts: int = Field(description="Number of scheduling attempts (0 for pods given bound).")
    message: str = Field(
        "",
        description="For a pending pod, the last diagnosis (upstream's FailedScheduling "
        "message), or for one never tried why (its SchedulingGated condition, or a "
        "PreEnqueue plugin holding it back); for a nodeMissing pod, which node is "
        "missing; for a rejected pod, the admission error; for a preempted pod, the "
        "Preempted event.",
    )
    nominated_node: str | None = Field(None, alias="nominatedNode")
    pod_scheduled_reason: str | None = Field(
        None,
        alias="podScheduledReason",
        description="The reason of the pod's PodScheduled condition at the end, when it is "
        "False, as kube-scheduler and kube-apiserver write it: Unschedulable, "
        "SchedulerError, SchedulingGated. Null otherwise.",
    )
    scheduling_gates: list[str] = Field(
        default_factory=list,
        alias="schedulingGates",
        description="The names of spec.schedulingGates at the end: while any remains, the "
        "scheduler never tries the pod.",
    )
    preempted_by: str | None = Field(
        None, alias="preemptedBy", description="namespace/name of the preemptor."
    )
    filters: list[FilterStatus] = Field(
        default_factory=list,
        description="Per rejected node, the rejecting plugin, in the last attempt (detail=full).",
    )
    scores: list[NodeScoreReport] = Field(
        default_factory=list,
        description="Per feasible node, best first, the score plugins' scores in the last "
        "attempt (detail=full). Empty when scoring was skipped (a single feasible node).",
    )
    history: list[AttemptReport] = Field(
        default_factory=list, description="Every attempt, oldest first (detail=full)."
    )
    preemption: PreemptionReport | None = None
    eviction: EvictionReport | None = Field(
        None, description="For an evicted pod: who, when, why, and what became of it."
    )
    claims: list[ClaimReport] = Field(
        default_factory=list,
        description="The pod's PersistentVolumeClaims (persistentVolumeClaim and ephemeral "
        "volumes), in volume order, and where each was bound or provisioned.",
    )
    devices: list[DeviceReport] = Field(
        default_factory=list,
        description="The DRA devices allocated to the pod's ResourceClaims, as written in "
        "the claims' status.allocation at the end of the run.",
    )

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


# -- per node, per profile, the run ---------------------------------------------------------


class NodeReport(_Model):
    """One node at the end of the run."""

    name: str
    zone: str | None = Field(description=f"The {ZONE_LABEL} label.")
    labels: dict[str, str] = Field(default_factory=dict)
    unschedulable: bool = False
    taints: list[str] = Field(default_factory=list, description="key=value:Effect")
    allocatable: Resources = Field(description="status.allocatable.")
    requested: Resources = Field(
        description="The sum of the requests of the pods on the node (pods: their number)."
    )
    pods: list[str] = Field(default_factory=list, description="Pod keys, namespace/name.")


class ProfileSummary(_Model):
    """Counts for one profile (pods grouped by spec.schedulerName)."""

    profile: str
    served: bool = Field(True, description="False: no profile has this schedulerName.")
    scheduled: int = 0
    pending: int = 0
    node_missing: int = Field(
        0,
        alias="nodeMissing",
        description="Pods given bound to a node that does not exist: they stay Pending.",
    )
    rejected: int = Field(0, description="Pods admission refused.")
    preempted: int = Field(0, description="Pods of this profile evicted as preemption victims.")
    evicted: int = Field(0, description="Pods evicted (taint manager, kubelet, drain, pod GC).")
    deleted: int = 0
    attempts: int = Field(0, description="Scheduling attempts, all pods together.")


class RejectionReport(_Model):
    """An object admission refused (or a pod a controller could not create)."""

    object: str = Field(description="Kind namespace/name of the refused object or controller.")
    message: str


class NoticeReport(_Model):
    """Input the run accepted but changed or passed over (an implicit namespace, a
    defaulted label, a skipped custom resource): each was also one line on stderr."""

    message: str
    source: str | None = Field(None, description="The file, when known.")
    object: str | None = Field(None, description="Kind namespace/name, when known.")


class NotSimulatedReport(_Model):
    """Objects of one built-in kind the run validated and kept but does not simulate
    (ConfigMaps, RBAC, Ingresses...): they are in the cluster, nothing acts on them."""

    kind: str
    count: int = Field(description="How many such objects the cluster held at the end.")


class EventReport(_Model):
    """A Kubernetes Event recorded during the run."""

    time: float = Field(description="Virtual time, in seconds.")
    type: str
    reason: str
    object: str = Field(description="Kind namespace/name.")
    message: str
    related: str | None = None


class BlockedEvictionReport(_Model):
    """A pod a drain could not evict (yet): the PDB that refused it, and how often."""

    pod: str
    pdb: str
    attempts: int = Field(description="Eviction requests refused (429), every 5 s.")
    message: str
    evicted: bool = Field(description="Whether it was evicted in the end, within the step.")


class TimelineStepReport(_Model):
    """One step of the timeline and what happened until the next one (the window)."""

    index: int = Field(description="Position in the timeline file, from 0.")
    at: float = Field(description="When the step ran (virtual s).")
    until: float = Field(description="End of the window: the next step, or the end of the run.")
    action: str
    description: str
    note: str | None = None
    targets: list[str] = Field(default_factory=list, description="The objects it acted on.")
    errors: list[str] = Field(default_factory=list, description="What it could not do.")
    evicted: list[str] = Field(default_factory=list, description="Pods evicted in the window.")
    evicted_by: dict[str, int] = Field(
        default_factory=dict, alias="evictedBy", description="Evictions in the window per evictor."
    )
    rescheduled: list[str] = Field(
        default_factory=list,
        description="Replacements of evicted pods bound in the window.",
    )
    scheduled: int = Field(0, description="Pods bound in the window (all).")
    pending: list[str] = Field(
        default_factory=list, description="Pods pending at the end of the window."
    )
    blocked_evictions: list[BlockedEvictionReport] = Field(
        default_factory=list,
        alias="blockedEvictions",
        description="Evictions of a drain that PodDisruptionBudgets refused.",
    )


class TimelineReport(_Model):
    """The timeline played: its steps with their windows."""

    name: str
    steps: list[TimelineStepReport]


class SimulationReport(_Model):
    """What ``kubesched simulate`` found: where every pod went and why."""

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        title="SimulationReport",
        json_schema_extra={"$id": "https://kubesched.io/schema/simulation/v1"},
    )

    schema_version: Literal["kubesched.io/simulation/v1"] = Field(
        SCHEMA_VERSION, alias="schemaVersion"
    )
    seed: int
    detail: Literal["full", "summary"] = DETAIL_FULL
    virtual_time_seconds: float = Field(
        alias="virtualTimeSeconds", description="Simulated time at the end of the run."
    )
    wall_time_seconds: float | None = Field(
        alias="wallTimeSeconds",
        description="Real time the run took (varies between runs); null with --reproducible.",
    )
    cycles: int = Field(0, description="Scheduling cycles run.")
    stop_reason: Literal["settled", "stalled", "horizon"] = Field(
        "settled",
        alias="stopReason",
        description="settled: nothing more could happen. stalled: pods kept retrying "
        "with no pod created, bound or removed for 30 minutes of virtual time (e.g. a "
        "gang that can never fit), or kept being evicted and replaced without time "
        "passing, so the run was stopped. horizon: the timeline's end (spec.runFor, or an "
        "hour after its last step) came while things still happened.",
    )
    profiles: list[str] = Field(description="The configured profiles (schedulerName), in order.")
    summary: list[ProfileSummary]
    pods: list[PodReport]
    nodes: list[NodeReport]
    rejections: list[RejectionReport] = Field(default_factory=list)
    notices: list[NoticeReport] = Field(
        default_factory=list,
        description="What the run accepted but changed or passed over, in the order noticed.",
    )
    not_simulated: list[NotSimulatedReport] = Field(
        default_factory=list,
        alias="notSimulated",
        description="Objects of built-in kinds kubesched validates and keeps but does not "
        "simulate, by kind (sorted) with their count.",
    )
    events: list[EventReport] | None = Field(
        None, description="Every Event recorded, when requested."
    )
    evictions: list[EvictionReport] = Field(
        default_factory=list, description="Every eviction of the run, in time order."
    )
    timeline: TimelineReport | None = Field(
        None, description="The timeline played (simulate --timeline), step by step."
    )

    def pod(self, key: str) -> PodReport:
        """The pod ``namespace/name`` (the live one when a name was reused); KeyError."""
        found = [p for p in self.pods if p.key == key]
        if not found:
            raise KeyError(key)
        live = [p for p in found if p.result in LIVE_RESULTS]
        return (live or found)[-1]

    def to_json(self, **kw: Any) -> str:
        """The report as JSON (camelCase field names)."""
        return self.model_dump_json(by_alias=True, **kw)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (camelCase field names), for YAML."""
        return self.model_dump(mode="json", by_alias=True)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`SimulationReport` (what docs/schema/ holds)."""
    return SimulationReport.model_json_schema(by_alias=True)


# -- building -------------------------------------------------------------------------------


def parse_pod_key(text: str) -> str:
    """``NAMESPACE/POD`` (or ``POD``, meaning the default namespace) → ``namespace/name``."""
    parts = text.split("/")
    if len(parts) == 1 and parts[0]:
        return f"default/{parts[0]}"
    if len(parts) == 2 and all(parts):
        return text
    raise UserInputError(f"{text!r} is not NAMESPACE/POD", obj="--explain")


def _split_key(key: str) -> tuple[str, str]:
    ns, _, name = key.rpartition("/")
    return ns or "default", name


def _deleted_pods(run: Any) -> dict[str, Pod]:
    """The last version of every pod deleted during the run, by uid.

    Replays the cluster's watch log; if it was compacted, what is gone is gone (the
    attempt records still name those pods)."""
    gone: dict[str, Pod] = {}

    def handler(event: WatchEvent) -> None:
        if event.type is EventType.DELETED:
            pod = event.object
            gone[pod.metadata.uid or pod.key] = pod  # type: ignore[assignment]

    try:
        watch = run.cluster.watch("Pod", "1", handler)
    except BackendError:
        return gone
    watch.stop()
    return gone


def _status_code(status: Any) -> str:
    return status.code.display


# The detail builders return plain data validated once per pod by PodReport: a full
# report of a large run holds millions of per-node scores, and pydantic-core validates
# nested data in bulk much faster than one model (or model_construct) call per item.


def _filters(record: AttemptRecord, node_names: Iterable[str]) -> list[dict[str, Any]]:
    d = record.diagnosis
    if d is None:
        return []
    out = [
        {
            "node": node,
            "plugin": st.plugin,
            "code": _status_code(st),
            "reasons": st.reasons,
            "details": list(st.details),
        }
        for node, st in d.node_to_status.items()
    ]
    if d.absent_nodes_status is not None:
        # A PreFilter rejection (or node-name narrowing) applies to every node not listed.
        st = d.absent_nodes_status
        code = _status_code(st)
        feasible = set(record.feasible)
        for node in node_names:
            if node not in d.node_to_status and node not in feasible:
                out.append({"node": node, "plugin": st.plugin, "code": code, "reasons": st.reasons})
    out.sort(key=lambda f: f["node"])
    return out


def _scores(record: AttemptRecord) -> list[dict[str, Any]]:
    sr = record.scores
    if sr is None:
        return []
    columns = [
        (ps.plugin, int(ps.weight), ps.raw.tolist(), ps.normalized.tolist()) for ps in sr.plugins
    ]
    totals = sr.totals.tolist()
    out = []
    for i, node in enumerate(sr.names):
        plugins = [
            {
                "plugin": plugin,
                "raw": int(raw[i]),
                "normalized": int(norm[i]),
                "weight": weight,
                "weighted": int(norm[i]) * weight,
            }
            for plugin, weight, raw, norm in columns
        ]
        out.append({"node": node, "total": int(totals[i]), "plugins": plugins})
    out.sort(key=lambda s: (-s["total"], s["node"]))
    return out


def _preemption_explained(explanation: Any) -> dict[str, Any]:
    """PreemptionReport fields from a PostFilter plugin's explanation.

    Read by attribute (``candidates``, ``chosen``, ``decided_by``, ``message``), as
    DefaultPreemption's ``PreemptionExplanation`` has them: the core does not import
    plugins, and another PostFilter plugin may explain itself the same way.
    """
    if explanation is None:
        return {}
    return {
        "candidates": [
            CandidateReport(
                node=c.node,
                victims=list(c.victims),
                numPDBViolations=getattr(c, "num_pdb_violations", 0),
            )
            for c in getattr(explanation, "candidates", ()) or ()
        ],
        "chosen": getattr(explanation, "chosen", None) or None,
        "decidedBy": getattr(explanation, "decided_by", None) or None,
        "message": getattr(explanation, "message", None) or None,
    }


def _history(records: list[AttemptRecord]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        attempt = {
            "attempt": r.attempt,
            "profile": r.profile,
            "startedAt": r.started_at,
            "finishedAt": r.finished_at,
            "result": r.result or "error",
            "node": r.node_name,
            "message": r.message,
            "allNodes": r.num_all_nodes,
            # A failed attempt ran the filters on every node (or PreFilter rejected them all).
            "evaluatedNodes": r.evaluated_nodes or (r.num_all_nodes if not r.feasible else 0),
            "feasibleNodes": len(r.feasible),
            "nominatedNode": r.nominated_node,
        }
        attempt["extenders"] = [
            {
                "extender": v.extender,
                "verb": v.verb,
                "result": v.result,
                "failedNodes": v.failed_nodes,
            }
            for v in r.extender_calls()
        ]
        out.append(attempt)
    return out


def _detail(records: list[AttemptRecord], node_names: list[str]) -> dict[str, Any]:
    """The filters, scores and history of a pod's attempts, as PodReport keyword args."""
    if not records:
        return {}
    last = records[-1]
    return {
        "filters": _filters(last, node_names),
        "scores": _scores(last),
        "history": _history(records),
    }


def _claims(cluster: Any, pod: Pod) -> list[ClaimReport]:
    out = []
    for name, _ in pod_claim_names(pod):
        pvc = cluster.try_get("PersistentVolumeClaim", pod.namespace, name)
        if pvc is None:
            out.append(ClaimReport(name=name, phase=None))
            continue
        pv = (
            cluster.try_get("PersistentVolume", None, pvc.spec.volume_name)
            if pvc.spec.volume_name
            else None
        )
        topology: list[str] = []
        affinity = pv.spec.node_affinity if pv is not None else None
        if affinity is not None and affinity.required is not None:
            terms = affinity.required.node_selector_terms
            for req in terms[0].match_expressions if terms else ():
                topology.append(f"{req.key} {req.operator.lower()} ({', '.join(req.values)})")
        request = pvc.spec.resources.requests.get("storage")
        out.append(
            ClaimReport(
                name=name,
                phase=pvc.status.phase,
                storageClass=pvc.class_name or None,
                request=str(request) if request is not None else None,
                volume=pvc.spec.volume_name or None,
                provisioned=pv is not None and ANN_PROVISIONED_BY in pv.metadata.annotations,
                selectedNode=pvc.metadata.annotations.get(ANN_SELECTED_NODE),
                topology=topology,
            )
        )
    return out


def _pod_devices(cluster: Any) -> dict[str, list[DeviceReport]]:
    """Pod uid -> the devices of the allocated ResourceClaims reserved for it."""
    slice_of: dict[tuple[str, str, str], str] = {}
    for sl in cluster.objects("ResourceSlice"):
        for d in sl.spec.devices:
            slice_of[(sl.spec.driver, sl.spec.pool.name, d.name)] = sl.name
    out: dict[str, list[DeviceReport]] = defaultdict(list)
    for claim in cluster.objects("ResourceClaim"):
        alloc = claim.status.allocation
        if alloc is None:
            continue
        for ref in claim.status.reserved_for:
            for r in alloc.devices.results:
                out[ref.uid].append(
                    DeviceReport(
                        claim=claim.name,
                        request=r.request,
                        driver=r.driver,
                        pool=r.pool,
                        device=r.device,
                        slice=slice_of.get((r.driver, r.pool, r.device)),
                    )
                )
    return out


def _taint(t: Any) -> str:
    value = f"={t.value}" if t.value else ""
    return f"{t.key}{value}:{t.effect}"


def _occupies_node(pod: Pod) -> bool:
    return bool(pod.spec.node_name) and pod.status.phase not in ("Succeeded", "Failed")


def build_report(
    run: Any,
    *,
    explain: Iterable[str] | None = None,
    detail: str = DETAIL_FULL,
    objects: Iterable[KubeObject] | None = None,
    include_events: bool = False,
    notices: Iterable[Notice] = (),
) -> SimulationReport:
    """Turn a finished ``SimulationRun`` into a :class:`SimulationReport`.

    ``detail="summary"`` leaves out every pod's filters, scores and history. ``explain``
    (pod keys ``namespace/name``) keeps those only for the pods named, and raises
    ``UserInputError`` when one of them is not in the run. ``objects`` (the input
    manifests) lets the report give the labels and profile of pods admission refused;
    ``notices`` (see :func:`kubesched.notices.collecting_notices`) are reported as given.

    A full report of a large run holds millions of per-node scores, each a pydantic
    object; :func:`build_report_data` gives the same content as plain data much faster.
    """
    report, details = _assemble(run, explain, detail, objects, include_events, notices)
    if details:
        report.pods = [
            PodReport.model_validate({**p.model_dump(by_alias=True), **d}) if d else p
            for p, d in zip(report.pods, details, strict=True)
        ]
    return report


def build_report_data(
    run: Any,
    *,
    explain: Iterable[str] | None = None,
    detail: str = DETAIL_FULL,
    objects: Iterable[KubeObject] | None = None,
    include_events: bool = False,
    notices: Iterable[Notice] = (),
) -> dict[str, Any]:
    """What :func:`build_report` returns, as JSON-ready data (camelCase keys), built
    without a pydantic object per score: what ``simulate --output json`` prints. It
    validates as a :class:`SimulationReport`."""
    report, details = _assemble(run, explain, detail, objects, include_events, notices)
    data = report.to_dict()
    for pod, d in zip(data["pods"], details, strict=True):
        pod.update(d)
    return data


def _assemble(
    run: Any,
    explain: Iterable[str] | None,
    detail: str,
    objects: Iterable[KubeObject] | None,
    include_events: bool,
    notices: Iterable[Notice],
) -> tuple[SimulationReport, list[dict[str, Any]]]:
    """The report without the pods' detail, and each pod's detail (same order) as data."""
    if detail not in (DETAIL_FULL, DETAIL_SUMMARY):
        raise UserInputError(f"unknown detail {detail!r}: use full or summary", obj="--detail")
    wanted = {parse_pod_key(k) for k in explain} if explain is not None else None
    cluster = run.cluster
    profiles = [p.scheduler_name for p in run.scheduler.config.profiles]
    served_profiles = set(profiles)
    nodes = sorted(cluster.objects("Node"), key=lambda n: n.name)
    node_names = [n.name for n in nodes]

    # Preempted events: victim key -> (preemptor key, message, node).
    preempted_events: dict[str, RecordedEvent] = {}
    victims_of: dict[str, list[RecordedEvent]] = defaultdict(list)
    for ev in cluster.events:
        if ev.reason == "Preempted" and ev.involved_kind == "Pod":
            victim = f"{ev.involved_namespace}/{ev.involved_name}"
            preempted_events[victim] = ev
            if ev.related:
                victims_of[ev.related].append(ev)

    pod_devices = _pod_devices(cluster)
    pods: list[PodReport] = []
    details: dict[int, dict[str, Any]] = {}  # id(PodReport) -> its filters, scores, history
    explanations: dict[int, Any] = {}  # id(PodReport) -> its PostFilter plugin's explanation
    seen_uids: set[str] = set()

    def add_pod(pod: Pod, result: PodResult, message: str = "") -> PodReport:
        uid = pod.metadata.uid or ""
        seen_uids.add(uid)
        records = run.attempts.get(uid, [])
        last = records[-1] if records else None
        profile = pod.spec.scheduler_name or "default-scheduler"
        if result == "pending" and last is not None:
            message = last.message
        elif result == "pending" and profile not in served_profiles:
            message = f'no profile has schedulerName "{profile}"; the pod is left alone'
        elif result == "pending":
            message = _never_tried(pod, run.scheduler.queue)
        key = f"{pod.namespace}/{pod.name}"
        explained = detail == DETAIL_FULL and (wanted is None or key in wanted)
        report = PodReport(
            namespace=pod.namespace,
            name=pod.name,
            uid=uid or None,
            labels=dict(pod.metadata.labels or {}),
            profile=profile,
            served=profile in served_profiles,
            priority=pod.spec.priority,
            result=result,
            node=pod.spec.node_name or None,
            attempts=len(records),
            message=message,
            nominatedNode=pod.status.nominated_node_name
            or (last.nominated_node if last is not None else None),
            podScheduledReason=_pod_scheduled_reason(pod),
            schedulingGates=[g.name for g in pod.spec.scheduling_gates],
            claims=_claims(cluster, pod),
            devices=pod_devices.get(uid, []),
        )
        if explained:
            details[id(report)] = _detail(records, node_names)
        explanation = next(
            (r.post_filter_details for r in reversed(records) if r.post_filter_details is not None),
            None,
        )
        if explanation is not None:
            explanations[id(report)] = explanation
        pods.append(report)
        return report

    deleted = _deleted_pods(run)
    evictions = [EvictionReport.model_validate(e) for e in build_evictions(run, deleted)]
    eviction_of = {e.uid: e for e in evictions if e.uid}
    known_nodes = set(node_names)
    for pod in cluster.pods():
        ev_report = eviction_of.get(pod.metadata.uid or "")
        if ev_report is not None and pod.status.phase in ("Succeeded", "Failed"):
            add_pod(pod, "evicted", ev_report.message or ev_report.reason).eviction = ev_report
        elif pod.spec.node_name and pod.spec.node_name not in known_nodes:
            add_pod(pod, "nodeMissing", node_missing_message(pod.spec.node_name))
        else:
            add_pod(pod, "scheduled" if pod.spec.node_name else "pending")

    for uid, pod in deleted.items():
        if uid in seen_uids:
            continue
        ev = preempted_events.get(pod.key)
        ev_report = eviction_of.get(uid)
        if ev is not None:
            r = add_pod(pod, "preempted", ev.message)
            r.preempted_by = ev.related
            r.eviction = ev_report
        elif ev_report is not None:
            add_pod(pod, "evicted", ev_report.reason).eviction = ev_report
        elif (gone := _deleted_by_pod_gc(pod, known_nodes)) is not None:
            add_pod(pod, "deleted", gone)
        else:
            add_pod(pod, "deleted", "deleted during the run")

    # Pods that had attempts but left no trace in the watch log (compacted).
    for uid, records in run.attempts.items():
        if uid in seen_uids or not records:
            continue
        ns, name = _split_key(records[-1].pod_key)
        explained = detail == DETAIL_FULL and (wanted is None or f"{ns}/{name}" in wanted)
        r = PodReport(
            namespace=ns,
            name=name,
            uid=uid,
            profile=records[-1].profile,
            result="preempted" if records[-1].pod_key in preempted_events else "deleted",
            node=records[-1].node_name,
            attempts=len(records),
            message="deleted during the run",
        )
        if explained:
            details[id(r)] = _detail(records, node_names)
        pods.append(r)

    # Pods admission refused. Controllers' failed creations stay in `rejections` only.
    given = {o.key: o for o in objects or () if isinstance(o, Pod)}
    for rej in run.rejections:
        kind, _, key = rej.source_object_key.partition(" ")
        if kind != "Pod":
            continue
        ns, name = _split_key(key)
        obj = given.get(f"{ns}/{name}")
        profile = (obj.spec.scheduler_name or "default-scheduler") if obj is not None else None
        pods.append(
            PodReport(
                namespace=ns,
                name=name,
                labels=dict(obj.metadata.labels or {}) if obj is not None else {},
                profile=profile,
                served=profile is None or profile in served_profiles,
                result="rejected",
                node=None,
                attempts=0,
                message=rej.message,
            )
        )

    # Victims and candidates, on their preemptors.
    victim_node = {r.key: r.node for r in pods if r.result == "preempted"}
    for r in pods:
        evs = victims_of.get(r.key) if r.result in LIVE_RESULTS else None
        explanation = explanations.get(id(r))
        if not evs and explanation is None:
            continue
        r.preemption = PreemptionReport(
            victims=[
                VictimReport(
                    namespace=e.involved_namespace,
                    name=e.involved_name,
                    node=victim_node.get(f"{e.involved_namespace}/{e.involved_name}")
                    or e.message.rsplit(" on node ", 1)[-1],
                )
                for e in evs or ()
            ],
            **_preemption_explained(explanation),
        )

    pods.sort(key=lambda p: (p.namespace, p.name, p.result != "scheduled", p.uid or ""))

    if wanted is not None:
        missing = sorted(wanted - {p.key for p in pods})
        if missing:
            raise UserInputError(
                f"no pod {', '.join(missing)} in the simulation "
                f"({len(pods)} pods; list them with --output json)",
                obj="--explain",
            )
    summary = _summary(profiles, pods, run)
    report = SimulationReport(
        seed=run.seed,
        detail=detail,  # type: ignore[arg-type]
        virtualTimeSeconds=run.virtual_time,
        wallTimeSeconds=run.wall_time,
        cycles=run.cycles,
        stopReason=run.stop_reason,
        profiles=profiles,
        summary=summary,
        pods=pods,
        nodes=_nodes(nodes, cluster.pods()),
        rejections=[
            RejectionReport(object=r.source_object_key, message=r.message) for r in run.rejections
        ],
        notices=[NoticeReport(message=n.message, source=n.source, object=n.obj) for n in notices],
        notSimulated=_not_simulated(cluster),
        events=[_event(e) for e in cluster.events] if include_events else None,
        evictions=evictions,
        timeline=(
            TimelineReport.model_validate(timeline)
            if (timeline := build_timeline(run, evictions)) is not None
            else None
        ),
    )
    return report, [details.get(id(p), {}) for p in pods]


MODELLED_KEPT_KINDS = frozenset({HPA_KIND})
"""Kinds read as kept objects (no model of their own) that a controller of the embedded
cluster acts on all the same, so they are simulated."""


def _not_simulated(cluster: Any) -> list[NotSimulatedReport]:
    kinds = sorted(k for k in kept_kinds() if k not in MODELLED_KEPT_KINDS)
    counts = ((kind, len(cluster.objects(kind))) for kind in kinds)
    return [NotSimulatedReport(kind=kind, count=n) for kind, n in counts if n]


MSG_HELD_BACK = (
    "never tried: a PreEnqueue plugin holds it back (no FailedScheduling event, as on a "
    "real cluster)"
)
"""The report's message for a pending pod a PreEnqueue plugin keeps out of the queue."""


def _pod_scheduled_condition(pod: Pod) -> Any:
    return next((c for c in pod.status.conditions or () if c.type == "PodScheduled"), None)


def _pod_scheduled_reason(pod: Pod) -> str | None:
    """The reason of ``pod``'s PodScheduled condition when it is False, else None."""
    condition = _pod_scheduled_condition(pod)
    if condition is None or condition.status != "False":
        return None
    return condition.reason or None


def _never_tried(pod: Pod, queue: Any) -> str:
    """Why a pending pod had no attempt: its PodScheduled condition (kube-apiserver's
    SchedulingGated), else whether PreEnqueue holds it back; else nothing."""
    condition = _pod_scheduled_condition(pod)
    if condition is not None and condition.message:
        return condition.message
    if queue.queue_of(pod.metadata.uid or "") == "gated":
        return MSG_HELD_BACK
    return ""


def node_missing_message(node: str) -> str:
    """The report's message for a pod bound to ``node``, which does not exist (yet
    within pod GC's quarantine when the run ended)."""
    return (
        f'spec.nodeName names node "{node}", which does not exist: no kubelet runs the pod '
        "and the scheduler leaves bound pods alone, so it stays Pending until pod GC "
        f"deletes it ({POD_GC_QUARANTINE:g} s after it notices the missing node)"
    )


def _deleted_by_pod_gc(pod: Pod, known_nodes: set[str]) -> str | None:
    """The report's message for a deleted pod that pod GC deleted because its node never
    existed (its ``DisruptionTarget`` condition says ``DeletionByPodGC``); None for any
    other deleted pod."""
    node = pod.spec.node_name
    if not node or node in known_nodes:
        return None
    cond = next((c for c in pod.status.conditions if c.type == "DisruptionTarget"), None)
    if cond is None or cond.reason != "DeletionByPodGC":
        return None
    return (
        f'deleted by PodGC: spec.nodeName names node "{node}", which does not exist, and '
        f"it was still missing after the {POD_GC_QUARANTINE:g} s quarantine ({cond.message})"
    )


_SUMMARY_FIELDS = {"nodeMissing": "node_missing"}
"""The ProfileSummary count of a result whose name is not its attribute's."""


def _summary(profiles: list[str], pods: list[PodReport], run: Any) -> list[ProfileSummary]:
    rows = {p: ProfileSummary(profile=p) for p in profiles}
    for pod in pods:
        name = pod.profile or "(unknown)"
        row = rows.get(name)
        if row is None:
            row = rows[name] = ProfileSummary(profile=name, served=False)
        field = _SUMMARY_FIELDS.get(pod.result, pod.result)
        setattr(row, field, getattr(row, field) + 1)
        row.attempts += pod.attempts
    return list(rows.values())


def _nodes(nodes: list[Any], pods: list[Pod]) -> list[NodeReport]:
    by_node: dict[str, list[Pod]] = defaultdict(list)
    for pod in pods:
        if _occupies_node(pod):
            by_node[pod.spec.node_name].append(pod)  # type: ignore[index]
    out = []
    for node in nodes:
        on_node = sorted(by_node.get(node.name, []), key=lambda p: p.key)
        requested: dict[str, int] = {}
        for pod in on_node:
            for name, value in pod_requests(pod).items():
                requested[name] = requested.get(name, 0) + value
        labels = dict(node.metadata.labels or {})
        out.append(
            NodeReport(
                name=node.name,
                zone=labels.get(ZONE_LABEL),
                labels=labels,
                unschedulable=bool(node.spec.unschedulable),
                taints=[_taint(t) for t in node.spec.taints or []],
                allocatable=Resources.from_dict(node_allocatable(node)),
                requested=Resources.from_dict(requested, pods=len(on_node)),
                pods=[p.key for p in on_node],
            )
        )
    return out


def _event(e: RecordedEvent) -> EventReport:
    ns = f"{e.involved_namespace}/" if e.involved_namespace else ""
    return EventReport(
        time=e.timestamp,
        type=e.type,
        reason=e.reason,
        object=f"{e.involved_kind} {ns}{e.involved_name}",
        message=e.message,
        related=e.related,
    )
