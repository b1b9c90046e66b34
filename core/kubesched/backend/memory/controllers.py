"""Workload controllers: Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets → Pods."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kubesched.api import (
    Affinity,
    DaemonSet,
    Deployment,
    Job,
    JobCondition,
    KubeObject,
    LabelSelector,
    LabelSelectorMatcher,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerReference,
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    RequiredNodeAffinity,
    StatefulSet,
    Toleration,
    Volume,
    compile_label_selector,
    find_untolerated_taint,
    selector_from_set,
)
from kubesched.api.selectors import MATCH_NOTHING, LabelSelectorError
from kubesched.backend.memory.admission import AdmissionError
from kubesched.backend.memory.naming import compute_hash, timestamp
from kubesched.backend.protocol import EventType, RecordedEvent, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "ADOPTING_KINDS",
    "CONTROLLER_NAMES",
    "DAEMON_TOLERATIONS",
    "JOB_POD_FAILURE_BACKOFF",
    "MAX_JOB_POD_FAILURE_BACKOFF",
    "POD_TEMPLATE_HASH_LABEL",
    "PodLimitExceeded",
    "WorkloadControllers",
    "daemon_pod_tolerations",
    "node_should_run_daemon_pod",
    "replace_daemon_set_pod_node_name_node_affinity",
]

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
DEPLOYMENT_REVISION = "deployment.kubernetes.io/revision"

_TERMINAL = ("Succeeded", "Failed")

JOB_POD_FAILURE_BACKOFF = 10.0
"""``DefaultJobPodFailureBackOff``: a Job waits this long after a pod failure before
creating the next pod, doubling with each failure since its last success..."""
MAX_JOB_POD_FAILURE_BACKOFF = 600.0
"""... up to ``MaxJobPodFailureBackOff``."""

ADOPTING_KINDS = ("ReplicaSet", "ReplicationController", "StatefulSet", "Job")
"""The controllers that adopt orphan pods (``ClaimPods``), in the order a pod matching
several is offered to them (upstream, whichever syncs first wins)."""

# StatefulSet pods are named <set>-<ordinal> (getParentNameAndOrdinal).
_STATEFUL_POD_NAME = re.compile(r"^(.*)-([0-9]+)$")

# The Job controller's condition reasons and messages (v1.36).
JOB_COMPLETED = ("CompletionsReached", "Reached expected number of succeeded pods")
JOB_BACKOFF_LIMIT = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
JOB_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")

DAEMON_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
"""``AddOrUpdateDaemonPodTolerations``: (key, effect), operator Exists, no tolerationSeconds.
With hostNetwork, ``node.kubernetes.io/network-unavailable`` NoSchedule is added too."""

_NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


# --- helpers --------------------------------------------------------------------------------


def _is_active(pod: Pod) -> bool:
    """``FilterActivePods``: not terminating and not finished."""
    return pod.metadata.deletion_timestamp is None and pod.status.phase not in _TERMINAL


def _is_running_and_ready(pod: Pod) -> bool:
    if pod.status.phase != "Running":
        return False
    for c in pod.status.conditions:
        if c.type == "Ready":
            return c.status == "True"
    return True


def _owner_ref(owner: KubeObject) -> OwnerReference:
    return OwnerReference(
        api_version=owner.api_version or "",
        kind=owner.kind or "",
        name=owner.name,
        uid=owner.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def _template_without_hash(template: PodTemplateSpec) -> dict[str, Any]:
    d = template.to_dict()
    labels = d.get("metadata", {}).get("labels")
    if labels:
        labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return d


def daemon_pod_tolerations(tolerations: list[Toleration], host_network: bool) -> list[Toleration]:
    """The DaemonSet's tolerations plus upstream's defaults (``AddOrUpdateDaemonPodTolerations``).

    As ``AddOrUpdateTolerationInPodSpec``, a toleration with the same key, operator,
    value and effect is replaced, any other added.
    """
    out = [t.model_copy(deep=True) for t in tolerations]
    wanted = list(DAEMON_TOLERATIONS)
    if host_network:
        wanted.append(_NETWORK_UNAVAILABLE)
    for key, effect in wanted:
        tol = Toleration(key=key, operator="Exists", effect=effect)
        for i, t in enumerate(out):
            if (t.key, t.operator or "Equal", t.value or "", t.effect) == (
                key,
                "Exists",
                "",
                effect,
            ):
                out[i] = tol
                break
        else:
            out.append(tol)
    return out


def replace_daemon_set_pod_node_name_node_affinity(
    affinity: Affinity | None, node_name: str
) -> Affinity:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: require ``metadata.name In [node]``.

    The required node selector terms are replaced by that single matchFields term
    (the controller has already checked that the node satisfies the original ones);
    preferred terms and pod (anti-)affinity are kept.
    """
    term = NodeSelectorTerm(
        match_fields=[
            NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
        ]
    )
    selector = NodeSelector(node_selector_terms=[term])
    aff = affinity.model_copy(deep=True) if affinity is not None else Affinity()
    if aff.node_affinity is None:
        aff.node_affinity = NodeAffinity()
    aff.node_affinity.required_during_scheduling_ignored_during_execution = selector
    return aff


