"""A pending pod the scheduler never tried says why in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.simulate.report import MSG_HELD_BACK
from tests.simulate.test_cli import run_cli

NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n---\n"
)
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"

# id: (pod spec lines, message)
CASES = {
    "scheduling-gates": (
        "  schedulingGates: [{name: example.com/wait}]\n  containers: [{name: c, image: i}]\n",
        "Scheduling is blocked due to non-empty scheduling gates",
    ),
    "missing-resource-claim": (
        "  containers: [{name: c, image: i, resources: {claims: [{name: gpu}]}}]\n"
        "  resourceClaims: [{name: gpu, resourceClaimName: missing}]\n",
        MSG_HELD_BACK,
    ),
    "too-big-is-tried": (
        "  containers: [{name: c, image: i, resources: {requests: {cpu: '64'}}}]\n",
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
}


@pytest.mark.parametrize(("spec", "message"), CASES.values(), ids=CASES.keys())
def test_pending_message(tmp_path: Path, capsys, spec: str, message: str) -> None:
    (tmp_path / "in.yaml").write_text(NODE + POD + spec)
    code, out, err = run_cli(capsys, "simulate", str(tmp_path / "in.yaml"), "-o", "json")
    assert code == 0, err
    (pod,) = json.loads(out)["pods"]
    assert (pod["result"], pod["message"]) == ("pending", message)
