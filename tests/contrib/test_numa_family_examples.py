"""The examples of NodeResourceTopologyMatch, SySched, NodeMetadata and PodState give the
outcome their READMEs state, for several seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate.driver import simulate

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
