"""The examples of NodeResourceTopologyMatch (placement and NUMA-aware preemption), SySched,
NodeMetadata and PodState give the outcome their READMEs state, for several seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate import Simulation, TimelineRunner, load_timeline
from kubesched.simulate.driver import simulate
from kubesched_contrib.noderesourcetopology import NodeResourceTopologyMatch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(example: str, seed: int, with_config: bool = True):
    folder = EXAMPLES / example
    config = load_config(folder / "scheduler-config.yaml") if with_config else None
    result = simulate(load_manifests([folder / "manifests"]), config=config, seed=seed)
    return {p.metadata.name: p for p in result.cluster.pods()}, result


def diagnosis(result, pod) -> str:
    return result.attempts[pod.metadata.uid][-1].message


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_numa_topology(seed):
    pods, result = run("numa-topology", seed)
    assert pods["db"].spec.node_name == "worker-wide"
    assert pods["web"].spec.node_name == "worker-split"
    assert pods["trainer"].spec.node_name is None
    assert diagnosis(result, pods["trainer"]).startswith(
        "0/3 nodes are available: 1 cannot align container, 2 Insufficient example.com/gpu."
    )


def run_preemption(config: str, seed: int, with_agent: bool):
    """The NUMA-aware preemption example: its cluster and workload, the given profile, and
    (``with_agent``) the timeline in which worker-b's agent reports again."""
    folder = EXAMPLES / "numa-topology" / "preemption"
    timeline = TimelineRunner(*load_timeline(folder / "timeline.yaml")) if with_agent else None
    sim = Simulation(
        load_manifests([folder / "cluster.yaml", folder / "workload.yaml"]),
        config=load_config(EXAMPLES / "numa-topology" / config),
        seed=seed,
        timeline=timeline,
    )
    try:
        result = sim.run()
    finally:
        sim.close()
    preempted = sorted(e.involved_name for e in result.cluster.events if e.reason == "Preempted")
    placed = {p.metadata.name: p.spec.node_name for p in result.cluster.pods()}
    return preempted, placed


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize(
    ("config", "with_agent", "victims", "inference"),
    [
        ("preemption/scheduler-config.yaml", True, ["etl"], "worker-b"),
        ("scheduler-config.yaml", False, ["batch"], "worker-a"),
        ("preemption/scheduler-config.yaml", False, ["analytics", "batch", "etl"], "worker-a"),
    ],
    ids=["numa-aware", "plain", "numa-aware-without-agent-report"],
)
def test_numa_aware_preemption(seed, config, with_agent, victims, inference):
    preempted, placed = run_preemption(config, seed, with_agent)
    assert preempted == victims
    assert placed["inference"] == inference


@pytest.mark.parametrize("with_agent", [True, False], ids=["with-agent", "without-agent"])
def test_numa_aware_preemption_node_by_node(monkeypatch, with_agent):
    # Without the plugin's description of the node copies, the dry run clones the
    # CycleState node by node: the same victims as the batched dry run.
    batched = run_preemption("preemption/scheduler-config.yaml", 0, with_agent)

    def refuse(*args, **kwargs):
        raise NotImplementedError

    monkeypatch.setattr(NodeResourceTopologyMatch, "pre_filter_copies", refuse)
    assert run_preemption("preemption/scheduler-config.yaml", 0, with_agent) == batched


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_sysched(seed):
    pods, _ = run("sysched", seed)
    assert {n: p.spec.node_name for n, p in pods.items()} == {
        "web-0": "node-a",
        "web-1": "node-a",
        "batch-0": "node-b",
        "batch-1": "node-b",
    }


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_nodemetadata(seed):
    pods, _ = run("nodemetadata", seed)
    assert {p.spec.node_name for p in pods.values()} == {"node-ondemand"}
    assert len(pods) == 3
    spread, _ = run("nodemetadata", seed, with_config=False)
    assert len({p.spec.node_name for p in spread.values()}) == 3


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_podstate(seed):
    pods, _ = run("podstate", seed)
    assert pods["worker"].spec.node_name == "node-b"
    without, _ = run("podstate", seed, with_config=False)
    assert without["worker"].spec.node_name == "node-a"
