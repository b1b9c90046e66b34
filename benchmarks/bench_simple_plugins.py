"""Micro-benchmark of the simple built-in plugins: vectorised vs per-node Filter and Score.

For each plugin, the per-pod cost of PreFilter + Filter over all nodes and of
PreScore + Score + NormalizeScore, through the real runtime, once with the plugin's
``filter_nodes`` / ``score_nodes`` and once with a copy of the plugin that has only the
per-node hooks. Columns derived from Node objects (label codes, taint groups, image
columns) are cached per snapshot table, so they are warmed up before timing, as in a
scheduler that schedules many pods against one cluster.

    python benchmarks/bench_simple_plugins.py --nodes 5000 --repeats 7
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from kubesched import NodeBatch, PodInfo
from kubesched.api import Node, Pod
from kubesched.cache import new_snapshot
from kubesched.testing import make_framework, make_node, make_pod
from kubesched_builtin.imagelocality import ImageLocality
from kubesched_builtin.nodeaffinity import NodeAffinity
from kubesched_builtin.nodename import NodeName
from kubesched_builtin.nodeports import NodePorts
from kubesched_builtin.nodeunschedulable import NodeUnschedulable
from kubesched_builtin.tainttoleration import TaintToleration

MB = 1024 * 1024
ZONES = ["zone-a", "zone-b", "zone-c"]
TIERS = ["a", "b", "c", "d"]


def build_nodes(n: int, rng: random.Random) -> list[Node]:
    """Nodes with zone/tier/gen labels, a few taints, some cordoned, some images."""
    nodes = []
    for i in range(n):
        b = (
            make_node(f"node-{i}")
            .zone(ZONES[i % 3])
            .labels(tier=rng.choice(TIERS), gen=str(rng.randint(1, 5)))
            .capacity(cpu="32", memory="128Gi")
        )
        r = rng.random()
        if r < 0.10:
            b.taint("dedicated", "gpu", "NoSchedule")
        elif r < 0.20:
            b.taint("spot", "true", "PreferNoSchedule")
        elif r < 0.22:
            b.taint("node.kubernetes.io/not-ready", "", "NoExecute")
        if rng.random() < 0.02:
            b.unschedulable()
        m = b.manifest()
        m["status"]["images"] = [
            {"names": [f"registry.example/app{j}:latest"], "sizeBytes": rng.randint(20, 900) * MB}
            for j in rng.sample(range(20), 4)
        ]
        nodes.append(Node.model_validate(m))
    return nodes


def busy_pod() -> Pod:
    """A pod that gives every plugin something to do."""
    return (
        make_pod("web-0")
        .req(cpu="500m", memory="1Gi")
        .node_selector({"topology.kubernetes.io/zone": "zone-a"})
        .node_affinity_term(
            [
                {"key": "tier", "operator": "In", "values": ["a", "b", "c"]},
                {"key": "gen", "operator": "Gt", "values": ["1"]},
            ]
        )
        .preferred_node_affinity(30, "tier", ["a"])
        .preferred_node_affinity(70, "gen", ["4", "5"])
        .toleration("spot", "true", "PreferNoSchedule")
        .toleration("dedicated", "gpu", "NoSchedule")
        .image("registry.example/app3")
        .image("registry.example/app7:latest")
        .host_port(8080)
        .obj()
    )


def per_node_only(cls: type) -> type:
    """A copy of ``cls`` without its vectorised hooks (the runtime then calls the
    per-node ``filter`` / ``score`` on each node)."""
    return type(cls.__name__ + "PerNode", (cls,), {"filter_nodes": None, "score_nodes": None})


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm up: derived columns, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(cls: type, snapshot: Any, pod: Pod, repeats: int) -> tuple[float | None, float | None]:
    """(filter ms, score ms) per pod over all nodes, or None where the plugin has none."""
    fw = make_framework(cls)
    fw.set_snapshot(snapshot)
    infos = snapshot.list()
    pi = PodInfo(pod)
    batch = NodeBatch(snapshot.table, range(len(infos)), infos)

    def run_filter() -> None:
        state = fw.new_cycle_state()
        fw.run_pre_filter_plugins(state, pi, infos)
        fw.run_filter_batch(state, pi, batch)

    def run_score() -> None:
        state = fw.new_cycle_state()
        fw.run_pre_score_plugins(state, pi, infos)
        fw.run_score_plugins(state, pi, batch)

    f = median_ms(run_filter, repeats) if fw.points["Filter"] else None
    s = median_ms(run_score, repeats) if fw.points["Score"] else None
    return f, s


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:8.3f}"


def ratio(slow: float | None, fast: float | None) -> str:
    if slow is None or fast is None or fast == 0:
        return "-"
    return f"{slow / fast:6.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="number of nodes (default 5000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per case (median)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    snapshot = new_snapshot([], build_nodes(args.nodes, rng))
    pod = busy_pod()
    named = make_pod("pinned").node(f"node-{args.nodes // 2}").obj()
    cases = [
        (NodeUnschedulable, pod),
        (NodeName, named),
        (NodePorts, pod),
        (TaintToleration, pod),
        (NodeAffinity, pod),
        (ImageLocality, pod),
    ]
    print(f"{args.nodes} nodes, median of {args.repeats}; milliseconds per pod over all nodes")
    print(
        f"{'plugin':<18} {'filter vec':>10} {'per-node':>10} {'speedup':>8}"
        f" {'score vec':>10} {'per-node':>10} {'speedup':>8}"
    )
    for cls, p in cases:
        fv, sv = measure(cls, snapshot, p, args.repeats)
        has_vec = any(getattr(cls, h, None) is not None for h in ("filter_nodes", "score_nodes"))
        fs, ss = measure(per_node_only(cls), snapshot, p, args.repeats) if has_vec else (fv, sv)
        if not has_vec:
            fv = sv = None
        print(
            f"{cls.__name__:<18} {fmt(fv):>10} {fmt(fs):>10} {ratio(fs, fv):>8}"
            f" {fmt(sv):>10} {fmt(ss):>10} {ratio(ss, sv):>8}"
        )


if __name__ == "__main__":
    main()
