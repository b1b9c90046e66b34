"""The signature fragments several built-in plugins give at ``sign_pod``, keyed by upstream's
signer names so that two plugins reading the same part of a pod give it once."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kubesched import Code, PodInfo, Status
from kubesched.api import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    extended_resource_classes,
    is_dra_extended_resource_name,
)

IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"

ERR_DRA_EXTENDED_RESOURCES = (
    "signature disabled when dra extended resources are used in the cluster"
)
"""Why a pod asking for an extended resource that a DeviceClass backs is not signed."""


def _json(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def tolerations(pod: Pod) -> tuple[str, Any]:
    """The pod's tolerations, sorted by key and value (their order does not matter)."""
    ordered = sorted(pod.spec.tolerations or (), key=lambda t: (t.key or "", t.value or ""))
    # Read field by field: every pod has tolerations (admission adds two), and a pydantic
    # dump of each costs more than the rest of the signature.
    return TOLERATIONS, [
        {
            name: value
            for name, value in (
                ("key", t.key),
                ("operator", t.operator),
                ("value", t.value),
                ("effect", t.effect),
                ("tolerationSeconds", t.toleration_seconds),
            )
            if value is not None
        }
        for t in ordered
    ]


def volumes(pod: Pod) -> tuple[str, Any]:
    """The pod's volume sources, sorted, without ConfigMap and Secret volumes: those never
    change where a pod fits and differ from pod to pod, so no two pods would match."""
    sources = []
    for volume in pod.spec.volumes or ():
        if volume.source("configMap") is not None or volume.source("secret") is not None:
            continue
        source = _json(volume)
        source.pop("name", None)
        sources.append(source)
    return VOLUMES, sorted(sources, key=repr)


def resources(pod_info: PodInfo, handle: Any) -> list[tuple[str, Any]] | Status:
    """The pod's requests (containers, init containers, overhead), as Fit counts them.

    With DRAExtendedResource, a pod asking for an extended resource that a DeviceClass
    backs is not signed: DynamicResources allocates it device by device, so its fit on a
    node depends on the other pods' allocations. Pods asking for no such resource (plain
    ones, or ones asking for an extended resource that the nodes advertise themselves)
    are signed while such a DeviceClass exists, as the real v1.36.2 scheduler does
    (``tests/fixtures/scheduler/opportunistic-batching.json`` records all three)."""
    lister = getattr(handle, "lister", None)
    if handle.feature_enabled("DRAExtendedResource") and lister is not None:
        extended = [name for name in pod_info.requests if is_dra_extended_resource_name(name)]
        if extended:
            backed = extended_resource_classes(lister.list_objects("DeviceClass"))
            if any(name in backed for name in extended):
                return Status(Code.UNSCHEDULABLE, ERR_DRA_EXTENDED_RESOURCES)
    return [(RESOURCES, dict(sorted(pod_info.requests.items())))]


def host_ports(pod: Pod) -> tuple[str, Any]:
    """The host ports of the pod's containers and init containers, each once, sorted.

    Upstream signs every init container's host ports, though only a restartable one's
    (a sidecar's) take a node's port; pods differing only there are not batched
    together, which costs a batch and never a wrong placement."""
    containers = [*pod.spec.containers, *pod.spec.init_containers]
    return HOST_PORTS, sorted({p.host_port for c in containers for p in c.ports if p.host_port})


def node_affinity(pod: Pod) -> list[tuple[str, Any]]:
    """The pod's node selector and node affinity (required and preferred terms), in an
    order of their own: as upstream, two pods whose terms, expressions or values differ
    only in order have the same signature."""
    affinity = pod.spec.affinity
    node = affinity.node_affinity if affinity is not None else None
    signed = None
    if node is not None:
        required = node.required_during_scheduling_ignored_during_execution
        terms = required.node_selector_terms if required is not None else []
        preferred = node.preferred_during_scheduling_ignored_during_execution
        signed = {
            "required": _sorted_json(_term(t) for t in terms),
            "preferred": _sorted_json(
                {"weight": t.weight, "preference": _term(t.preference)} for t in preferred
            ),
        }
    return [
        (NODE_SELECTOR, dict(sorted((pod.spec.node_selector or {}).items()))),
        (NODE_AFFINITY, signed),
    ]


def _term(term: NodeSelectorTerm) -> dict[str, list[str]]:
    """A node selector term with its expressions (and each one's values) sorted."""
    return {
        "matchExpressions": _requirements(term.match_expressions),
        "matchFields": _requirements(term.match_fields),
    }


def _requirements(requirements: Iterable[NodeSelectorRequirement]) -> list[str]:
    return _sorted_json(
        {"key": r.key, "operator": r.operator, "values": sorted(r.values)} for r in requirements
    )


def _sorted_json(items: Iterable[Any]) -> list[str]:
    """Each item as canonical JSON, sorted: a list whose order does not matter."""
    return sorted(json.dumps(i, sort_keys=True, separators=(",", ":")) for i in items)
