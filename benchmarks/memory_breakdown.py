"""Where a workload's bytes go: traced allocations per node, per pending pod, per bound pod.

    python benchmarks/memory_breakdown.py NODES PODS [WORKLOAD] [--bound]

Measures with tracemalloc (after a garbage collection, deterministic) three states of
the workload, each built afresh in this process:

- the nodes alone (the workload with no pods), listed by the informers: bytes per node;
- the nodes and the pods, every pod pending, listed by the informers (cache, queue
  entries, PodInfos): the growth over the nodes alone, per pod;
- with ``--bound``, the same after scheduling (``Workload.run``): per pod, everything a
  run leaves (the bound pods, the watch log's earlier versions, the scheduler's
  records). Tracing slows the scheduling several-fold: keep the sizes small.

Each state is split into the phases that allocate: building the objects (the pydantic
models of the nodes; a bench parses its pods on demand), the embedded cluster and the
scheduler (``Simulation(...)``: the pods parsed and admitted one by one, the store's
indexes and watch log) and the informers' listing, then the largest holders by file for
the last state measured.
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


def _measure(name: str, nodes: int, pods: int, bound: bool) -> tuple[dict[str, int], object]:
    """Traced bytes per phase of one fresh workload, and the last snapshot."""
    registry = default_registry()
    config = bench_configuration(registry, None, WORKLOADS[name].plugins)
    start = _traced()
    workload = build_workload(name, nodes, pods, 0)
    built = _traced()
    sim = workload.simulation(config, registry, 0)
    admitted = _traced()
    if bound:
        workload.run(sim)  # lists (informers) and schedules
    else:
        sim.handlers.connect(sim.cluster)
    listed = _traced()
    phases = {
        "objects built": built - start,
        "pods parsed, cluster + scheduler": admitted - built,
        "informers" + (" + scheduling" if bound else " (cache, queue)"): listed - admitted,
    }
    return phases, tracemalloc.take_snapshot()


def _report(title: str, phases: dict[str, int], base: dict[str, int], per: int) -> None:
    print(f"{title}:")
    total = 0
    for (phase, size), before in zip(phases.items(), base.values(), strict=True):
        total += size - before
        print(f"  {phase:32s} {(size - before) / per / 1024:8.2f} KiB")
    print(f"  {'total':32s} {total / per / 1024:8.2f} KiB ({total / per:,.0f} bytes)")


def main(argv: list[str]) -> int:
    bound = "--bound" in argv
    args = [a for a in argv if a != "--bound"]
    nodes, pods = int(args[0]), int(args[1])
    name = args[2] if len(args) > 2 else "basic"
    tracemalloc.start(1)
    node_phases, snapshot = _measure(name, nodes, 0, False)
    _report(f"per node ({nodes} nodes, no pods)", node_phases, dict.fromkeys(node_phases, 0), nodes)
    if pods:
        pending, snapshot = _measure(name, nodes, pods, False)
        _report(f"per pending pod ({pods} pods)", pending, node_phases, pods)
    if pods and bound:
        after, snapshot = _measure(name, nodes, pods, True)
        _report(f"per pod after the run ({pods} pods)", after, node_phases, pods)
    print("largest holders (last state):")
    for stat in snapshot.statistics("filename")[:12]:  # type: ignore[attr-defined]
        print(f"  {stat.size / 1024:10.0f} KiB  {stat.traceback[0].filename}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
