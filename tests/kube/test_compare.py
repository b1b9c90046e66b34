"""``kubesched compare`` against the real kube-apiserver and kube-scheduler: placements that
agree or tie, a preemption, FailedScheduling messages, a profile that differs, the refusal
of a cluster with foreign nodes, and nothing left behind."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane

from .conftest import Api, start_kube_scheduler


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: ControlPlane, tmp_path_factory) -> Iterator[Path]:
    """The real kube-scheduler serving the control plane, for this module's tests only
    (the others expect pods to stay pending until their own scheduler runs)."""
    proc = start_kube_scheduler(control_plane, tmp_path_factory.mktemp("kube-scheduler"))
    yield control_plane.kubeconfig
    proc.terminate()
    proc.wait(30)


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    for d in docs:
        d["metadata"].pop("uid", None)
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _compare(capsys, manifests: Path, kubeconfig: Path, *extra: str) -> dict[str, Any]:
    code = main(["compare", str(manifests), "--kubeconfig", str(kubeconfig), "-o", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _nothing_left(api: Api) -> None:
    assert not api.client.request("GET", "/api/v1/nodes")["items"]
    assert not [p for p in api.client.request("GET", "/api/v1/pods")["items"]
                if p["metadata"]["namespace"].startswith("compare-")]  # fmt: skip
    namespaces = api.client.request("GET", "/api/v1/namespaces")["items"]
    assert not [n for n in namespaces if n["metadata"]["name"].startswith("compare-")]


def _node(name: str, cpu: str = "4", memory: str = "16Gi", **labels: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu=cpu, memory=memory, pods=110).labels(labels).manifest()


def _pod(name: str, cpu: str, memory: str = "256Mi", **kw: Any) -> dict[str, Any]:
    b = make_pod(name).req(cpu=cpu, memory=memory)
    if "slot" in kw:
        b = b.node_selector({"slot": kw["slot"]})
    if "priority_class" in kw:
        b = b.priority_class(kw["priority_class"])
    return b.manifest()


def test_placements_preemption_and_messages(kube_scheduler: Path, api: Api, tmp_path: Path,
                                            capsys) -> None:  # fmt: skip
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "compare-high"}, "value": 1000}  # fmt: skip
    tainted = make_node("db").capacity(cpu="4", memory="16Gi", pods=110).taint("dedicated", "db")
    manifests = _write(tmp_path / "m.yaml", [
        _node("n1", slot="a"), _node("n2", slot="b"), tainted.manifest(), high,
        _pod("filler", "3", slot="a"),
        _pod("guard", "3", slot="b", priority_class="compare-high"),
        _pod("urgent", "3", priority_class="compare-high"),   # preempts filler on n1
        _pod("free", "100m"),                                 # n1 and n2 score the same
        _pod("big", "6"),                                     # fits nowhere
    ])  # fmt: skip
    report = _compare(capsys, manifests, kube_scheduler)
    pods = {p["pod"]: p for p in report["pods"]}
    assert [p["pod"] for p in report["pods"]] == [
        f"default/{n}" for n in ("filler", "guard", "urgent", "free", "big")
    ]
    for name, node in (("filler", "n1"), ("guard", "n2"), ("urgent", "n1")):
        assert (pods[f"default/{name}"]["verdict"], pods[f"default/{name}"]["realNode"]) == (
            "agree", node,
        ), pods[f"default/{name}"]  # fmt: skip
    urgent = pods["default/urgent"]
    assert urgent["realVictims"] == urgent["kubeschedVictims"] == ["default/filler"]
    free = pods["default/free"]
    assert free["verdict"] in ("agree", "tie"), free
    if free["verdict"] == "tie":
        assert free["tiedNodes"] == ["n1", "n2"]
    big = pods["default/big"]
    assert big["verdict"] == "agree", big
    assert big["realMessage"].startswith("0/3 nodes are available: 1 node(s) had untolerated")
    assert big["realNode"] is big["kubeschedNode"] is None
    assert report["counts"]["differ"] == report["counts"]["undecided"] == 0
    _nothing_left(api)
    classes = api.client.request("GET", "/apis/scheduling.k8s.io/v1/priorityclasses")["items"]
    assert "compare-high" not in [pc["metadata"]["name"] for pc in classes]


def test_a_profile_change_differs_with_the_scores(kube_scheduler: Path, api: Api,
                                                  tmp_path: Path, capsys) -> None:  # fmt: skip
    # Requests in the nodes' proportions: both nodes are as balanced, and only the
    # NodeResourcesFit strategy tells them apart.
    manifests = _write(tmp_path / "m.yaml", [
        _node("small", cpu="2", memory="16Gi"), _node("large", cpu="8", memory="64Gi"),
        _pod("web", "1", memory="8Gi"),
    ])  # fmt: skip
    config = tmp_path / "most-allocated.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{
            "name": "NodeResourcesFit",
            "args": {"scoringStrategy": {"type": "MostAllocated"}},
        }]}],
    }))  # fmt: skip
    code = main(["compare", str(manifests), "--kubeconfig", str(kube_scheduler),
                 "--config", str(config)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "0 agree, 0 tie, 1 differ, 0 undecided" in out
    assert "default/web: kubesched scored small higher than large" in out
    assert "kubesched's score of small: " in out and "kubesched's score of large: " in out
    _nothing_left(api)


def test_foreign_nodes_are_refused_unless_allowed(kube_scheduler: Path, api: Api,
                                                  tmp_path: Path, capsys) -> None:  # fmt: skip
    api.nodes(1, prefix="theirs-")
    manifests = _write(tmp_path / "m.yaml", [_node("n1"), _pod("web", "1")])
    code = main(["compare", str(manifests), "--kubeconfig", str(kube_scheduler)])
    assert code == 1
    err = capsys.readouterr().err
    assert "has nodes compare did not create (such as theirs-0)" in err
    assert "--allow-foreign-nodes" in err
    report = _compare(capsys, manifests, kube_scheduler, "--allow-foreign-nodes")
    (web,) = report["pods"]
    # theirs-0 and n1 are alike: both schedulers see both.
    assert web["verdict"] in ("agree", "tie"), web
    assert web["realNode"] in ("theirs-0", "n1")
    nodes = api.client.request("GET", "/api/v1/nodes")["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["theirs-0"]  # only compare's went


def test_a_running_controller_manager_is_refused(kube_scheduler: Path, api: Api,
                                                 tmp_path: Path, capsys) -> None:  # fmt: skip
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    api.client.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", body={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
        "spec": {"holderIdentity": "kcm", "renewTime": now},
    })  # fmt: skip
    manifests = _write(tmp_path / "m.yaml", [_node("n1"), _pod("web", "1")])
    code = main(["compare", str(manifests), "--kubeconfig", str(kube_scheduler)])
    assert code == 1
    assert "a kube-controller-manager runs against" in capsys.readouterr().err
    assert not api.client.request("GET", "/api/v1/nodes")["items"]  # nothing created
