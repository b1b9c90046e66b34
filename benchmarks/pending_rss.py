"""The resident size of a bench workload's pending state: what the per-pending-pod RSS is.

    python benchmarks/pending_rss.py NODES PODS [WORKLOAD]

In this fresh process, builds the workload as ``kubesched bench`` does, sets the
embedded cluster and scheduler up (every object admitted: ``setup_memory_mb``) and lets
the informers list (every pod pending in the queue and the cache), and prints one JSON
line: the growth of the resident set size (``rss_bytes``, as ``setup_memory_mb``) after
each step over the size before building, in MiB. Run it with ``PODS`` 0 and with the
pods: the difference of the ``listed`` figures, divided by the pods, is the RSS per
pending pod.
"""

from __future__ import annotations

import gc
import json
import sys

from kubesched.bench import WORKLOADS, bench_configuration, build_workload
from kubesched.bench.runner import rss_bytes
from kubesched.framework.registry import default_registry


def _rss_mib() -> float:
    return rss_bytes() / 2**20


def main(argv: list[str]) -> int:
    nodes, pods = int(argv[0]), int(argv[1])
    name = argv[2] if len(argv) > 2 else "basic"
    registry = default_registry()
    config = bench_configuration(registry, None, WORKLOADS[name].plugins)
    gc.collect()
    before = _rss_mib()
    sim = build_workload(name, nodes, pods, 0).simulation(config, registry, 0)
    gc.collect()
    set_up = _rss_mib() - before
    sim.handlers.connect(sim.cluster)
    gc.collect()
    listed = _rss_mib() - before
    line = {"workload": name, "nodes": nodes, "pods": pods}
    print(json.dumps({**line, "setup_mib": round(set_up, 1), "listed_mib": round(listed, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
