"""Workload controllers: Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets → Pods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api import (
    Affinity,
    DaemonSet,
    Deployment,
    Job,
    KubeObject,
    LabelSelector,
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
    find_untolerated_taint,
)
from kubesched.backend.memory.admission import AdmissionError
from kubesched.backend.memory.naming import compute_hash
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "DAEMON_TOLERATIONS",
    "POD_TEMPLATE_HASH_LABEL",
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


class WorkloadControllers:
    """The controller-manager loops the embedded cluster needs, run synchronously.

    Each ``sync_*`` compares an owner's desired pods with the pods it controls
    (found by ownerReference uid) and creates or deletes pods through the cluster,
    so the pods pass admission and produce watch events like any other.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        # Job uid -> uids of its pods counted as failed (backoffLimit).
        self._job_failures: dict[str, set[str]] = {}

    # -- dispatch --------------------------------------------------------------------------

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster (called for every watch event)."""
        obj = event.object
        if kind in _SYNCERS and event.type != EventType.DELETED:
            # Events may queue up behind each other: reconcile the current object.
            cur = self.cluster.try_get(kind, obj.metadata.namespace, obj.name)
            if cur is not None and cur.metadata.uid == obj.metadata.uid:
                self.sync(cur)
        elif kind == "Pod":
            self._on_pod(event)
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
        if ref is None:
            return
        if ref.kind == "Job":
            self._count_job_failure(ref.uid, pod, event.type)
        if event.type == EventType.MODIFIED and old is not None:
            # Binding and status chatter do not change what a ReplicaSet counts; only a
            # pod starting to terminate or finishing does (a StatefulSet also waits for
            # readiness).
            relevant = (
                (old.metadata.deletion_timestamp is None)
                != (pod.metadata.deletion_timestamp is None)
                or (pod.status.phase in _TERMINAL) != (old.status.phase in _TERMINAL)
                or (ref.kind == "StatefulSet" and old.status != pod.status)
            )
            if not relevant:
                return
        elif event.type == EventType.ADDED:
            return
        owner = self._find_owner(pod.namespace, ref.kind, ref.name, ref.uid)
        if owner is not None:
            self.sync(owner)

    def _find_owner(self, namespace: str, kind: str, name: str, uid: str) -> KubeObject | None:
        if kind not in _SYNCERS:
            return None
        owner = self.cluster.try_get(kind, namespace, name)
        if owner is None or (uid and owner.metadata.uid != uid):
            return None
        return owner

    def sync(self, obj: KubeObject) -> None:
        """Reconcile one workload object."""
        getattr(self, _SYNCERS[obj.kind or ""])(obj)

    def resync_all(self) -> None:
        """Reconcile every workload (after a batch load, or when a class appears)."""
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
                    self.sync(obj)

    # -- shared ----------------------------------------------------------------------------

    def _owned_pods(self, owner: KubeObject) -> list[Pod]:
        uid = owner.metadata.uid or ""
        return [
            p
            for p in self.cluster.dependents(uid, "Pod")
            if (ref := p.metadata.controller_ref) is not None and ref.uid == uid
        ]  # type: ignore[misc]

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
        if diff < 0 and template is not None:
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

    def _count_job_failure(self, job_uid: str, pod: Pod, etype: EventType) -> None:
        failed = pod.status.phase == "Failed" or (
            etype == EventType.DELETED and pod.status.phase != "Succeeded"
        )
        if failed:
            self._job_failures.setdefault(job_uid, set()).add(pod.metadata.uid or pod.name)

    def sync_job(self, job: Job) -> None:
        """Keep ``min(parallelism, completions - succeeded)`` pods active.

        Pods get the ``job-name`` / ``controller-uid`` labels (both spellings); Indexed
        jobs get the completion index label and annotation and ``<job>-<index>-`` names.
        A deleted or failed pod counts against ``backoffLimit`` and is replaced at once
        (the pod replacement policy TerminatingOrFailed, without the backoff delay);
        past the limit the job stops. Pods never complete by themselves here.
        """
        uid = job.metadata.uid or ""
        pods = self._owned_pods(job)
        active = [p for p in pods if _is_active(p)]
        succeeded = [p for p in pods if p.status.phase == "Succeeded"]
        spec = job.spec
        failed_out = len(self._job_failures.get(uid, ())) > spec.backoff_limit
        if spec.suspend or failed_out or job.metadata.deletion_timestamp is not None:
            self._delete_pods(active)
            return
        parallelism = spec.parallelism or 0
        if spec.completions is None:
            want = 0 if succeeded else parallelism
        else:
            want = max(0, min(parallelism, spec.completions - len(succeeded)))
        labels = {k: job.name for k in JOB_NAME_LABELS} | {k: uid for k in JOB_UID_LABELS}
        if len(active) > want:
            self._delete_pods(sorted(active, key=_deletion_rank)[: len(active) - want])
            return
        missing = want - len(active)
        if spec.completion_mode == "Indexed" and spec.completions is not None:
            taken = {p.metadata.labels.get(JOB_COMPLETION_INDEX) for p in (*active, *succeeded)}
            for index in range(spec.completions):
                if missing <= 0:
                    break
                if str(index) in taken:
                    continue
                created = self._create_pod(
                    job,
                    spec.template,
                    generate_name=f"{job.name}-{index}-",
                    labels={**labels, JOB_COMPLETION_INDEX: str(index)},
                    annotations={JOB_COMPLETION_INDEX: str(index)},
                    spec_update={"hostname": f"{job.name}-{index}"},
                )
                if created is None:
                    return
                missing -= 1
            return
        for _ in range(missing):
            if self._create_pod(job, spec.template, labels=labels) is None:
                return

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


_SYNCERS = {
    "ReplicaSet": "sync_replica_set",
    "ReplicationController": "sync_replication_controller",
    "Deployment": "sync_deployment",
    "StatefulSet": "sync_stateful_set",
    "Job": "sync_job",
    "DaemonSet": "sync_daemon_set",
}
