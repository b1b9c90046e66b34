"""NodeResourceTopology (``topology.node.k8s.io/v1alpha2``): a node's resources per NUMA zone.

The CRD of the k8stopologyawareschedwg NodeResourceTopology API, written per node (same
name as the Node, cluster-scoped) by an agent such as the resource-topology-exporter or
NFD's topology updater. Registered as an object kind through the ``kubesched.kinds``
entry point: manifests with ``kind: NodeResourceTopology`` load into the embedded
cluster, and plugins read them with ``handle.lister.get_object("NodeResourceTopology",
None, node_name)``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from kubesched.api import KubeModel, KubeObject, NullableList, Quantity

__all__ = [
    "NODE_RESOURCE_TOPOLOGY_KIND",
    "AttributeInfo",
    "CostInfo",
    "NodeResourceTopology",
    "ResourceInfo",
    "Zone",
]

NODE_RESOURCE_TOPOLOGY_KIND = "NodeResourceTopology"


class AttributeInfo(KubeModel):
    """``AttributeInfo``: a name/value pair (``topologyManagerPolicy: single-numa-node``)."""

    name: str
    value: str


class CostInfo(KubeModel):
    """``CostInfo``: the distance from this zone to the zone ``name`` (ACPI SLIT units)."""

    name: str
    value: int


class ResourceInfo(KubeModel):
    """``ResourceInfo``: one resource of a zone; ``available`` is what is not allocated yet."""

    name: str
    capacity: Quantity
    allocatable: Quantity
    available: Quantity


class Zone(KubeModel):
    """``Zone``: a NUMA node (``type: Node``, ``name: node-<id>``) or another topology zone."""

    name: str
    type: str
    parent: str | None = None
    costs: NullableList[CostInfo] = Field(default_factory=list)
    attributes: NullableList[AttributeInfo] = Field(default_factory=list)
    resources: NullableList[ResourceInfo] = Field(default_factory=list)


class NodeResourceTopology(KubeObject):
    """``topology.node.k8s.io/v1alpha2.NodeResourceTopology``, named after its node."""

    namespaced: ClassVar[bool] = False

    api_version: str | None = "topology.node.k8s.io/v1alpha2"
    kind: str | None = NODE_RESOURCE_TOPOLOGY_KIND
    topology_policies: NullableList[str] = Field(
        default_factory=list,
        description=(
            "Deprecated form of the kubelet's Topology Manager policy and scope "
            "(``SingleNUMANodeContainerLevel``...); the attributes win when both are set."
        ),
    )
    zones: NullableList[Zone] = Field(default_factory=list)
    attributes: NullableList[AttributeInfo] = Field(
        default_factory=list,
        description=(
            "Node-level attributes: ``topologyManagerPolicy``, ``topologyManagerScope``, "
            "``topologyManagerMaxNUMANodes``."
        ),
    )
