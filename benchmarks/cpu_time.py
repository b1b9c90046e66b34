"""Scheduling CPU seconds of one workload: the figure to compare on a loaded machine.

    python benchmarks/cpu_time.py WORKLOAD NODES PODS [PERCENTAGE_OF_NODES_TO_SCORE]
        [--plugins JSON]

Prints one JSON line: pods bound, CPU seconds (``time.process_time``) and wall seconds
of the scheduling (``Simulation.run``, as ``kubesched bench``'s schedule s), and pods
per CPU second. On a machine shared with other work a process may get a fraction of a
core, so wall figures of two runs compare only when both got the same share; CPU time
is much less sensitive to that. Compare two versions by running this script with
each (e.g. ``PYTHONPATH=<other checkout>/core:<…>/builtin_plugins:<…>/contrib``), one
right after the other. ``--plugins`` replaces the workload's profile plugins by a
profile's ``plugins`` mapping (JSON), e.g. another preemption plugin in place of
DefaultPreemption on the ``preemption`` workload.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from kubesched.bench import WORKLOADS, bench_configuration, build_workload
from kubesched.framework.registry import default_registry


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="cpu_time.py")
    parser.add_argument("workload")
    parser.add_argument("nodes", type=int)
    parser.add_argument("pods", type=int)
    parser.add_argument("pct", type=int, nargs="?")
    parser.add_argument("--plugins", type=json.loads, help="a profile's plugins (JSON)")
    args = parser.parse_args(argv)
    name, nodes, pods, pct = args.workload, args.nodes, args.pods, args.pct
    registry = default_registry()
    workload = build_workload(name, nodes, pods, 0)
    plugins = args.plugins if args.plugins is not None else WORKLOADS[name].plugins
    config = bench_configuration(registry, pct, plugins)
    sim = workload.simulation(config, registry, 0)
    measured = {p.metadata.uid for p in workload.pods}
    cpu, wall = time.process_time(), time.perf_counter()
    run = workload.run(sim)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    bound = sum(1 for p in run.cluster.pods() if p.metadata.uid in measured and p.spec.node_name)
    report = {
        "workload": name,
        "nodes": nodes,
        "pods": pods,
        "pct": pct,
        "bound": bound,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "pods_per_cpu_s": round(bound / cpu, 1) if cpu else None,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
