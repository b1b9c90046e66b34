"""NodeResourcesAllocatable: args, raw scores, normalised scores, batch == per node."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from kubesched import NodeInfo, PodInfo
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_contrib.noderesources import NodeResourcesAllocatable, NodeResourcesAllocatableArgs

GI = 1024**3


def node(name, cpu, memory, **extra):
    return make_node(name).capacity(cpu=cpu, memory=memory, pods=110, **extra).obj()


def run(nodes, args=None, pod=None):
    fw = make_framework(NodeResourcesAllocatable, args={"NodeResourcesAllocatable": args or {}})
    pi = PodInfo(pod or make_pod("p").req(cpu="1").obj())
    infos = [NodeInfo(n) for n in nodes]
    state = fw.new_cycle_state()
    fw.run_pre_score_plugins(state, pi, infos)
    pl = fw.plugin("NodeResourcesAllocatable")
    per_node = [pl.score(ni) for ni in infos]
    batch = pl.score_nodes(node_batch(infos)).tolist()
    assert batch == per_node
    result = fw.run_score_plugins(state, pi, node_batch(infos))
    return per_node, result


def normalized(result):
    """The plugin's scores after NormalizeScore, as the runtime computed them."""
    (plugin,) = [p for p in result.plugins if p.plugin == "NodeResourcesAllocatable"]
    return np.asarray(plugin.normalized).tolist()


CASES = [
    # (id, nodes, args, raw, normalised)
    (
        "least-default-weights",
        [node("small", "2", "4Gi"), node("big", "8", "16Gi")],
        {},
        # -(2000 << 20 + 4Gi) // (1<<20 + 1) and the same for 8 cpu / 16Gi
        [
            -((2000 * (1 << 20) + 4 * GI) // ((1 << 20) + 1)),
            -((8000 * (1 << 20) + 16 * GI) // ((1 << 20) + 1)),
        ],
        [100, 0],
    ),
    (
        "most-default-weights",
        [node("small", "2", "4Gi"), node("big", "8", "16Gi")],
        {"mode": "Most"},
        [
            (2000 * (1 << 20) + 4 * GI) // ((1 << 20) + 1),
            (8000 * (1 << 20) + 16 * GI) // ((1 << 20) + 1),
        ],
        [0, 100],
    ),
    (
        "cpu-only-three-nodes",
        [node("a", "2", "1Gi"), node("b", "4", "1Gi"), node("c", "3", "1Gi")],
        {"resources": [{"name": "cpu", "weight": 1}]},
        [-2000, -4000, -3000],
        [100, 0, 50],
    ),
    (
        "equal-nodes-all-zero",
        [node("a", "2", "1Gi"), node("b", "2", "1Gi")],
        {},
        None,
        [0, 0],
    ),
    (
        "truncation-toward-zero",
        [node("a", "1", "1"), node("b", "2", "1")],
        {"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]},
        # -(1000*2 + 1) / 3 = -667 (Go truncates; floor would give -668)
        [-667, -1333],
        [100, 0],
    ),
    (
        "scalar-resource",
        [node("a", "1", "1Gi", **{"nvidia.com/gpu": 2}), node("b", "1", "1Gi")],
        {"resources": [{"name": "nvidia.com/gpu", "weight": 1}], "mode": "Most"},
        [2, 0],
        [100, 0],
    ),
    (
        "unknown-non-scalar-resource-counts-zero",
        [node("a", "1", "1Gi"), node("b", "2", "1Gi")],
        {"resources": [{"name": "pods", "weight": 1}, {"name": "cpu", "weight": 1}]},
        [-500, -1000],
        [100, 0],
    ),
]


@pytest.mark.parametrize(
    ("nodes", "args", "raw", "norm"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_scores(nodes, args, raw, norm):
    per_node, result = run(nodes, args)
    if raw is not None:
        assert per_node == raw
    assert normalized(result) == norm


def test_defaults_and_empty_resources():
    a = NodeResourcesAllocatableArgs.model_validate({"resources": [], "mode": ""})
    assert [(r.name, r.weight) for r in a.resources] == [("cpu", 1 << 20), ("memory", 1)]
    assert a.mode == "Least"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"resources": [{"name": "cpu", "weight": 0}]},
            "Invalid value: 0: resource weight of cpu should be a positive value, got :0",
        ),
        (
            {"resources": [{"name": "memory", "weight": -3}]},
            "resource weight of memory should be a positive value, got :-3",
        ),
        ({"mode": "Middle"}, 'Invalid value: "Middle": invalid support ModeType'),
        ({"resources": [{"name": "cpu", "weight": 1, "extra": 1}]}, "extra"),
    ],
    ids=["zero-weight", "negative-weight", "bad-mode", "unknown-key"],
)
def test_args_validation(args, message):
    with pytest.raises(ValidationError) as err:
        NodeResourcesAllocatableArgs.model_validate(args)
    assert message in str(err.value)
