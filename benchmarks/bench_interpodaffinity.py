"""Time InterPodAffinity per pod: PreFilter+Filter, PreScore+Score+Normalize; batch vs per node."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched import NodeBatch, NodeScores, PodInfo
from kubesched.api import Namespace, Node, Pod
from kubesched.cache import new_snapshot
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework
from kubesched_builtin.interpodaffinity import NAME, InterPodAffinity

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


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _pod(name: str, app: str, node: str | None, affinity: dict[str, Any] | None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "app"}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    return Pod.model_validate(
        {"metadata": {"name": name, "namespace": "default", "labels": {"app": app}}, "spec": spec}
    )


def _cluster(n_nodes: int, pods_per_node: int) -> list[Pod]:
    """Pods of APPS apps; every 10th has required anti-affinity to its app per host,
    every 7th a preferred affinity to its app per zone."""
    pods = []
    k = 0
    for i in range(n_nodes):
        for _ in range(pods_per_node):
            app = f"app-{k % APPS}"
            affinity: dict[str, Any] = {}
            if k % 10 == 0:
                affinity["podAntiAffinity"] = {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(app, HOST)]
                }
            if k % 7 == 0:
                affinity["podAffinity"] = {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "podAffinityTerm": _term(app, ZONE)}
                    ]
                }
            pods.append(_pod(f"p-{k}", app, f"node-{i}", affinity or None))
            k += 1
    return pods


INCOMING = {
    "plain": _pod("in-plain", "app-3", None, None),
    "required": _pod(
        "in-req",
        "web",
        None,
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term("app-1", ZONE)]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term("web", HOST)]
            },
        },
    ),
    "preferred": _pod(
        "in-pref",
        "app-0",
        None,
        {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": _term("app-2", ZONE)}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 20, "podAffinityTerm": _term("app-0", HOST)}
                ]
            },
        },
    ),
}


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods-per-node", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()

    t = time.perf_counter()
    snap = new_snapshot(_cluster(a.nodes, a.pods_per_node), [_node(i) for i in range(a.nodes)])
    lister = StaticLister([Namespace.model_validate({"metadata": {"name": "default"}})])
    fw = make_framework(InterPodAffinity, lister=lister)
    fw.set_snapshot(snap)
    plugin = fw.plugin(NAME)
    infos = snap.list()
    batch = NodeBatch(snap.table, range(len(infos)), infos)
    names = [ni.name for ni in infos]
    print(
        f"{a.nodes} nodes, {a.nodes * a.pods_per_node} pods "
        f"({len(snap.have_pods_with_required_anti_affinity_list())} nodes with required "
        f"anti-affinity pods); setup {time.perf_counter() - t:.1f}s"
    )
    # Warm the per-table topology codes (computed once per Node change, not per pod).
    for key in (HOST, ZONE):
        snap.table.label_column(key)

    print(f"{'incoming pod':<12} {'phase':<34} {'batch ms':>9} {'per-node ms':>12}")
    for label, pod in INCOMING.items():
        pi = PodInfo(pod)

        def pre_filter(pi: PodInfo = pi) -> Any:
            state = fw.new_cycle_state()
            return state, plugin.pre_filter(state, pi, infos)

        state, status = pre_filter()
        if status is not None and status.is_skip():
            pf = _median_ms(pre_filter, a.repeats)
            print(f"{label:<12} {'PreFilter (Skip: no Filter)':<34} {pf:>9.2f} {pf:>12.2f}")
        else:
            fb = plugin.filter_nodes(state, batch)
            fn = [plugin.filter(state, ni) for ni in infos]
            assert [None if s is None else s.reasons for s in fb] == [
                None if s is None else s.reasons for s in fn
            ]
            pf = _median_ms(pre_filter, a.repeats)
            b = _median_ms(lambda state=state: plugin.filter_nodes(state, batch), a.repeats)
            n = _median_ms(
                lambda state=state: [plugin.filter(state, ni) for ni in infos], a.repeats
            )
            print(f"{label:<12} {'PreFilter':<34} {pf:>9.2f} {pf:>12.2f}")
            print(f"{'':<12} {'Filter (all nodes)':<34} {b:>9.2f} {n:>12.2f}")
            print(f"{'':<12} {'PreFilter+Filter':<34} {pf + b:>9.2f} {pf + n:>12.2f}")

        def pre_score(pi: PodInfo = pi) -> Any:
            state = fw.new_cycle_state()
            return state, plugin.pre_score(state, pi)

        state, status = pre_score()
        ps = _median_ms(pre_score, a.repeats)
        if status is not None and status.is_skip():
            print(f"{'':<12} {'PreScore (Skip: no Score)':<34} {ps:>9.2f} {ps:>12.2f}")
            continue

        def score_batch(state: Any = state) -> None:
            plugin.normalize_score(state, NodeScores(names, plugin.score_nodes(state, batch)))

        def score_each(state: Any = state) -> None:
            raw = np.fromiter((plugin.score(state, ni) for ni in infos), np.int64, len(infos))
            plugin.normalize_score(state, NodeScores(names, raw))

        assert plugin.score_nodes(state, batch).tolist() == [
            plugin.score(state, ni) for ni in infos
        ]
        b = _median_ms(score_batch, a.repeats)
        n = _median_ms(score_each, a.repeats)
        print(f"{'':<12} {'PreScore':<34} {ps:>9.2f} {ps:>12.2f}")
        print(f"{'':<12} {'Score+Normalize (all nodes)':<34} {b:>9.2f} {n:>12.2f}")
        print(f"{'':<12} {'PreScore+Score+Normalize':<34} {ps + b:>9.2f} {ps + n:>12.2f}")


if __name__ == "__main__":
    main()
