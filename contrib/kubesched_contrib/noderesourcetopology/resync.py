"""What the overreserve cache's resync reads: pod-set fingerprints and exclusive resources.

An agent (the resource-topology-exporter, NFD's topology updater) can write, with each
NodeResourceTopology object, the fingerprint of the pods it accounted for
(``k8stopologyawareschedwg/podfingerprint``): ``pfp0v001`` and the hex xxhash64 of the
sorted per-pod hashes, each the xxhash64 of the pod's name seeded with that of its
namespace. The scheduler trusts a newer object only when its fingerprint equals the one
of the pods it knows on the node (``pkg/noderesourcetopology/cache`` upstream).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import xxhash

from kubesched.api import CPU, MEMORY, Container, Pod, Quantity

from .api import NodeResourceTopology
from .numa import QOS_GUARANTEED, is_native_resource, pod_qos

FINGERPRINT_PREFIX = "pfp0v001"
ATTRIBUTE_FINGERPRINT = "nodeTopologyPodsFingerprint"
ATTRIBUTE_FINGERPRINT_METHOD = "nodeTopologyPodsFingerprintMethod"
ANNOTATION_FINGERPRINT = "topology.node.k8s.io/fingerprint"
"""The legacy place of the fingerprint (always of all pods)."""
METHOD_WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"

RESYNC_AUTODETECT = "Autodetect"
RESYNC_ONLY_EXCLUSIVE = "OnlyExclusiveResources"


def pod_fingerprint(pods: Iterable[tuple[str, str]]) -> str:
    """The fingerprint of a set of ``(namespace, name)`` pods, in any order."""
    hashes = sorted(
        xxhash.xxh64_intdigest(name.encode(), seed=xxhash.xxh64_intdigest(namespace.encode()))
        for namespace, name in pods
    )
    return FINGERPRINT_PREFIX + xxhash.xxh64(struct.pack(f"<{len(hashes)}Q", *hashes)).hexdigest()


def expected_fingerprint(nrt: NodeResourceTopology, resync_method: str) -> tuple[str, bool]:
    """The fingerprint the object carries ("" without one) and whether it counts only the
    pods with exclusive resources (``cache.resyncMethod``, or with ``Autodetect`` what the
    object's ``nodeTopologyPodsFingerprintMethod`` says)."""
    attributes = {a.name: a.value for a in nrt.attributes}
    value = attributes.get(ATTRIBUTE_FINGERPRINT)
    if value is not None:
        only_exclusive = resync_method == RESYNC_ONLY_EXCLUSIVE or (
            resync_method == RESYNC_AUTODETECT
            and attributes.get(ATTRIBUTE_FINGERPRINT_METHOD) == METHOD_WITH_EXCLUSIVE_RESOURCES
        )
        return value, only_exclusive
    return (nrt.metadata.annotations or {}).get(ANNOTATION_FINGERPRINT, ""), False


def nrt_resource_names(nrt: NodeResourceTopology | None) -> frozenset[str]:
    """The resources any zone of the object reports."""
    if nrt is None:
        return frozenset()
    return frozenset(r.name for zone in nrt.zones for r in zone.resources)


def is_exclusive(qos: str, name: str, quantity: Quantity, nrt_resources: frozenset[str]) -> bool:
    """Whether the kubelet pins this request to a NUMA zone: a device the NRT object
    reports, or, for a Guaranteed pod, whole cpus, memory or hugepages (upstream
    ``resourcerequests.IsExclusive``)."""
    if not is_native_resource(name):
        return name in nrt_resources
    if qos != QOS_GUARANTEED:
        return False
    if name == CPU:
        return quantity.nanos % 1_000_000_000 == 0 and quantity.nanos > 0
    return (name == MEMORY or name.startswith("hugepages-")) and quantity.nanos > 0


def steady_containers(pod: Pod) -> list[Container]:
    """The containers that run while the pod runs: its sidecars (init containers that
    restart always), then its app containers."""
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    return [*sidecars, *pod.spec.containers]


def exclusive_containers(pod: Pod, nrt_resources: frozenset[str]) -> list[Container]:
    """The steady containers holding a request the kubelet pins to a NUMA zone: those the
    agent's NUMA placement encodes."""
    qos = pod_qos(pod)
    return [
        c
        for c in steady_containers(pod)
        if any(is_exclusive(qos, n, q, nrt_resources) for n, q in c.resources.requests.items())
    ]


def has_exclusive_resources(pod: Pod, nrt_resources: frozenset[str]) -> bool:
    """Whether a container (or sidecar) of the pod holds resources the kubelet pins to a
    NUMA zone (upstream ``AreExclusiveForPod``)."""
    return bool(exclusive_containers(pod, nrt_resources))


def fingerprint_matches(nrt: NodeResourceTopology, pods: Iterable[Pod], resync_method: str) -> bool:
    """Whether the object carries the fingerprint of ``pods`` (all of them, or those with
    exclusive resources, as ``cache.resyncMethod`` and the object say): the agent wrote
    it knowing exactly these pods. False for an object without a fingerprint."""
    expected, only_exclusive = expected_fingerprint(nrt, resync_method)
    if not expected:
        return False
    resources = nrt_resource_names(nrt)
    return expected == pod_fingerprint(
        (p.metadata.namespace or "default", p.metadata.name)
        for p in pods
        if not only_exclusive or has_exclusive_resources(p, resources)
    )


__all__ = [
    "ANNOTATION_FINGERPRINT",
    "ATTRIBUTE_FINGERPRINT",
    "ATTRIBUTE_FINGERPRINT_METHOD",
    "exclusive_containers",
    "expected_fingerprint",
    "fingerprint_matches",
    "has_exclusive_resources",
    "is_exclusive",
    "nrt_resource_names",
    "pod_fingerprint",
    "steady_containers",
]
