"""Time opportunistic batching side by side: identical pods that each fill a node, scheduled
by a profile without default topology spreading (the default profile never batches), with
the ``OpportunisticBatching`` gate off and on, alternating, in one process.

    .venv/bin/python benchmarks/bench_opportunistic_batching.py --nodes 500 --rounds 3

Prints, per run, the whole simulation's wall time and the sum of its scheduling attempts'
durations (``scheduler_scheduling_attempt_duration_seconds``), with the gate on the part
of it the batch's own work took (the sums of ``scheduler_get_node_hint_duration_seconds``
and ``scheduler_store_schedule_results_duration_seconds``), the batching counters and the
load average; then the best of each and the off/on ratios. Compare ratios of one run,
never absolute times between runs.
"""

from __future__ import annotations

import argparse
import os
import time

from kubesched.config import API_VERSION, KIND, config_from_dict, effective_configuration
from kubesched.features import parse_feature_gates
from kubesched.framework.registry import default_registry
from kubesched.simulate.driver import simulate
from kubesched.testing.builders import objects_from

PROFILE = {
    "schedulerName": "default-scheduler",
    "pluginConfig": [
        {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}
    ],
}
RESOURCES = {"cpu": "4", "memory": "16Gi", "pods": "110"}
ATTEMPTS = "scheduler_scheduling_attempt_duration_seconds_sum"
BATCH = ("scheduler_batch_attempts_total", "scheduler_batch_cache_flushed_total")
BATCH_WORK = (
    "scheduler_get_node_hint_duration_seconds_sum",
    "scheduler_store_schedule_results_duration_seconds_sum",
)


def _objects(nodes: int) -> list:
    """``nodes`` nodes of 4 CPUs and as many pods of 3 CPUs: one pod per node."""
    node_manifests = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
            "status": {"capacity": RESOURCES, "allocatable": RESOURCES},
        }
        for i in range(nodes)
    ]
    requests = {"cpu": "3", "memory": "1Gi"}
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"app": "big"}},
            "spec": {
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]
            },
        }
        for i in range(nodes)
    ]
    return objects_from(node_manifests, pods)


def _sum(lines: list[str], prefixes: tuple[str, ...]) -> float:
    """The sum of the samples whose series start with one of ``prefixes``."""
    return sum(float(x.rsplit(" ", 1)[1]) for x in lines if x.startswith(prefixes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    registry = default_registry()
    config = config_from_dict({"apiVersion": API_VERSION, "kind": KIND, "profiles": [PROFILE]})
    best: dict[tuple[str, bool], float] = {}
    for round_ in range(opts.rounds):
        for on in (False, True):
            gates = parse_feature_gates([f"OpportunisticBatching={str(on).lower()}"])
            effective = effective_configuration(config, registry, gates=gates)
            objects = _objects(opts.nodes)
            start = time.perf_counter()
            run = simulate(objects, config=effective, registry=registry)
            total = time.perf_counter() - start
            lines = run.scheduler.metrics.expose().decode().splitlines()
            attempts = _sum(lines, (ATTEMPTS,))
            batch_work = f", of which batch {_sum(lines, BATCH_WORK):.3f}s" if on else ""
            counters = [x for x in lines if x.startswith(BATCH)]
            print(
                f"round {round_} gate {'on ' if on else 'off'}: total {total:.2f}s, "
                f"attempts {attempts:.2f}s{batch_work}, load {os.getloadavg()[0]:.1f}; "
                f"{counters}",
                flush=True,
            )
            for what, value in (("total", total), ("attempts", attempts)):
                best[(what, on)] = min(best.get((what, on), value), value)
    for what in ("total", "attempts"):
        off, on = best[(what, False)], best[(what, True)]
        print(f"{what}: best off {off:.2f}s, best on {on:.2f}s, off/on {off / on:.2f}")


if __name__ == "__main__":
    main()
