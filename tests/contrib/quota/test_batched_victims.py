"""The quota family's batched dry run (the SDK's ``select_victims_on_nodes``) equals its
dry run node by node (``select_victims_on_node``), quotas, PDBs, nominated pods and
tolerating PriorityClasses included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched import PodInfo
from kubesched.api import PodDisruptionBudget, PriorityClass
from kubesched.cache import new_snapshot
from kubesched.testing import Nominator, StaticLister, make_node, make_pod, profile_framework
from kubesched_contrib.quota.capacityscheduling import ERR_REASON_QUOTA_EXCEEDED
from kubesched_contrib.quota.preemptiontoleration import (
    ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY,
    ANNOTATION_KEY_TOLERATION_SECONDS,
)

from .helpers import CAPACITY_CONFIG, quota

TOLERATION_CONFIG: dict[str, Any] = {
    **CAPACITY_CONFIG,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "PreemptionToleration"}]},
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
            },
        }
    ],
}
"""The default profile with PreemptionToleration instead of DefaultPreemption."""

NAMESPACES = ("ns1", "ns2", "ns3", "default")
"""``default`` never has a quota."""
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z"
TOLERATING = "tolerating"
"""A PriorityClass (value 5) whose pods tolerate preemptors below priority 12 forever."""

pod_spec = st.fixed_dictionaries(
    {
        "ns": st.sampled_from(NAMESPACES),
        "prio": st.sampled_from((0, 5, 10, 12)),
        "cpu": st.integers(1, 15),
        "start": st.sampled_from((T0, T1, None)),
        "app": st.sampled_from(("a", "b")),
        "tolerating": st.booleans(),
    }
)
some_quota = st.fixed_dictionaries(
    {"min": st.integers(0, 40), "max": st.one_of(st.none(), st.integers(10, 40))}
)
quota_spec = st.one_of(st.none(), some_quota)
cluster = st.fixed_dictionaries(
    {
        "nodes": st.lists(
            st.fixed_dictionaries(
                {"cpu": st.sampled_from((2, 3, 4)), "pods_on": st.lists(pod_spec, max_size=5)}
            ),
            min_size=1,
            max_size=6,
        ),
        # ns1 always has a quota and preempts most: its checks are what differ most.
        "quotas": st.tuples(some_quota, quota_spec, quota_spec),
        "nominated": st.lists(
            st.tuples(st.sampled_from(NAMESPACES), st.integers(1, 20), st.integers(0, 5)),
            max_size=2,
        ),
        "pdbs": st.lists(st.tuples(st.sampled_from(NAMESPACES), st.integers(0, 2)), max_size=2),
        "preemptor": st.tuples(st.sampled_from(("ns1", *NAMESPACES)), st.integers(5, 30)),
    }
)


def tolerating_class() -> PriorityClass:
    return PriorityClass.model_validate(
        {
            "metadata": {
                "name": TOLERATING,
                "annotations": {
                    ANNOTATION_KEY_MINIMUM_PREEMPTABLE_PRIORITY: "12",
                    ANNOTATION_KEY_TOLERATION_SECONDS: "-1",
                },
            },
            "value": 5,
        }
    )


def build(c: dict, config: dict[str, Any]):
    """The profile's framework over the generated cluster ``c``; the preemptor."""
    nodes, pods = [], []
    for i, n in enumerate(c["nodes"]):
        name = f"n{i}"
        nodes.append(make_node(name).capacity(cpu=str(n["cpu"]), memory="8Gi", pods=110).obj())
        for j, p in enumerate(n["pods_on"]):
            b = (
                make_pod(f"{name}-p{j}")
                .namespace(p["ns"])
                .uid(f"{name}-p{j}")
                .priority(p["prio"])
                .req(cpu=f"{p['cpu'] * 100}m", memory="100Mi")
                .labels(app=p["app"])
                .node(name)
            )
            if p["start"] is not None:
                b = b.start_time(p["start"])
            if p["tolerating"]:
                b = b.priority_class(TOLERATING)
            pods.append(b.obj())
    objects: list[Any] = [tolerating_class()]
    for ns, q in zip(NAMESPACES, c["quotas"], strict=False):
        if q is not None:
            # Memory never binds: cpu decides.
            bounds = {"min": {"cpu": f"{q['min'] * 100}m", "memory": "10Gi"}}
            if q["max"] is not None:
                bounds["max"] = {"cpu": f"{q['max'] * 100}m", "memory": "20Gi"}
            objects.append(quota(ns, **bounds))
    for k, (ns, n) in enumerate(c["pdbs"]):
        objects.append(
            PodDisruptionBudget.model_validate(
                {
                    "metadata": {"name": f"pdb-{k}", "namespace": ns},
                    "spec": {"selector": {"matchLabels": {"app": "a"}}},
                    "status": {"disruptionsAllowed": n},
                }
            )
        )
    nominator = Nominator()
    for k, (ns, cpu, at) in enumerate(c["nominated"]):
        nominee = (
            make_pod(f"nominee-{k}").namespace(ns).uid(f"nominee-{k}").priority(10)
            .req(cpu=f"{cpu * 100}m").obj()
        )  # fmt: skip
        nominator.add_nominated_pod(PodInfo(nominee), f"n{at % len(nodes)}")
    fw = profile_framework(config, lister=StaticLister(objects), nominator=nominator)
    fw.set_snapshot(new_snapshot(pods, nodes))
    ns, cpu = c["preemptor"]
    preemptor = (
        make_pod("preemptor").namespace(ns).uid("preemptor").priority(10)
        .req(cpu=f"{cpu * 100}m", memory="100Mi").obj()
    )  # fmt: skip
    return fw, PodInfo(preemptor)


