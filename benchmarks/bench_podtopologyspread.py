"""Time PodTopologySpread per pod: PreFilter+Filter, PreScore+Score+Normalize; batch vs per node."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from kubesched import NodeBatch, NodeScores, PodInfo
from kubesched.api import Node, Pod
from kubesched.cache import new_snapshot
from kubesched.framework.cycle_state import CycleState
from kubesched.testing import make_framework
from kubesched_builtin.podtopologyspread import NAME, PodTopologySpread

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = tuple(f"zone-{c}" for c in "abcdefgh")
APPS = 50


def _node(i: int) -> Node:
    return Node.model_validate(
        {
            "metadata": {
                "name": f"node-{i}",
                "labels": {ZONE: ZONES[i % len(ZONES)], HOST: f"node-{i}"},
            },
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }
    )


def _pod(name: str, app: str, node: str | None, when: str | None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app"}]}
    if node:
        spec["nodeName"] = node
    if when:
        sel = {"matchLabels": {"app": app}}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": when, "labelSelector": sel},
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": when, "labelSelector": sel},
        ]
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "default", "labels": {"app": app}}, "spec": spec}
    )


def _median(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()

    pods = [
        _pod(f"p-{i}-{j}", f"app-{(i * a.pods_per_node + j) % APPS}", f"node-{i}", None)
        for i in range(a.nodes)
        for j in range(a.pods_per_node)
    ]
    snap = new_snapshot(pods, [_node(i) for i in range(a.nodes)])
    fw = make_framework(PodTopologySpread)
    fw.set_snapshot(snap)
    pl = fw.plugin(NAME)
    infos = snap.list()
    batch = NodeBatch(snap.table, range(len(infos)), infos)
    names = [ni.name for ni in infos]
    hard = PodInfo(_pod("new-hard", "app-7", None, "DoNotSchedule"))
    soft = PodInfo(_pod("new-soft", "app-7", None, "ScheduleAnyway"))

    def filt(vectorised: bool, cold: bool) -> None:
        if cold:
            pl.counter = type(pl.counter)()
        state = CycleState()
        pl.pre_filter(state, hard, infos)
        if vectorised:
            pl.filter_nodes(state, batch)
        else:
            for ni in infos:
                pl.filter(state, ni)

    def score(vectorised: bool, cold: bool) -> None:
        if cold:
            pl.counter = type(pl.counter)()
        state = CycleState()
        pl.pre_score(state, soft, infos)
        raw = pl.score_nodes(state, batch) if vectorised else [pl.score(state, ni) for ni in infos]
        pl.normalize_score(state, NodeScores(names, raw))

    print(
        f"PodTopologySpread, {a.nodes} nodes x {a.pods_per_node} pods, zone+hostname "
        f"constraints, median of {a.repeats} (ms per pod)"
    )
    print(f"{'phase':<40}{'vectorised':>10}{'per node':>12}")
    for label, fn in (("PreFilter+Filter", filt), ("PreScore+Score+Normalize", score)):
        for cold in (True, False):
            v = _median(lambda fn=fn, cold=cold: fn(True, cold), a.repeats) * 1e3
            p = _median(lambda fn=fn, cold=cold: fn(False, cold), a.repeats) * 1e3
            tag = "cold counts" if cold else "warm counts"
            print(f"{label + ' (' + tag + ')':<40}"[:40] + f"{v:>10.1f}{p:>12.1f}")


if __name__ == "__main__":
    main()
