"""Time ``kubesched resilience`` over every node of a generated cluster.

    python benchmarks/bench_resilience.py --nodes 1000 --pods 10000 [--limit M] [--workers N]
        [--payload FILE] [--sweep] [--dask-workers 1,2,4]

The cluster: upstream scheduler_perf's default nodes (4 cpu, 32Gi, 110 pods) over three
zones; the pods in Deployments of 10 replicas spread over the zones, and one workload in
ten a StatefulSet of 3; every other workload has a PodDisruptionBudget (minAvailable of
all but one replica). Prints each phase's wall and CPU seconds (CPU time counts the
forked children's): settling, the payload, one worker's setup, the ``--limit`` first
node failures played one after another, and the every-node sweep on ``--workers`` idle
cores computed from those CPU times; with ``--sweep`` and ``--dask-workers``, the whole
sweep timed through the engine, on local processes and on local Dask clusters. Wall
figures depend on the load of the machine (printed): compare runs side by side, not with
other machines' figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import time
import zlib
from pathlib import Path
from typing import Any

from kubesched.api import Node
from kubesched.api.manifests import parse_object
from kubesched.bench.workloads import PAUSE_IMAGE, ZONES, node_manifest
from kubesched.config import default_configuration, effective_configuration
from kubesched.framework.registry import default_registry
from kubesched.resilience import engine, every_node, settle
from kubesched.resilience.world import payload, play, setup

REPLICAS = 10
"""Replicas of each Deployment."""
STATEFUL_REPLICAS = 3
"""Replicas of each StatefulSet (one workload in ten)."""


def _template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ],
        },
    }


def cluster(nodes: int, pods: int) -> list[Any]:
    """``nodes`` nodes and workloads of about ``pods`` pods in all."""
    docs: list[dict[str, Any]] = [node_manifest(i) for i in range(nodes)]
    made, i = 0, 0
    while made < pods:
        app = f"app-{i}"
        stateful = i % 10 == 9
        replicas = min(STATEFUL_REPLICAS if stateful else REPLICAS, pods - made)
        spec: dict[str, Any] = {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": _template(app),
        }
        if stateful:
            spec["serviceName"] = app
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet" if stateful else "Deployment",
                "metadata": {"name": app, "namespace": "default"},
                "spec": spec,
            }
        )
        if i % 2 == 0 and replicas > 1:
            docs.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": app, "namespace": "default"},
                    "spec": {
                        "minAvailable": replicas - 1,
                        "selector": {"matchLabels": {"app": app}},
                    },
                }
            )
        made += replicas
        i += 1
    return [parse_object(d) for d in docs]


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _fork_and_exit() -> None:
    """What the private copy of a failure costs by itself: a fork whose child does
    nothing (the world's pages are shared until written)."""
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _dask_sweeps(
    data: bytes, failures: list[Any], counts: str, reference: list[Any] | None
) -> list[Any] | None:
    """The every-node sweep on a local Dask cluster of each worker count in ``counts``:
    wall time from the first task (the workers' setup included) to the last result, the
    speed-up over the first count, and whether the outcomes equal the other sweeps'."""
    from distributed import LocalCluster

    first: float | None = None
    for count in (int(c) for c in counts.split(",")):
        with LocalCluster(
            n_workers=count, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as dask:
            wall = time.perf_counter()
            outcomes = engine.run_sweep(
                data, failures, setup=setup, play=play, address=dask.scheduler_address
            )
            took = time.perf_counter() - wall
        first = first or took
        same = "" if reference is None else f"   same outcomes: {outcomes == reference}"
        print(
            f"dask sweep of {len(failures)} on {count} worker(s)  wall {took:7.1f} s   "
            f"speed-up {first / took:4.2f}x{same}"
        )
        reference = reference if reference is not None else outcomes
    return reference


def main() -> None:
    """Build, settle, set up once, play ``--limit`` node failures; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument(
        "--limit",
        type=int,
        help="play only the first M node failures one after another, and extrapolate",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="also time the whole every-node sweep through the engine on --workers processes",
    )
    parser.add_argument(
        "--dask-workers",
        metavar="N,N,...",
        help="also time the whole every-node sweep on a local Dask cluster of each of these "
        "worker counts (one thread each), and print the speed-up over the first",
    )
    parser.add_argument(
        "--payload",
        metavar="FILE",
        help="keep the settled cluster in FILE: written on the first run, read on the next "
        "(which then skips generating and settling)",
    )
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; zones: {len(ZONES)}")
    registry = default_registry()
    config = effective_configuration(default_configuration(registry), registry)

    cpu_of: dict[str, float] = {}

    def phase(name: str, work: Any) -> Any:
        wall, cpu = time.perf_counter(), _cpu()
        result = work()
        cpu_of[name] = _cpu() - cpu
        print(f"{name:<28} wall {time.perf_counter() - wall:7.1f} s   cpu {cpu_of[name]:7.1f} s")
        return result

    saved = Path(args.payload) if args.payload else None
    if saved is not None and saved.is_file():
        data = saved.read_bytes()
        print(f"payload: {len(data) / 1e6:.1f} MB read from {saved} (generated and settled before)")
    else:
        objects = phase("generate", lambda: cluster(args.nodes, args.pods))
        settled, pending = phase("settle", lambda: settle(objects, config, registry=registry))
        data = phase("payload", lambda: payload(settled, config, 0, 600.0))
        print(f"payload: {len(data) / 1e6:.1f} MB, {len(settled)} objects; {pending} pods pending")
        if saved is not None:
            saved.write_bytes(data)
    nodes = json.loads(zlib.decompress(data))["objects"]
    failures = every_node(
        [Node.model_validate(o) for o in nodes if o["kind"] == "Node"]  # the names suffice
    )
    chosen = failures[: args.limit] if args.limit else failures
    world = phase("setup (once per worker)", lambda: setup(data))
    phase("copy of the world (fork) x10", lambda: [_fork_and_exit() for _ in range(10)])
    wall, cpu = time.perf_counter(), _cpu()
    outcomes = [play(world, f) for f in chosen]
    n = len(outcomes)
    per_wall, per_cpu = (time.perf_counter() - wall) / n, (_cpu() - cpu) / n
    print(
        f"per failure                  wall {per_wall:7.2f} s   cpu {per_cpu:7.2f} s  ({n} played)"
    )
    lost = sum(1 for o in outcomes if not o.harmless())
    print(f"failures with losses: {lost} of {n}")
    if "settle" in cpu_of:
        # CPU-bound phases on an otherwise idle machine: settling is one process, the
        # workers set up side by side, then share the failures.
        total = (
            cpu_of["settle"]
            + cpu_of["payload"]
            + cpu_of["setup (once per worker)"]
            + len(failures) * per_cpu / args.workers
        )
        print(
            f"every-node sweep ({len(failures)} failures) on {args.workers} idle core(s), "
            f"from the CPU times: {total:.0f} s"
        )
    if args.sweep:
        wall, cpu = time.perf_counter(), _cpu()
        swept = engine.run_sweep(data, failures, setup=setup, play=play, workers=args.workers)
        print(
            f"sweep of {len(failures)} on {args.workers} process(es)  wall "
            f"{time.perf_counter() - wall:7.1f} s   cpu {_cpu() - cpu:7.1f} s"
        )
        reference: list[Any] | None = swept
    else:
        reference = None
    if args.dask_workers:
        reference = _dask_sweeps(data, failures, args.dask_workers, reference)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
