"""Capacity planning: how many more of a pod fit, how many new nodes a workload needs, and
which nodes can be removed.

The Python API of ``kubesched capacity``::

    from kubesched.api import load_manifests
    from kubesched.capacity import capacity_fit, capacity_nodes, pod_template

    template, extra = pod_template(load_manifests(["web.yaml"]), "web.yaml")
    report = capacity_fit([*load_manifests(["cluster/"]), *extra], template)
    report.count, report.stop.message
"""

from kubesched.capacity.common import PodTemplate, pod_template
from kubesched.capacity.fit import capacity_fit
from kubesched.capacity.nodes import NodeShape, capacity_nodes, node_shapes
from kubesched.capacity.remove import DrainOptions, capacity_remove
from kubesched.capacity.report import (
    SCHEMA_VERSION,
    CapacityFitReport,
    CapacityNodesReport,
    CapacityRemoveReport,
    json_schemas,
)

__all__ = [
    "SCHEMA_VERSION",
    "CapacityFitReport",
    "CapacityNodesReport",
    "CapacityRemoveReport",
    "DrainOptions",
    "NodeShape",
    "PodTemplate",
    "capacity_fit",
    "capacity_nodes",
    "capacity_remove",
    "json_schemas",
    "node_shapes",
    "pod_template",
]
