"""InterPodAffinity from the snapshot's pod groups equals the walk over every pod."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import Node, Pod
from kubesched.cache import Snapshot
from kubesched.framework.types import PodInfo
from kubesched_builtin.interpodaffinity import filtering, scoring

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NAMESPACES = ("default", "other")

selectors = st.sampled_from(
    [
        {"matchLabels": {"app": "a"}},
        {"matchLabels": {"app": "b", "tier": "t"}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
        {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
        {},
    ]
)
terms = st.fixed_dictionaries(
    {"labelSelector": selectors, "topologyKey": st.sampled_from([HOST, ZONE, "missing"])},
    optional={
        "namespaces": st.lists(st.sampled_from(NAMESPACES), max_size=2),
        "namespaceSelector": st.just({}),
    },
)
weighted = st.fixed_dictionaries({"weight": st.integers(1, 100), "podAffinityTerm": terms})
affinities = st.fixed_dictionaries(
    {},
    optional={
        "podAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(terms, max_size=2),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted, max_size=2),
            },
        ),
        "podAntiAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.lists(terms, max_size=2),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted, max_size=2),
            },
        ),
    },
)
labels = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(["a", "b"]), "tier": st.just("t")}
)
pod_specs = st.tuples(st.sampled_from(NAMESPACES), labels, affinities, st.integers(0, 5))


def node(i: int) -> Node:
    lbl = {HOST: f"n{i}"}
    if i % 4:  # node 0 has no zone
        lbl[ZONE] = f"z{i % 2}"
    return Node.model_validate(
        {"metadata": {"name": f"n{i}", "labels": lbl}, "status": {"allocatable": {"pods": "110"}}}
    )


def pod(i: int, spec: tuple[str, dict, dict, int], node_name: str = "") -> PodInfo:
    namespace, lbl, affinity, _ = spec
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if affinity:
        body["affinity"] = affinity
    if node_name:
        body["nodeName"] = node_name
    return PodInfo(
        Pod.model_validate(
            {
                "metadata": {
                    "name": f"p{i}",
                    "namespace": namespace,
                    "uid": f"u{i}",
                    "labels": lbl,
                },
                "spec": body,
            }
        )
    )


@settings(max_examples=150, deadline=None)
@given(existing=st.lists(pod_specs, max_size=14), incoming=pod_specs, hard=st.integers(0, 3))
def test_grouped_counts_and_scores_equal_the_walk(existing, incoming, hard) -> None:
    nodes = [node(i) for i in range(6)]
    pods = [pod(i, spec, f"n{spec[3]}") for i, spec in enumerate(existing)]
    snap = Snapshot.from_objects(pods, nodes)
    me = pod(999, incoming)
    walk = filtering.compute_pre_filter_state(
        me, snap.list(), snap.have_pods_with_required_anti_affinity_list(), None
    )
    grouped = filtering.compute_pre_filter_state(
        me, snap.list(), snap.have_pods_with_required_anti_affinity_list(), None, snap
    )
    for field in ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts"):
        assert getattr(grouped, field) == getattr(walk, field), field
    for all_pods in (True, False):
        nodes_walked = snap.list() if all_pods else snap.have_pods_with_affinity_list()
        assert scoring.grouped_topology_score(
            me, snap, all_pods, hard, None
        ) == scoring.compute_topology_score(me, nodes_walked, all_pods, hard, None)
