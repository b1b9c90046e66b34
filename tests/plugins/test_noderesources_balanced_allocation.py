"""NodeResourcesBalancedAllocation: (1 - std of the resource fractions) * 100, best-effort skip.

Cases re-derived from upstream's balanced_allocation_test.go table and from the formula
(Kubernetes 1.35 source); every Score case is checked per node and vectorised.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched import Code, CycleState, NodeInfo, PodInfo
from kubesched.config.validation import validation_error_problems
from kubesched.features import FeatureGates
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_builtin.noderesources.balanced_allocation import (
    NAME,
    PRE_SCORE_KEY,
    BalancedScorer,
    NodeResourcesBalancedAllocation,
)
from kubesched_builtin.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocationArgs as Args,
)
from kubesched_builtin.noderesources.fit import NodeResourcesFit

GI = 1024**3
MI = 1024**2


def plugin(
    args: dict | None = None, gates: FeatureGates | None = None
) -> NodeResourcesBalancedAllocation:
    fw = make_framework(
        NodeResourcesBalancedAllocation,
        args={NAME: Args.model_validate(args or {})},
        feature_gates=gates,
    )
    return fw.plugin(NAME)


def node_info(node_builder, *pods) -> NodeInfo:
    node = node_builder.obj()
    return NodeInfo(node, [PodInfo(p.node(node.metadata.name).obj()) for p in pods])


def run_score(pl, pod, infos) -> list[int]:
    """Per node and vectorised, with and without PreScore; all must agree."""
    pi = PodInfo(pod.obj())
    state = CycleState()
    without_state = [pl.score(state, pi, ni) for ni in infos]
    assert pl.pre_score(state, pi) is None
    single = [pl.score(state, pi, ni) for ni in infos]
    batch = pl.score_nodes(state, pi, node_batch(infos))
    assert isinstance(batch, np.ndarray)
    assert batch.tolist() == single == without_state
    return single


def expected(*fractions: float) -> int:
    """The formula, written independently of the plugin."""
    fs = [min(f, 1.0) for f in fractions]
    if len(fs) == 2:
        std = abs(fs[0] - fs[1]) / 2
    elif len(fs) > 2:
        mean = sum(fs) / len(fs)
        std = math.sqrt(sum((f - mean) ** 2 for f in fs) / len(fs))
    else:
        std = 0.0
    return int((1 - std) * 100)


CASES = [
    # (id, args, pod, [(node, existing pods)], expected)
    (
        "balanced-both-nodes",
        {},
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (make_node("a").capacity(cpu="4", memory="4Gi"), []),
            (make_node("b").capacity(cpu="2", memory="2Gi"), []),
        ],
        [100, 100],
    ),
    (
        "differently-sized-nodes",
        {},
        make_pod().req(cpu="3", memory="5000Mi"),
        [
            (make_node("a").capacity(cpu="4", memory="10000Mi"), []),
            (make_node("b").capacity(cpu="6", memory="10000Mi"), []),
        ],
        # a: |0.75 - 0.5|/2 = 0.125 -> 87; b: |0.5 - 0.5| -> 100
        [87, 100],
    ),
    (
        "existing-pods-counted-with-their-requests",
        {},
        make_pod().req(cpu="1", memory="2Gi"),
        [
            (
                make_node("a").capacity(cpu="4", memory="8Gi"),
                [make_pod("e").req(cpu="2", memory="1Gi")],
            )
        ],
        [expected(3 / 4, 3 / 8)],
    ),
    (
        "uses-requested-not-nonzero-defaults",
        {},
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [make_pod("e1"), make_pod("e2")])],
        # the two pods without requests add nothing here (Fit's scoring would add 100m/200Mi each)
        [100],
    ),
    (
        "cpu-only-pod-still-scored",
        {},
        make_pod().req(cpu="2"),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        [75],
    ),
    (
        "fraction-capped-at-one",
        {},
        make_pod().req(cpu="3", memory="1Gi"),
        [(make_node("a").capacity(cpu="2", memory="4Gi"), [make_pod("e").req(cpu="1")])],
        # cpu 4/2 -> 1 (capped), memory 0.25 -> std 0.375 -> 62
        [62],
    ),
    (
        "node-without-memory-one-fraction",
        {},
        make_pod().req(cpu="1", memory="1Gi"),
        [(make_node("a").capacity(cpu="4"), [])],
        [100],
    ),
    (
        "three-resources-std",
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]},
        make_pod().container({"cpu": "1", "memory": "3Gi", "example.com/gpu": "1"}),
        [(make_node("a").capacity({"cpu": "4", "memory": "4Gi", "example.com/gpu": "2"}), [])],
        [expected(0.25, 0.75, 0.5)],
    ),
    (
        "extended-resource-missing-on-node-is-skipped",
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]},
        make_pod().container({"cpu": "1", "memory": "3Gi", "example.com/gpu": "1"}),
        [(make_node("a").capacity(cpu="4", memory="4Gi"), [])],
        [expected(0.25, 0.75)],
    ),
    (
        "extended-resource-not-requested-is-skipped",
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]},
        make_pod().req(cpu="1", memory="3Gi"),
        [
            (
                make_node("a").capacity({"cpu": "4", "memory": "4Gi", "example.com/gpu": "2"}),
                [make_pod("e").container({"example.com/gpu": "2"})],
            )
        ],
        [expected(0.25, 0.75)],
    ),
    (
        "four-resources-uneven",
        {
            "resources": [
                {"name": "cpu"},
                {"name": "memory"},
                {"name": "ephemeral-storage"},
                {"name": "hugepages-2Mi"},
            ]
        },
        make_pod().container(
            {"cpu": "100m", "memory": "1Gi", "ephemeral-storage": "7Gi", "hugepages-2Mi": "2Mi"}
        ),
        [
            (
                make_node("a").capacity(
                    {
                        "cpu": "3",
                        "memory": "3Gi",
                        "ephemeral-storage": "10Gi",
                        "hugepages-2Mi": "8Mi",
                    }
                ),
                [],
            )
        ],
        [expected(100 / 3000, 1 / 3, 0.7, 0.25)],
    ),
    (
        "ties-and-truncation",
        {},
        make_pod().req(cpu="1", memory="1Gi"),
        [
            (make_node("a").capacity(cpu="3", memory="6Gi"), []),
            (make_node("b").capacity(cpu="6", memory="3Gi"), []),
        ],
        # |1/3 - 1/6|/2 = 0.0833.. -> 91.66 truncated to 91, symmetric
        [91, 91],
    ),
]


@pytest.mark.parametrize(
    ("args", "pod", "nodes", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_score(args, pod, nodes, want) -> None:
    infos = [node_info(n, *existing) for n, existing in nodes]
    assert run_score(plugin(args), pod, infos) == want


@pytest.mark.parametrize(
    ("args", "pod"),
    [
        ({}, make_pod()),
        ({}, make_pod().container({"example.com/gpu": "1"})),
        ({"resources": [{"name": "example.com/gpu"}]}, make_pod().req(cpu="1")),
    ],
    ids=["no-requests", "requests-only-unscored-resources", "configured-resource-not-requested"],
)
def test_best_effort_pod_is_skipped(args, pod) -> None:
    pl = plugin(args)
    pi = PodInfo(pod.obj())
    state = CycleState()
    status = pl.pre_score(state, pi)
    assert status is not None and status.code == Code.SKIP
    assert PRE_SCORE_KEY not in state
    infos = [node_info(make_node("a").capacity(cpu="4", memory="4Gi"), make_pod("e").req(cpu="3"))]
    # Without PreScore, Score returns 0 for such a pod (upstream's fallback).
    assert pl.score(state, pi, infos[0]) == 0
    assert pl.score_nodes(state, pi, node_batch(infos)).tolist() == [0]


def test_through_the_runtime_beside_fit() -> None:
    fw = make_framework(NodeResourcesFit, NodeResourcesBalancedAllocation)
    infos = [
        node_info(
            make_node("a").capacity(cpu="4", memory="8Gi"), make_pod("e").req(cpu="1", memory="1Gi")
        ),
        node_info(
            make_node("b").capacity(cpu="2", memory="16Gi"),
            make_pod("e").req(cpu="1", memory="1Gi"),
        ),
    ]
    pi = PodInfo(make_pod().req(cpu="3", memory="2Gi").obj())
    state = fw.new_cycle_state()
    assert fw.run_pre_score_plugins(state, pi, infos).is_success()
    result = fw.run_score_plugins(state, pi, node_batch(infos))
    by_plugin = {p.plugin: p for p in result.plugins}
    # a: cpu 4/4 = 1, memory 3/8 -> std 0.3125 -> 68; b: cpu 4/2 capped at 1, memory 3/16
    assert by_plugin["NodeResourcesBalancedAllocation"].normalized.tolist() == [68, 59]
    assert by_plugin["NodeResourcesFit"].normalized.tolist() == [31, 40]
    assert result.totals.tolist() == [99, 99]

    best_effort = PodInfo(make_pod("be").obj())
    state = fw.new_cycle_state()
    assert fw.run_pre_score_plugins(state, best_effort, infos).is_success()
    assert state.skip_score_plugins == {"NodeResourcesBalancedAllocation"}
    result = fw.run_score_plugins(state, best_effort, node_batch(infos))
    assert [p.plugin for p in result.plugins] == ["NodeResourcesFit"]


def test_vectorised_std_matches_scalar_bit_for_bit() -> None:
    rng = random.Random(11)
    scorer = BalancedScorer()
    for _ in range(300):
        r = rng.choice([2, 3, 4, 5])
        n = 40
        alloc = np.array(
            [
                [rng.choice([0, 1, 3, 7, 1000, 2**40 + 1, 2**60]) for _ in range(n)]
                for _ in range(r)
            ],
            dtype=np.int64,
        )
        req = np.array(
            [[rng.choice([0, 1, 2, 5, 999, 2**39, 2**61]) for _ in range(n)] for _ in range(r)],
            dtype=np.int64,
        )
        req = np.where(alloc == 0, 0, req)
        got = scorer.score_columns(req, alloc).tolist()
        want = [scorer.score(req[:, j].tolist(), alloc[:, j].tolist()) for j in range(n)]
        assert got == want


def test_random_nodes_agree() -> None:
    rng = random.Random(3)
    pl = plugin({"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]})
    for _ in range(20):
        infos = []
        for i in range(20):
            cap = {
                "cpu": f"{rng.choice([0, 1, 1500, 4000])}m",
                "memory": str(rng.choice([0, 3, GI])),
            }
            if rng.random() < 0.5:
                cap["example.com/gpu"] = str(rng.choice([0, 2, 8]))
            pods = [
                make_pod(f"e{j}").container(
                    {"cpu": f"{rng.choice([0, 250])}m", "example.com/gpu": str(rng.choice([0, 1]))}
                )
                for j in range(rng.choice([0, 2]))
            ]
            infos.append(node_info(make_node(f"n{i}").capacity(cap), *pods))
        pod = make_pod().container(
            {
                "cpu": f"{rng.choice([0, 100])}m",
                "memory": str(rng.choice([0, MI])),
                "example.com/gpu": str(rng.choice([0, 1])),
            }
        )
        pi = PodInfo(pod.obj())
        if not any(pl.scorer.pod_requests(pi)):
            continue
        scores = run_score(pl, pod, infos)
        assert all(50 <= s <= 100 for s in scores)


# ---------------------------------------------------------------------------------------
# Args
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ({}, [("cpu", 1), ("memory", 1)]),
        ({"resources": []}, [("cpu", 1), ("memory", 1)]),
        (
            {"resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 0}]},
            [("cpu", 1), ("example.com/gpu", 1)],
        ),
    ],
    ids=["default", "empty-means-default", "weight-unset-or-zero-is-one"],
)
def test_args_defaults(raw, want) -> None:
    assert [(r.name, r.weight) for r in Args.model_validate(raw).resources] == want


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 2}]},
            ["args.resources[0].weight: Invalid value: 2: must be 1"],
        ),
        (
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "cpu", "weight": 3}]},
            [
                'args.resources[2].name: Duplicate value: "cpu"',
                "args.resources[2].weight: Invalid value: 3: must be 1",
            ],
        ),
        ({"resource": []}, ['args.resource: unknown field "resource" (did you mean "resources"?)']),
    ],
    ids=["weight-must-be-one", "duplicate-and-weight", "unknown-key"],
)
def test_args_validation(raw, problems) -> None:
    with pytest.raises(ValidationError) as err:
        Args.model_validate(raw)
    assert [str(p) for p in validation_error_problems(err.value, ["args"], Args)] == problems


def test_no_events_registered() -> None:
    # A Score-only plugin never rejects a pod, so it registers nothing (as upstream).
    assert not hasattr(NodeResourcesBalancedAllocation, "events_to_register")
