"""``--from-cluster``: a read-only copy of a real API server's cluster, simulated and saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import Api

READ_ONLY_RULES = [
    {
        "apiGroups": [""],
        "resources": ["nodes", "pods", "namespaces", "services", "replicationcontrollers"],
        "verbs": ["get", "list"],
    },
    {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": ["get", "list"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list"]},
    {
        "apiGroups": ["scheduling.k8s.io"],
        "resources": ["priorityclasses"],
        "verbs": ["get", "list"],
    },
    {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["get", "list"]},
]
"""What ``--from-cluster`` needs: get and list, nothing else (no watch, no write)."""


def _grant(api: Api, user: str, rules: list[dict[str, Any]]) -> None:
    name = f"kubesched-test-{user}"
    api.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")
    api.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}")
    api.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        }
    )
    api.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }
    )


@pytest.fixture(scope="module")
def reader(control_plane: ControlPlane) -> Path:
    """A kubeconfig of a user with no permission at all (each test grants what it needs)."""
    return control_plane.add_user("snapshot-reader")


def _live_cluster(api: Api) -> None:
    """Two nodes, one nearly full; a ReplicaSet and its two bound pods; a finished pod."""
    api.create_many(
        [
            make_node("big").capacity(cpu="8", memory="16Gi", pods=110).zone("zone-a").manifest(),
            make_node("small").capacity(cpu="2", memory="4Gi", pods=110).zone("zone-b").manifest(),
        ]
    )
    rs = api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )
    for i, node in enumerate(("big", "small")):
        pod = make_pod(f"web-{i}").labels(app="web").req(cpu="1500m").node(node).manifest()
        pod["metadata"].pop("uid")
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs["metadata"]["uid"],
                "controller": True,
            }
        ]
        api.create(pod)
    done = make_pod("done").req(cpu="100m").node("small").manifest()
    done["metadata"].pop("uid")
    created = api.create(done)
    created["status"] = {"phase": "Succeeded"}
    api.client.request("PUT", "/api/v1/namespaces/default/pods/done/status", body=created)


def _workload(tmp_path: Path) -> Path:
    path = tmp_path / "batch.yaml"
    pods = [make_pod(f"batch-{i}").req(cpu="1", memory="1Gi").manifest() for i in range(3)]
    for p in pods:
        p["metadata"].pop("uid")
    path.write_text(yaml.safe_dump_all(pods))
    return path


def _placements(out: str) -> dict[str, str | None]:
    return {f"{p['namespace']}/{p['name']}": p.get("node") for p in json.loads(out)["pods"]}


def _state(api: Api) -> list[tuple[str, str]]:
    """Every pod and node with its resourceVersion: a write would change one."""
    pods = api.client.request("GET", "/api/v1/pods")["items"]
    nodes = api.client.request("GET", "/api/v1/nodes")["items"]
    return sorted((o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in pods + nodes)


def test_simulate_from_cluster_reads_only_and_saves_a_replayable_snapshot(
    api: Api, reader: Path, tmp_path: Path, capsys
) -> None:
    _live_cluster(api)
    _grant(api, "snapshot-reader", READ_ONLY_RULES)
    before = _state(api)
    snapshot = tmp_path / "snapshot.yaml"
    workload = _workload(tmp_path)

    code = main(
        [
            "simulate",
            "--from-cluster",
            "--kubeconfig",
            str(reader),
            str(workload),
            "-o",
            "json",
            "--save-snapshot",
            str(snapshot),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    live = _placements(out)
    # The running pods stay where they run; the finished one is not read.
    assert live["default/web-0"] == "big" and live["default/web-1"] == "small"
    assert "default/done" not in live
    # "small" has 0.5 cpu left: all three 1-cpu pods go to "big" (6.5 cpu left).
    assert [live[f"default/batch-{i}"] for i in range(3)] == ["big"] * 3
    # Nothing was written (the user could not have, and did not try: the run succeeded).
    assert _state(api) == before

    saved = list(yaml.safe_load_all(snapshot.read_text()))
    assert sorted(d["kind"] for d in saved if d["kind"] in ("Node", "Pod", "ReplicaSet")) == [
        "Node",
        "Node",
        "Pod",
        "Pod",
        "ReplicaSet",
    ]
    assert all("managedFields" not in d["metadata"] for d in saved)
    # The saved snapshot replays the same decisions offline.
    code = main(["simulate", str(snapshot), str(workload), "-o", "json"])
    replay, err = capsys.readouterr()
    assert code == 0, err
    assert _placements(replay) == live


def test_capacity_fit_from_cluster(api: Api, reader: Path, tmp_path: Path, capsys) -> None:
    _live_cluster(api)
    _grant(api, "snapshot-reader", READ_ONLY_RULES)
    probe = tmp_path / "probe.yaml"
    manifest = make_pod("probe").req(cpu="1", memory="1Gi").manifest()
    manifest["metadata"].pop("uid")
    probe.write_text(yaml.safe_dump(manifest))
    code = main(
        ["capacity", "fit", str(probe), "--from-cluster", "--kubeconfig", str(reader), "-o", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["count"] == 6  # 6.5 cpu left on "big", 0.5 on "small"
    assert report["nodes"] == [{"node": "big", "zone": "zone-a", "count": 6}]


def test_capacity_remove_from_cluster(api: Api, reader: Path, capsys) -> None:
    _live_cluster(api)
    _grant(api, "snapshot-reader", READ_ONLY_RULES)
    before = _state(api)
    code = main(["capacity", "remove", "--from-cluster", "--kubeconfig", str(reader), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["removable"] == []
    kept = {k["name"]: k for k in report["kept"]}
    # small: 1.5 of 2 cpu (the finished pod does not count); big: 1.5 of 8, but its
    # replica needs 1.5 cpu and small has 0.5 left.
    assert (kept["small"]["reason"], kept["small"]["utilization"]) == ("NotUnderutilized", 0.75)
    assert kept["big"]["reason"] == "NoPlaceToMovePods"
    assert kept["big"]["blockingPod"] == "default/web-0"
    assert kept["big"]["message"].endswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert _state(api) == before  # nothing written


def test_a_kind_the_user_may_not_list_is_a_one_line_error(
    api: Api, reader: Path, tmp_path: Path, capsys
) -> None:
    rules = [r for r in READ_ONLY_RULES if r["apiGroups"] != ["policy"]]
    _grant(api, "snapshot-reader", rules)
    code = main(["simulate", "--from-cluster", "--kubeconfig", str(reader), "-o", "json"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("error: cannot list PodDisruptionBudget objects: ")
    assert "forbidden" in err and err.count("\n") == 1
