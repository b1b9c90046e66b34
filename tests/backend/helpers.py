"""Object builders of the embedded-cluster tests (manifest-shaped, no uids)."""

from __future__ import annotations

from typing import Any

from kubesched.api import KINDS, KubeObject, parse_object


def obj(
    kind: str, name: str, namespace: str | None = None, *, validate: bool = True, **fields: Any
) -> KubeObject:
    """A manifest-built object: ``obj("Pod", "p", spec={...})``; ``validate=False`` skips
    the API server's validation (for objects only admission code must cope with)."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(fields.pop("metadata", {}))
    doc = {"kind": kind, "metadata": meta, **fields}
    return parse_object(doc) if validate else KINDS[kind].model_validate(doc)


def pod(name: str, namespace: str | None = None, *, validate: bool = True, **spec: Any) -> Any:
    """A Pod with one container and ``spec`` fields (camelCase)."""
    labels = spec.pop("labels", None)
    meta = {"labels": labels} if labels else {}
    return obj(
        "Pod",
        name,
        namespace,
        validate=validate,
        metadata=meta,
        spec={"containers": [{"name": "c", "image": "busybox"}], **spec},
    )


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A pod template manifest with ``labels``."""
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }
