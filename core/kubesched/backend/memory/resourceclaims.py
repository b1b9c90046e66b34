"""The resourceclaim controller: claims from templates per pod, released when pods go.

As kube-controller-manager's ``resourceclaim`` controller: for each pod entry with a
``resourceClaimTemplateName`` it creates a ResourceClaim owned by the pod, named from
``<pod>-<entry>-`` plus a random suffix (both parts shortened proportionally past 57
characters), annotated with the entry's name, and records it in the pod's
``status.resourceClaimStatuses``. When a pod is deleted or finished, it is removed from
the ``reservedFor`` of its claims, and a claim reserved for nobody is deallocated (its
devices are free again). Generated claims go with their pod (garbage collection).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api import (
    OwnerReference,
    Pod,
    PodResourceClaimStatus,
    ResourceClaim,
    ResourceClaimTemplate,
)
from kubesched.api.resource import POD_CLAIM_NAME_ANNOTATION, RESOURCE_CLAIM_FINALIZER
from kubesched.backend.protocol import BackendError, EventType, RecordedEvent, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["ResourceClaimController", "generate_claim_name_prefix"]

_MAX_BASE_LEN = 57  # room for the 5 random characters of a 63-character name, and a dash
_TERMINAL = ("Succeeded", "Failed")


def generate_claim_name_prefix(pod_name: str, claim_name: str) -> str:
    """The ``generateName`` of a pod's claim: ``<pod>-<claim>-``, or both shortened in
    proportion to their lengths when that is longer than 57 characters (upstream's rule,
    which then leaves out the trailing dash)."""
    prefix = f"{pod_name}-{claim_name}-"
    if len(prefix) > _MAX_BASE_LEN:
        total = len(prefix)
        prefix = (
            pod_name[: len(pod_name) * _MAX_BASE_LEN // total]
            + "-"
            + claim_name[: len(claim_name) * _MAX_BASE_LEN // total]
        )
    return prefix


class ResourceClaimController:
    """Creates pods' claims from templates and releases the claims of pods that ended."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster (called for every watch event)."""
        if kind == "Pod":
            pod: Pod = event.object  # type: ignore[assignment]
            if not pod.spec.resource_claims:
                return
            if event.type == EventType.DELETED or pod.status.phase in _TERMINAL:
                self._release(pod)
            elif pod.metadata.deletion_timestamp is None:
                cur = self.cluster.try_get("Pod", pod.metadata.namespace, pod.name)
                if cur is not None and cur.metadata.uid == pod.metadata.uid:
                    self._sync_pod(cur)  # type: ignore[arg-type]
        elif kind == "ResourceClaimTemplate" and event.type == EventType.ADDED:
            # Pods created before their template get their claims now.
            template: ResourceClaimTemplate = event.object  # type: ignore[assignment]
            for p in self.cluster.objects("Pod", template.namespace):
                if p.metadata.deletion_timestamp is None:
                    self._sync_pod(p)  # type: ignore[arg-type]

    def resync_all(self) -> None:
        """Reconcile every pod (after a batch load)."""
        for p in self.cluster.objects("Pod"):
            if p.spec.resource_claims and p.metadata.deletion_timestamp is None:  # type: ignore[attr-defined]
                self._sync_pod(p)  # type: ignore[arg-type]

    def _sync_pod(self, pod: Pod) -> None:
        if pod.status.phase in _TERMINAL:
            return
        ns = pod.metadata.namespace or "default"
        known = {s.name for s in pod.status.resource_claim_statuses}
        added: list[PodResourceClaimStatus] = []
        for pc in pod.spec.resource_claims:
            if not pc.resource_claim_template_name or pc.name in known:
                continue
            claim = self._owned_claim(pod, pc.name)
            if claim is None:
                template = self.cluster.try_get(
                    "ResourceClaimTemplate", ns, pc.resource_claim_template_name
                )
                if template is None:
                    continue  # upstream retries; the pod waits at PreEnqueue meanwhile
                claim = self._create_claim(pod, pc.name, template)  # type: ignore[arg-type]
                if claim is None:
                    continue
            added.append(PodResourceClaimStatus(name=pc.name, resource_claim_name=claim.name))
        if added:
            new = pod.model_copy(deep=True)
            new.status.resource_claim_statuses = [*pod.status.resource_claim_statuses, *added]
            self.cluster.update(new)

    def _owned_claim(self, pod: Pod, pod_claim_name: str) -> ResourceClaim | None:
        for dep in self.cluster.dependents(pod.metadata.uid or "", "ResourceClaim"):
            if dep.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim_name:
                return dep  # type: ignore[return-value]
        return None

    def _create_claim(
        self, pod: Pod, pod_claim_name: str, template: ResourceClaimTemplate
    ) -> ResourceClaim | None:
        meta = template.spec.metadata.model_copy(deep=True)
        meta.name = None
        meta.namespace = pod.metadata.namespace or "default"
        meta.generate_name = generate_claim_name_prefix(pod.name, pod_claim_name)
        meta.annotations = {**meta.annotations, POD_CLAIM_NAME_ANNOTATION: pod_claim_name}
        meta.owner_references = [
            OwnerReference(
                api_version="v1",
                kind="Pod",
                name=pod.name,
                uid=pod.metadata.uid or "",
                controller=True,
                block_owner_deletion=True,
            )
        ]
        claim = ResourceClaim(metadata=meta, spec=template.spec.spec.model_copy(deep=True))
        try:
            return self.cluster.create(claim)  # type: ignore[return-value]
        except BackendError as err:
            self.cluster.record_event(
                RecordedEvent(
                    involved_kind="Pod",
                    involved_namespace=pod.metadata.namespace or "default",
                    involved_name=pod.name,
                    type="Warning",
                    reason="FailedResourceClaimCreation",
                    message=f"create ResourceClaim {pod_claim_name}: {err}",
                    reporting_controller="resource_claim",
                )
            )
            return None

    def _release(self, pod: Pod) -> None:
        """Remove the pod from its claims' ``reservedFor``; deallocate unused claims."""
        ns = pod.metadata.namespace or "default"
        names = {
            pc.resource_claim_name for pc in pod.spec.resource_claims if pc.resource_claim_name
        }
        names |= {
            s.resource_claim_name
            for s in pod.status.resource_claim_statuses
            if s.resource_claim_name
        }
        extended = pod.status.extended_resource_claim_status
        if extended is not None:
            # The claim the scheduler made for the pod's extended resources.
            names.add(extended.resource_claim_name)
        uid = pod.metadata.uid
        for name in sorted(n for n in names if n):
            claim = self.cluster.try_get("ResourceClaim", ns, name)
            if claim is None or not any(r.uid == uid for r in claim.status.reserved_for):  # type: ignore[attr-defined]
                continue
            new: ResourceClaim = claim.model_copy(deep=True)  # type: ignore[assignment]
            new.status.reserved_for = [r for r in new.status.reserved_for if r.uid != uid]
            if not new.status.reserved_for:
                new.status.allocation = None
                # As upstream's controller: a deallocated claim needs no delete protection.
                finalizers = [
                    f for f in new.metadata.finalizers or () if f != RESOURCE_CLAIM_FINALIZER
                ]
                new.metadata.finalizers = finalizers or None
            self.cluster.update(new)
