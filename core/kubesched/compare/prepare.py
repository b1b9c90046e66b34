"""What ``kubesched compare`` creates: the manifests moved to scratch namespaces and their
workloads expanded into pods by the embedded cluster's controllers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import KubeObject, parse_object
from kubesched.backend.kube.snapshot import SNAPSHOT_KINDS
from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.errors import UserInputError
from kubesched.notices import collecting_notices

COPIED_KINDS: tuple[str, ...] = tuple(kind for _, kind, _ in SNAPSHOT_KINDS if kind != "Pod")
"""Kinds created in the API server as they are: what the scheduler and its plugins read
(the kinds ``simulate --from-cluster`` reads), in creation order."""
EXPANDED_KINDS = frozenset({"Deployment", "DaemonSet", "Job"})
"""Workloads that only their pods represent in the API server (the scheduler never reads
them; created there, a kube-controller-manager would make pods of its own)."""
OWNER_KINDS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
"""Controllers a pod's ownerReference may keep: the spreading defaults look them up."""
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation",
                    "managedFields", "selfLink", "deletionTimestamp")  # fmt: skip


@dataclass
class Plan:
    """The objects of one comparison: ``objects`` (non-pods, in creation order) and
    ``pods`` in the order they are created, both as manifests for the API server."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    prefix: str = ""


def _renamed(doc: dict[str, Any], prefix: str, namespaced: bool) -> dict[str, Any]:
    """``doc`` with its namespace (and the namespaces its pod-affinity terms name) prefixed."""
    meta = doc.setdefault("metadata", {})
    if doc.get("kind") == "Namespace":
        meta["name"] = prefix + meta["name"]
    elif namespaced:
        meta["namespace"] = prefix + (meta.get("namespace") or "default")
    _rename_affinity_terms(doc.get("spec"), prefix)
    return doc


def _rename_affinity_terms(value: Any, prefix: str) -> None:
    # A pod (or template) affinity term is the dict with a topologyKey; its namespaces
    # list names namespaces, which moved.
    if isinstance(value, dict):
        if "topologyKey" in value and isinstance(value.get("namespaces"), list):
            value["namespaces"] = [prefix + n for n in value["namespaces"]]
        for v in value.values():
            _rename_affinity_terms(v, prefix)
    elif isinstance(value, list):
        for v in value:
            _rename_affinity_terms(v, prefix)


def _server_manifest(obj: KubeObject) -> dict[str, Any]:
    """``obj`` as a manifest to POST: server bookkeeping dropped, and for a pod what
    admission fills in (priority from the class, overhead from the runtime class)."""
    doc = obj.to_dict()
    meta = doc["metadata"]
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    meta["ownerReferences"] = [
        ref for ref in meta.get("ownerReferences") or () if ref.get("kind") in OWNER_KINDS
    ]
    if not meta["ownerReferences"]:
        del meta["ownerReferences"]
    if obj.kind == "Pod":
        spec = doc["spec"]
        doc.pop("status", None)
        spec.pop("nodeName", None)
        spec.pop("priority", None)
        if spec.get("priorityClassName"):
            spec.pop("preemptionPolicy", None)
        if spec.get("runtimeClassName"):
            spec.pop("overhead", None)
        # No kubelet confirms a deletion on a scratch server: a preemption victim with a
        # grace period would stay (terminating) forever. Both sides see this value.
        spec["terminationGracePeriodSeconds"] = 0
    elif obj.kind != "Node":
        doc.pop("status", None)
    return doc


def prepare(objects: Iterable[KubeObject], prefix: str) -> Plan:
    """Move ``objects`` to namespaces named ``prefix`` + their namespace, expand the
    workloads into pods with the embedded cluster's controllers, and return the plan.

    Kinds compare cannot carry to an API server (a Lease, a plugin's kind) are refused,
    as is anything the embedded cluster's admission refuses.
    """
    supported = set(COPIED_KINDS) | EXPANDED_KINDS | {"Pod"}
    moved: list[KubeObject] = []
    for obj in objects:
        kind = obj.kind or ""
        if kind not in supported:
            raise UserInputError(
                f"compare cannot create {kind} objects in the API server (it handles "
                f"{', '.join(sorted(supported))})",
                obj=f"{kind} {obj.key}",
            )
        moved.append(parse_object(_renamed(obj.to_dict(), prefix, type(obj).namespaced)))
    cluster = MemoryCluster(FakeClock(0.0))
    # The scratch namespaces are created implicitly on purpose, and what the embedded
    # cluster defaults goes to the API server as it is: nothing here to tell a user.
    with collecting_notices():
        refused = cluster.apply(moved)
    if refused:
        raise UserInputError(
            "the manifests hold objects that kube-apiserver would refuse: "
            + "; ".join(str(r) for r in refused)
        )
    plan = Plan(prefix=prefix)
    for kind in COPIED_KINDS:
        plan.objects.extend(_server_manifest(o) for o in cluster.objects(kind))
    # Creation order: bare pods in manifest order, then what the controllers made.
    plan.pods = [_server_manifest(p) for p in cluster.iter_objects("Pod")]
    return plan
