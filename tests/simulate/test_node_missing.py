"""A pod given bound to a node that does not exist is never reported as scheduled: pod GC
deletes it once its node's quarantine is over, and until then it is reported as bound to
a missing node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.api import parse_manifests
from kubesched.backend.memory.nodelifecycle import POD_GC_CHECK_PERIOD, POD_GC_QUARANTINE
from kubesched.backend.protocol import EventType
from kubesched.simulate import Simulation, SimulationReport
from tests.simulate.test_cli import run_cli

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def pod(name: str, node: str | None) -> str:
    bound = f"\n  nodeName: {node}" if node else ""
    return (
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:{bound}\n"
        "  containers: [{name: c, image: busybox}]\n"
    )


CASES = {
    "bound-to-existing-node": ("n1", "scheduled", "n1"),
    "bound-to-missing-node": ("gone", "deleted", "gone"),
    "not-bound": (None, "scheduled", "n1"),
}

SHORT_RUN = """\
apiVersion: kubesched.io/v1alpha1
kind: Timeline
metadata: {name: short}
spec:
  runFor: 30s
  steps:
  - {at: 0, action: cordon, nodes: [n1]}
"""
"""A run that ends before pod GC's first pass after the 40 s quarantine."""


@pytest.mark.parametrize(("node", "result", "ends_on"), CASES.values(), ids=CASES.keys())
def test_result_of_a_pod_given_bound(
    tmp_path: Path, capsys, node: str | None, result: str, ends_on: str
) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("p", node))
    code, out, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"), "-o", "json")
    assert code == 0, err
    report = SimulationReport.model_validate(json.loads(out))
    p = report.pod("default/p")
    assert (p.result, p.node) == (result, ends_on)
    summary = report.summary[0]
    assert summary.scheduled == (result == "scheduled")
    assert summary.deleted == (result == "deleted")
    assert summary.node_missing == 0
    assert json.loads(out)["summary"][0]["nodeMissing"] == 0
    if result == "deleted":
        assert p.attempts == 0
        assert p.message.startswith('deleted by PodGC: spec.nodeName names node "gone", which')
        assert "PodGC: node no longer exists" in p.message


def test_pod_gc_marks_the_pod_before_deleting_it() -> None:
    sim = Simulation(parse_manifests(NODE + pod("lost", "gone")), seed=1)
    gone = []
    sim.cluster.watch("Pod", sim.cluster.resource_version, lambda ev: gone.append(ev))
    run = sim.run()
    (deleted,) = [ev for ev in gone if ev.type is EventType.DELETED]
    last = deleted.object
    assert last.status.phase == "Failed"
    (cond,) = [c for c in last.status.conditions if c.type == "DisruptionTarget"]
    assert (cond.reason, cond.message) == ("DeletionByPodGC", "PodGC: node no longer exists")
    assert POD_GC_QUARANTINE <= run.virtual_time <= POD_GC_QUARANTINE + POD_GC_CHECK_PERIOD
    assert sim.cluster.try_get("Pod", "default", "lost") is None


def test_a_run_ending_within_the_quarantine_leaves_the_pod_node_missing(
    tmp_path: Path, capsys
) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("p", "gone"))
    (tmp_path / "steps.yaml").write_text(SHORT_RUN)
    code, out, err = run_cli(
        capsys,
        "simulate",
        str(tmp_path / "in.yaml"),
        "--timeline",
        str(tmp_path / "steps.yaml"),
        "-o",
        "json",
    )
    assert code == 0, err
    report = SimulationReport.model_validate(json.loads(out))
    p = report.pod("default/p")
    assert (p.result, p.node) == ("nodeMissing", "gone")
    assert report.summary[0].node_missing == 1
    assert json.loads(out)["summary"][0]["nodeMissing"] == 1
    assert p.attempts == 0 and 'node "gone", which does not exist' in p.message
    assert "until pod GC deletes it" in p.message


def test_text_lists_pods_bound_to_missing_nodes(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("lost", "gone") + pod("fine", "n1"))
    (tmp_path / "steps.yaml").write_text(SHORT_RUN)
    code, out, err = run_cli(
        capsys, "simulate", str(tmp_path / "in.yaml"), "--timeline", str(tmp_path / "steps.yaml")
    )
    assert code == 0, err
    assert "NODE MISSING" in out
    assert "Bound to missing nodes (1)" in out
    assert "default/lost: node gone does not exist; the pod stays Pending until pod GC" in out


@pytest.mark.parametrize("lost", [False, True], ids=["none-given", "deleted-by-pod-gc"])
def test_text_has_no_node_missing_column_without_such_pods(
    tmp_path: Path, capsys, lost: bool
) -> None:
    (tmp_path / "in.yaml").write_text(
        NODE + pod("fine", "n1") + (pod("lost", "gone") if lost else "")
    )
    code, out, _ = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"))
    assert code == 0
    assert "NODE MISSING" not in out and "missing nodes" not in out


def test_explain_names_the_missing_node(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("lost", "gone"))
    (tmp_path / "steps.yaml").write_text(SHORT_RUN)
    code, out, _ = run_cli(
        capsys,
        "simulate",
        str(tmp_path / "in.yaml"),
        "--timeline",
        str(tmp_path / "steps.yaml"),
        "--explain",
        "default/lost",
    )
    assert code == 0
    assert "nodeMissing" in out and "missing node: gone" in out
