"""NodeResourcesFit: feasibility, reasons and codes, the three scoring strategies, args, events.

Cases come from upstream's fit_test.go / least_allocated_test.go / most_allocated_test.go /
requested_to_capacity_ratio_test.go tables (re-derived, not copied), the Kubernetes docs'
"Resource Bin Packing" worked example, and edge cases of upstream's int64 arithmetic.
Every Filter and Score case is checked on both paths: per node and vectorised.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
    go_div,
    go_round,
)
from kubesched.api import Pod
from kubesched.config.validation import validation_error_problems
from kubesched.features import FeatureGates
from kubesched.testing import batch_verdicts, make_framework, make_node, make_pod, node_batch
from kubesched_builtin.noderesources.fit import (
    NAME,
    PRE_SCORE_KEY,
    NodeResourcesFit,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_event,
)
from kubesched_builtin.noderesources.fit import (
    NodeResourcesFitArgs as Args,
)
from kubesched_builtin.noderesources.requested_to_capacity_ratio import broken_linear_function

GI = 1024**3
MI = 1024**2
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class _Unvalidated:
    """A pod builder whose ``obj()`` skips the API server's validation."""

    def __init__(self, builder: Any) -> None:
        self.builder = builder

    def obj(self) -> Pod:
        return Pod.model_validate(self.builder.manifest())


def plugin(
    args: dict[str, Any] | None = None, gates: FeatureGates | None = None
) -> NodeResourcesFit:
    fw = make_framework(
        NodeResourcesFit, args={NAME: Args.model_validate(args or {})}, feature_gates=gates
    )
    return fw.plugin(NAME)


def node_info(node_builder, *pods) -> NodeInfo:
    node = node_builder.obj()
    return NodeInfo(node, [PodInfo(p.node(node.metadata.name).obj()) for p in pods])


def run_filter(pl: NodeResourcesFit, pod, infos: list[NodeInfo]) -> list[Status | None]:
    """Filter every node per node and vectorised; both must agree exactly."""
    state = CycleState()
    pi = PodInfo(pod.obj())
    assert pl.pre_filter(state, pi) is None
    single = [pl.filter(state, ni) for ni in infos]
    batch = batch_verdicts(pl.filter_nodes(state, node_batch(infos)), len(infos))
    assert len(batch) == len(single)
    for s, b in zip(single, batch, strict=True):
        assert (s is None) == (b is None)
        if s is not None:
            assert (s.code, s.reasons) == (b.code, b.reasons)
    return single


def run_score(pl, pod, infos: list[NodeInfo]) -> list[int]:
    """Score every node per node and vectorised, with and without PreScore state."""
    pi = PodInfo(pod.obj())
    state = CycleState()
    without_state = [pl.score(state, pi, ni) for ni in infos]
    assert pl.pre_score(state, pi) is None
    single = [pl.score(state, pi, ni) for ni in infos]
    batch = pl.score_nodes(state, pi, node_batch(infos))
    assert isinstance(batch, np.ndarray)
    assert batch.tolist() == single == without_state
    return single


# ---------------------------------------------------------------------------------------
# Filter
# ---------------------------------------------------------------------------------------

