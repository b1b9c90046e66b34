"""``--max-pods``: input that would make more pods than the limit is refused before the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import parse_manifests
from kubesched.backend.memory.store import DEFAULT_MAX_PODS
from kubesched.cli.main import main
from kubesched.simulate.driver import Simulation
from kubesched.simulate.limits import expected_pods
from tests.simulate.test_cli import run_cli

NODES = "".join(
    f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n"
    "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n"
    for i in range(3)
)
TEMPLATE = (
    "  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n"
    "    spec: {containers: [{name: c, image: i}]}\n"
)


def workload(kind: str, name: str, spec: str, owner: str = "") -> str:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    meta = f"{{name: {name}{owner}}}"
    body = (
        TEMPLATE
        if kind != "ReplicationController"
        else (
            "  selector: {app: a}\n  template:\n    metadata: {labels: {app: a}}\n"
            "    spec: {containers: [{name: c, image: i}]}\n"
        )
    )
    return f"---\napiVersion: {api}\nkind: {kind}\nmetadata: {meta}\nspec:\n{spec}{body}"


def job(name: str, spec: str) -> str:
    return (
        f"---\napiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n{spec}"
        "  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}\n"
    )


def pod(name: str, owner: str = "") -> str:
    return (
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}{owner}}}\n"
        "spec: {containers: [{name: c, image: i}]}\n"
    )


def owned_by(kind: str, name: str) -> str:
    return (
        f", ownerReferences: [{{apiVersion: apps/v1, kind: {kind}, name: {name}, "
        "uid: u1, controller: true}]"
    )


# id: (manifests, expected (object, pods) pairs)
COUNTS = {
    "deployment": (
        workload("Deployment", "web", "  replicas: 3\n"),
        [("Deployment default/web", 3)],
    ),
    "statefulset-of-none": (
        workload("StatefulSet", "db", "  replicas: 0\n  serviceName: db\n"),
        [("StatefulSet default/db", 0)],
    ),
    "replicationcontroller": (
        workload("ReplicationController", "rc", "  replicas: 2\n"),
        [("ReplicationController default/rc", 2)],
    ),
    "job-completions-over-parallelism": (
        job("j", "  parallelism: 2\n  completions: 5\n"),
        [("Job default/j", 5)],
    ),
    "job-parallelism-only": (
        job("j", "  parallelism: 4\n"),
        [("Job default/j", 4)],
    ),
    "daemonset-one-per-node": (
        NODES + workload("DaemonSet", "agent", ""),
        [("DaemonSet default/agent", 3)],
    ),
    "bare-pod": (pod("p"), [("Pod default/p", 1)]),
    "replicaset-of-a-given-deployment-counts-once": (
        workload("Deployment", "web", "  replicas: 2\n")
        + workload("ReplicaSet", "web-1", "  replicas: 2\n", owned_by("Deployment", "web"))
        + pod("web-1-a", owned_by("ReplicaSet", "web-1")),
        [("Deployment default/web", 2)],
    ),
    "replicaset-whose-owner-is-not-given": (
        workload("ReplicaSet", "web-1", "  replicas: 2\n", owned_by("Deployment", "gone")),
        [("ReplicaSet default/web-1", 2)],
    ),
}


@pytest.mark.parametrize(("manifests", "expected"), COUNTS.values(), ids=COUNTS.keys())
def test_expected_pods(manifests: str, expected: list[tuple[str, int]]) -> None:
    counted = [(what, n) for what, n, _ in expected_pods(parse_manifests(manifests))]
    assert counted == expected


def test_a_huge_workload_is_refused_before_it_is_expanded(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(
        NODES
        + workload("Deployment", "huge", "  replicas: 5000000\n")
        + job("batch", "  parallelism: 10\n")
        + pod("p")
    )
    # Expanded, five million pods would take many minutes: the refusal comes first.
    code, out, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"))
    assert code == 1 and out == ""
    assert err.startswith("error: --max-pods: the input would create 5,000,011 pods, more than ")
    assert f"the limit of {DEFAULT_MAX_PODS:,}" in err
    assert (
        "largest: Deployment default/huge (5,000,000 replicas), Job default/batch "
        "(10 parallelism/completions), Pod default/p (1 pod)"
    ) in err
    assert "raise the limit with --max-pods" in err


# id: (limit, refused)
LIMITS = {"just-below": ("3", True), "exactly": ("4", False), "above": ("10", False)}


@pytest.mark.parametrize(("limit", "refused"), LIMITS.values(), ids=LIMITS.keys())
def test_the_limit_counts_every_pod(tmp_path: Path, capsys, limit: str, refused: bool) -> None:
    (tmp_path / "in.yaml").write_text(
        NODES + workload("Deployment", "web", "  replicas: 3\n") + pod("p")
    )
    code, _, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"), "--max-pods", limit)
    assert code == (1 if refused else 0), err
    assert ("would create 4 pods" in err) is refused


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_the_limit_must_be_a_positive_number(capsys, value: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "x.yaml", "--max-pods", value])
    assert exit_.value.code == 2
    assert "--max-pods" in capsys.readouterr().err


def test_the_cluster_knows_the_limit() -> None:
    sim = Simulation(parse_manifests(NODES), max_pods=7)
    try:
        assert sim.cluster.max_pods == 7
    finally:
        sim.close()
