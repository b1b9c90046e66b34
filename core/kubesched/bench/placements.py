"""Where a workload's pods end up: the record that proves an optimisation changed no decision."""

from __future__ import annotations

from typing import Any

from kubesched.bench.runner import bench_configuration, check_workload, workload_plugin_config
from kubesched.bench.workloads import WORKLOADS, build_workload
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.simulate.driver import DETAIL_SUMMARY, Simulation


def placements(
    workload_name: str,
    nodes: int,
    pods: int,
    *,
    seed: int = 0,
    percentage_of_nodes_to_score: int | None = None,
    registry: PluginRegistry | None = None,
) -> dict[str, str]:
    """Run the workload and map every pod left in the cluster (``namespace/name``) to
    its node (``""`` while pending).

    Pods missing from the map were deleted during the run (preemption's victims, churn).
    The run uses the same configuration and seed as ``kubesched bench``, so equal maps
    before and after a change mean the change moved no pod.
    """
    registry = registry or default_registry()
    check_workload(workload_name, registry)
    config = bench_configuration(
        registry,
        percentage_of_nodes_to_score,
        WORKLOADS[workload_name].plugins,
        plugin_config=workload_plugin_config(workload_name, nodes),
    )
    workload = build_workload(workload_name, nodes, pods, seed)
    sim = Simulation(
        workload.objects(), config=config, registry=registry, seed=seed, detail=DETAIL_SUMMARY
    )
    try:
        run = workload.run(sim)
    finally:
        sim.close()
    return {
        f"{p.metadata.namespace}/{p.metadata.name}": p.spec.node_name or ""
        for p in run.cluster.pods()
    }


RECORDED_CASES: list[dict[str, Any]] = [
    {"workload": "basic", "nodes": 300, "pods": 600, "seed": 3},
    {"workload": "basic", "nodes": 300, "pods": 400, "seed": 4, "percentage": 100},
    {"workload": "pod-anti-affinity", "nodes": 200, "pods": 400, "seed": 5},
    {"workload": "topology-spread", "nodes": 300, "pods": 400, "seed": 6},
    {"workload": "preferred-affinity", "nodes": 300, "pods": 400, "seed": 7},
    {"workload": "unschedulable", "nodes": 300, "pods": 400, "seed": 8},
    {"workload": "preemption", "nodes": 120, "pods": 150, "seed": 9},
    {"workload": "pod-affinity", "nodes": 300, "pods": 400, "seed": 10},
    {"workload": "preferred-anti-affinity", "nodes": 300, "pods": 400, "seed": 11},
    {"workload": "node-affinity", "nodes": 300, "pods": 400, "seed": 12},
    {"workload": "topology-spread-min-domains", "nodes": 200, "pods": 400, "seed": 13},
    {"workload": "churn", "nodes": 150, "pods": 400, "seed": 14},
    {"workload": "gang", "nodes": 100, "pods": 200, "seed": 15},
    {"workload": "stateful", "nodes": 200, "pods": 300, "seed": 16},
    {"workload": "dra", "nodes": 200, "pods": 400, "seed": 17},
    {"workload": "preemption-anti-affinity", "nodes": 120, "pods": 150, "seed": 18},
    {"workload": "load-aware", "nodes": 200, "pods": 300, "seed": 19},
    {"workload": "network-aware", "nodes": 200, "pods": 300, "seed": 20},
    {"workload": "quota", "nodes": 100, "pods": 300, "seed": 19},
    {"workload": "numa", "nodes": 200, "pods": 400, "seed": 19},
]
"""The recorded runs: every workload, above the 100-node floor of percentageOfNodesToScore."""


def case_id(case: dict[str, Any]) -> str:
    """A readable name for a case (test ids, progress lines)."""
    pct = f"-pct{case['percentage']}" if "percentage" in case else ""
    return f"{case['workload']}-{case['nodes']}x{case['pods']}-seed{case['seed']}{pct}"


def record(case: dict[str, Any]) -> dict[str, str]:
    """The placements of one case."""
    return placements(
        case["workload"],
        case["nodes"],
        case["pods"],
        seed=case["seed"],
        percentage_of_nodes_to_score=case.get("percentage"),
    )