def outcome(results) -> list[tuple]:
    return [
        ([v.key for v in victims], violations, s.code, tuple(s.reasons), s.plugin)
        for victims, violations, s in results
    ]


def batched_and_per_node(c: dict, config: dict[str, Any], name: str):
    """The plugin's ``select_victims_on_nodes`` over every node and its
    ``select_victims_on_node`` on each node's clone, as ``outcome`` lists."""
    fw, pi = build(c, config)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, pi, fw.snapshot.list())
    plugin = fw.plugin(name)
    nodes = fw.snapshot.list()
    pdbs = plugin.evaluator.pdbs_for(nodes)
    batched = plugin.select_victims_on_nodes(state.clone(), pi, nodes, pdbs)
    per_node = [plugin.select_victims_on_node(state.clone(), pi, ni.clone(), pdbs) for ni in nodes]
    assert batched is not None, "the batched dry run declined"
    return outcome(batched), outcome(per_node)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_capacity_scheduling_batched_victims_equal_per_node(c):
    batched, per_node = batched_and_per_node(c, CAPACITY_CONFIG, "CapacityScheduling")
    assert batched == per_node


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster)
def test_preemption_toleration_batched_victims_equal_per_node(c):
    batched, per_node = batched_and_per_node(c, TOLERATION_CONFIG, "PreemptionToleration")
    assert batched == per_node


def _one_node(pods: list[tuple[str, int, int]], quotas: tuple, preemptor: tuple[str, int]):
    return {
        "nodes": [
            {
                "cpu": 4,
                "pods_on": [
                    {"ns": ns, "prio": prio, "cpu": cpu, "start": T0, "app": "b",
                     "tolerating": False}
                    for ns, prio, cpu in pods
                ],
            }
        ],
        "quotas": quotas,
        "nominated": [],
        "pdbs": [],
        "preemptor": preemptor,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("c", "victims", "reason"),
    [
        pytest.param(
            # ns1 within its min takes back what ns2 borrowed: ns2's pods while ns2 is
            # above its min (2 of its 3 pods; the third would leave it at its min).
            _one_node(
                [("ns2", 0, 10), ("ns2", 0, 10), ("ns2", 12, 10), ("ns1", 0, 5)],
                ({"min": 20, "max": 40}, {"min": 10, "max": 40}, None),
                ("ns1", 15),
            ),
            ["ns2/n0-p0", "ns2/n0-p1"],
            None,
            id="within min: reclaims borrowed quota, each removal re-checked",
        ),
        pytest.param(
            # ns1 beyond its min: only its own lower-priority pods. Both would fit back
            # on the node; the second reprieved would break ns1's max, so it is a
            # victim after all.
            _one_node(
                [("ns1", 0, 10), ("ns1", 5, 10), ("ns2", 0, 10)],
                ({"min": 5, "max": 25}, {"min": 30, "max": 40}, None),
                ("ns1", 10),
            ),
            ["ns1/n0-p0"],
            None,
            id="beyond min: a reprieve over max is a victim after all",
        ),
        pytest.param(
            _one_node(
                [("ns1", 0, 10), ("ns2", 0, 10)],
                ({"min": 5, "max": 12}, {"min": 30, "max": 40}, None),
                ("ns1", 20),
            ),
            [],
            ERR_REASON_QUOTA_EXCEEDED,
            id="over max even without the victims: rejected",
        ),
    ],
)
def test_capacity_scheduling_batched_quota_cases(c, victims, reason):
    batched, per_node = batched_and_per_node(c, CAPACITY_CONFIG, "CapacityScheduling")
    assert batched == per_node
    assert batched[0][0] == victims
    assert (reason in batched[0][3]) if reason else batched[0][3] == ()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster.map(lambda c: {**c, "quotas": (None, None, None)}))
def test_capacity_scheduling_without_quotas_batched_victims_equal_per_node(c):
    # No ElasticQuota at all: the lower-priority pods of every namespace are the
    # potential victims, picked without a quota lookup per pod.
    batched, per_node = batched_and_per_node(c, CAPACITY_CONFIG, "CapacityScheduling")
    assert batched == per_node