FILTER_CASES = [
    # (id, args, pod, node, existing pods, expected (code, reasons) or None)
    (
        "fits",
        {},
        make_pod().req(cpu="1", memory="1Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        None,
    ),
    (
        "fits-exactly",
        {},
        make_pod().req(cpu="3", memory="3Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="1", memory="1Gi")],
        None,
    ),
    (
        "insufficient-cpu-preemptible",
        {},
        make_pod().req(cpu="2", memory="1Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="3")],
        (U, ["Insufficient cpu"]),
    ),
    (
        "cpu-larger-than-node-unresolvable",
        {},
        make_pod().req(cpu="5"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient cpu"]),
    ),
    (
        "insufficient-memory",
        {},
        make_pod().req(cpu="1", memory="2Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(memory="3Gi")],
        (U, ["Insufficient memory"]),
    ),
    (
        "cpu-and-memory-all-reasons-in-order",
        {},
        make_pod().req(cpu="2", memory="2Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="3", memory="3Gi")],
        (U, ["Insufficient cpu", "Insufficient memory"]),
    ),
    (
        "one-unresolvable-makes-all-unresolvable",
        {},
        make_pod().req(cpu="2", memory="5Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="3")],
        (UU, ["Insufficient cpu", "Insufficient memory"]),
    ),
    (
        "insufficient-ephemeral-storage",
        {},
        make_pod().req(ephemeral_storage="10Gi"),
        make_node().capacity(cpu="4", memory="4Gi", ephemeral_storage="20Gi"),
        [make_pod("e").req(ephemeral_storage="15Gi")],
        (U, ["Insufficient ephemeral-storage"]),
    ),
    (
        "no-ephemeral-storage-on-node",
        {},
        make_pod().req(ephemeral_storage="1"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient ephemeral-storage"]),
    ),
    (
        "too-many-pods-zero-request",
        {},
        make_pod(),
        make_node().capacity(cpu="4", memory="4Gi", pods="1"),
        [make_pod("e")],
        (U, ["Too many pods"]),
    ),
    (
        "too-many-pods-first",
        {},
        make_pod().req(cpu="2"),
        make_node().capacity(cpu="4", memory="4Gi", pods="1"),
        [make_pod("e").req(cpu="3")],
        (U, ["Too many pods", "Insufficient cpu"]),
    ),
    (
        "zero-pods-allocatable",
        {},
        make_pod(),
        make_node().capacity(cpu="4", memory="4Gi", pods="0"),
        [],
        (U, ["Too many pods"]),
    ),
    (
        "zero-request-skips-resource-checks",
        {},
        make_pod(),
        make_node().capacity(cpu="1", memory="1Gi"),
        [make_pod("e").req(cpu="1", memory="1Gi")],
        None,
    ),
    (
        "zero-cpu-request-on-overcommitted-node",
        {},
        make_pod().req(memory="1Gi"),
        make_node().capacity(cpu="1", memory="4Gi"),
        [make_pod("e").req(cpu="2")],
        None,
    ),
    (
        "init-container-max",
        {},
        make_pod().req(cpu="1").init_container({"cpu": "3"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="2")],
        (U, ["Insufficient cpu"]),
    ),
    (
        "init-container-smaller-than-sum",
        {},
        make_pod().req(cpu="1").req(cpu="1").init_container({"cpu": "2"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="2")],
        None,
    ),
    (
        "sidecar-added-to-containers",
        {},
        make_pod().req(cpu="1").init_container({"cpu": "1"}, sidecar=True),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="3")],
        (U, ["Insufficient cpu"]),
    ),
    (
        "overhead-counts",
        {},
        make_pod().req(cpu="1").overhead(cpu="500m"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="2600m")],
        (U, ["Insufficient cpu"]),
    ),
    (
        "overhead-fits",
        {},
        make_pod().req(cpu="1").overhead(cpu="400m"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e").req(cpu="2600m")],
        None,
    ),
    (
        "extended-resource-missing-on-node",
        {},
        make_pod().container({"example.com/foo": "1"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient example.com/foo"]),
    ),
    (
        "extended-resource-used-up",
        {},
        make_pod().container({"example.com/foo": "2"}),
        make_node().capacity({"cpu": "4", "memory": "4Gi", "example.com/foo": "4"}),
        [make_pod("e").container({"example.com/foo": "3"})],
        (U, ["Insufficient example.com/foo"]),
    ),
    (
        "extended-resource-fits",
        {},
        make_pod().container({"example.com/foo": "1"}),
        make_node().capacity({"cpu": "4", "memory": "4Gi", "example.com/foo": "4"}),
        [make_pod("e").container({"example.com/foo": "3"})],
        None,
    ),
    (
        "extended-zero-request-not-checked",
        {},
        make_pod().container({"cpu": "1", "example.com/foo": "0"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        None,
    ),
    (
        "scalars-sorted-after-native",
        {},
        make_pod().container({"example.com/zz": "1", "cpu": "5", "example.com/aa": "1"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient cpu", "Insufficient example.com/aa", "Insufficient example.com/zz"]),
    ),
    (
        "ignored-resource",
        {"ignoredResources": ["example.com/foo"]},
        make_pod().container({"example.com/foo": "1", "example.com/bar": "1"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient example.com/bar"]),
    ),
    (
        "ignored-resource-group",
        {"ignoredResourceGroups": ["example.com"]},
        make_pod().container({"example.com/foo": "1", "example.com/bar": "1", "other.io/x": "1"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient other.io/x"]),
    ),
    (
        "ignored-only-for-extended-hugepages-checked",
        {"ignoredResources": ["hugepages-2Mi"]},
        make_pod().container({"memory": "1Mi", "hugepages-2Mi": "4Mi"}),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient hugepages-2Mi"]),
    ),
    (
        "ignored-never-hides-cpu",
        {"ignoredResources": ["cpu"]},
        make_pod().req(cpu="5"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        (UU, ["Insufficient cpu"]),
    ),
    (
        "hugepages-fit",
        {},
        make_pod().container({"memory": "1Mi", "hugepages-2Mi": "4Mi"}),
        make_node().capacity({"cpu": "4", "memory": "4Gi", "hugepages-2Mi": "8Mi"}),
        [],
        None,
    ),
    (
        "non-scalar-name-not-checked",
        {},
        # kube-apiserver refuses "storage" in a container; the plugin still ignores it.
        _Unvalidated(make_pod().container({"cpu": "1", "storage": "5Gi"})),
        make_node().capacity(cpu="4", memory="4Gi"),
        [],
        None,
    ),
    (
        "existing-pods-zero-requests-dont-count",
        {},
        make_pod().req(cpu="4", memory="4Gi"),
        make_node().capacity(cpu="4", memory="4Gi"),
        [make_pod("e1"), make_pod("e2")],
        None,
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "node", "existing", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(args, pod, node, existing, expected) -> None:
    [status] = run_filter(plugin(args), pod, [node_info(node, *existing)])
    if expected is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == expected


def test_filter_batch_shares_statuses_and_mixes_verdicts() -> None:
    infos = [
        node_info(make_node("fits").capacity(cpu="4", memory="4Gi")),
        node_info(make_node("busy-a").capacity(cpu="4", memory="4Gi"), make_pod("e").req(cpu="3")),
        node_info(make_node("busy-b").capacity(cpu="4", memory="4Gi"), make_pod("e").req(cpu="3")),
        node_info(make_node("small").capacity(cpu="1", memory="4Gi")),
        node_info(make_node("full").capacity(cpu="4", memory="4Gi", pods="1"), make_pod("e")),
    ]
    pl = plugin()
    statuses = run_filter(pl, make_pod().req(cpu="2"), infos)
    assert statuses[0] is None
    assert [(s.code, s.reasons) for s in statuses[1:]] == [
        (U, ["Insufficient cpu"]),
        (U, ["Insufficient cpu"]),
        (UU, ["Insufficient cpu"]),
        (U, ["Too many pods"]),
    ]
    state = CycleState()
    pl.pre_filter(state, PodInfo(make_pod().req(cpu="2").obj()))
    batch = pl.filter_nodes(state, node_batch(infos))
    assert batch[1] is batch[2]  # one Status object per distinct verdict


def test_filter_through_the_runtime() -> None:
    fw = make_framework(NodeResourcesFit)
    infos = [
        node_info(make_node("a").capacity(cpu="4", memory="4Gi")),
        node_info(make_node("b").capacity(cpu="1", memory="4Gi")),
    ]
    pi = PodInfo(make_pod().req(cpu="2").obj())
    state = fw.new_cycle_state()
    _, status, _ = fw.run_pre_filter_plugins(state, pi, infos)
    assert status.is_success()
    verdicts, error = fw.run_filter_batch(state, pi, node_batch(infos))
    assert error is None
    assert verdicts[0] is None
    assert verdicts[1] == Status(UU, "Insufficient cpu", plugin="NodeResourcesFit")
    assert fw.run_filter_plugins(state, pi, infos[1]) == verdicts[1]


def test_filter_without_pre_filter_is_an_error() -> None:
    pl = plugin()
    info = node_info(make_node().capacity(cpu="4", memory="4Gi"))
    status = pl.filter(CycleState(), info)
    assert status is not None and status.code == Code.ERROR
    assert "PreFilterNodeResourcesFit" in status.message()
    assert pl.filter_nodes(CycleState(), node_batch([info]))[0].code == Code.ERROR


def test_filter_random_batch_agrees_with_per_node() -> None:
    rng = random.Random(4)
    for _ in range(30):
        infos = []
        for i in range(12):
            node = make_node(f"n{i}").capacity(
                {
                    "cpu": str(rng.choice([0, 1, 2, 4])),
                    "memory": f"{rng.choice([0, 1, 2])}Gi",
                    "pods": str(rng.choice([0, 1, 2, 3])),
                    **(
                        {"example.com/gpu": str(rng.choice([0, 1, 2]))}
                        if rng.random() < 0.5
                        else {}
                    ),
                }
            )
            pods = [
                make_pod(f"e{j}").container(
                    {
                        "cpu": f"{rng.choice([0, 500, 1000])}m",
                        "example.com/gpu": str(rng.choice([0, 1])),
                    }
                )
                for j in range(rng.choice([0, 1, 2]))
            ]
            infos.append(node_info(node, *pods))
        pod = make_pod().container(
            {
                "cpu": f"{rng.choice([0, 500, 1500])}m",
                "memory": f"{rng.choice([0, 512])}Mi",
                "example.com/gpu": str(rng.choice([0, 1, 2])),
            }
        )
        run_filter(
            plugin({"ignoredResources": ["example.com/gpu"]} if rng.random() < 0.2 else {}),
            pod,
            infos,
        )


# ---------------------------------------------------------------------------------------
# Score
# ---------------------------------------------------------------------------------------

LEAST = {"scoringStrategy": {"type": "LeastAllocated"}}
MOST = {"scoringStrategy": {"type": "MostAllocated"}}


def rtcr(shape, resources=None) -> dict[str, Any]:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = [{"name": n, "weight": w} for n, w in resources]
    return {"scoringStrategy": strategy}


SCORE_CASES = [
    # (id, args, pod, [(node builder, existing pods)], expected raw scores)
    (
        "least-nothing-scheduled-nothing-requested-uses-nonzero-defaults",
        LEAST,
        make_pod(),
        [
            (make_node("a").capacity(cpu="4", memory="10000Mi"), []),
            (make_node("b").capacity(cpu="6", memory="10000Mi"), []),
        ],
        # cpu (4000-100)*100/4000=97, mem (10000-200)*100/10000=98 -> 97; b: 98, 98 -> 98
        [97, 98],
    ),
    (
        "least-differently-sized-nodes",
        LEAST,
        make_pod().req(cpu="3", memory="5000Mi"),
        [
            (make_node("a").capacity(cpu="4", memory="10000Mi"), []),
            (make_node("b").capacity(cpu="6", memory="10000Mi"), []),
        ],
        # a: cpu 25, mem 50 -> 37; b: cpu 50, mem 50 -> 50
        [37, 50],
    ),
    (
        "least-existing-pods-and-integer-division",
        LEAST,
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (
                make_node("a").capacity(cpu="3", memory="3Gi"),
                [make_pod("e").req(cpu="1", memory="100Mi")],
            )
        ],
        # cpu (3000-2000)*100/3000 = 33 (33.3), mem (3072-1124)*100/3072 = 63 (63.4) -> 96/2 = 48
        [48],
    ),
    (
        "least-requested-over-capacity-is-zero",
        LEAST,
        make_pod().req(cpu="6", memory="1Gi"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        [go_div(0 + 75, 2)],
    ),
    (
        "least-node-without-memory-skips-it",
        LEAST,
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a").capacity(cpu="4"), [])],
        [75],
    ),
    (
        "least-node-without-anything-scores-zero",
        LEAST,
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a"), [])],
        [0],
    ),
    (
        "least-weights",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
            }
        },
        make_pod().req(cpu="1", memory="3Gi"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        # cpu 75*3 + mem 25*1 = 250 / 4 = 62
        [62],
    ),
    (
        "least-extended-resource-not-requested-is-skipped",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "example.com/gpu", "weight": 5},
                ],
            }
        },
        make_pod().req(cpu="1"),
        [(make_node("a").capacity({"cpu": "4", "memory": "4Gi", "example.com/gpu": "4"}), [])],
        [75],
    ),
    (
        "least-extended-resource-requested",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "example.com/gpu", "weight": 3},
                ],
            }
        },
        make_pod().container({"cpu": "1", "example.com/gpu": "1"}),
        [
            (
                make_node("a").capacity({"cpu": "4", "memory": "4Gi", "example.com/gpu": "4"}),
                [make_pod("e").container({"example.com/gpu": "2"})],
            ),
            (make_node("b").capacity({"cpu": "4", "memory": "4Gi"}), []),
        ],
        # a: the gpu-only pod counts 100m of cpu (non-zero default): cpu (4000-1100)*100/4000
        # = 72, gpu 25 -> (72 + 25*3)/4 = 36; b: no gpu on the node -> cpu only, 75
        [36, 75],
    ),
    (
        "least-ephemeral-storage-uses-requested",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "ephemeral-storage", "weight": 1}],
            }
        },
        make_pod().req(ephemeral_storage="1Gi"),
        [
            (
                make_node("a").capacity(cpu="4", memory="4Gi", ephemeral_storage="4Gi"),
                [make_pod("e")],
            )
        ],
        [75],
    ),
    (
        "least-pods-resource-is-never-scored",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "pods", "weight": 1}, {"name": "cpu", "weight": 1}],
            }
        },
        make_pod().req(cpu="1"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        [75],
    ),
    (
        "least-existing-pods-without-requests-count-nonzero",
        LEAST,
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a").capacity(cpu="2", memory="2Gi"), [make_pod("e1"), make_pod("e2")])],
        # cpu (2000-1200)*100/2000 = 40, mem (2048-1024-400)*100/2048 = 30 (30.4) -> 35
        [35],
    ),
    (
        "least-ties",
        LEAST,
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (make_node("a").capacity(cpu="4", memory="4Gi"), []),
            (make_node("b").capacity(cpu="4", memory="4Gi"), []),
        ],
        [75, 75],
    ),
    (
        "most-basic",
        MOST,
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (
                make_node("a").capacity(cpu="4", memory="4Gi"),
                [make_pod("e").req(cpu="1", memory="2Gi")],
            ),
            (make_node("b").capacity(cpu="3", memory="9Gi"), []),
        ],
        # a: cpu 50, mem 75 -> 62; b: cpu 33, mem 11 -> 22
        [62, 22],
    ),
    (
        "most-over-capacity-is-capped",
        MOST,
        make_pod(),
        [(make_node("a").capacity(cpu="250m", memory="1000Mi"), [make_pod("e1"), make_pod("e2")])],
        # non-zero: cpu 300m > 250m -> 100; mem 600Mi/1000Mi -> 60 -> 80
        [80],
    ),
    (
        "most-weights-and-missing-resource",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": "example.com/foo", "weight": 3},
                ],
            }
        },
        make_pod().container({"cpu": "1", "memory": "1Gi", "example.com/foo": "1"}),
        [
            (make_node("a").capacity({"cpu": "4", "memory": "4Gi", "example.com/foo": "2"}), []),
            (make_node("b").capacity(cpu="4", memory="4Gi"), []),
        ],
        # a: (25 + 25 + 50*3)/5 = 40; b: foo absent -> (25 + 25)/2 = 25
        [40, 25],
    ),
    (
        "rtcr-kubernetes-docs-worked-example",
        rtcr([(0, 0), (100, 10)], [("intel.com/foo", 5), ("memory", 1), ("cpu", 3)]),
        make_pod().container({"intel.com/foo": "2", "memory": "256Mi", "cpu": "2"}),
        [
            (
                make_node("node1").capacity({"intel.com/foo": "4", "memory": "1Gi", "cpu": "8"}),
                [make_pod("u").container({"intel.com/foo": "1", "memory": "256Mi", "cpu": "1"})],
            ),
            (
                make_node("node2").capacity({"intel.com/foo": "8", "memory": "1Gi", "cpu": "8"}),
                [make_pod("u").container({"intel.com/foo": "2", "memory": "512Mi", "cpu": "6"})],
            ),
        ],
        # The documentation floors each resource score on a 0..10 scale and ends with 5 and 7
        # (its "(7 * 5) + (5 * 1) + (3 * 3) / (5 + 1 + 3)" is not even evaluated as written).
        # Upstream's code scales the shape x10 (0..100), uses int64 utilization (cpu 3/8 ->
        # 37) and rounds the weighted mean: node1 (75*5 + 50*1 + 37*3)/9 = 59.56 -> 60,
        # node2 (50*5 + 75*1 + 100*3)/9 = 69.44 -> 69. We follow the code.
        [60, 69],
    ),
    (
        "rtcr-round-half-away-from-zero",
        rtcr([(0, 0), (100, 10)]),
        make_pod().req(cpu="500m", memory="510Mi"),
        [(make_node("a").capacity(cpu="1", memory="1000Mi"), [])],
        # cpu 50, memory 51 -> 50.5 rounds to 51 (Python's round() would give 50)
        [51],
    ),
    (
        "rtcr-zero-resource-scores-leave-the-average",
        rtcr([(0, 0), (100, 10)]),
        make_pod().req(cpu="1m", memory="512Mi"),
        [(make_node("a").capacity(cpu="1000", memory="1Gi"), [])],
        # cpu utilization 0 scores 0 and is left out: 50, not 25
        [50],
    ),
    (
        "rtcr-decreasing-shape-truncates-toward-zero",
        rtcr([(0, 10), (30, 0)], [("cpu", 1)]),
        make_pod().req(cpu="70m"),
        [(make_node("a").capacity(cpu="1", memory="1Gi"), [])],
        # utilization 7: 100 + (-100 * 7) / 30 = 100 - 23 = 77 (floor division gives 76)
        [77],
    ),
    (
        "rtcr-beyond-last-point-and-over-capacity",
        rtcr([(10, 2), (50, 8)], [("cpu", 1), ("memory", 1)]),
        make_pod().req(cpu="3", memory="64Mi"),
        [(make_node("a").capacity(cpu="2", memory="1Gi"), [])],
        # cpu over capacity -> f(100) = 80; memory 6% < first point -> 20 -> 50
        [50],
    ),
    (
        "rtcr-single-point-shape",
        rtcr([(50, 5)]),
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        [50],
    ),
    (
        "rtcr-least-requested-shape",
        rtcr([(0, 10), (100, 0)]),
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (make_node("a").capacity(cpu="4", memory="4Gi"), []),
            (make_node("b").capacity(cpu="2", memory="2Gi"), []),
        ],
        [75, 50],
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "nodes", "expected"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(args, pod, nodes, expected) -> None:
    infos = [node_info(n, *existing) for n, existing in nodes]
    assert run_score(plugin(args), pod, infos) == expected


