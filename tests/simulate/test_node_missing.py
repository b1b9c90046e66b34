"""A pod given bound to a node that does not exist is reported as such, never as scheduled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.simulate import SimulationReport
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
    "bound-to-missing-node": ("gone", "nodeMissing", "gone"),
    "not-bound": (None, "scheduled", "n1"),
}


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
    assert summary.node_missing == (result == "nodeMissing")
    assert json.loads(out)["summary"][0]["nodeMissing"] == (result == "nodeMissing")
    if result == "nodeMissing":
        assert p.attempts == 0 and 'node "gone", which does not exist' in p.message


def test_text_lists_pods_bound_to_missing_nodes(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("lost", "gone") + pod("fine", "n1"))
    code, out, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"))
    assert code == 0, err
    assert "NODE MISSING" in out
    assert "Bound to missing nodes (1)" in out
    assert "default/lost: node gone does not exist; the pod stays Pending" in out


def test_text_has_no_node_missing_column_without_such_pods(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("fine", "n1"))
    code, out, _ = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"))
    assert code == 0
    assert "NODE MISSING" not in out and "missing nodes" not in out


def test_explain_names_the_missing_node(tmp_path: Path, capsys) -> None:
    (tmp_path / "in.yaml").write_text(NODE + pod("lost", "gone"))
    code, out, _ = run_cli(
        capsys, "simulate", str(tmp_path / "in.yaml"), "--explain", "default/lost"
    )
    assert code == 0
    assert "nodeMissing" in out and "missing node: gone" in out
