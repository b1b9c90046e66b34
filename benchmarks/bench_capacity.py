"""Time ``capacity fit``, ``capacity nodes`` and ``capacity remove`` on the cluster of
``kubesched bench``.

    python benchmarks/bench_capacity.py [--nodes 5000] [--pods 5000] [--replicas 1000]
                                        [--pending] [--only fit|nodes|remove] [--out DIR]

The cluster is the bench's: ``--nodes`` of upstream's default node (4 cpu, 32Gi, 110
pods, three zones) and ``--pods`` of its default pod (100m cpu, 500Mi), running
round-robin on the nodes (as captured from a live cluster), or with ``--pending`` left
pending, so that ``capacity`` first schedules them itself. The two questions:

- ``fit``: how many more of a 2-cpu pod fit (one per node: 3.9 cpu are left on each);
- ``nodes``: how many nodes of a new pool (label ``pool: batch``, the default node's
  shape) a Deployment of ``--replicas`` 1-cpu pods selecting that pool needs (four per
  node: ``replicas / 4`` nodes, the lower bound);
- ``remove`` (only with ``--only remove``, as it drains every node in turn): which nodes
  can go when the ``--pods`` default pods belong to a Deployment (pending: the
  Deployment's pods are scheduled first, so they spread over the nodes).

Each question runs through the Python API (``capacity_fit`` / ``capacity_nodes``) and
prints one JSON line: the answer's key figures, the CPU seconds (``time.process_time``)
and the wall seconds. Run it with another checkout's interpreter (e.g. its ``.venv``) to
time that version on the same objects. ``--out DIR`` also writes the manifests, so the
same questions can be asked on the command line::

    kubesched capacity fit DIR/probe.yaml DIR/cluster
    kubesched capacity nodes DIR/workload.yaml DIR/cluster --node-template DIR/pool.yaml
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.manifests import parse_object
from kubesched.bench.workloads import node_manifest, pod_manifest
from kubesched.capacity.common import pod_template
from kubesched.capacity.fit import capacity_fit
from kubesched.capacity.nodes import capacity_nodes, node_shapes
from kubesched.capacity.remove import capacity_remove

POOL_LABEL = "pool"
POOL = "batch"


def cluster_manifests(nodes: int, pods: int, pending: bool) -> list[dict[str, Any]]:
    """The bench's nodes and ``pods`` default pods: running, spread round-robin over the
    nodes (a captured cluster), or ``pending`` (the cluster's pods left to the scheduler)."""
    manifests = [pod_manifest(f"pod-{i}") for i in range(pods)]
    if not pending:
        for i, pod in enumerate(manifests):
            pod["spec"]["nodeName"] = f"node-{i % nodes}"
            pod["status"] = {"phase": "Running"}
    return [*(node_manifest(i) for i in range(nodes)), *manifests]


def probe_manifest() -> dict[str, Any]:
    """The pod ``capacity fit`` copies: the default pod asking 2 cpu and 1Gi."""
    probe = pod_manifest("probe", cpu="2", memory="1Gi")
    del probe["metadata"]["uid"]
    return probe


def workload_manifest(replicas: int) -> dict[str, Any]:
    """A Deployment of ``replicas`` 1-cpu pods that only the new pool's nodes accept."""
    template = pod_manifest("batch", cpu="1", memory="1Gi", labels={"app": "batch"})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "batch"}},
            "template": {
                "metadata": {"labels": {"app": "batch"}},
                "spec": {**template["spec"], "nodeSelector": {POOL_LABEL: POOL}},
            },
        },
    }


def pool_manifest() -> dict[str, Any]:
    """The new pool's node template: the bench's node with the pool label."""
    node = node_manifest(0)
    node["metadata"] = {"name": "batch", "labels": {POOL_LABEL: POOL}}
    return node


def _timed(fn: Any) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def bench_fit(nodes: int, pods: int, pending: bool) -> dict[str, Any]:
    """Time ``capacity fit`` of the 2-cpu probe (the objects are parsed before timing)."""
    cluster = [parse_object(m) for m in cluster_manifests(nodes, pods, pending)]
    template, extra = pod_template([parse_object(probe_manifest())], "probe.yaml")
    report, cpu, wall = _timed(lambda: capacity_fit([*cluster, *extra], template))
    return {
        "question": "fit",
        "nodes": nodes,
        "pods": pods,
        "pending": pending,
        "count": report.count,
        "stop": report.stop.message,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
    }


def bench_nodes(nodes: int, pods: int, pending: bool, replicas: int) -> dict[str, Any]:
    """Time ``capacity nodes`` for the pool workload (the objects are parsed before timing)."""
    cluster = [parse_object(m) for m in cluster_manifests(nodes, pods, pending)]
    workload = [parse_object(workload_manifest(replicas))]
    shapes = node_shapes([parse_object(pool_manifest())], "pool.yaml")
    report, cpu, wall = _timed(lambda: capacity_nodes(cluster, workload, shapes))
    return {
        "question": "nodes",
        "nodes": nodes,
        "pods": pods,
        "pending": pending,
        "replicas": replicas,
        "plan": report.plan.nodes if report.plan is not None else None,
        "lower_bound": report.lower_bound_nodes,
        "simulations": report.simulations,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
    }


def deployment_manifest(replicas: int) -> dict[str, Any]:
    """A Deployment of ``replicas`` of the bench's default pod (the cluster of ``remove``)."""
    pod = pod_manifest("web")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod["spec"]},
        },
    }


def bench_remove(nodes: int, pods: int) -> dict[str, Any]:
    """Time ``capacity remove`` on the bench's nodes running a Deployment of ``pods``."""
    cluster = [parse_object(node_manifest(i)) for i in range(nodes)]
    cluster.append(parse_object(deployment_manifest(pods)))
    report, cpu, wall = _timed(lambda: capacity_remove(cluster))
    return {
        "question": "remove",
        "nodes": nodes,
        "pods": pods,
        "removable": len(report.removable),
        "pods_moved": report.pods_moved,
        "simulations": report.simulations,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
    }


def write_manifests(out: Path, nodes: int, pods: int, pending: bool, replicas: int) -> None:
    """The objects of both questions as manifest files under ``out``."""
    (out / "cluster").mkdir(parents=True, exist_ok=True)
    dump = yaml.safe_dump_all
    cluster = cluster_manifests(nodes, pods, pending)
    (out / "cluster" / "cluster.yaml").write_text(dump(cluster))
    (out / "probe.yaml").write_text(dump([probe_manifest()]))
    (out / "workload.yaml").write_text(dump([workload_manifest(replicas)]))
    (out / "pool.yaml").write_text(dump([pool_manifest()]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument(
        "--pending", action="store_true", help="leave the cluster's pods to the scheduler"
    )
    parser.add_argument("--only", choices=("fit", "nodes", "remove"))
    parser.add_argument("--out", type=Path, help="also write the manifests to this folder")
    args = parser.parse_args(argv)
    if args.out is not None:
        write_manifests(args.out, args.nodes, args.pods, args.pending, args.replicas)
    if args.only in (None, "fit"):
        print(json.dumps(bench_fit(args.nodes, args.pods, args.pending)), flush=True)
    if args.only in (None, "nodes"):
        print(
            json.dumps(bench_nodes(args.nodes, args.pods, args.pending, args.replicas)), flush=True
        )
    if args.only == "remove":
        print(json.dumps(bench_remove(args.nodes, args.pods)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