@pytest.mark.parametrize(
    "args",
    [LEAST, MOST, rtcr([(0, 0), (100, 10)]), rtcr([(0, 10), (37, 3), (80, 9), (100, 0)])],
    ids=["least", "most", "rtcr-most", "rtcr-zigzag"],
)
def test_score_through_the_runtime_is_not_normalized(args) -> None:
    fw = make_framework(NodeResourcesFit, args={"NodeResourcesFit": args})
    infos = [
        node_info(
            make_node(f"n{i}").capacity(cpu=str(i + 1), memory=f"{i + 1}Gi"),
            make_pod("e").req(cpu="500m"),
        )
        for i in range(4)
    ]
    pi = PodInfo(make_pod().req(cpu="500m", memory="512Mi").obj())
    state = fw.new_cycle_state()
    assert fw.run_pre_score_plugins(state, pi, infos).is_success()
    result = fw.run_score_plugins(state, pi, node_batch(infos))
    [ps] = result.plugins
    pl = fw.plugin("NodeResourcesFit")
    assert ps.raw.tolist() == ps.normalized.tolist() == [pl.score(state, pi, ni) for ni in infos]
    assert result.totals.tolist() == ps.raw.tolist()
    assert state.read(PRE_SCORE_KEY) == (500, 512 * MI)


