"""TopologyPlacementGenerator: one placement per topology domain for a PodGroup with a
topology constraint (PlacementGenerate), behind the TopologyAwareWorkloadScheduling gate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched import Code, Placement, Status, hookimpl
from kubesched.api import WORKLOAD_API_VERSION, WorkloadPodGroup
from kubesched_builtin.names import TOPOLOGY_PLACEMENT_GENERATOR

NAME = TOPOLOGY_PLACEMENT_GENERATOR

GATE = "TopologyAwareWorkloadScheduling"
"""The feature gate that puts the plugin in the default profile (alpha, off by default;
it needs GenericWorkload)."""


def topology_key(group: WorkloadPodGroup | None) -> str | None:
    """The node label key of the group's topology constraint, or None without one (the API
    allows one constraint at most; v1.36 reads the first)."""
    constraints = group.spec.scheduling_constraints if group is not None else None
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


class TopologyPlacementGenerator:
    """Splits the nodes by the value of the PodGroup's topology key, so that the whole group
    lands in one domain (a rack, a zone); once a pod of the group runs somewhere, only
    that pod's domain is offered. Nodes without the label are never offered."""

    name = NAME
    reads = (f"{WORKLOAD_API_VERSION}/PodGroup",)

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    @hookimpl
    def generate_placements(
        self, pod_group: WorkloadPodGroup | None, parent: Placement
    ) -> Sequence[Placement] | Status:
        key = topology_key(pod_group)
        if key is None or pod_group is None:
            return [parent]
        required = self._scheduled_domain(pod_group, key)
        if isinstance(required, Status):
            return required
        domains: dict[str, list[Any]] = {}
        for node_info in parent.nodes:
            labels = node_info.node.metadata.labels if node_info.node is not None else None
            value = (labels or {}).get(key)
            if value is not None and (required is None or value == required):
                domains.setdefault(value, []).append(node_info)
        return [Placement(value, tuple(nodes)) for value, nodes in domains.items()]

    def _scheduled_domain(self, pod_group: WorkloadPodGroup, key: str) -> str | Status | None:
        """The domain of the group's pods that have a node (bound or assumed), None when
        none has; an error when one's node lacks the label or they span two domains."""
        namespace = pod_group.metadata.namespace or "default"
        domain: str | None = None
        for node_info in self.handle.snapshot.list():
            for pod_info in node_info.pods:
                group = pod_info.pod.spec.scheduling_group
                if (
                    group is None
                    or group.pod_group_name != pod_group.name
                    or pod_info.namespace != namespace
                ):
                    continue
                labels = node_info.node.metadata.labels if node_info.node is not None else None
                value = (labels or {}).get(key)
                prefix = "cannot determine domain for already scheduled pods"
                if value is None:
                    return Status(
                        Code.ERROR, f"{prefix}: no topology domain found for pod {pod_info.key}"
                    )
                if domain is not None and value != domain:
                    return Status(
                        Code.ERROR,
                        f"{prefix}: more than 1 domain found for pod group: {domain}, {value}",
                    )
                domain = value
        return domain
