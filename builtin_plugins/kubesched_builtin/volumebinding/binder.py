"""The volume binder: which claims a pod has, which PVs or provisioning serve them on a node,
and the assume / bind / revert steps (upstream ``volumebinding/binder.go``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    CSIDriver,
    CSIStorageCapacity,
    KubeObject,
    LabelSelectorMatcher,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    compile_label_selector,
)
from kubesched.api.volumeutil import (
    check_volume_node_affinity,
    claim_reference,
    ephemeral_volume_is_for_pod,
    find_matching_volume,
    is_volume_bound_to_claim,
    match_topology_selector_terms,
    pod_claim_names,
    storage_capacity_sufficient,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
"""An unbound claim has no matching PV the node reaches, and cannot be provisioned there."""
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
"""A bound claim's PV cannot be reached from the node."""
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
"""No CSIStorageCapacity reaching the node has room for a volume to provision."""
ERR_BIND_TIMEOUT = "context deadline exceeded"
"""Why PreBind gave up waiting for the claims to be bound (``bindTimeoutSeconds`` passed)."""
ERR_CANCELED = "context canceled"
"""Why PreBind stopped waiting for the claims to be bound: the scheduler shut down."""
BIND_CHECK_PERIOD = 1.0
"""Seconds between two checks of the bindings on a real cluster (upstream: 1 s)."""
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
"""A bound claim's PV does not exist."""


class VolumeBindingError(Exception):
    """A claim or class in a state that makes the pod unschedulable (message for users)."""


def is_claim_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """A claim names its volume and the PV controller completed the binding."""
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


class AssumeCache:
    """Objects of one kind as the API has them, overlaid with versions Reserve assumed.

    An assumed version hides the API's object until the API's resourceVersion moves past
    the one it was assumed on (the write landed, or someone else changed it): upstream's
    ``AssumeCache``, read through the Handle's lister.
    """

    def __init__(self, kind: str, lister: Callable[[], Any]) -> None:
        self.kind = kind
        self._lister = lister
        self._assumed: dict[str, tuple[str | None, KubeObject]] = {}
        self._lock = threading.Lock()

    def _api(self, namespace: str | None, name: str) -> KubeObject | None:
        lister = self._lister()
        return lister.get_object(self.kind, namespace, name) if lister is not None else None

    def _overlay(self, key: str, api: KubeObject | None) -> KubeObject | None:
        hit = self._assumed.get(key)
        if hit is None:
            return api
        base_rv, obj = hit
        if api is None or api.metadata.resource_version != base_rv:
            with self._lock:
                self._assumed.pop(key, None)
            return api
        return obj

    def get(self, namespace: str | None, name: str) -> Any:
        """The current object (assumed or from the API), or None."""
        key = f"{namespace}/{name}" if namespace else name
        return self._overlay(key, self._api(namespace, name))

    def list(self) -> list[Any]:
        """Every object of the kind, assumed versions in place of the API's."""
        lister = self._lister()
        if lister is None:
            return []
        return [self._overlay(o.key, o) for o in lister.list_objects(self.kind)]

    def assume(self, obj: KubeObject, base: KubeObject) -> None:
        """Hold ``obj`` (a changed copy of ``base``) until the API moves past ``base``."""
        with self._lock:
            self._assumed[obj.key] = (base.metadata.resource_version, obj)

    def restore(self, key: str) -> None:
        """Drop an assumed version: the API's object shows again."""
        with self._lock:
            self._assumed.pop(key, None)


@dataclass
class PodVolumeClaims:
    """A pod's claims, split as upstream's ``GetPodVolumeClaims``, with what Filter reads."""

    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    candidate_volumes: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    """Per delayed claim (by key): the PVs that may match it on some node."""
    bound_volumes: dict[str, PersistentVolume | None] = field(default_factory=dict)
    classes: dict[str, StorageClass | None] = field(default_factory=dict)
    drivers: dict[str, CSIDriver | None] = field(default_factory=dict)
    capacities: dict[str, list[tuple[CSIStorageCapacity, LabelSelectorMatcher]]] = field(
        default_factory=dict
    )
    """Per class: its CSIStorageCapacity segments with their compiled nodeTopology."""
    decisive_labels: tuple[str, ...] | None = None
    """The node labels Filter's answer depends on (PV node affinity, allowedTopologies,
    capacity nodeTopology); None when that cannot be told (a PV selects nodes by name)."""
    decided_by_name: bool = False
    """Whether the node's name matters too (a claim with a selected node)."""
    decisions: dict[tuple[str | None, ...], tuple[PodVolumes, list[str]]] = field(
        default_factory=dict
    )
    """Filter's answers by (name, decisive label values): nodes alike get the same one."""