@pytest.mark.parametrize(
    "args",
    [
        LEAST,
        MOST,
        rtcr([(0, 0), (100, 10)]),
        rtcr(
            [(0, 10), (33, 1), (66, 9), (100, 2)],
            [("cpu", 2), ("memory", 7), ("example.com/gpu", 100)],
        ),
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [
                    {"name": "cpu", "weight": 100},
                    {"name": "example.com/gpu", "weight": 3},
                    {"name": "ephemeral-storage", "weight": 9},
                ],
            }
        },
    ],
    ids=["least", "most", "rtcr", "rtcr-weights", "most-extended"],
)
def test_score_random_batch_agrees_with_per_node(args) -> None:
    rng = random.Random(7)
    pl = plugin(args)
    for _ in range(25):
        infos = []
        for i in range(15):
            cap: dict[str, str] = {
                "cpu": f"{rng.choice([0, 1, 999, 1000, 3000, 7777])}m",
                "memory": str(rng.choice([0, 1, 3 * GI, 1000 * MI + 7])),
                "ephemeral-storage": str(rng.choice([0, GI])),
            }
            if rng.random() < 0.6:
                cap["example.com/gpu"] = str(rng.choice([0, 1, 3, 8]))
            pods = [
                make_pod(f"e{j}").container(
                    {
                        "cpu": f"{rng.choice([0, 1, 333])}m",
                        "memory": str(rng.choice([0, 7, MI])),
                        "example.com/gpu": str(rng.choice([0, 1])),
                    }
                )
                for j in range(rng.choice([0, 1, 3]))
            ]
            infos.append(node_info(make_node(f"n{i}").capacity(cap), *pods))
        pod = make_pod().container(
            {
                "cpu": f"{rng.choice([0, 1, 250])}m",
                "memory": str(rng.choice([0, 3, 100 * MI])),
                "example.com/gpu": str(rng.choice([0, 0, 1, 2])),
                "ephemeral-storage": str(rng.choice([0, MI])),
            }
        )
        scores = run_score(pl, pod, infos)
        assert all(0 <= s <= 100 for s in scores)


