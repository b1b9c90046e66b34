"""Time NodeResourcesFit / BalancedAllocation per pod: filter and score, batch vs per node."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from kubesched import CycleState, NodeBatch, PodInfo
from kubesched.api import Node, Pod
from kubesched.cache import new_snapshot
from kubesched.testing.framework import make_framework
from kubesched_builtin.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched_builtin.noderesources.fit import NodeResourcesFit

GPU = "example.com/gpu"


def _node(i: int, rng: random.Random) -> Node:
    allocatable = {
        "cpu": str(rng.choice([4, 8, 16, 32])),
        "memory": f"{rng.choice([16, 32, 64, 128])}Gi",
        "ephemeral-storage": "100Gi",
        "pods": "110",
    }
    if i % 4 == 0:
        allocatable[GPU] = "8"
    return Node.model_validate(
        {"metadata": {"name": f"node-{i}"}, "status": {"allocatable": allocatable}}
    )


def _pod(name: str, node: str | None, rng: random.Random, gpu: bool = False) -> Pod:
    requests = {
        "cpu": f"{rng.choice([100, 250, 500, 1000])}m",
        "memory": f"{rng.choice([128, 512, 1024])}Mi",
    }
    if gpu:
        requests[GPU] = "1"
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    return Pod.model_validate({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def _plugin(cls: type, args: dict[str, Any] | None = None) -> Any:
    """An instance of ``cls`` with ``args``, made by a Framework (the plugins read feature
    gates through their handle)."""
    name = cls.__name__
    return make_framework(cls, args={name: args or {}}).plugin(name)


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args()

    rng = random.Random(opts.seed)
    nodes = [_node(i, rng) for i in range(opts.nodes)]
    pods = [
        _pod(f"p-{i}-{j}", f"node-{i}", rng, gpu=(i % 4 == 0 and j == 0))
        for i in range(opts.nodes)
        for j in range(opts.pods_per_node)
    ]
    snapshot = new_snapshot(pods, nodes)
    infos = snapshot.list()
    batch = NodeBatch(snapshot.table, range(len(infos)), infos)
    incoming = PodInfo(_pod("incoming", None, rng, gpu=True))

    rtcr = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        }
    }
    fit_variants = {
        "Fit/LeastAllocated": _plugin(NodeResourcesFit),
        "Fit/MostAllocated": _plugin(
            NodeResourcesFit, {"scoringStrategy": {"type": "MostAllocated"}}
        ),
        "Fit/RequestedToCapacityRatio": _plugin(NodeResourcesFit, rtcr),
    }
    balanced = _plugin(NodeResourcesBalancedAllocation)

    rows: list[tuple[str, float, float]] = []
    fit = fit_variants["Fit/LeastAllocated"]

    def filter_per_node() -> None:
        state = CycleState()
        fit.pre_filter(state, incoming)
        for ni in infos:
            fit.filter(state, ni)

    def filter_batch() -> None:
        state = CycleState()
        fit.pre_filter(state, incoming)
        fit.filter_nodes(state, batch)

    rows.append(
        (
            "Fit PreFilter+Filter",
            _median_ms(filter_per_node, opts.repeats),
            _median_ms(filter_batch, opts.repeats),
        )
    )

    for label, pl in [*fit_variants.items(), ("BalancedAllocation", balanced)]:

        def score_per_node(pl: Any = pl) -> None:
            state = CycleState()
            pl.pre_score(state, incoming)
            for ni in infos:
                pl.score(state, incoming, ni)

        def score_batch(pl: Any = pl) -> None:
            state = CycleState()
            pl.pre_score(state, incoming)
            pl.score_nodes(state, incoming, batch)

        rows.append(
            (
                f"{label} PreScore+Score",
                _median_ms(score_per_node, opts.repeats),
                _median_ms(score_batch, opts.repeats),
            )
        )

    print(f"nodes={opts.nodes} pods={len(pods)} repeats={opts.repeats} (median ms per pod)")
    print(f"{'phase':45} {'per-node':>10} {'batch':>10} {'speed-up':>9}")
    for label, slow, fast in rows:
        print(f"{label:45} {slow:10.2f} {fast:10.2f} {slow / fast:8.1f}x")
    print("(these plugins have no NormalizeScore; Score is the whole scoring cost)")


if __name__ == "__main__":
    main()