@dataclass
class DynamicProvision:
    """A claim to provision on the node, and the capacity segment that has room for it."""

    pvc: PersistentVolumeClaim
    capacity: CSIStorageCapacity | None = None


@dataclass
class PodVolumes:
    """The decisions for one node: static PV bindings and claims to provision."""

    static_bindings: list[tuple[PersistentVolumeClaim, PersistentVolume]] = field(
        default_factory=list
    )
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


class VolumeBinder:
    """Upstream's ``volumeBinder`` over the Handle's lister and client."""

    def __init__(self, handle: Any, bind_timeout_seconds: int) -> None:
        self._handle = handle
        self.bind_timeout_seconds = bind_timeout_seconds
        lister = self._lister
        self.pv_cache = AssumeCache("PersistentVolume", lister)
        self.pvc_cache = AssumeCache("PersistentVolumeClaim", lister)

    def _lister(self) -> Any:
        return getattr(self._handle, "lister", None)

    def _get(self, kind: str, name: str, namespace: str | None = None) -> Any:
        lister = self._lister()
        return lister.get_object(kind, namespace, name) if lister is not None else None

    # -- PreFilter -----------------------------------------------------------------------

    def check_pod_claims(self, pod: Pod) -> bool:
        """Whether the pod uses claims (``podHasPVCs``); raises ``VolumeBindingError`` for a
        missing, lost, terminating or foreign claim."""
        has = False
        for name, ephemeral in pod_claim_names(pod):
            has = True
            pvc = self.pvc_cache.get(pod.namespace, name)
            if pvc is None:
                if ephemeral:
                    raise VolumeBindingError(
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"'
                    )
                raise VolumeBindingError(f'persistentvolumeclaim "{name}" not found')
            if pvc.status.phase == "Lost":
                raise VolumeBindingError(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name}"'
                )
            if pvc.metadata.deletion_timestamp is not None:
                raise VolumeBindingError(f'persistentvolumeclaim "{name}" is being deleted')
            if ephemeral:
                err = ephemeral_volume_is_for_pod(pod, pvc)
                if err is not None:
                    raise VolumeBindingError(err)
        return has

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """Split the pod's claims into bound, delayed (WaitForFirstConsumer, unbound) and
        immediate-unbound (incl. pre-bound) ones, and fetch what Filter will read."""
        out = PodVolumeClaims()
        for name, _ in pod_claim_names(pod):
            pvc: PersistentVolumeClaim | None = self.pvc_cache.get(pod.namespace, name)
            if pvc is None:
                continue
            if is_claim_fully_bound(pvc):
                out.bound.append(pvc)
                continue
            sc = self._class(out, pvc.class_name)
            if (
                sc is not None
                and sc.volume_binding_mode == "WaitForFirstConsumer"
                and not (pvc.spec.volume_name)
            ):
                out.delayed.append(pvc)
            else:
                out.immediate.append(pvc)
        for pvc in out.bound:
            out.bound_volumes[pvc.spec.volume_name] = self.pv_cache.get(None, pvc.spec.volume_name)
        if out.delayed:
            by_class: dict[str, list[PersistentVolume]] = {}
            for pv in self.pv_cache.list():
                by_class.setdefault(pv.spec.storage_class_name, []).append(pv)
            for pvc in out.delayed:
                # Only volumes that are free, or pre-bound to this claim, can ever match
                # it, whatever the node: select them once, not on every node.
                out.candidate_volumes[pvc.key] = [
                    pv
                    for pv in by_class.get(pvc.class_name, ())
                    if (pv.spec.claim_ref is None and pv.status.phase == "Available")
                    or (pv.spec.claim_ref.name == pvc.name and is_volume_bound_to_claim(pv, pvc))
                ]
        out.decisive_labels = self._decisive_labels(out)
        return out

    def _decisive_labels(self, claims: PodVolumeClaims) -> tuple[str, ...] | None:
        keys: set[str] = set()
        volumes = [v for v in claims.bound_volumes.values() if v is not None]
        for pvc in claims.delayed:
            volumes += claims.candidate_volumes.get(pvc.key, ())
            if ANN_SELECTED_NODE in pvc.metadata.annotations:
                claims.decided_by_name = True
            sc = self._class(claims, pvc.class_name)
            if sc is None:
                return None
            for term in sc.allowed_topologies:
                keys.update(r.key for r in term.match_label_expressions)
            if sc.name not in claims.capacities:
                claims.capacities[sc.name] = self._capacity_segments(sc.name)
            for cap, _ in claims.capacities[sc.name]:
                topology = cap.node_topology
                if topology is not None:
                    keys.update(topology.match_labels or ())
                    keys.update(e.key for e in topology.match_expressions or ())
        for pv in volumes:
            affinity = pv.spec.node_affinity
            required = affinity.required if affinity is not None else None
            for term in required.node_selector_terms if required is not None else ():
                if term.match_fields:
                    return None
                keys.update(r.key for r in term.match_expressions)
        return tuple(sorted(keys))

    def _class(self, claims: PodVolumeClaims, name: str) -> StorageClass | None:
        if not name:
            return None
        if name not in claims.classes:
            claims.classes[name] = self._get("StorageClass", name)
        return claims.classes[name]

    # -- Filter --------------------------------------------------------------------------

    def decision_key(self, claims: PodVolumeClaims, node: Node) -> tuple[str | None, ...] | None:
        """What Filter's answer for ``node`` depends on, or None when it cannot be told."""
        keys = claims.decisive_labels
        if keys is None:
            return None
        labels = node.metadata.labels
        return (node.name if claims.decided_by_name else None, *(labels.get(k) for k in keys))

    def find_pod_volumes(
        self, claims: PodVolumeClaims, node: Node, key: tuple[str | None, ...] | None = None
    ) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the node's static bindings and provisions, or the reasons
        it cannot serve the pod's claims. Raises ``VolumeBindingError`` for a claim
        whose class is missing (an error, not a node's fault). ``key``, when given, is
        the node's :meth:`decision_key`."""
        if key is None:
            key = self.decision_key(claims, node)
        if key is None:
            return self._find_pod_volumes(claims, node)
        hit = claims.decisions.get(key)
        if hit is None:
            hit = claims.decisions[key] = self._find_pod_volumes(claims, node)
        # Nodes alike share one PodVolumes: only the chosen node's is used after Reserve
        # (which rewrites it), and a new cycle starts from new claims.
        return hit

    def _find_pod_volumes(
        self, claims: PodVolumeClaims, node: Node
    ) -> tuple[PodVolumes, list[str]]:
        pv = PodVolumes()
        labels = node.metadata.labels
        bound_ok = pv_found = unbound_ok = sufficient = True
        for pvc in claims.bound:
            vol = claims.bound_volumes.get(pvc.spec.volume_name)
            if vol is None:
                pv_found = False
                break
            if not check_volume_node_affinity(vol, labels):
                bound_ok = False
                break
        if claims.delayed:
            unbound_ok, sufficient = self._find_unbound(claims, node, pv)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pv_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return pv, reasons

    def _find_unbound(
        self, claims: PodVolumeClaims, node: Node, out: PodVolumes
    ) -> tuple[bool, bool]:
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for pvc in claims.delayed:
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node.name:
                    return False, True
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        satisfied = True
        if to_match:
            # Smallest requests first, so that each gets the smallest fitting volume.
            chosen: dict[str, PersistentVolume] = {}
            labels = node.metadata.labels
            for pvc in sorted(to_match, key=lambda c: c.spec.storage_request()):
                try:
                    vol = find_matching_volume(
                        pvc, claims.candidate_volumes.get(pvc.key, ()), labels, chosen, True
                    )
                except ValueError as err:
                    raise VolumeBindingError(str(err)) from None
                if vol is None:
                    to_provision.append(pvc)
                    satisfied = False
                    continue
                chosen[vol.name] = vol
                out.static_bindings.append((pvc, vol))
        if to_provision:
            return self._check_provisions(claims, to_provision, node, out)
        return satisfied, True

    def _check_provisions(
        self,
        claims: PodVolumeClaims,
        to_provision: Iterable[PersistentVolumeClaim],
        node: Node,
        out: PodVolumes,
    ) -> tuple[bool, bool]:
        provisions: list[DynamicProvision] = []
        for pvc in to_provision:
            class_name = pvc.class_name
            if not class_name:
                raise VolumeBindingError(f'no class for claim "{pvc.namespace}/{pvc.name}"')
            sc = self._class(claims, class_name)
            if sc is None:
                raise VolumeBindingError(f'failed to find storage class "{class_name}"')
            if sc.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
                return False, True
            if not match_topology_selector_terms(sc.allowed_topologies, node.metadata.labels):
                return False, True
            ok, cap = self._has_enough_capacity(claims, pvc, sc, node)
            if not ok:
                return True, False
            provisions.append(DynamicProvision(pvc, cap))
        out.dynamic_provisions = provisions
        return True, True

    def _has_enough_capacity(
        self, claims: PodVolumeClaims, pvc: PersistentVolumeClaim, sc: StorageClass, node: Node
    ) -> tuple[bool, CSIStorageCapacity | None]:
        if "storage" not in pvc.spec.resources.requests:
            return True, None
        if sc.provisioner not in claims.drivers:
            claims.drivers[sc.provisioner] = self._get("CSIDriver", sc.provisioner)
        driver = claims.drivers[sc.provisioner]
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        segments = claims.capacities.get(sc.name)
        if segments is None:
            segments = claims.capacities[sc.name] = self._capacity_segments(sc.name)
        size = pvc.spec.storage_request()
        labels = node.metadata.labels
        for cap, reaches in segments:
            if storage_capacity_sufficient(cap, size) and reaches.matches(labels):
                return True, cap
        return False, None

    def _capacity_segments(
        self, class_name: str
    ) -> list[tuple[CSIStorageCapacity, LabelSelectorMatcher]]:
        lister = self._lister()
        out = []
        for cap in lister.list_objects("CSIStorageCapacity") if lister is not None else ():
            if cap.storage_class_name != class_name or cap.node_topology is None:
                continue  # a segment without nodeTopology reaches no node
            try:
                out.append((cap, compile_label_selector(cap.node_topology)))
            except ValueError:
                continue
        return out

    # -- Reserve / Unreserve -------------------------------------------------------------

    def pod_volumes_bound(self, pod: Pod) -> bool:
        """Whether every claim of the pod is fully bound (``arePodVolumesBound``)."""
        for name, _ in pod_claim_names(pod):
            pvc = self.pvc_cache.get(pod.namespace, name)
            if pvc is None or not is_claim_fully_bound(pvc):
                return False
        return True

    def assume_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: reserve the chosen PVs (claimRef) and mark the claims to
        provision with the node, in the caches only; True when nothing needs binding."""
        if self.pod_volumes_bound(pod):
            return True
        bindings = []
        for pvc, pv in volumes.static_bindings:
            if is_volume_bound_to_claim(pv, pvc):
                bindings.append((pvc, pv))
                continue
            new = pv.model_copy(deep=True)
            new.spec.claim_ref = claim_reference(pvc)
            new.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
            self.pv_cache.assume(new, pv)
            bindings.append((pvc, new))
        provisions = []
        for prov in volumes.dynamic_provisions:
            # A shallow copy with new annotations: the claim's other parts are not changed.
            meta = prov.pvc.metadata
            annotations = {**meta.annotations, ANN_SELECTED_NODE: node_name}
            new_claim = prov.pvc.model_copy(
                update={"metadata": meta.model_copy(update={"annotations": annotations})}
            )
            self.pvc_cache.assume(new_claim, prov.pvc)
            provisions.append(DynamicProvision(new_claim, prov.capacity))
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """``RevertAssumedPodVolumes``: forget what Reserve assumed."""
        for _, pv in volumes.static_bindings:
            self.pv_cache.restore(pv.key)
        for prov in volumes.dynamic_provisions:
            self.pvc_cache.restore(prov.pvc.key)

    # -- PreBind -------------------------------------------------------------------------

    def bind_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> None:
        """``BindPodVolumes``: write the reserved PVs (their claimRef) and the claims to
        provision (their selected node), then check every second, for at most
        ``bindTimeoutSeconds``, until the PV controller bound every claim. Raises on a
        failed write, a failed provisioning, or the timeout."""
        client = getattr(self._handle, "client", None)
        if client is None:
            raise VolumeBindingError("no cluster client to bind volumes with")
        # The objects as written: the checks wait until the informers have them.
        volumes.static_bindings = [(pvc, client.update(pv)) for pvc, pv in volumes.static_bindings]
        volumes.dynamic_provisions = [
            DynamicProvision(client.update(prov.pvc), prov.capacity)
            for prov in volumes.dynamic_provisions
        ]
        # The embedded cluster's controllers act within the writes: one check is final.
        if getattr(client, "reconciles_synchronously", False):
            if not self._check_bindings(pod, node_name, volumes):
                raise VolumeBindingError(f"binding volumes: {ERR_BIND_TIMEOUT}")
            return
        # Upstream's wait.PollUntilContextTimeout(1s, bindTimeout, immediate=false); the
        # scheduler shutting down cancels the wait, as the binding cycle's context does.
        deadline = time.monotonic() + self.bind_timeout_seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise VolumeBindingError(f"binding volumes: {ERR_BIND_TIMEOUT}")
            if not self._handle.pause(min(BIND_CHECK_PERIOD, left)):
                raise VolumeBindingError(f"binding volumes: {ERR_CANCELED}")
            if time.monotonic() >= deadline:
                raise VolumeBindingError(f"binding volumes: {ERR_BIND_TIMEOUT}")
            if self._check_bindings(pod, node_name, volumes):
                return

    def _check_bindings(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """``checkBindings``: True once every claim is bound, False to check again, a
        ``VolumeBindingError`` when binding cannot succeed any more."""
        try:
            return self._bindings_done(pod, node_name, volumes)
        except VolumeBindingError as err:
            raise VolumeBindingError(f"binding volumes: {err}") from None

    def _bindings_done(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        node = self._get("Node", node_name)
        if node is None:
            raise VolumeBindingError(f'failed to get node "{node_name}": not found')
        labels: Mapping[str, str] = node.metadata.labels
        # A pod deleted meanwhile: no need to wait for its claims any more.
        if self._get("Pod", pod.name, pod.namespace) is None:
            raise VolumeBindingError(f'pod does not exist any more: pods "{pod.name}" not found')
        for pvc, pv in volumes.static_bindings:
            api_pv: PersistentVolume | None = self._get("PersistentVolume", pv.name)
            if api_pv is None:
                raise VolumeBindingError(
                    f'failed to check binding: PersistentVolume "{pv.name}" not found'
                )
            api_pvc = self._get("PersistentVolumeClaim", pvc.name, pvc.namespace)
            if api_pvc is None:
                raise VolumeBindingError(
                    f'failed to check binding: PersistentVolumeClaim "{pvc.key}" not found'
                )
            if pv.newer_than(api_pv):
                return False  # the informer has not seen our write yet
            if not check_volume_node_affinity(api_pv, labels):
                raise VolumeBindingError(
                    f'pv "{api_pv.name}" node affinity doesn\'t match node "{node_name}": '
                    "no matching NodeSelectorTerms"
                )
            ref = api_pv.spec.claim_ref
            if ref is None or not ref.uid:
                raise VolumeBindingError(f'ClaimRef got reset for pv "{api_pv.name}"')
            if not is_claim_fully_bound(api_pvc):
                return False
        for prov in volumes.dynamic_provisions:
            claim = prov.pvc
            api_pvc = self._get("PersistentVolumeClaim", claim.name, claim.namespace)
            if api_pvc is None:
                raise VolumeBindingError(
                    f'failed to check provisioning pvc: PersistentVolumeClaim "{claim.key}" '
                    "not found"
                )
            if claim.newer_than(api_pvc):
                return False
            if api_pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
                # The provisioner drops the annotation when it cannot provision.
                raise VolumeBindingError(f'provisioning failed for PVC "{api_pvc.name}"')
            if api_pvc.spec.volume_name:
                api_pv = self._get("PersistentVolume", api_pvc.spec.volume_name)
                if api_pv is None:
                    return False  # not seen yet, or deleted: the claim gets unbound then
                if not check_volume_node_affinity(api_pv, labels):
                    raise VolumeBindingError(
                        f'pv "{api_pv.name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_claim_fully_bound(api_pvc):
                return False
        return True