def test_go_arithmetic_helpers() -> None:
    assert go_div(-700, 30) == -23
    assert go_div(700, 30) == 23
    assert go_div(-7, -2) == 3
    assert go_round(50.5) == 51
    assert go_round(2.5) == 3
    assert go_round(2.4999999999999996) == 2
    assert go_round(-2.5) == -3
    f = broken_linear_function([(0, 100), (30, 0)])
    assert [f(0), f(7), f(30), f(100)] == [100, 77, 0, 0]
    g = broken_linear_function([(10, 20), (50, 80)])
    assert [g(0), g(10), g(30), g(50), g(99)] == [20, 20, 50, 80, 80]


# ---------------------------------------------------------------------------------------
# Args
# ---------------------------------------------------------------------------------------


def test_args_defaults() -> None:
    args = Args()
    s = args.scoring_strategy
    assert (s.type, [(r.name, r.weight) for r in s.resources]) == (
        "LeastAllocated",
        [("cpu", 1), ("memory", 1)],
    )
    assert args.ignored_resources == () and args.ignored_resource_groups == ()
    assert s.requested_to_capacity_ratio is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"scoringStrategy": {"type": "MostAllocated"}},
            ("MostAllocated", [("cpu", 1), ("memory", 1)]),
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": []}},
            ("MostAllocated", [("cpu", 1), ("memory", 1)]),
        ),
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}],
                }
            },
            ("LeastAllocated", [("cpu", 1), ("memory", 1)]),
        ),
        (
            {
                "kind": "NodeResourcesFitArgs",
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": "intel.com/foo", "weight": 3}],
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                    },
                },
            },
            ("RequestedToCapacityRatio", [("intel.com/foo", 3)]),
        ),
    ],
    ids=["type-only", "empty-resources", "weight-unset-or-zero-is-one", "seed-rtcr-config"],
)
def test_args_defaulting(raw, expected) -> None:
    s = Args.model_validate(raw).scoring_strategy
    assert (s.type, [(r.name, r.weight) for r in s.resources]) == expected


