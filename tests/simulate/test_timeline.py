"""The Timeline kind: validation with field paths, and each step's effect on the cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import parse_object
from kubesched.cli.main import main
from kubesched.errors import UserInputError
from kubesched.simulate.driver import Simulation
from kubesched.simulate.timeline import Timeline, TimelineRunner, load_timeline

HEAD = "apiVersion: kubesched.io/v1alpha1\nkind: Timeline\nmetadata: {name: t}\nspec:\n"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "steps.yaml"
    path.write_text(HEAD + body)
    return path


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("  steps:\n  - {at: 1m, action: explode, nodes: [a]}\n", "spec.steps[0]"),
        (
            "  steps:\n  - {at: 1m, action: taint, nodes: [a],\n"
            "     taint: {key: k, efect: NoExecute}}\n",
            "spec.steps[0].taint.efect",
        ),
        (
            "  steps:\n  - {at: 1m, action: taint, nodes: [a],\n"
            "     taint: {key: k, effect: Sometimes}}\n",
            "spec.steps[0].taint.effect",
        ),
        ("  steps:\n  - {at: soon, action: cordon, nodes: [a]}\n", "spec.steps[0].at"),
        ("  steps:\n  - {at: -5, action: cordon, nodes: [a]}\n", "spec.steps[0].at"),
        ("  steps:\n  - {at: 5, action: cordon}\n", "give nodes or nodeSelector"),
        (
            "  steps:\n  - {at: 5, action: setPodUsage, pods: [p], usage: {memory: lots}}\n",
            "spec.steps[0].usage.memory",
        ),
        (
            "  steps:\n  - {at: 5, action: scale, kind: Deployment, name: w, replicas: -1}\n",
            "spec.steps[0].replicas",
        ),
        ("  runFor: 1m\n  steps:\n  - {at: 5m, action: cordon, nodes: [a]}\n", "runFor"),
        ("  steps: []\n", "spec.steps"),
        (
            "  steps:\n  - {at: 5, action: create, file: missing.yaml}\n",
            "spec.steps[0].file: no such file",
        ),
    ],
    ids=[
        "unknown-action",
        "misspelt-key",
        "bad-effect",
        "bad-time",
        "negative-time",
        "no-target",
        "bad-quantity",
        "negative-replicas",
        "run-for-too-short",
        "no-steps",
        "missing-file",
    ],
)
def test_bad_timeline_names_the_field(tmp_path: Path, body: str, problem: str, capsys) -> None:
    path = write(tmp_path, body)
    with pytest.raises(UserInputError) as err:
        load_timeline(path)
    assert problem in str(err.value) and str(path) in str(err.value)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n")
    assert main(["simulate", str(cluster), "--timeline", str(path)]) != 0
    assert problem in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(90, 90.0), ("90s", 90.0), ("1m30s", 90.0), ("2h", 7200.0), (0.5, 0.5)],
    ids=["int", "seconds", "minutes-seconds", "hours", "fraction"],
)
def test_step_times(value: object, seconds: float) -> None:
    t = Timeline.model_validate(
        {
            "apiVersion": "kubesched.io/v1alpha1",
            "kind": "Timeline",
            "spec": {"steps": [{"at": value, "action": "cordon", "nodes": ["a"]}]},
        }
    )
    assert t.spec.steps[0].at == seconds


NODES = [
    {
        "kind": "Node",
        "metadata": {"name": n, "labels": {"zone": z}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
    }
    for n, z in (("a", "z1"), ("b", "z2"))
]


def play(steps: list[dict], extra: list[dict] = (), tmp_path: Path | None = None):
    t = Timeline.model_validate(
        {"apiVersion": "kubesched.io/v1alpha1", "kind": "Timeline", "spec": {"steps": steps}}
    )
    runner = TimelineRunner(t, tmp_path or Path("."))
    sim = Simulation([parse_object(d) for d in (*NODES, *extra)], timeline=runner)
    return sim.run(), runner


WEB = {
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}
                ]
            },
        },
    },
}


def test_node_steps_change_the_nodes() -> None:
    run, runner = play(
        [
            {
                "at": 10,
                "action": "taint",
                "nodeSelector": {"zone": "z1"},
                "taint": {"key": "k", "value": "v", "effect": "NoSchedule"},
            },
            {"at": 20, "action": "cordon", "nodes": ["b"]},
            {
                "at": 30,
                "action": "setNodeUsage",
                "nodes": ["a"],
                "usage": {"memory": "1Gi", "pidsCapacity": 1000},
            },
            {"at": 40, "action": "untaint", "nodes": ["a"], "key": "k"},
            {"at": 50, "action": "uncordon", "nodes": ["b", "nope"]},
        ]
    )
    a, b = run.cluster.get("Node", None, "a"), run.cluster.get("Node", None, "b")
    assert a.spec.taints == [] and not b.spec.unschedulable
    assert a.metadata.annotations == {
        "usage.kubesched.io/memory": "1Gi",
        "capacity.kubesched.io/pids": "1000",
    }
    assert [o.targets for o in runner.outcomes][:2] == [["a"], ["b"]]
    assert runner.outcomes[-1].errors == ['nodes "nope" not found']


def test_scale_create_delete_and_delete_node(tmp_path: Path) -> None:
    (tmp_path / "extra.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: c}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
    )
    run, _ = play(
        [
            {"at": 10, "action": "scale", "kind": "Deployment", "name": "web", "replicas": 5},
            {"at": 20, "action": "create", "file": "extra.yaml"},
            {"at": 30, "action": "deleteNode", "nodes": ["a"]},
            {"at": 40, "action": "delete", "file": "extra.yaml"},
        ],
        [WEB],
        tmp_path,
    )
    assert run.cluster.try_get("Node", None, "a") is None
    assert run.cluster.try_get("Node", None, "c") is None
    pods = run.cluster.pods()
    assert len(pods) == 5 and {p.spec.node_name for p in pods} == {"b"}
    gc = [e for e in run.cluster.evictions if e.by == "pod-gc"]
    assert gc and all(e.time == 70 for e in gc)  # 40 s after node a went
