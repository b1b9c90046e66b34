"""Claim/volume matching shared by the PV controller and the volume plugins (component-helpers'
``storage/volume`` and ``storage/ephemeral``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .core import Pod, Volume
from .nodeaffinity import NodeSelectorTermsMatcher
from .selectors import compile_label_selector
from .storage import (
    CSIStorageCapacity,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    TopologySelectorTerm,
)

__all__ = [
    "LABEL_TOPOLOGY_KEYS",
    "check_access_modes",
    "check_volume_node_affinity",
    "claim_reference",
    "ephemeral_claim_name",
    "ephemeral_volume_is_for_pod",
    "find_matching_volume",
    "is_volume_bound_to_claim",
    "match_topology_selector_terms",
    "pod_claim_names",
    "pod_uses_claim",
    "storage_capacity_reaches",
    "storage_capacity_sufficient",
]

LABEL_TOPOLOGY_KEYS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
"""Zone and region labels, legacy beta keys first (upstream VolumeZone's ``topologyLabels``)."""

_MATCHERS: dict[int, tuple[object, NodeSelectorTermsMatcher]] = {}
_MATCHERS_MAX = 50_000


def _affinity_matcher(pv: PersistentVolume) -> NodeSelectorTermsMatcher | None:
    affinity = pv.spec.node_affinity
    required = affinity.required if affinity is not None else None
    if required is None:
        return None
    # Compiled once per NodeSelector object: PVs are read-only snapshots, and the filter
    # asks the same PV about every node.
    hit = _MATCHERS.get(id(required))
    if hit is not None and hit[0] is required:
        return hit[1]
    if len(_MATCHERS) >= _MATCHERS_MAX:
        _MATCHERS.clear()
    matcher = NodeSelectorTermsMatcher(required.node_selector_terms)
    _MATCHERS[id(required)] = (required, matcher)
    return matcher


def check_volume_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """Whether a node with ``node_labels`` can reach ``pv`` (``volume.CheckNodeAffinity``).

    As upstream, the node is matched by its labels only (a ``metadata.name`` field
    requirement sees an empty name); a PV without required node affinity fits anywhere.
    """
    matcher = _affinity_matcher(pv)
    return matcher is None or matcher.matches("", node_labels)


def is_volume_bound_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Whether ``pv.spec.claimRef`` names ``claim`` (and its uid, when the ref has one)."""
    ref = pv.spec.claim_ref
    if ref is None or ref.name != claim.name or (ref.namespace or "") != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def claim_reference(claim: PersistentVolumeClaim) -> ObjectReference:
    """The ``claimRef`` that binds a PV to ``claim`` (``GetBindVolumeToClaim``)."""
    return ObjectReference(
        kind="PersistentVolumeClaim",
        api_version="v1",
        namespace=claim.namespace,
        name=claim.name,
        uid=claim.metadata.uid,
        resource_version=claim.metadata.resource_version,
    )


def pod_uses_claim(pod: Pod, claim: PersistentVolumeClaim, ephemeral: bool = True) -> bool:
    """Whether ``claim`` is one of the pod's (its generic ephemeral claims too unless
    ``ephemeral`` is False)."""
    if claim.namespace != pod.namespace:
        return False
    return any(
        name == claim.name and (ephemeral or not is_ephemeral)
        for name, is_ephemeral in pod_claim_names(pod)
    )


def check_access_modes(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """Whether the volume offers every access mode the claim asks for."""
    return set(claim.spec.access_modes) <= set(pv.spec.access_modes)


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, object] | None = None,
    delay_binding: bool = False,
) -> PersistentVolume | None:
    """The smallest volume that satisfies ``claim`` (``volume.FindMatchingVolume``).

    ``node_labels`` None is the PV controller's path (no node yet; claims of a
    WaitForFirstConsumer class are left to the scheduler), otherwise the scheduler's
    (node affinity and access modes checked). A volume pre-bound to the claim wins
    outright, unless the node cannot reach it (then nothing matches). ``excluded``
    names volumes already chosen for other claims of the pod. Raises ``ValueError``
    for an invalid claim selector.
    """
    requested = claim.spec.storage_request()
    requested_class = claim.class_name
    selector = (
        compile_label_selector(claim.spec.selector) if claim.spec.selector is not None else None
    )
    smallest: PersistentVolume | None = None
    smallest_size = 0
    for pv in volumes:
        if excluded and pv.name in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, claim)
        if pv.spec.claim_ref is not None and not bound_to_claim:
            continue
        size = pv.spec.storage_capacity()
        if size < requested:
            continue
        if pv.spec.volume_mode != claim.spec.volume_mode:
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        affinity_ok = node_labels is None or check_volume_node_affinity(pv, node_labels)
        if bound_to_claim:
            return pv if affinity_ok else None
        if node_labels is None and delay_binding:
            continue
        if pv.status.phase != "Available":
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if pv.spec.storage_class_name != requested_class or not affinity_ok:
            continue
        if node_labels is not None and not check_access_modes(claim, pv):
            continue
        if smallest is None or size < smallest_size:
            smallest, smallest_size = pv, size
    return smallest


def match_topology_selector_terms(
    terms: Sequence[TopologySelectorTerm], labels: Mapping[str, str]
) -> bool:
    """Whether ``labels`` satisfy a StorageClass's ``allowedTopologies`` (none: anywhere)."""
    if not terms:
        return True
    for term in terms:
        if all(
            req.key in labels and labels[req.key] in req.values
            for req in term.match_label_expressions
        ):
            return True
    return False


def storage_capacity_sufficient(capacity: CSIStorageCapacity, size: int) -> bool:
    """Whether a new volume of ``size`` bytes fits the segment (``maximumVolumeSize``
    preferred over ``capacity``, as upstream)."""
    limit = capacity.maximum_volume_size or capacity.capacity
    return limit is not None and limit.value() >= size


def storage_capacity_reaches(capacity: CSIStorageCapacity, node_labels: Mapping[str, str]) -> bool:
    """Whether the segment's ``nodeTopology`` selects the node (none: unreachable)."""
    if capacity.node_topology is None:
        return False
    try:
        return compile_label_selector(capacity.node_topology).matches(node_labels)
    except ValueError:
        return False


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """The claim of a generic ephemeral volume: ``<pod>-<volume>``."""
    return f"{pod.name}-{volume.name}"


def ephemeral_volume_is_for_pod(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """None when the pod controls ``claim``; else upstream's error (``VolumeIsForPod``)."""
    ref = claim.metadata.controller_ref
    if ref is None or ref.uid != (pod.metadata.uid or ""):
        return (
            f"PVC {claim.namespace}/{claim.name} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return None


def pod_claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """``(claim name, is ephemeral)`` of every claim-backed volume of the pod, in order."""
    out: list[tuple[str, bool]] = []
    for vol in pod.spec.volumes:
        if vol.persistent_volume_claim is not None:
            out.append((vol.persistent_volume_claim.claim_name, False))
        elif vol.ephemeral is not None:
            out.append((ephemeral_claim_name(pod, vol), True))
    return out