_SS = "args.scoringStrategy"
_SHAPE = _SS + ".requestedToCapacityRatio.shape"
_QN = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        (
            {"scoringStrategy": {"type": "Balanced"}},
            [
                'args.scoringStrategy.type: Unsupported value: "Balanced": supported values: '
                '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}},
            [
                'args.scoringStrategy.type: Unsupported value: "": supported values: '
                '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
            ],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 101}, {"name": "memory", "weight": -1}],
                }
            },
            [
                f"{_SS}.resources[0].weight: Invalid value: 101: "
                "resource weight of cpu not in valid range (0, 100]",
                f"{_SS}.resources[1].weight: Invalid value: -1: "
                "resource weight of memory not in valid range (0, 100]",
            ],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            [f"{_SHAPE}: Required value: at least one point must be specified"],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 60, "score": 1},
                            {"utilization": 50, "score": 2},
                            {"utilization": 40, "score": 3},
                        ]
                    },
                }
            },
            [
                f"{_SHAPE}[1].utilization: Invalid value: 50: "
                "values must be sorted in increasing order"
            ],
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": -1, "score": 11},
                            {"utilization": 101, "score": -2},
                        ]
                    },
                }
            },
            [
                f"{_SHAPE}[0].utilization: Invalid value: -1: not in valid range [0, 100]",
                f"{_SHAPE}[0].score: Invalid value: 11: not in valid range [0, 10]",
                f"{_SHAPE}[1].utilization: Invalid value: 101: not in valid range [0, 100]",
                f"{_SHAPE}[1].score: Invalid value: -2: not in valid range [0, 10]",
            ],
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            ["args.scoringStrategy.requestedToCapacityRatio: Required value"],
        ),
        (
            {"ignoredResources": ["example.com/foo", "-bad"]},
            [f'args.ignoredResources[1]: Invalid value: "-bad": name part {_QN}'],
        ),
        (
            {"ignoredResourceGroups": ["example.com", "example.com/foo"]},
            [
                'args.ignoredResourceGroups[1]: Invalid value: "example.com/foo": '
                "resource group name can't contain '/'"
            ],
        ),
        (
            {"ignoredResources": ["a/b/c"]},
            [
                f'args.ignoredResources[0]: Invalid value: "a/b/c": a valid label key {_QN} '
                "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
        # (The core's did-you-mean then suggests "shape" itself, known from a sibling model.)
        (
            {"scoringStrategy": {"type": "LeastAllocated", "shape": []}},
            ['args.scoringStrategy.shape: unknown field "shape" (did you mean "shape"?)'],
        ),
        (
            {"ignoredResource": ["x"]},
            [
                'args.ignoredResource: unknown field "ignoredResource" '
                '(did you mean "ignoredResources"?)'
            ],
        ),
    ],
    ids=[
        "unsupported-type",
        "type-required-when-strategy-given",
        "weights-out-of-range",
        "empty-shape",
        "shape-not-increasing-first-only",
        "shape-ranges",
        "rtcr-without-param",
        "ignored-resource-not-a-label-name",
        "ignored-group-with-slash",
        "ignored-resource-two-slashes",
        "unknown-key-nested",
        "unknown-key-typo",
    ],
)
def test_args_validation(raw, problems) -> None:
    with pytest.raises(ValidationError) as err:
        Args.model_validate(raw)
    assert [str(p) for p in validation_error_problems(err.value, ["args"], Args)] == problems


