"""examples/network-aware: the costs come from the netperf ConfigMap; the carts join the
database, the east is filtered for them."""

from __future__ import annotations

from pathlib import Path

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate.driver import simulate

from .conftest import netperf_field

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "network-aware"


def test_outcome():
    run = simulate(
        load_manifests([EXAMPLE / "manifests"]),
        config=load_config(EXAMPLE / "scheduler-config.yaml"),
        seed=0,
    )
    # The NetworkTopology controller turned the measured latencies into NetperfCosts.
    nt = run.cluster.get("NetworkTopology", "default", "nt-default")
    assert netperf_field(nt.spec.weights) == {
        ("us-east-1", "us-west-1"): 19,
        ("us-west-1", "us-east-1"): 19,
        ("Z1", "Z2"): 4,
        ("Z2", "Z1"): 4,
    }
    assert nt.status.node_count == 5
    pods = {p.metadata.name: p for p in run.cluster.pods()}
    carts = [p for name, p in pods.items() if name.startswith("cart-")]
    webs = [p for name, p in pods.items() if name.startswith("web-")]
    assert [p.spec.node_name for p in carts] == ["west-2a"] * 3
    assert sorted(p.spec.node_name for p in webs) == ["east-3a", "west-1b", "west-2a"]
    # Every web pod was tried before any cart pod (TopologicalSort: web 1, cart 2).
    order = list(run.attempts)  # pod uids in the order of their first attempt
    assert max(order.index(p.metadata.uid) for p in webs) < min(
        order.index(p.metadata.uid) for p in carts
    )
    diagnosis = run.attempts[carts[0].metadata.uid][-1].diagnosis
    statuses = {name: s.message() for name, s in diagnosis.node_to_status.items()}
    assert statuses == {
        node: f"Node {node} does not meet several network requirements from Workload "
        "dependencies: Satisfied: 0 Violated: 1"
        for node in ("east-3a", "east-3b")
    }
