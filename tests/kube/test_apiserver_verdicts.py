"""The recorded verdicts of tests/fixtures/apiserver/invalid-objects.json still are the real
kube-apiserver's: every object is sent again (a dry run) and the answer compared.

``tests/api/validation/test_apiserver_parity.py`` compares kubesched's validation with
the recording without a server; this test keeps the recording honest.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesched.testing.envtest import ControlPlane

pytestmark = pytest.mark.envtest

FIXTURE = Path(__file__).parents[1] / "fixtures" / "apiserver" / "invalid-objects.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())


def _stable(case_id: str, causes: list[str]) -> Counter[str]:
    # A generateName case: the server validates the random name it generated.
    if case_id == "pod-generate-name":
        causes = [c for c in causes if not c.startswith("metadata.name:")]
    return Counter(causes)


def test_the_recording_is_the_api_servers_verdict(workload_control_plane: ControlPlane) -> None:
    differ = []
    # As the recorder's: the Workload API's kinds are served (alpha gates on). Dry runs:
    # nothing is stored.
    verdicts = [workload_control_plane.verdict(case["object"]) for case in CASES]
    for case, (message, causes) in zip(CASES, verdicts, strict=True):
        same_verdict = (message is None) == (case["message"] is None)
        if not same_verdict or _stable(case["id"], causes) != _stable(case["id"], case["causes"]):
            differ.append(f"{case['id']}: {message}")
    assert not differ, "\n".join(differ)


# Minimal objects and the fields the API server defaults in them (camelCase paths).
DEFAULTED = [
    (
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-defaults"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/mnt/x"},
            },
        },
        [("spec", "persistentVolumeReclaimPolicy"), ("spec", "volumeMode")],
    ),
    (
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "pvc-defaults", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        [("spec", "volumeMode")],
    ),
    (
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "sc-defaults"},
            "provisioner": "example.com/p",
        },
        [("reclaimPolicy",), ("volumeBindingMode",)],
    ),
    (
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "defaults.example.com"},
            "spec": {},
        },
        [
            ("spec", "attachRequired"),
            ("spec", "podInfoOnMount"),
            ("spec", "storageCapacity"),
            ("spec", "volumeLifecycleModes"),
            ("spec", "fsGroupPolicy"),
        ],
    ),
    (
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "rc-defaults", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c"}}]}},
        },
        [
            ("spec", "devices", "requests", 0, "exactly", "allocationMode"),
            ("spec", "devices", "requests", 0, "exactly", "count"),
        ],
    ),
]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


@pytest.mark.parametrize(("manifest", "fields"), DEFAULTED, ids=[m["kind"] for m, _ in DEFAULTED])
def test_kubesched_defaults_as_the_api_server(
    control_plane: ControlPlane, manifest: dict[str, Any], fields: list[tuple[Any, ...]]
) -> None:
    from kubesched.api import parse_object

    code, served = control_plane.dry_run_create(manifest)
    assert code == 201, served
    ours = parse_object(manifest).to_dict()
    for path in fields:
        assert _at(ours, path) == _at(served, path), path
