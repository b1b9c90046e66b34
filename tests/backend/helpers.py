"""Object builders of the embedded-cluster tests (manifest-shaped, no uids)."""

from __future__ import annotations

from typing import Any

from kubesched.api import KubeObject, parse_object


def obj(kind: str, name: str, namespace: str | None = None, **fields: Any) -> KubeObject:
    """A manifest-built object: ``obj("Pod", "p", spec={...})``."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(fields.pop("metadata", {}))
    return parse_object({"kind": kind, "metadata": meta, **fields})


def pod(name: str, namespace: str | None = None, **spec: Any) -> Any:
    """A Pod with one container and ``spec`` fields (camelCase)."""
    labels = spec.pop("labels", None)
    meta = {"labels": labels} if labels else {}
    return obj(
        "Pod",
        name,
        namespace,
        metadata=meta,
        spec={"containers": [{"name": "c", "image": "busybox"}], **spec},
    )


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A pod template manifest with ``labels``."""
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }
