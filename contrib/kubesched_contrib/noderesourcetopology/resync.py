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

from kubesched.api import CPU, MEMORY, Pod

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


def has_exclusive_resources(pod: Pod, nrt_resources: frozenset[str]) -> bool:
    """Whether a container (or sidecar) of the pod holds resources the kubelet pins to a
    NUMA zone: a device the NRT object reports, or, for a Guaranteed pod, whole cpus,
    memory or hugepages (upstream ``AreExclusiveForPod``)."""
    qos = pod_qos(pod)
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    for container in (*sidecars, *pod.spec.containers):
        for name, quantity in container.resources.requests.items():
            if not is_native_resource(name):
                if name in nrt_resources:
                    return True
                continue
            if qos != QOS_GUARANTEED:
                continue
            if name == CPU and quantity.nanos % 1_000_000_000 == 0 and quantity.nanos > 0:
                return True
            if (name == MEMORY or name.startswith("hugepages-")) and quantity.nanos > 0:
                return True
    return False


__all__ = [
    "ANNOTATION_FINGERPRINT",
    "ATTRIBUTE_FINGERPRINT",
    "ATTRIBUTE_FINGERPRINT_METHOD",
    "expected_fingerprint",
    "has_exclusive_resources",
    "nrt_resource_names",
    "pod_fingerprint",
]
