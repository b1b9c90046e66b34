"""Small Pod / Node / PodInfo builders for the cache tests."""

from __future__ import annotations

from typing import Any

from kubesched.api import Node, Pod
from kubesched.framework.types import PodInfo

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    zone: str | None = None,
    region: str | None = None,
    labels: dict[str, str] | None = None,
    images: list[tuple[list[str], int]] | None = None,
    extra: dict[str, str] | None = None,
) -> Node:
    """A Node with allocatable ``cpu``/``memory``/``pods``, zone labels and images."""
    lbl = dict(labels or {})
    if zone is not None:
        lbl[ZONE] = zone
    if region is not None:
        lbl[REGION] = region
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return Node.model_validate(
        {
            "metadata": {"name": name, "labels": lbl},
            "status": {
                "allocatable": alloc,
                "images": [{"names": n, "sizeBytes": s} for n, s in images or ()],
            },
        }
    )


def make_pod(
    name: str,
    node: str = "",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    namespace: str = "default",
    uid: str | None = None,
    affinity: bool = False,
    anti_affinity: bool = False,
    pvcs: tuple[str, ...] = (),
    extra: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> PodInfo:
    """A PodInfo for a one-container pod on ``node`` requesting ``cpu``/``memory``.

    ``affinity`` adds a preferred pod affinity term, ``anti_affinity`` a required pod
    anti-affinity term, ``pvcs`` PVC volumes.
    """
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update(extra or {})
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "img", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    aff: dict[str, Any] = {}
    if affinity:
        aff["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": term}
            ]
        }
    if anti_affinity:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    if aff:
        spec["affinity"] = aff
    if pvcs:
        spec["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(pvcs)
        ]
    return PodInfo(
        Pod.model_validate(
            {
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": uid or f"uid-{namespace}-{name}",
                    "labels": labels or {},
                },
                "spec": spec,
            }
        )
    )


def on_node(pod_info: PodInfo, node: str) -> PodInfo:
    """The same pod (same uid) bound to ``node``."""
    pod = pod_info.pod.model_copy(deep=True)
    pod.spec.node_name = node
    return PodInfo(pod)
