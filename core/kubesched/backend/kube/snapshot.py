"""A read-only capture of a live cluster, for ``simulate --from-cluster`` and ``capacity``.

One paginated LIST per kind, nothing written: what the scheduler and its plugins read
(Nodes, Namespaces, PriorityClasses, RuntimeClasses, PodDisruptionBudgets, Services,
the Pods that occupy nodes or wait for them, and the ReplicaSets, StatefulSets and
ReplicationControllers the spreading defaults and preemption look up). Deployments,
Jobs and DaemonSets are not read: their pods are, as they run, and the embedded
cluster's controllers would otherwise re-create what the real ones already made.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubesched.api import KubeObject, parse_object
from kubesched.backend.kube.client import KubeClient
from kubesched.backend.protocol import BackendError

LIST_PAGE_SIZE = 500
"""Objects per page of a LIST (the API server's continue tokens page the rest)."""

SNAPSHOT_KINDS: tuple[tuple[str, str, str], ...] = (
    ("v1", "Namespace", "/api/v1/namespaces"),
    ("scheduling.k8s.io/v1", "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ("node.k8s.io/v1", "RuntimeClass", "/apis/node.k8s.io/v1/runtimeclasses"),
    ("v1", "Node", "/api/v1/nodes"),
    ("v1", "Service", "/api/v1/services"),
    ("policy/v1", "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
    ("apps/v1", "ReplicaSet", "/apis/apps/v1/replicasets"),
    ("apps/v1", "StatefulSet", "/apis/apps/v1/statefulsets"),
    ("v1", "ReplicationController", "/api/v1/replicationcontrollers"),
    ("v1", "Pod", "/api/v1/pods"),
)
"""(apiVersion, kind, collection path) of each kind read, in the order they are applied."""

_DROPPED_METADATA = ("managedFields", "resourceVersion", "selfLink", "generation")
"""Server bookkeeping a saved snapshot leaves out (uids stay: owners adopt by uid)."""


@dataclass
class ClusterSnapshot:
    """What was read: the objects as kubesched models, and as plain manifests (the API's
    JSON with ``apiVersion`` and ``kind`` set, server bookkeeping dropped) to save."""

    objects: list[KubeObject]
    manifests: list[dict[str, Any]]
    skipped_pods: int
    """Pods left out: finished (Succeeded/Failed) or being deleted."""


def list_items(client: KubeClient, path: str) -> Iterator[dict[str, Any]]:
    """Every item of the collection at ``path``, page by page (``limit``/``continue``)."""
    query: dict[str, Any] = {"limit": LIST_PAGE_SIZE}
    while True:
        page = client.request("GET", path, query=query, timeout=120.0)
        yield from page.get("items") or ()
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
        query = {"limit": LIST_PAGE_SIZE, "continue": token}


def _occupies_or_waits(pod: dict[str, Any]) -> bool:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return not meta.get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed")


def read_cluster(client: KubeClient) -> ClusterSnapshot:
    """Read the cluster (LIST only). Raises ``BackendError`` naming the kind that could not
    be read (``ForbiddenError`` when the credentials lack ``list`` on it)."""
    objects: list[KubeObject] = []
    manifests: list[dict[str, Any]] = []
    skipped = 0
    for api_version, kind, path in SNAPSHOT_KINDS:
        try:
            items = list(list_items(client, path))
        except BackendError as err:
            raise BackendError(f"cannot list {kind} objects: {err}", err.code) from err
        for item in items:
            if kind == "Pod" and not _occupies_or_waits(item):
                skipped += 1
                continue
            item["apiVersion"], item["kind"] = api_version, kind
            meta = item.setdefault("metadata", {})
            for key in _DROPPED_METADATA:
                meta.pop(key, None)
            # An object kubesched's model refuses raises UserInputError naming it and the
            # field (the source says where it came from).
            objects.append(parse_object(item, source=f"{client.host}{path}"))
            manifests.append(item)
    return ClusterSnapshot(objects, manifests, skipped)