# ---------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------


def test_events_to_register() -> None:
    events = plugin().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    assert [e.queueing_hint for e in events] == [
        is_schedulable_after_pod_event,
        is_schedulable_after_node_change,
    ]


Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
TARGET = make_pod("target").uid("t").req(cpu="1", memory="1Gi")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (make_pod("x").uid("x").req(cpu="1").node("n"), None, Q),
        (make_pod("x").uid("x").req(cpu="1"), None, S),
        (make_pod("x").uid("x").req(cpu="1").nominated_node("n"), None, Q),
        (make_pod("t").uid("t").req(cpu="2"), make_pod("t").uid("t").req(cpu="1"), Q),
        (make_pod("x").uid("x").req(cpu="2"), make_pod("x").uid("x").req(cpu="1"), S),
        (
            make_pod("x").uid("x").req(cpu="2").node("n"),
            make_pod("x").uid("x").req(cpu="1").node("n"),
            Q,
        ),
        (
            make_pod("x").uid("x").req(cpu="1", ephemeral_storage="2Gi").node("n"),
            make_pod("x").uid("x").req(cpu="1", ephemeral_storage="1Gi").node("n"),
            S,
        ),
        (
            make_pod("x").uid("x").req(memory="2Gi").node("n"),
            make_pod("x").uid("x").req(memory="1Gi").node("n"),
            Q,
        ),
    ],
    ids=[
        "bound-pod-deleted",
        "unbound-pod-deleted",
        "nominated-pod-deleted",
        "target-scaled-down",
        "unbound-pod-scaled-down",
        "bound-pod-cpu-scaled-down",
        "unrequested-resource-scaled-down",
        "bound-pod-memory-scaled-down",
    ],
)
def test_pod_event_hint(old, new, expected) -> None:
    assert (
        is_schedulable_after_pod_event(TARGET.obj(), old.obj(), None if new is None else new.obj())
        == expected
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, make_node().capacity(cpu="4", memory="4Gi"), Q),
        (None, make_node().capacity(cpu="500m", memory="4Gi"), S),
        (
            make_node().capacity(cpu="1", memory="1Gi"),
            make_node().capacity(cpu="4", memory="4Gi"),
            Q,
        ),
        (
            make_node().capacity(cpu="4", memory="4Gi"),
            make_node().capacity(cpu="4", memory="4Gi"),
            S,
        ),
        (
            make_node().capacity(cpu="4", memory="4Gi"),
            make_node().capacity(cpu="4", memory="4Gi", pods="200"),
            Q,
        ),
        (
            make_node().capacity(cpu="4", memory="4Gi"),
            make_node().capacity(cpu="4", memory="4Gi", ephemeral_storage="1Gi"),
            S,
        ),
        (
            make_node().capacity(cpu="4", memory="4Gi"),
            make_node().capacity(cpu="4", memory="500Mi"),
            S,
        ),
    ],
    ids=[
        "added-and-fits",
        "added-too-small",
        "grew-and-fits",
        "unchanged",
        "pod-count-grew",
        "unrequested-resource-grew",
        "shrank-below-request",
    ],
)
def test_node_change_hint(old, new, expected) -> None:
    assert (
        is_schedulable_after_node_change(
            TARGET.obj(), None if old is None else old.obj(), new.obj()
        )
        == expected
    )


