"""The LimitRanger and ResourceQuota cases of tests/fixtures/apiserver/admission-refusals.yaml
as manifests, for the embedded cluster's test and the real kube-apiserver's alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "apiserver" / "admission-refusals.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text())
CASE_IDS = [c["id"] for c in CASES]

_DEFAULT_NAMES = {"LimitRange": "lr", "ResourceQuota": "q"}


def _containers(specs: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    out = []
    for i, c in enumerate(specs):
        resources = {k: c[k] for k in ("requests", "limits") if k in c}
        out.append({"name": c.get("name", f"{prefix}{i}"), "image": "x", "resources": resources})
    return out


def manifest(step: dict[str, Any], namespace: str) -> dict[str, Any]:
    """One step of a case as the object to create in ``namespace``."""
    kind = step["kind"]
    meta = {"name": step.get("name", _DEFAULT_NAMES.get(kind, "p")), "namespace": namespace}
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": meta}
    if kind == "Pod":
        doc["spec"] = {"containers": _containers(step["containers"], "c")}
        if "initContainers" in step:
            doc["spec"]["initContainers"] = _containers(step["initContainers"], "i")
    elif kind == "Service":
        doc["spec"] = {"ports": [{"port": 80}]}
    else:
        doc["spec"] = step["spec"]
    return doc


def manifests(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's objects, in order, in the namespace named by its id."""
    return [manifest(step, case["id"]) for step in case["objects"]]
