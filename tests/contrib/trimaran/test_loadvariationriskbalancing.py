"""LoadVariationRiskBalancing: upstream's score cases, args defaulting, batch == per node."""

from __future__ import annotations

import pytest

from kubesched import NodeInfo
from kubesched.testing import make_framework, make_pod, node_batch
from kubesched_contrib.trimaran import LoadVariationRiskBalancing, LoadVariationRiskBalancingArgs
from kubesched_contrib.trimaran.loadvariationriskbalancing import risk_score

from .conftest import node

MI = 1024 * 1024


def pod(cpu_milli: int | None = None, memory: int | None = None):
    """upstream getPodWithContainersAndOverhead: requests = limits, a zero init container."""
    b = make_pod("p").init_container({"cpu": "0", "memory": "0"})
    if cpu_milli is not None:
        amounts = {"cpu": f"{cpu_milli}m", "memory": str(memory)}
        b = b.container(amounts, amounts)
    return b.obj()


# Upstream TestScore (loadvariationriskbalancing_test.go): node 1000m / 1Gi.
CASES = [
    ("new node", make_pod("p").obj(), [("CPU", "AVG", 50)], 75),
    ("hot node", make_pod("p").obj(), [("CPU", "AVG", 100)], 50),
    ("average and stDev metrics", pod(200, 256 * MI), [("CPU", "AVG", 30), ("CPU", "STD", 16)], 67),
    (
        "CPU and Memory metrics",
        pod(100, 512 * MI),
        [("CPU", "AVG", 40), ("CPU", "STD", 16), ("Memory", "AVG", 50), ("Memory", "STD", 10)],
        45,
    ),
    (
        "pick worst case: CPU or Memory",
        pod(100, 512 * MI),
        [("CPU", "AVG", 80), ("CPU", "STD", 20), ("Memory", "AVG", 25), ("Memory", "STD", 15)],
        45,
    ),
    ("404 resp from watcher", make_pod("p").obj(), None, 0),
    # Beyond upstream's table:
    ("memory only, 62.5 rounds up", pod(0, 512 * MI), [("Memory", "AVG", 25)], 63),
    ("latest operator counts as the average", make_pod("p").obj(), [("CPU", "Latest", 50)], 75),
    ("avg beats latest", make_pod("p").obj(), [("CPU", "AVG", 20), ("CPU", "Latest", 90)], 90),
    ("over capacity clamps to 1", pod(900, 0), [("CPU", "AVG", 90)], 50),
]


def framework(args: dict):
    return make_framework(LoadVariationRiskBalancing, args={"LoadVariationRiskBalancing": args})


@pytest.mark.parametrize(
    ("pod_obj", "metrics", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score_from_a_metrics_file(pod_obj, metrics, expected, metrics_file):
    nodes = {"node-1": metrics} if metrics is not None else {}
    pl = framework({"metricsFile": metrics_file(nodes)}).plugin("LoadVariationRiskBalancing")
    ni = NodeInfo(node())
    assert pl.score(pod_obj, ni) == expected
    assert pl.score_nodes(pod_obj, node_batch([ni])).tolist() == [expected]


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"kubesched.io/cpu-utilization": "30", "kubesched.io/cpu-utilization-stddev": "16"}, 67),
        (
            {
                "kubesched.io/cpu-utilization": "40",
                "kubesched.io/cpu-utilization-stddev": "16",
                "kubesched.io/memory-utilization": "50",
                "kubesched.io/memory-utilization-stddev": "10",
            },
            57,  # memory: mu 0.5 + 0.25, sigma 0.1: 57.5 exactly, 57.4999... in float64 (as Go)
        ),
        ({}, 0),
        ({"kubesched.io/cpu-utilization": "n/a"}, 0),
    ],
    ids=["cpu-annotations", "cpu-and-memory-annotations", "no-annotations", "bad-annotation"],
)
def test_score_from_annotations(annotations, expected):
    pl = framework({}).plugin("LoadVariationRiskBalancing")
    ni = NodeInfo(node(annotations=annotations))
    p = pod(200, 256 * MI)
    assert pl.score(p, ni) == expected
    assert pl.score_nodes(p, node_batch([ni])).tolist() == [expected]


@pytest.mark.parametrize(
    ("args", "margin", "sensitivity"),
    [
        ({}, 1.0, 1.0),
        ({"safeVarianceMargin": -5}, 1.0, 1.0),
        ({"safeVarianceMargin": -5, "safeVarianceSensitivity": -1}, 1.0, 1.0),
        ({"safeVarianceMargin": 3, "safeVarianceSensitivity": 2}, 3.0, 2.0),
    ],
    ids=["defaults", "bad margin substituted", "bad sensitivity substituted", "given"],
)
def test_args_defaulting(args, margin, sensitivity):
    a = LoadVariationRiskBalancingArgs.model_validate(args)
    assert (a.safe_variance_margin, a.safe_variance_sensitivity) == (margin, sensitivity)


@pytest.mark.parametrize(
    ("margin", "sensitivity", "expected"),
    [(1, 1, 67.0), (3, 2, 25.0), (1, 0, 75.0), (0, 1, 75.0)],
    ids=["mu-plus-sigma", "mu-plus-3-sqrt-sigma", "zero-sensitivity", "zero-margin"],
)
def test_margin_and_sensitivity(margin, sensitivity, expected):
    # capacity 1000, request 200, average 300, deviation 160.
    assert risk_score(1000, 200, 300, 160, margin, sensitivity) == pytest.approx(expected)


def test_batch_matches_per_node_on_a_mixed_cluster(metrics_file):
    names = [f"n{i}" for i in range(6)]
    path = metrics_file(
        {
            "n0": [("CPU", "AVG", 10)],
            "n1": [("CPU", "AVG", 70), ("CPU", "STD", 25), ("Memory", "AVG", 5)],
            "n2": [("Memory", "AVG", 95), ("Memory", "STD", 40)],
            "n3": [("Memory", "Latest", 33)],
            "n5": [("CPU", "AVG", 150)],
        }
    )
    pl = framework({"metricsFile": path, "safeVarianceSensitivity": 2}).plugin(
        "LoadVariationRiskBalancing"
    )
    infos = [NodeInfo(node(n, cpu="4", memory="8Gi")) for n in names]
    for p in (make_pod("none").obj(), pod(300, 1024 * MI), pod(5000, 0)):
        assert pl.score_nodes(p, node_batch(infos)).tolist() == [pl.score(p, ni) for ni in infos]
