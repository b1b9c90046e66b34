"""Where a workload's bytes go: traced allocations after building, admitting and listing.

    python benchmarks/memory_breakdown.py NODES PODS [WORKLOAD]

Prints the bytes allocated (tracemalloc, after a garbage collection) by building the
workload's objects, by the embedded cluster and the scheduler (``Simulation(...)``),
and by the informers' initial listing (cache NodeInfos, queue entries, PodInfos), then
the largest holders by file. Divide by the node or pod count for the per-object cost.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc

from kubesched.bench import WORKLOADS, bench_configuration, build_workload
from kubesched.framework.registry import default_registry


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def main(argv: list[str]) -> int:
    nodes, pods = int(argv[0]), int(argv[1])
    name = argv[2] if len(argv) > 2 else "basic"
    registry = default_registry()
    config = bench_configuration(registry, None, WORKLOADS[name].plugins)
    tracemalloc.start(1)
    start = _traced()
    workload = build_workload(name, nodes, pods, 0)
    built = _traced()
    sim = workload.simulation(config, registry, 0)
    admitted = _traced()
    sim.handlers.connect(sim.cluster)
    listed = _traced()
    snapshot = tracemalloc.take_snapshot()
    print(f"objects built:              {(built - start) / 1024:10.0f} KiB")
    print(f"embedded cluster+scheduler: {(admitted - built) / 1024:10.0f} KiB")
    print(f"informers (cache, queue):   {(listed - admitted) / 1024:10.0f} KiB")
    for stat in snapshot.statistics("filename")[:12]:
        print(f"  {stat.size / 1024:10.0f} KiB  {stat.traceback[0].filename}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
