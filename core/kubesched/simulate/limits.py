"""How many pods the input asks for, and the refusal of a run that would create too many."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api import KubeObject
from kubesched.errors import UserInputError

_REPLICATED = frozenset({"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"})
SHOWN_WORKLOADS = 3
"""How many of the largest workloads a refusal names."""


def expected_pods(objects: Iterable[KubeObject]) -> list[tuple[str, int, str]]:
    """The pods each object of the input makes: ``(kind namespace/name, pods, why)``.

    Replicated workloads make their ``replicas``, a Job the larger of its ``parallelism``
    and ``completions``, a DaemonSet one pod per Node of the input, a Pod one. An object
    whose controller is in the input too (a Deployment's ReplicaSet, a ReplicaSet's Pod
    of a captured cluster) is its owner's: counted once, there.
    """
    objects = list(objects)
    present = {(o.kind, o.metadata.namespace or "default", o.name) for o in objects}
    nodes = sum(1 for o in objects if o.kind == "Node")
    out: list[tuple[str, int, str]] = []
    for obj in objects:
        ref = obj.metadata.controller_ref
        if ref is not None and (ref.kind, obj.metadata.namespace or "default", ref.name) in present:
            continue
        spec = getattr(obj, "spec", None)
        if obj.kind in _REPLICATED:
            count, why = spec.replicas, "replicas"
        elif obj.kind == "Job":
            count = max(spec.parallelism or 0, spec.completions or 0)
            why = "parallelism/completions"
        elif obj.kind == "DaemonSet":
            count, why = nodes, "nodes"
        elif obj.kind == "Pod":
            count, why = 1, "pod"
        else:
            continue
        out.append((f"{obj.kind} {obj.key}", count, why))
    return out


def check_max_pods(objects: Iterable[KubeObject], max_pods: int) -> None:
    """Refuse, before anything is created, an input whose workloads would make more than
    ``max_pods`` pods, naming the largest workloads and the flag that raises the limit."""
    counts = expected_pods(objects)
    total = sum(n for _, n, _ in counts)
    if total <= max_pods:
        return
    largest = sorted(counts, key=lambda c: -c[1])[:SHOWN_WORKLOADS]
    named = ", ".join(f"{what} ({n:,} {why})" for what, n, why in largest)
    raise UserInputError(
        f"the input would create {total:,} pods, more than the limit of {max_pods:,}; "
        f"largest: {named}. Lower those, or raise the limit with --max-pods",
        obj="--max-pods",
    )