def node_should_run_daemon_pod(pod: Pod, node: Node) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run, should continue running) on ``node``.

    ``pod`` is the DaemonSet's pod (template with the daemon tolerations). Node name
    and required node affinity (with nodeSelector) decide both; an untolerated
    NoSchedule/NoExecute taint prevents a new pod, an untolerated NoExecute taint
    also evicts a running one.
    """
    name = node.name
    if pod.spec.node_name and pod.spec.node_name != name:
        return False, False
    if not RequiredNodeAffinity(pod).matches(node):
        return False, False
    taints = node.spec.taints
    tols = pod.spec.tolerations
    if find_untolerated_taint(taints, tols, ("NoSchedule", "NoExecute")) is None:
        return True, True
    return False, find_untolerated_taint(taints, tols, ("NoExecute",)) is None


def _daemon_target_node(pod: Pod) -> str | None:
    """``GetTargetNodeName``: nodeName, else the matchFields metadata.name of the affinity."""
    if pod.spec.node_name:
        return pod.spec.node_name
    aff = pod.spec.affinity
    req = None
    if aff is not None and aff.node_affinity is not None:
        req = aff.node_affinity.required_during_scheduling_ignored_during_execution
    if req is None:
        return None
    for term in req.node_selector_terms:
        for f in term.match_fields:
            if f.key == "metadata.name" and f.operator == "In" and len(f.values) == 1:
                return f.values[0]
    return None


def _deletion_rank(pod: Pod) -> tuple[Any, ...]:
    """``ActivePodsWithRanks``, simplified: unassigned, pending, unready and newer go first."""
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(pod.status.phase or "", 0)
    created = pod.metadata.creation_timestamp
    ts = -created.timestamp() if created is not None else 0.0
    return (bool(pod.spec.node_name), phase_rank, _is_running_and_ready(pod), ts, pod.name)


# --- the controllers ------------------------------------------------------------------------


class PodLimitExceeded(AdmissionError):
    """A workload that would take the run past :attr:`MemoryCluster.max_pods` pods; its
    pods are not created (the refusal is recorded, never raised out of the cluster)."""


class WorkloadControllers:
    """The controller-manager loops the embedded cluster needs, run synchronously.

    Each ``sync_*`` compares an owner's desired pods with the pods it controls
    (found by ownerReference uid, after adopting matching orphans and releasing pods
    that no longer match, as ``ClaimPods``) and creates or deletes pods through the
    cluster, so the pods pass admission and produce watch events like any other.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        # Job uid -> {pod uid: "Succeeded" | "Failed"}: every finished pod counted once,
        # also after it is gone (upstream tracks them with a finalizer).
        self._job_done: dict[str, dict[str, str]] = {}
        # Job uid -> (failures since the last success, time of the last failure).
        self._job_backoff: dict[str, tuple[int, float]] = {}
        # namespace -> keys of its pods without a controller: the candidates for adoption.
        self._orphans: dict[str, dict[str, None]] = {}
        self._refused: set[str] = set()  # uids of the owners refused for the pod limit
        # (kind, uid) of the objects being synced -> None, or whether a sync asked for
        # meanwhile adopts: it runs once the current one is done.
        self._again: dict[tuple[str, str], bool | None] = {}

    # -- dispatch --------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster (called for every watch event)."""
        obj = event.object
        if kind in _SYNCERS and event.type != EventType.DELETED:
            # Events may queue up behind each other: reconcile the current object.
            cur = self.cluster.try_get(kind, obj.metadata.namespace, obj.name)
            if cur is not None and cur.metadata.uid == obj.metadata.uid:
                self.sync(cur, adopt=True)
        elif kind == "Pod":
            self._on_pod(event)
        elif kind == "Job":  # deleted: forget its count of finished pods
            self._job_done.pop(obj.metadata.uid or "", None)
            self._job_backoff.pop(obj.metadata.uid or "", None)
        elif kind == "Node":
            for ds in self.cluster.objects("DaemonSet"):
                self.sync_daemon_set(ds)  # type: ignore[arg-type]
        elif kind in ("PriorityClass", "RuntimeClass") and event.type == EventType.ADDED:
            # A class that was missing may unblock pods a controller failed to create.
            self.resync_all()

    def _on_pod(self, event: WatchEvent) -> None:
        pod: Pod = event.object  # type: ignore[assignment]
        old: Pod | None = event.old  # type: ignore[assignment]
        ref = pod.metadata.controller_ref
        if self._index_orphan(pod, event.type) and (
            old is None
            or old.metadata.controller_ref is not None
            or old.metadata.labels != pod.metadata.labels
        ):
            self._adopt_orphan(pod)
            return
        if ref is None:
            return
        if ref.kind == "Job" and self._find_owner(pod.namespace, "Job", ref.name, ref.uid):
            self._count_job_pod(ref.uid, pod, event.type)
        if event.type == EventType.MODIFIED and old is not None:
            # Binding and status chatter do not change what a ReplicaSet counts; only a
            # pod starting to terminate or finishing does (a StatefulSet also waits for
            # readiness), or labels that may no longer match the owner's selector.
            relevant = (
                (old.metadata.deletion_timestamp is None)
                != (pod.metadata.deletion_timestamp is None)
                or (pod.status.phase in _TERMINAL) != (old.status.phase in _TERMINAL)
                or (ref.kind == "StatefulSet" and old.status != pod.status)
                or old.metadata.labels != pod.metadata.labels
            )
            if not relevant:
                return
        elif event.type == EventType.ADDED:
            return
        owner = self._find_owner(pod.namespace, ref.kind, ref.name, ref.uid)
        if owner is not None:
            # Relabelled: the owner may have to release it.
            relabelled = old is not None and old.metadata.labels != pod.metadata.labels
            self.sync(owner, adopt=relabelled)

    def _find_owner(self, namespace: str, kind: str, name: str, uid: str) -> KubeObject | None:
        if kind not in _SYNCERS:
            return None
        owner = self.cluster.try_get(kind, namespace, name)
        if owner is None or (uid and owner.metadata.uid != uid):
            return None
        return owner

    def sync(self, obj: KubeObject, *, adopt: bool = False) -> None:
        """Reconcile one workload object; with ``adopt``, first claim the matching
        orphans of its namespace (when it is created or changed, and on a resync).

        A sync that a sync's own writes ask for (outside a watch dispatch, writes are
        handled at once) runs after it, on the object as it is then: one sync of an
        object at a time, as upstream's work queue guarantees."""
        key = (obj.kind or "", obj.metadata.uid or "")
        if key in self._again:
            self._again[key] = self._again[key] or adopt
            return
        self._again[key] = None
        try:
            while True:
                if adopt:
                    if obj.kind in ADOPTING_KINDS:
                        self._adopt_pods(obj)
                    elif obj.kind == "Deployment":
                        self._adopt_replica_sets(obj)  # type: ignore[arg-type]
                getattr(self, _SYNCERS[obj.kind or ""])(obj)
                again = self._again[key]
                if again is None:
                    return
                cur = self.cluster.try_get(obj.kind or "", obj.metadata.namespace, obj.name)
                if cur is None or cur.metadata.uid != obj.metadata.uid:
                    return
                obj, adopt, self._again[key] = cur, again, None
        finally:
            del self._again[key]

    def resync_all(self) -> None:
        """Reconcile every workload (after a batch load, or when a class appears)."""
        self._orphans.clear()
        for pod in self.cluster.iter_objects("Pod"):
            self._index_orphan(pod, EventType.ADDED)  # type: ignore[arg-type]
        for kind in (
            "Deployment",
            "ReplicaSet",
            "ReplicationController",
            "StatefulSet",
            "Job",
            "DaemonSet",
        ):
            for obj in self.cluster.objects(kind):
                # An earlier sync in this loop may have deleted it (garbage collection).
                if self.cluster.try_get(kind, obj.metadata.namespace, obj.name) is obj:
                    self.sync(obj, adopt=True)

    # -- adoption (ClaimPods) --------------------------------------------------------------

    def _index_orphan(self, pod: Pod, etype: EventType) -> bool:
        """Keep :attr:`_orphans` current; True when ``pod`` is (still) an orphan."""
        orphans = self._orphans.setdefault(pod.namespace, {})
        if etype != EventType.DELETED and pod.metadata.controller_ref is None:
            orphans[pod.key] = None
            return True
        orphans.pop(pod.key, None)
        return False

    def _selector(self, owner: KubeObject) -> LabelSelectorMatcher:
        """The pods ``owner`` selects (an invalid selector selects none)."""
        try:
            if isinstance(owner, ReplicationController):
                # SetDefaults_ReplicationController: no selector means the template's labels.
                labels = owner.spec.selector or (
                    owner.spec.template.metadata.labels if owner.spec.template else None
                )
                return selector_from_set(labels) if labels else MATCH_NOTHING
            if isinstance(owner, Job):
                if owner.spec.manual_selector:
                    return compile_label_selector(owner.spec.selector)
                # The generated selector: the job's uid label.
                return selector_from_set({JOB_UID_LABELS[0]: owner.metadata.uid or ""})
            return compile_label_selector(owner.spec.selector)  # type: ignore[attr-defined]
        except LabelSelectorError:
            return MATCH_NOTHING

    def _may_own(self, owner: KubeObject, pod: Pod, selector: LabelSelectorMatcher) -> bool:
        """Whether ``owner`` claims ``pod``: in its selector, and (a StatefulSet) named as
        one of its ordinals; a ReplicaSet claims only pods still running or pending."""
        if not selector.matches(pod.metadata.labels):
            return False
        if isinstance(owner, StatefulSet):
            m = _STATEFUL_POD_NAME.match(pod.name)
            return m is not None and m.group(1) == owner.name
        if isinstance(owner, ReplicaSet | ReplicationController):
            return pod.status.phase not in _TERMINAL
        return True

    def _adopt_pods(self, owner: KubeObject) -> None:
        """``ClaimPods``: adopt the matching orphans of the owner's namespace, release the
        owned pods that no longer match. A terminating owner neither adopts nor releases;
        a terminating pod is neither adopted nor released."""
        if owner.metadata.deletion_timestamp is not None:
            return
        selector = self._selector(owner)
        store = self.cluster
        for key in list(self._orphans.get(owner.namespace, ())):
            pod: Pod | None = store._objects["Pod"].get(key)  # type: ignore[assignment]
            if (
                pod is not None
                and pod.metadata.deletion_timestamp is None
                and self._may_own(owner, pod, selector)
            ):
                self._set_controller(pod, owner)
        for pod in self._owned_pods(owner):
            if pod.metadata.deletion_timestamp is None and not selector.matches(
                pod.metadata.labels
            ):
                self._set_controller(pod, None)

    def _adopt_orphan(self, pod: Pod) -> None:
        """Offer a new (or newly orphaned) pod to the controllers of its namespace."""
        if pod.metadata.deletion_timestamp is not None:
            return
        for kind in ADOPTING_KINDS:
            for owner in self.cluster.iter_objects(kind, pod.namespace):
                if owner.metadata.deletion_timestamp is None and self._may_own(
                    owner, pod, self._selector(owner)
                ):
                    self._set_controller(pod, owner)
                    self.sync(owner)
                    return

    def _set_controller(self, pod: Pod, owner: KubeObject | None) -> None:
        """Adopt ``pod`` into ``owner`` (a controller ownerReference added; a StatefulSet
        also writes its identity labels), or with None release it from its controller."""
        refs = [r for r in pod.metadata.owner_references if not r.controller]
        labels = dict(pod.metadata.labels)
        if owner is not None:
            refs.append(_owner_ref(owner))
            if isinstance(owner, StatefulSet):
                labels[STATEFULSET_POD_NAME_LABEL] = pod.name
                labels[POD_INDEX_LABEL] = pod.name.rsplit("-", 1)[1]
        meta = pod.metadata.model_copy(update={"owner_references": refs, "labels": labels})
        self.cluster.update(pod.model_copy(update={"metadata": meta}))

    def _adopt_replica_sets(self, d: Deployment) -> None:
        """The Deployment's ``ClaimReplicaSets``: orphan ReplicaSets its selector matches."""
        if d.metadata.deletion_timestamp is not None:
            return
        selector = self._selector(d)
        for rs in self.cluster.objects("ReplicaSet", d.namespace):
            if (
                rs.metadata.controller_ref is None
                and rs.metadata.deletion_timestamp is None
                and selector.matches(rs.metadata.labels)
            ):
                refs = [*rs.metadata.owner_references, _owner_ref(d)]
                meta = rs.metadata.model_copy(update={"owner_references": refs})
                self.cluster.update(rs.model_copy(update={"metadata": meta}))

    # -- shared ----------------------------------------------------------------------------

    def _owned_pods(self, owner: KubeObject) -> list[Pod]:
        uid = owner.metadata.uid or ""
        return [
            p
            for p in self.cluster.dependents(uid, "Pod")
            if (ref := p.metadata.controller_ref) is not None and ref.uid == uid
        ]  # type: ignore[misc]

    def _within_limit(self, owner: KubeObject, count: int) -> bool:
        """Whether ``count`` more pods keep the run within ``cluster.max_pods``; if not,
        the owner's expansion is refused (recorded, with a FailedCreate event) before
        any of its pods is made."""
        limit = self.cluster.max_pods
        total = len(self.cluster._objects["Pod"]) + count
        if limit is None or total <= limit:
            return True
        if owner.metadata.uid in self._refused:
            return False  # said once: every later sync would say it again
        self._refused.add(owner.metadata.uid or "")
        ref = owner.metadata.controller_ref
        of = f" (of {ref.kind} {owner.namespace}/{ref.name})" if ref is not None else ""
        self.cluster._reject(
            owner,
            PodLimitExceeded(
                f"{count} pods{of} would make {total} in the run, more than its limit of "
                f"{limit} pods (--max-pods); none created"
            ),
        )
        return False

    def _event(self, owner: KubeObject, etype: str, reason: str, message: str) -> None:
        self.cluster.record_event(
            RecordedEvent(
                involved_kind=owner.kind or "",
                involved_namespace=owner.namespace,
                involved_name=owner.name,
                type=etype,
                reason=reason,
                message=message,
                reporting_controller=CONTROLLER_NAMES[owner.kind or ""],
            )
        )

    def _create_pod(
        self,
        owner: KubeObject,
        template: PodTemplateSpec,
        *,
        name: str | None = None,
        generate_name: str | None = None,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        spec_update: dict[str, Any] | None = None,
    ) -> Pod | None:
        """``GetPodFromTemplate`` + create; a refused pod is recorded, not raised."""
        meta: dict[str, Any] = {
            "namespace": owner.namespace,
            "labels": {**template.metadata.labels, **(labels or {})},
            "annotations": {**template.metadata.annotations, **(annotations or {})},
            "ownerReferences": [_owner_ref(owner).to_dict()],
        }
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = generate_name or f"{owner.name}-"
        spec = template.spec.model_copy(deep=True, update=spec_update or {})
        pod = Pod(metadata=meta, spec=spec)  # type: ignore[arg-type]
        try:
            return self.cluster.create(pod)  # type: ignore[return-value]
        except AdmissionError as err:
            self.cluster._reject(owner, err)
            return None

    def _delete_pods(self, pods: list[Pod]) -> None:
        for pod in pods:
            if self.cluster.try_get("Pod", pod.namespace, pod.name) is not None:
                self.cluster.delete_pod(pod)

    def _scale_pods(self, owner: KubeObject, replicas: int, template: PodTemplateSpec | None):
        if owner.metadata.deletion_timestamp is not None:
            return
        active = [p for p in self._owned_pods(owner) if _is_active(p)]
        diff = len(active) - max(0, replicas)
        if diff < 0 and template is not None and self._within_limit(owner, -diff):
            for _ in range(-diff):
                if self._create_pod(owner, template) is None:
                    break  # the rest would be refused the same way
        elif diff > 0:
            self._delete_pods(sorted(active, key=_deletion_rank)[:diff])

    # -- ReplicaSet / ReplicationController ------------------------------------------------

    def sync_replica_set(self, rs: ReplicaSet) -> None:
        """Keep ``spec.replicas`` active pods (terminating ones are replaced at once)."""
        self._scale_pods(rs, rs.spec.replicas, rs.spec.template)

    def sync_replication_controller(self, rc: ReplicationController) -> None:
        """As a ReplicaSet, with the RC's optional template."""
        self._scale_pods(rc, rc.spec.replicas, rc.spec.template)

    # -- Deployment ------------------------------------------------------------------------

    def sync_deployment(self, d: Deployment) -> None:
        """Keep one ReplicaSet per template (``<name>-<pod-template-hash>``) at full scale.

        A changed template gets a new ReplicaSet at ``spec.replicas`` and the old ones are
        scaled to 0 at once: the rollout (maxSurge / maxUnavailable, readiness) is not
        simulated. A paused Deployment only scales the ReplicaSet of its template.
        """
        cluster = self.cluster
        uid = d.metadata.uid or ""
        owned: list[ReplicaSet] = [
            rs  # type: ignore[misc]
            for rs in cluster.dependents(uid, "ReplicaSet")
            if (ref := rs.metadata.controller_ref) is not None and ref.uid == uid
        ]
        want = _template_without_hash(d.spec.template)
        new_rs = next(
            (rs for rs in owned if _template_without_hash(rs.spec.template) == want), None
        )
        if new_rs is None and not d.spec.paused:
            new_rs = self._create_replica_set(d, owned)
        for rs in owned:
            target = d.spec.replicas if rs is new_rs else 0
            if rs is not new_rs and d.spec.paused:
                continue
            if rs.spec.replicas != target:
                cluster.update(
                    rs.model_copy(
                        deep=True,
                        update={"spec": rs.spec.model_copy(deep=True, update={"replicas": target})},
                    )
                )

    def _create_replica_set(self, d: Deployment, owned: list[ReplicaSet]) -> ReplicaSet | None:
        cluster = self.cluster
        collision: int | None = None
        while True:
            pth = compute_hash(d.spec.template, collision)
            name = f"{d.name}-{pth}"
            if cluster.try_get("ReplicaSet", d.namespace, name) is None:
                break
            collision = (collision or 0) + 1
        template = d.spec.template.model_copy(deep=True)
        template.metadata.labels = {**template.metadata.labels, POD_TEMPLATE_HASH_LABEL: pth}
        sel = d.spec.selector.model_copy(deep=True) if d.spec.selector else LabelSelector()
        sel.match_labels = {**(sel.match_labels or {}), POD_TEMPLATE_HASH_LABEL: pth}
        revision = 1 + max(
            (int(rs.metadata.annotations.get(DEPLOYMENT_REVISION, "0") or 0) for rs in owned),
            default=0,
        )
        rs = ReplicaSet.model_validate(
            {
                "metadata": {
                    "name": name,
                    "namespace": d.namespace,
                    "labels": template.metadata.labels,
                    "annotations": {
                        DEPLOYMENT_REVISION: str(revision),
                        "deployment.kubernetes.io/desired-replicas": str(d.spec.replicas),
                        "deployment.kubernetes.io/max-replicas": str(d.spec.replicas),
                    },
                    "ownerReferences": [_owner_ref(d).to_dict()],
                },
                "spec": {
                    "replicas": d.spec.replicas,
                    "minReadySeconds": d.spec.min_ready_seconds,
                    "selector": sel.to_dict(),
                    "template": template.to_dict(),
                },
            }
        )
        return cluster.create(rs)  # type: ignore[return-value]

    # -- StatefulSet -----------------------------------------------------------------------

    def sync_stateful_set(self, sts: StatefulSet) -> None:
        """Pods ``<name>-0`` .. ``<name>-(n-1)``, each recreated under the same name.

        ``OrderedReady`` (default) creates pod i only once pods 0..i-1 are Running and
        Ready (here: bound, since binding starts a pod) and removes surplus pods from the
        highest ordinal, one at a time; ``Parallel`` does all at once. A terminating pod
        is replaced only after it is gone, as upstream.
        """
        if sts.metadata.deletion_timestamp is not None:
            return
        cluster = self.cluster
        ordered = sts.spec.pod_management_policy != "Parallel"
        replicas = max(0, sts.spec.replicas)
        by_ordinal: dict[int, Pod] = {}
        prefix = sts.name + "-"
        for pod in self._owned_pods(sts):
            suffix = pod.name[len(prefix) :] if pod.name.startswith(prefix) else ""
            if suffix.isdigit():
                by_ordinal[int(suffix)] = pod
        revision = f"{sts.name}-{compute_hash(sts.spec.template)}"
        missing = sum(1 for i in range(replicas) if i not in by_ordinal) if replicas else 0
        if missing and not self._within_limit(sts, missing):
            return
        for i in range(replicas):
            pod = by_ordinal.get(i)
            if pod is None:
                name = f"{sts.name}-{i}"
                if cluster.try_get("Pod", sts.namespace, name) is not None:
                    if ordered:
                        return  # a pod of that name not (yet) ours: wait, as upstream
                    continue
                created = self._create_pod(
                    sts,
                    sts.spec.template,
                    name=name,
                    labels={
                        STATEFULSET_POD_NAME_LABEL: name,
                        POD_INDEX_LABEL: str(i),
                        CONTROLLER_REVISION_HASH_LABEL: revision,
                    },
                    spec_update={
                        "hostname": name,
                        "subdomain": sts.spec.service_name,
                        "volumes": self._stateful_set_claims(sts, i),
                    },
                )
                if ordered or created is None:
                    return
                continue
            if ordered and (
                pod.metadata.deletion_timestamp is not None or not _is_running_and_ready(pod)
            ):
                return
        condemned = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
        if not condemned:
            return
        if ordered:
            if any(by_ordinal[o].metadata.deletion_timestamp is not None for o in condemned):
                return
            condemned = condemned[:1]
        self._delete_pods([by_ordinal[o] for o in condemned])
        if sts.spec.persistent_volume_claim_retention_policy.when_scaled == "Delete":
            # whenScaled: Delete — the claims of the ordinals scaled away go with them.
            for o in condemned:
                for template in sts.spec.volume_claim_templates:
                    name = f"{template.metadata.name}-{sts.name}-{o}"
                    if self.cluster.try_get("PersistentVolumeClaim", sts.namespace, name):
                        self.cluster.delete("PersistentVolumeClaim", sts.namespace, name)

    def _stateful_set_claims(self, sts: StatefulSet, ordinal: int) -> list[Volume]:
        """Create the pod's missing claims ``<template>-<set>-<ordinal>`` and return the
        pod's volumes with each template's volume pointing at its claim (``updateStorage``).

        Claims carry the set's selector labels; with ``whenDeleted: Delete`` the set owns
        them, so deleting the set deletes them (garbage collection); with ``whenScaled:
        Delete`` the claims of ordinals scaled away are deleted with their pods.
        """
        volumes = {v.name: v for v in sts.spec.template.spec.volumes}
        selector = sts.spec.selector.match_labels if sts.spec.selector is not None else None
        for template in sts.spec.volume_claim_templates:
            tname = template.metadata.name or ""
            claim_name = f"{tname}-{sts.name}-{ordinal}"
            volumes[tname] = Volume(
                name=tname,
                persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim_name),
            )
            if self.cluster.try_get("PersistentVolumeClaim", sts.namespace, claim_name) is not None:
                continue
            meta: dict[str, Any] = {
                "name": claim_name,
                "namespace": sts.namespace,
                "labels": {**template.metadata.labels, **(selector or {})},
                "annotations": dict(template.metadata.annotations),
            }
            if sts.spec.persistent_volume_claim_retention_policy.when_deleted == "Delete":
                meta["ownerReferences"] = [_owner_ref(sts).to_dict()]
            claim = PersistentVolumeClaim(metadata=meta, spec=template.spec.model_copy(deep=True))  # type: ignore[arg-type]
            self.cluster.create(claim)
        return list(volumes.values())

    # -- Job -------------------------------------------------------------------------------

    def _count_job_pod(self, job_uid: str, pod: Pod, etype: EventType) -> None:
        """Count a pod of a Job once when it finishes; a pod removed before it finished
        counts as failed (upstream's tracking finalizer sees it go)."""
        uid = pod.metadata.uid or pod.key
        done = self._job_done.setdefault(job_uid, {})
        if uid in done:
            return
        phase = pod.status.phase
        if phase not in _TERMINAL:
            if etype != EventType.DELETED:
                return
            phase = "Failed"
        done[uid] = phase
        failures, _ = self._job_backoff.get(job_uid, (0, 0.0))
        if phase == "Failed":
            self._job_backoff[job_uid] = (failures + 1, self.cluster.now())
        else:
            self._job_backoff[job_uid] = (0, self.cluster.now())

    def _job_timer(self, job: Job, when: float) -> None:
        """Sync ``job`` again at ``when`` (a deadline, or the end of a failure backoff)."""
        uid = job.metadata.uid

        def fire() -> None:
            cur = self.cluster.try_get("Job", job.namespace, job.name)
            if cur is not None and cur.metadata.uid == uid:
                self.sync(cur)

        self.cluster.call_at(when, fire, progress=True)

    def sync_job(self, job: Job) -> None:
        """Run the job to completion or failure, as the Job controller does.

        Keeps ``min(parallelism, completions - succeeded)`` pods active (Indexed jobs:
        one per index not yet succeeded, ``<job>-<index>-`` names with the completion
        index label and annotation). Pods get the ``job-name`` / ``controller-uid``
        labels (both spellings). A failed pod, or one deleted before it finished,
        counts against ``backoffLimit`` and is replaced after the pod failure backoff
        (10 s, doubling per failure since the last success, at most 10 min). The job
        fails (``FailureTarget``, then ``Failed`` once its pods are gone) with reason
        ``BackoffLimitExceeded`` past the limit, or ``DeadlineExceeded`` when it has
        been active longer than ``activeDeadlineSeconds``, its active pods deleted; it
        succeeds (``SuccessCriteriaMet``, then ``Complete``) when its completions have
        succeeded (without completions: when one pod succeeded and none is active).
        A suspended job deletes its active pods. ``status`` reports the counts.
        """
        if job.metadata.deletion_timestamp is not None or job.finished:
            return
        uid = job.metadata.uid or ""
        spec = job.spec
        now = self.cluster.now()
        pods = self._owned_pods(job)
        done = self._job_done.setdefault(uid, {})
        for p in pods:
            if p.status.phase in _TERMINAL:
                self._count_job_pod(uid, p, EventType.MODIFIED)
        active = [p for p in pods if _is_active(p)]
        terminating = [
            p
            for p in pods
            if p.metadata.deletion_timestamp is not None and p.status.phase not in _TERMINAL
        ]
        succeeded = sum(1 for phase in done.values() if phase == "Succeeded")
        failed = len(done) - succeeded
        status = job.status.model_copy(deep=True)
        indexed = spec.completion_mode == "Indexed" and spec.completions is not None
        done_indexes = self._succeeded_indexes(job, pods) if indexed else set()
        if spec.suspend:
            self._delete_job_pods(job, active)
            active = []
        elif status.start_time is None:
            status.start_time = timestamp(now)
            if spec.active_deadline_seconds is not None:
                self._job_timer(job, now + spec.active_deadline_seconds)
        verdict = status.condition("FailureTarget") or status.condition("SuccessCriteriaMet")
        if verdict is None and not spec.suspend:
            started = status.start_time.timestamp() - timestamp(0).timestamp()  # type: ignore[union-attr]
            if (
                spec.active_deadline_seconds is not None
                and now - started >= spec.active_deadline_seconds
            ):
                verdict = self._job_condition(job, status, "FailureTarget", JOB_DEADLINE)
            elif failed > spec.backoff_limit:
                verdict = self._job_condition(job, status, "FailureTarget", JOB_BACKOFF_LIMIT)
            elif (
                (indexed and len(done_indexes) >= (spec.completions or 0))
                or (not indexed and spec.completions is not None and succeeded >= spec.completions)
                or (spec.completions is None and succeeded > 0 and not active)
            ):
                verdict = self._job_condition(job, status, "SuccessCriteriaMet", JOB_COMPLETED)
        if verdict is not None:
            # Finished: no pod keeps running; the final condition waits for them to go.
            self._delete_job_pods(job, active)
            active = []
            terminating = [
                p
                for p in self._owned_pods(job)
                if p.status.phase not in _TERMINAL
                and self.cluster.try_get("Pod", p.namespace, p.name) is not None
            ]
            if not terminating:
                final = "Failed" if verdict.type == "FailureTarget" else "Complete"
                self._job_condition(job, status, final, (verdict.reason, verdict.message))
                if final == "Complete":
                    status.completion_time = timestamp(now)
                    self._event(job, "Normal", "Completed", "Job completed")
                else:
                    self._event(job, "Warning", verdict.reason or "", verdict.message or "")
        elif not spec.suspend:
            active = self._run_job_pods(job, active, succeeded, done_indexes)
        status.active = len(active)
        status.succeeded = succeeded
        status.failed = failed
        status.terminating = len(terminating)
        if indexed:
            status.completed_indexes = _index_ranges(done_indexes) or None
        cur = self.cluster.try_get("Job", job.namespace, job.name)
        if cur is not None and cur.metadata.uid == uid and status != cur.status:  # type: ignore[attr-defined]
            self.cluster.update(cur.model_copy(update={"status": status}))

    def _job_condition(
        self, job: Job, status: Any, ctype: str, why: tuple[str | None, str | None]
    ) -> JobCondition:
        stamp = timestamp(self.cluster.now())
        cond = JobCondition(
            type=ctype,
            status="True",
            reason=why[0],
            message=why[1],
            last_probe_time=stamp,
            last_transition_time=stamp,
        )
        status.conditions.append(cond)
        return cond

    def _succeeded_indexes(self, job: Job, pods: list[Pod]) -> set[int]:
        out = set()
        for p in pods:
            index = p.metadata.labels.get(JOB_COMPLETION_INDEX, "")
            if (
                p.status.phase == "Succeeded"
                and index.isdigit()
                and int(index) < (job.spec.completions or 0)
            ):
                out.add(int(index))
        return out

    def _delete_job_pods(self, job: Job, pods: list[Pod]) -> None:
        for pod in pods:
            if self.cluster.try_get("Pod", pod.namespace, pod.name) is not None:
                self.cluster.delete_pod(pod)
                self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.name}")

    def _run_job_pods(
        self, job: Job, active: list[Pod], succeeded: int, done_indexes: set[int]
    ) -> list[Pod]:
        """Create or delete pods towards the wanted number of active ones; the active pods
        after that."""
        spec = job.spec
        uid = job.metadata.uid or ""
        parallelism = spec.parallelism or 0
        indexed = spec.completion_mode == "Indexed" and spec.completions is not None
        if spec.completions is None:
            # A work queue: after a success, what runs runs on, nothing new starts.
            want = len(active) if succeeded else parallelism
        elif indexed:
            want = min(parallelism, spec.completions - len(done_indexes))
        else:
            want = max(0, min(parallelism, spec.completions - succeeded))
        if len(active) > want:
            surplus = sorted(active, key=_deletion_rank)[: len(active) - want]
            self._delete_job_pods(job, surplus)
            return [p for p in active if p not in surplus]
        missing = want - len(active)
        if missing <= 0:
            return active
        failures, last_failure = self._job_backoff.get(uid, (0, 0.0))
        if failures:
            delay = min(JOB_POD_FAILURE_BACKOFF * 2 ** (failures - 1), MAX_JOB_POD_FAILURE_BACKOFF)
            if self.cluster.now() < last_failure + delay:
                self._job_timer(job, last_failure + delay)
                return active
        if not self._within_limit(job, missing):
            return active
        labels = {k: job.name for k in JOB_NAME_LABELS} | {k: uid for k in JOB_UID_LABELS}
        indexes: list[int | None] = [None] * missing
        if indexed:
            taken = {p.metadata.labels.get(JOB_COMPLETION_INDEX) for p in active}
            free = (
                i
                for i in range(spec.completions or 0)
                if i not in done_indexes and str(i) not in taken
            )
            indexes = [i for i, _ in zip(free, range(missing), strict=False)]
        for index in indexes:
            if index is None:
                created = self._create_pod(job, spec.template, labels=labels)
            else:
                created = self._create_pod(
                    job,
                    spec.template,
                    generate_name=f"{job.name}-{index}-",
                    labels={**labels, JOB_COMPLETION_INDEX: str(index)},
                    annotations={JOB_COMPLETION_INDEX: str(index)},
                    spec_update={"hostname": f"{job.name}-{index}"},
                )
            if created is None:
                break
            active.append(created)
            self._event(job, "Normal", "SuccessfulCreate", f"Created pod: {created.name}")
        return active

    # -- DaemonSet -------------------------------------------------------------------------

    def sync_daemon_set(self, ds: DaemonSet) -> None:
        """One pod per node that should run it, pinned by node affinity to that node.

        New nodes get a pod; a pod whose node is gone, or whose node no longer admits it
        (``node_should_run_daemon_pod``), is deleted. A node whose pod is terminating
        gets its new pod once the old one is gone.
        """
        if ds.metadata.deletion_timestamp is not None:
            return
        template = ds.spec.template.model_copy(deep=True)
        template.spec.tolerations = daemon_pod_tolerations(
            template.spec.tolerations, template.spec.host_network
        )
        probe = Pod(metadata=template.metadata.model_copy(deep=True), spec=template.spec)
        revision = compute_hash(ds.spec.template)
        by_node: dict[str, list[Pod]] = {}
        for pod in self._owned_pods(ds):
            by_node.setdefault(_daemon_target_node(pod) or "", []).append(pod)
        nodes = {n.name: n for n in self.cluster.objects("Node")}
        for name in sorted(set(nodes) | set(by_node)):
            pods = by_node.get(name, [])
            active = [p for p in pods if _is_active(p)]
            node = nodes.get(name)
            if node is None:
                self._delete_pods(active)
                continue
            should_run, should_continue = node_should_run_daemon_pod(probe, node)  # type: ignore[arg-type]
            if should_run:
                if not pods:
                    self._create_pod(
                        ds,
                        template,
                        labels={CONTROLLER_REVISION_HASH_LABEL: revision},
                        spec_update={
                            "affinity": replace_daemon_set_pod_node_name_node_affinity(
                                template.spec.affinity, name
                            )
                        },
                    )
                elif len(active) > 1:
                    # Keep the oldest, as upstream.
                    self._delete_pods(sorted(active, key=_deletion_rank)[: len(active) - 1])
            elif not should_continue:
                self._delete_pods(active)


def _index_ranges(indexes: set[int]) -> str:
    """``status.completedIndexes``: ``0-2,5``."""
    out: list[str] = []
    for i in sorted(indexes):
        if out and i - 1 in indexes:
            first = out[-1].split("-")[0]
            out[-1] = f"{first}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


CONTROLLER_NAMES = {
    "ReplicaSet": "replicaset-controller",
    "ReplicationController": "replication-controller",
    "StatefulSet": "statefulset-controller",
    "DaemonSet": "daemonset-controller",
    "Job": "job-controller",
    "Deployment": "deployment-controller",
    "CronJob": "cronjob-controller",
}
"""The ``reportingController`` of each controller's Events."""


_SYNCERS = {
    "ReplicaSet": "sync_replica_set",
    "ReplicationController": "sync_replication_controller",
    "Deployment": "sync_deployment",
    "StatefulSet": "sync_stateful_set",
    "Job": "sync_job",
    "DaemonSet": "sync_daemon_set",
}
