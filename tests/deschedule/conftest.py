"""Builders for the descheduler tests: nodes, owned pods and a cluster to run a policy on."""

from __future__ import annotations

from typing import Any

from kubesched.api import parse_object

RS_UID = "00000000-0000-4000-8000-0000000000"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "20", **spec: Any) -> Any:
    """A Node with this allocatable, ``labels`` and ``taints``/``unschedulable``."""
    labels = {"kubernetes.io/hostname": name, **spec.pop("labels", {})}
    return parse_object(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
        }
    )


def replicaset(
    name: str, replicas: int, n: int = 1, labels: dict[str, str] | None = None, **podspec: Any
) -> Any:
    """A ReplicaSet ``name`` (uid ending in ``n``) whose template has ``podspec`` and the
    labels ``app: name`` and ``labels``."""
    spec = {"containers": [{"name": "c", "image": f"{name}:1"}], **podspec}
    return parse_object(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": f"{RS_UID}{n:02d}"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name, **(labels or {})}}, "spec": spec},
            },
        }
    )


def pod(
    name: str, node_name: str | None = None, owner: tuple[str, int] | None = None, **kw: Any
) -> Any:
    """A pod, bound to ``node_name`` and owned by the ReplicaSet ``owner`` (name, n);
    ``labels``, ``annotations``, ``status`` and any other spec field as keywords."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": kw.pop("namespace", "default"),
        "labels": kw.pop("labels", {}),
        "annotations": kw.pop("annotations", {}),
    }
    if "creationTimestamp" in kw:
        meta["creationTimestamp"] = kw.pop("creationTimestamp")
    if owner is not None:
        meta["labels"].setdefault("app", owner[0])
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": kw.pop("owner_kind", "ReplicaSet"),
                "name": owner[0],
                "uid": f"{RS_UID}{owner[1]:02d}",
                "controller": True,
            }
        ]
    status = kw.pop("status", None)
    spec = {"containers": [{"name": "c", "image": f"{owner[0] if owner else name}:1"}], **kw}
    if node_name:
        spec["nodeName"] = node_name
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if status:
        doc["status"] = status
    return parse_object(doc)


def requests(cpu: str, memory: str = "0") -> list[dict[str, Any]]:
    """A container list with these requests (for ``containers=``)."""
    return [
        {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    ]
