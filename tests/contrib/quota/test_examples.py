"""The quota family's examples (examples/elastic-quota, preemption-toleration, qos-sort) run
under ``simulate`` with the outcome their READMEs state, and the default profile's for
contrast."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate.driver import SimulationRun, simulate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run(example: str, *, with_config: bool = True) -> SimulationRun:
    folder = EXAMPLES / example
    cfg = load_config(folder / "config.yaml") if with_config else None
    return simulate(
        load_manifests([folder / "cluster.yaml", folder / "workload.yaml"]), config=cfg, seed=0
    )


def placements(sim: SimulationRun) -> dict[str, str | None]:
    """Each pod still in the cluster: its node (None: pending), by name."""
    return {p.metadata.name: p.spec.node_name for p in sim.cluster.pods()}


def preempted(sim: SimulationRun) -> list[str]:
    """The pods preempted, by name."""
    return sorted(e.involved_name for e in sim.cluster.events if e.reason == "Preempted")


def test_elastic_quota():
    sim = run("elastic-quota")
    assert preempted(sim) == ["b-1", "b-2", "b-3"]
    assert placements(sim) == {
        "a-1": "node-2",
        "a-2": "node-1",
        "a-3": "node-1",
        "a-4": "node-1",
        "a-5": "node-1",
        "b-4": "node-2",
        "b-5": "node-2",
        "b-6": "node-2",
    }
    a3 = sim.attempts[next(p.metadata.uid for p in sim.cluster.pods() if p.metadata.name == "a-3")]
    assert (
        "Pod team-a/a-3 is rejected in PreFilter because total ElasticQuota used is more than min"
        in (a3[0].message)
    )


def test_elastic_quota_default_profile():
    sim = run("elastic-quota", with_config=False)
    assert preempted(sim) == []
    assert [n for n, node in placements(sim).items() if node is None] == ["a-3", "a-4", "a-5"]


@pytest.mark.parametrize(
    ("with_config", "victims", "pending"),
    [
        pytest.param(True, ["batch-2"], ["web"], id="PreemptionToleration"),
        pytest.param(False, ["batch-1", "batch-2"], [], id="DefaultPreemption"),
    ],
)
def test_preemption_toleration(with_config, victims, pending):
    sim = run("preemption-toleration", with_config=with_config)
    assert preempted(sim) == victims
    assert [n for n, node in placements(sim).items() if node is None] == pending


@pytest.mark.parametrize(
    ("with_config", "winner", "loser"),
    [
        pytest.param(True, "guaranteed", "burstable", id="QOSSort"),
        pytest.param(False, "burstable", "guaranteed", id="PrioritySort"),
    ],
)
def test_qos_sort(with_config, winner, loser):
    got = placements(run("qos-sort", with_config=with_config))
    assert (got[winner], got[loser]) == ("node-1", None)
