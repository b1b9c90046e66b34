"""Time Cache.update_snapshot: a full copy into a fresh Snapshot vs an incremental one."""

from __future__ import annotations

import argparse
import statistics
import time

from kubesched.api import Node, Pod
from kubesched.cache import Cache, Snapshot
from kubesched.clock import FakeClock
from kubesched.framework.types import PodInfo

ZONES = ("zone-a", "zone-b", "zone-c")


def _node(i: int) -> Node:
    return Node.model_validate(
        {
            "metadata": {
                "name": f"node-{i}",
                "labels": {
                    "topology.kubernetes.io/region": "region-1",
                    "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
                    "kubernetes.io/hostname": f"node-{i}",
                },
            },
            "status": {
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "images": [
                    {"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 300_000},
                    {"names": [f"app:{i % 20}"], "sizeBytes": 200_000_000},
                ],
            },
        }
    )


def _pod(node: int, j: int) -> PodInfo:
    return PodInfo(
        Pod.model_validate(
            {
                "metadata": {
                    "name": f"pod-{node}-{j}",
                    "namespace": "bench",
                    "uid": f"uid-{node}-{j}",
                    "labels": {"app": f"app-{j}"},
                },
                "spec": {
                    "nodeName": f"node-{node}",
                    "containers": [
                        {
                            "name": "c",
                            "image": f"app:{node % 20}",
                            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
                        }
                    ],
                },
            }
        )
    )


def build_cache(num_nodes: int, pods_per_node: int) -> Cache:
    """A cache of ``num_nodes`` nodes in three zones with ``pods_per_node`` pods each."""
    cache = Cache(FakeClock(), ttl=30.0)
    for i in range(num_nodes):
        cache.add_node(_node(i))
    for i in range(num_nodes):
        for j in range(pods_per_node):
            cache.add_pod(_pod(i, j))
    return cache


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run both measurements, print them and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000, help="number of nodes (default 5000)")
    parser.add_argument("--pods-per-node", type=int, default=4, help="pods per node (default 4)")
    parser.add_argument("--runs", type=int, default=7, help="runs per measurement (default 7)")
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    cache = build_cache(args.nodes, args.pods_per_node)
    build_s = time.perf_counter() - t0

    full: list[float] = []
    for _ in range(args.runs):
        snapshot = Snapshot()
        t = time.perf_counter()
        cache.update_snapshot(snapshot)
        full.append(time.perf_counter() - t)

    # One snapshot kept up to date; before each timed update, one pod event: an
    # assumed pod (the scheduling cycle's own change), alternately added and forgotten.
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    incremental: list[float] = []
    for r in range(args.runs * 3):
        pod = _pod(r % args.nodes, 1000)
        cache.assume_pod(pod)
        t = time.perf_counter()
        cache.update_snapshot(snapshot)
        incremental.append(time.perf_counter() - t)
        cache.forget_pod(pod)
        cache.update_snapshot(snapshot)

    full_ms, inc_ms = _median_ms(full), _median_ms(incremental)
    print(
        f"nodes={args.nodes} pods={args.nodes * args.pods_per_node} "
        f"(cache built in {build_s:.2f} s)"
    )
    print(f"full update_snapshot (fresh Snapshot), median of {len(full)}: {full_ms:.3f} ms")
    print(
        f"incremental update_snapshot after one pod change, median of {len(incremental)}: "
        f"{inc_ms:.4f} ms"
    )
    print(f"ratio full / incremental: {full_ms / inc_ms:.0f}x")


if __name__ == "__main__":
    main()
