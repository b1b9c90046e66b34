"""Helpers of the contrib tests: PodGroups and a simulation bounded in virtual time."""

from __future__ import annotations

from typing import Any

from kubesched.config import config_from_dict
from kubesched_contrib.coscheduling import POD_GROUP_LABEL, PodGroup

CONFIG_HEAD = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    created: str | None = None,
    timeout: int | None = None,
    min_resources: dict[str, str] | None = None,
) -> PodGroup:
    """A PodGroup (``created``: an RFC 3339 creationTimestamp)."""
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources is not None:
        spec["minResources"] = min_resources
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"pg-{name}"}
    if created is not None:
        meta["creationTimestamp"] = created
    return PodGroup.model_validate({"metadata": meta, "spec": spec})


def group_labels(group: str) -> dict[str, str]:
    """The label that puts a pod in ``group``."""
    return {POD_GROUP_LABEL: group}


def coscheduling_config(args: dict[str, Any] | None = None):
    """Default plugins plus Coscheduling everywhere, its QueueSort instead of PrioritySort."""
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        },
    }
    if args:
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return config_from_dict({**CONFIG_HEAD, "profiles": [profile]})


def placements(sim: Any) -> dict[str, str | None]:
    """Each pod's node (None: pending), by name."""
    return {p.metadata.name: p.spec.node_name for p in sim.cluster.pods()}


def scheduled_condition(pod) -> Any:
    """The pod's PodScheduled condition, if any."""
    return next((c for c in pod.status.conditions or () if c.type == "PodScheduled"), None)


def nrt_manifest(
    name: str, cpus: tuple[str, ...], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A NodeResourceTopology manifest: single-numa-node, pod scope, one zone of 8 cpus
    and 16Gi per entry of ``cpus``, each with that many cpus available."""
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "labels": labels or {}},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "pod"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": "8", "allocatable": "8", "available": cpu},
                    {
                        "name": "memory",
                        "capacity": "16Gi",
                        "allocatable": "16Gi",
                        "available": "16Gi",
                    },
                ],
            }
            for i, cpu in enumerate(cpus)
        ],
    }
