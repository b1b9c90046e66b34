"""Quantities as large as the API accepts never raise and never over-commit a node.

Nodes with allocatables from 0 to far past int64 (cpu ``9223372036854775807`` cores,
``8Ei`` of memory, ``1e30`` of an extended resource), pods bound to them by their
manifests with requests as large, and pods to schedule, some of them preempting: run
through the cache, the snapshot's table, every default Filter and Score plugin (with
each NodeResourcesFit scoring strategy) and preemption on the embedded cluster. No
attempt may end in an error, and at every binding the independent invariant checker
must find the node's total of each resource the pod requests within its allocatable.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.config import default_configuration
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.scheduler.records import RESULT_ERROR
from kubesched.simulate.driver import simulate
from kubesched.testing import make_node, make_pod
from kubesched.testing.builders import objects_from

GPU = "example.com/gpu"
INT64_MAX = "9223372036854775807"

NODE_CPU = ["0", "1", "8", "1000m", INT64_MAX, INT64_MAX + "m", "10P", "1e18", "1e30"]
NODE_MEMORY = ["0", "1", "16Gi", INT64_MAX, "8Ei", "1e19", "1e30"]
NODE_PODS = ["0", "1", "110", INT64_MAX]
NODE_GPU = [None, "0", "4", INT64_MAX, "1e30"]
POD_CPU = [None, "0", "1m", "1", "10P", INT64_MAX, "1e30"]
POD_MEMORY = [None, "0", "1", "1Gi", INT64_MAX, "8Ei", "1e30"]
POD_GPU = [None, "1", INT64_MAX, "1e30"]

STRATEGIES: list[dict[str, Any] | None] = [
    None,
    {"type": "MostAllocated"},
    {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    },
]


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 3))):
        amounts = {
            "cpu": draw(st.sampled_from(NODE_CPU)),
            "memory": draw(st.sampled_from(NODE_MEMORY)),
            "pods": draw(st.sampled_from(NODE_PODS)),
        }
        gpu = draw(st.sampled_from(NODE_GPU))
        if gpu is not None:
            amounts[GPU] = gpu
        out.append(make_node(f"n{i}").capacity(amounts).manifest())
    return out


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    wanted = {
        "cpu": draw(st.sampled_from(POD_CPU)),
        "memory": draw(st.sampled_from(POD_MEMORY)),
        GPU: draw(st.sampled_from(POD_GPU)),
    }
    return {name: value for name, value in wanted.items() if value is not None}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    node_manifests = draw(nodes())
    objects = [
        *node_manifests,
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    ]
    for i in range(draw(st.integers(0, 2))):
        node = draw(st.sampled_from(node_manifests))["metadata"]["name"]
        objects.append(make_pod(f"bound{i}").container(draw(requests())).node(node).manifest())
    for i in range(draw(st.integers(1, 6))):
        pod = make_pod(f"p{i}").container(draw(requests()))
        if draw(st.booleans()):
            pod = pod.priority_class("high")
        objects.append(pod.manifest())
    return objects, draw(st.sampled_from(STRATEGIES))


def _config(strategy: dict[str, Any] | None) -> KubeSchedulerConfiguration | None:
    if strategy is None:
        return None
    resources = [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
        {"name": GPU, "weight": 1},
    ]
    data = default_configuration().model_dump(by_alias=True, exclude_none=True)
    data["profiles"][0]["pluginConfig"] = [
        {
            "name": "NodeResourcesFit",
            "args": {"scoringStrategy": {**strategy, "resources": resources}},
        },
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": resources}},
    ]
    return KubeSchedulerConfiguration.model_validate(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_error_and_no_over_commit(cluster: tuple[list[dict[str, Any]], dict | None]) -> None:
    objects, strategy = cluster
    run = simulate(objects_from(*objects), config=_config(strategy), check_invariants=True)
    results = Counter(r.result for records in run.attempts.values() for r in records)
    errors = [
        r.message for records in run.attempts.values() for r in records if r.result == RESULT_ERROR
    ]
    assert not errors, errors
    assert results  # something was attempted
    # Pods bound by their manifests may exceed a node on their own; what the scheduler
    # owes is checked at each of its bindings (the final totals include those pods).
    broken = [
        v
        for v in run.invariants.violations
        if not v.message.endswith("at the end") and "allowed" not in v.message
    ]
    assert not broken, broken


@pytest.mark.parametrize(
    ("node_cpu", "bound_cpu", "expected"),
    [
        ("8", "10P", {"n1": 8, None: 4}),
        ("8", INT64_MAX, {"n1": 8, None: 4}),
        ("8", "1e30", {"n1": 8, None: 4}),
        (INT64_MAX, None, {"n0": 12}),
    ],
    ids=["pod-10P", "pod-int64-max", "pod-1e30", "node-int64-max"],
)
def test_hostile_node_or_pod(node_cpu: str, bound_cpu: str | None, expected: dict) -> None:
    # Node n0 (the hostile one, or hosting a pod bound to it with a hostile request)
    # beside an 8-cpu n1; twelve 1-cpu pods. A pod beyond int64 fills n0 (none goes
    # there); a node beyond int64 is as large as int64 allows (all go there).
    objects = [
        make_node("n0").capacity(cpu=node_cpu, memory="16Gi").manifest(),
        make_node("n1").capacity(cpu="8", memory="16Gi").manifest(),
    ]
    if bound_cpu is not None:
        objects.append(make_pod("hostile").req(cpu=bound_cpu).node("n0").manifest())
    objects += [make_pod(f"p{i}").req(cpu="1").manifest() for i in range(12)]
    run = simulate(objects_from(*objects), check_invariants=True)
    placed = Counter(p.spec.node_name for p in run.cluster.pods() if p.name != "hostile")
    assert dict(placed) == expected
    assert not run.invariants.violations or all(
        v.message.endswith("at the end") for v in run.invariants.violations
    )