def test_batch_on_a_subset_of_the_table_rows() -> None:
    # The runtime passes batches of the still-feasible nodes: rows need not be 0..n-1.
    from kubesched import NodeBatch, NodeTable

    infos = [
        node_info(make_node("a").capacity(cpu="4", memory="4Gi")),
        node_info(make_node("b").capacity(cpu="1", memory="4Gi")),
        node_info(make_node("c").capacity(cpu="8", memory="1Gi"), make_pod("e").req(cpu="1")),
    ]
    table = NodeTable(infos)
    sub = NodeBatch(table, [2, 1], [infos[2], infos[1]])
    pl = plugin(MOST)
    pi = PodInfo(make_pod().req(cpu="2", memory="512Mi").obj())
    state = CycleState()
    pl.pre_filter(state, pi)
    pl.pre_score(state, pi)
    verdicts = batch_verdicts(pl.filter_nodes(state, sub), len(sub))
    assert verdicts[0] is None
    assert (verdicts[1].code, verdicts[1].reasons) == (UU, ["Insufficient cpu"])
    assert pl.score_nodes(state, pi, sub).tolist() == [pl.score(state, pi, ni) for ni in sub.infos]


def test_pod_level_requests_are_what_the_filter_checks():
    # PodLevelResources (on by default upstream since 1.34): the pod-level requests
    # replace the containers' sum, here far above the node.
    from kubesched.api import Pod
    from kubesched.testing import framework_for, make_node, run_filter

    pod = Pod.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c"}],
                "resources": {"requests": {"cpu": "8", "memory": "64Gi"}},
            },
        }
    )
    fw = framework_for(NodeResourcesFit)
    statuses = run_filter(fw, pod, [make_node("n").capacity(cpu="4", memory="8Gi").obj()])
    assert statuses["n"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["n"].reasons == ["Insufficient cpu", "Insufficient memory"]


POD_LEVEL_GATE_CASES = [
    # (id, PodLevelResources, Filter's verdict on a node with 2 of its 4 cpus free,
    #  the pod's (cpu, memory) as the Fit strategies and BalancedAllocation count it)
    ("gate-on", True, (U, ["Insufficient cpu"]), (3000, 2 * 200 * MI), (3000, 0)),
    ("gate-off", False, None, (1100, 2 * 200 * MI), (1000, 0)),
]


@pytest.mark.parametrize(
    ("gate", "verdict", "fit_requests", "balanced_requests"),
    [c[1:] for c in POD_LEVEL_GATE_CASES],
    ids=[c[0] for c in POD_LEVEL_GATE_CASES],
)
def test_pod_level_resources_follow_the_gate(gate, verdict, fit_requests, balanced_requests):
    """A pod asking 3 cpus at pod level, with containers of 1 cpu and of nothing: under
    the PodLevelResources gate Filter and both scorers count the 3 cpus; with it off,
    the containers (the second counting the 100m default when scoring)."""
    from kubesched_builtin.noderesources.balanced_allocation import (
        PRE_SCORE_KEY as BALANCED_KEY,
    )
    from kubesched_builtin.noderesources.balanced_allocation import (
        NodeResourcesBalancedAllocation,
    )

    pod = Pod.model_validate(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "b"},
                ],
                "resources": {"requests": {"cpu": "3"}},
            },
        }
    )
    gates = FeatureGates({"PodLevelResources": gate})
    busy = make_pod("busy").req(cpu="2")
    ni = node_info(make_node("n").capacity(cpu="4", memory="8Gi"), busy)
    fit = plugin(gates=gates)
    state = CycleState()
    fit.pre_filter(state, PodInfo(pod))
    status = fit.filter(state, ni)
    assert (None if status is None else (status.code, status.reasons)) == verdict
    fit.pre_score(state, PodInfo(pod))
    assert state.read(PRE_SCORE_KEY) == fit_requests
    balanced = make_framework(NodeResourcesBalancedAllocation, feature_gates=gates).plugin(
        "NodeResourcesBalancedAllocation"
    )
    balanced.pre_score(state, PodInfo(pod))
    assert state.read(BALANCED_KEY) == balanced_requests


def test_null_scoring_strategy_is_the_default_one():
    # SetDefaults_NodeResourcesFitArgs: LeastAllocated over cpu:1, memory:1.
    strategy = Args.model_validate({"scoringStrategy": None}).scoring_strategy
    assert strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("memory", 1)]
