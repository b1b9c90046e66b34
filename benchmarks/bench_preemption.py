"""Time DefaultPreemption's PostFilter per pod on full clusters (dry runs, selection, API calls)."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from kubesched import PREEMPTION_EXPLANATION_KEY, PodInfo, Status
from kubesched.api import Node, Pod, PodDisruptionBudget
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework
from kubesched_builtin.defaultpreemption import DefaultPreemption
from kubesched_builtin.interpodaffinity import InterPodAffinity
from kubesched_builtin.nodeaffinity import NodeAffinity
from kubesched_builtin.nodename import NodeName
from kubesched_builtin.nodeports import NodePorts
from kubesched_builtin.noderesources.fit import NodeResourcesFit
from kubesched_builtin.nodeunschedulable import NodeUnschedulable
from kubesched_builtin.podtopologyspread import PodTopologySpread
from kubesched_builtin.queuesort import PrioritySort
from kubesched_builtin.tainttoleration import TaintToleration

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
PODS_PER_NODE = 8
FILTER_PLUGINS = (
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    PodTopologySpread,
    InterPodAffinity,
)


class NullClient:
    """Accepts every API call (the cost measured is the scheduler's, not the cluster's)."""

    def __init__(self) -> None:
        self.deleted = 0

    def delete_pod(self, pod: Any, grace_period_seconds: float | None = None) -> None:
        self.deleted += 1

    def update_pod_status(self, pod: Any, **_: Any) -> None:
        pass


def _node(i: int) -> Node:
    return Node.model_validate(
        {
            "metadata": {
                "name": f"node-{i}",
                "labels": {HOST: f"node-{i}", ZONE: f"zone-{i % 8}"},
            },
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }
    )


def _pod(name: str, prio: int, node: str | None, app: str, start: int = 0, cpu: str = "1") -> Pod:
    spec: dict[str, Any] = {
        "priority": prio,
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}],
    }
    status: dict[str, Any] = {}
    if node:
        spec["nodeName"] = node
        status = {
            "phase": "Running",
            "startTime": f"2026-01-01T00:{start // 60:02d}:{start % 60:02d}Z",
        }
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": app}},
            "spec": spec,
            "status": status,
        }
    )


def _cluster(n: int, rng: random.Random) -> tuple[list[Node], list[Pod]]:
    """Every node full (8 pods of 1 cpu on 8 cpu), priorities 0..90, ten apps."""
    nodes = [_node(i) for i in range(n)]
    pods = [
        _pod(
            f"p-{i}-{j}",
            rng.randrange(10) * 10,
            f"node-{i}",
            f"app-{rng.randrange(10)}",
            rng.randrange(3600),
        )
        for i in range(n)
        for j in range(PODS_PER_NODE)
    ]
    return nodes, pods


def bench(n_nodes: int, repeats: int, with_pdbs: bool) -> dict[str, Any]:
    rng = random.Random(42)
    nodes, pods = _cluster(n_nodes, rng)
    pdbs = (
        [
            PodDisruptionBudget.model_validate(
                {
                    "metadata": {"name": f"pdb-{a}", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": f"app-{a}"}}},
                    "status": {"disruptionsAllowed": 1},
                }
            )
            for a in range(5)
        ]
        if with_pdbs
        else []
    )
    client = NullClient()
    fw = make_framework(
        PrioritySort,
        *FILTER_PLUGINS,
        DefaultPreemption,
        client=client,
        lister=StaticLister(pdbs),
        rng=random.Random(1),
    )
    snapshot = new_snapshot(pods, nodes)
    fw.set_snapshot(snapshot)
    infos = snapshot.list()
    preemptor = PodInfo(_pod("preemptor", 1000, None, "web", cpu="2"))
    statuses = {ni.name: Status.unschedulable("Insufficient cpu") for ni in infos}
    times = []
    explanation = None
    for _ in range(repeats):
        state = fw.new_cycle_state()
        fw.run_pre_filter_plugins(state, preemptor, infos)
        start = time.perf_counter()
        result, status = fw.run_post_filter_plugins(state, preemptor, statuses)
        times.append(time.perf_counter() - start)
        assert result is not None, status
        explanation = state.read(PREEMPTION_EXPLANATION_KEY)
    return {
        "nodes": n_nodes,
        "pdbs": len(pdbs),
        "median_ms": statistics.median(times) * 1000,
        "per_dry_run_us": statistics.median(times) / explanation.nodes_tried * 1e6,
        "nodes_tried": explanation.nodes_tried,
        "candidates": len(explanation.candidates),
        "victims": len(explanation.victims),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'nodes':>6} {'pdbs':>4} {'PostFilter ms/pod':>18} {'µs/dry run':>11} "
        f"{'dry runs':>9} {'candidates':>10} {'victims':>7}"
    )
    for n in args.nodes:
        for with_pdbs in (False, True):
            r = bench(n, args.repeats, with_pdbs)
            print(
                f"{r['nodes']:>6} {r['pdbs']:>4} {r['median_ms']:>18.1f} "
                f"{r['per_dry_run_us']:>11.0f} {r['nodes_tried']:>9} {r['candidates']:>10} "
                f"{r['victims']:>7}"
            )


if __name__ == "__main__":
    main()
