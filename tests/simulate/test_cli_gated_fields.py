"""``kubesched simulate --feature-gates`` turns the embedded API server's gates too: a field
whose gate is off is dropped with a notice, and placements follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main

PODLEVEL_OFF = "PodLevelResources=false,InPlacePodLevelResourcesVerticalScaling=false"

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "labels": {
            "kubernetes.io/hostname": "n1",
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
        },
    },
    "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "x"}
    if "cpu" in spec:
        container["resources"] = {"requests": {"cpu": spec.pop("cpu")}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], **spec},
    }


# "batch" asks 3 cpu at the pod level (spec.resources) and comes first; "web" then needs 2
# of the node's 4.
OBJECTS = [
    NODE,
    pod("batch", resources={"requests": {"cpu": "3"}}),
    pod("web", cpu="2"),
]


@pytest.mark.parametrize(
    ("gates", "web", "notices"),
    [
        pytest.param(
            [],
            "pending",
            [],
            id="gate-on-pod-level-requests-count",
        ),
        pytest.param(
            ["--feature-gates", PODLEVEL_OFF],
            "scheduled",
            [
                "notice: {path}: Pod default/batch: spec.resources dropped: the PodLevelResources "
                "feature gate is off, and kube-apiserver does not keep the field then"
            ],
            id="gate-off-the-api-server-drops-them",
        ),
    ],
)
def test_pod_level_resources_follow_the_gate(
    tmp_path: Path, capsys, gates: list[str], web: str, notices: list[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(OBJECTS))
    code = main(["simulate", "--no-progress", str(path), "-o", "json", *gates])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err.splitlines() == [n.format(path=path) for n in notices]
    report = json.loads(out)
    results = {p["name"]: p["result"] for p in report["pods"]}
    assert results == {"batch": "scheduled", "web": web}
    assert [(n["source"], n["object"]) for n in report["notices"]] == [
        (str(path), "Pod default/batch")
    ] * len(notices)


def test_comparison_tolerations_are_accepted_only_with_their_gate(tmp_path: Path, capsys) -> None:
    node = {
        **NODE,
        "spec": {"taints": [{"key": "gpu-count", "value": "4", "effect": "NoSchedule"}]},
    }
    toleration = {"key": "gpu-count", "operator": "Gt", "value": "2", "effect": "NoSchedule"}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node, pod("gpu", tolerations=[toleration])]))
    # Off (the default): the API server refuses the toleration, as kube-apiserver v1.36.
    code = main(["simulate", "--no-progress", str(path), "-o", "json"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith(f"error: {path}: document 2 (Pod default/gpu): ")
    assert err.rstrip().endswith(
        'spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", '
        '"Exists", "Lt", "Gt"'
    )
    assert "Traceback" not in err
    # On: accepted, and the taint's 4 is greater than 2.
    gate = ["--feature-gates", "TaintTolerationComparisonOperators=true"]
    code = main(["simulate", "--no-progress", str(path), "-o", "json", *gate])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [p["result"] for p in json.loads(out)["pods"]] == ["scheduled"]
