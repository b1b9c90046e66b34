"""LowRiskOverCommitment: upstream's risk and score cases, args defaulting, the beta fit."""

from __future__ import annotations

import math

import pytest

from kubesched import NodeInfo, PodInfo, go_round
from kubesched.testing import make_framework, make_pod
from kubesched_contrib.trimaran import LowRiskOverCommitment, LowRiskOverCommitmentArgs
from kubesched_contrib.trimaran.beta import (
    BetaDistribution,
    compute_probability,
    regularized_incomplete,
)
from kubesched_contrib.trimaran.lowriskovercommitment import NodeRequestsAndLimits, resource_risk
from kubesched_contrib.trimaran.metrics import Metric

from .conftest import node

# Upstream TestLowRiskOverCommitment_computeRisk: node-A 4000m / 4Ki, CPU 80 %, memory 25 %.
METRICS_A = [
    Metric("CPU", "AVG", 80),
    Metric("CPU", "STD", 0),
    Metric("Memory", "AVG", 25),
    Metric("Memory", "STD", 0),
]
NRLA_A1 = {
    "CPU": NodeRequestsAndLimits(2000, 3000, 1000, 2000, 4000),
    "Memory": NodeRequestsAndLimits(2048, 6144, 0, 0, 4096),
}
NRLA_A2 = {
    "CPU": NodeRequestsAndLimits(4000, 5000, 3000, 4000, 4000),
    "Memory": NodeRequestsAndLimits(1024, 7168, 512, 6144, 4096),
}
RISKS = [
    ("test-cpu-1", "CPU", NRLA_A1, 0.5),
    ("test-mem-1", "Memory", NRLA_A1, 0.25),
    ("test-cpu-2", "CPU", NRLA_A2, 1.0),
    ("test-mem-2", "Memory", NRLA_A2, 0.75),
]


@pytest.mark.parametrize(
    ("metric_type", "totals", "expected"), [c[1:] for c in RISKS], ids=[c[0] for c in RISKS]
)
def test_compute_risk(metric_type, totals, expected):
    risk = resource_risk(
        METRICS_A, metric_type, totals[metric_type], 0.5, 5, mega=metric_type == "Memory"
    )
    assert risk == expected


def framework(args: dict | None = None):
    return make_framework(LowRiskOverCommitment, args={"LowRiskOverCommitment": args or {}})


def score(fw, pod, ni):
    state = fw.new_cycle_state()
    pl = fw.plugin("LowRiskOverCommitment")
    pl.pre_score(state, pod)
    return pl.score(state, pod, ni)


@pytest.mark.parametrize(
    ("pod", "metrics", "placed", "expected"),
    [
        # Upstream TestLowRiskOverCommitment_Score "new node": a best-effort pod scores 0.
        (make_pod("p").obj(), [("CPU", "AVG", 20)], [], 0),
        # No metrics for the node: 0.
        (make_pod("p").req(cpu="100m").obj(), None, [], 0),
        # Requests well within an idle node, no spread: no risk.
        (make_pod("p").req(cpu="100m", memory="100Mi").obj(), [("CPU", "AVG", 0)], [], 100),
        # Limits twice the node's cpu: limit risk (2000 - 1000) / (2000 - 100) for cpu,
        # weighted 0.5; the load risk is 0 (nothing requested by others, load 0).
        (
            make_pod("p").container({"cpu": "100m"}, {"cpu": "2"}).obj(),
            [("CPU", "AVG", 0)],
            [],
            round(100 * (1 - 0.5 * 1000 / 1900)),
        ),
        # A loaded node whose other pod requests 500m (limit 800m): the load (60 % ± 10 %,
        # widened by √5) may exceed what it requested, given it stays under its limit.
        (
            make_pod("p").req(cpu="100m").obj(),
            [("CPU", "AVG", 60), ("CPU", "STD", 10)],
            [make_pod("other").container({"cpu": "500m"}, {"cpu": "800m"}).node("node-1").obj()],
            None,
        ),
        # The same with the other pod's limit equal to its request: the load is known to
        # stay under it, so no load risk.
        (
            make_pod("p").req(cpu="100m").obj(),
            [("CPU", "AVG", 60), ("CPU", "STD", 10)],
            [make_pod("other").req(cpu="500m").node("node-1").obj()],
            100,
        ),
    ],
    ids=[
        "upstream: new node",
        "no metrics",
        "idle node",
        "limit risk",
        "load risk",
        "load under the limits",
    ],
)
def test_score(pod, metrics, placed, expected, metrics_file):
    path = metrics_file({"node-1": metrics} if metrics is not None else {})
    fw = framework({"metricsFile": path})
    ni = NodeInfo(node(), [PodInfo(p) for p in placed])
    got = score(fw, pod, ni)
    if expected is None:
        # mu 0.6, sigma min(0.1 √5, √(0.24 × 0.99)); P(load <= 0.5 | load <= 0.8).
        sigma = min(0.1 * math.sqrt(5), math.sqrt(0.6 * 0.4 * 0.99))
        below, dist = compute_probability(0.6, sigma, 0.5)
        conditioned = below / dist.cdf(0.8)
        assert 0 < conditioned < 1
        expected = go_round(100 * (1 - 0.5 * (1 - conditioned)))
    assert got == expected


@pytest.mark.parametrize(
    ("args", "window", "weights"),
    [
        ({}, 5, {"cpu": 0.5, "memory": 0.5}),
        ({"smoothingWindowSize": -5}, 5, {"cpu": 0.5, "memory": 0.5}),
        ({"riskLimitWeights": {}}, 5, {"cpu": 0.5, "memory": 0.5}),
        ({"riskLimitWeights": {"cpu": 1.5, "memory": 0.2}}, 5, {"cpu": 0.5, "memory": 0.2}),
        ({"smoothingWindowSize": 3}, 3, {"cpu": 0.5, "memory": 0.5}),
    ],
    ids=[
        "defaults",
        "upstream: bad window",
        "upstream: no weights",
        "weight out of range",
        "given",
    ],
)
def test_args_defaulting(args, window, weights):
    a = LowRiskOverCommitmentArgs.model_validate(args)
    assert a.smoothing_window_size == window
    assert a.risk_limit_weights == weights


@pytest.mark.parametrize(
    ("x", "a", "b", "expected"),
    [
        (0.3, 1, 1, 0.3),  # uniform
        (0.5, 2, 2, 0.5),  # symmetric
        (0.2, 3, 1, 0.2**3),  # I_x(a, 1) = x^a
        (0.2, 1, 3, 1 - 0.8**3),  # I_x(1, b) = 1 - (1-x)^b
        (0.9, 0.5, 0.5, 2 / math.pi * math.asin(math.sqrt(0.9))),  # arcsine
        (0.0, 2, 3, 0.0),
        (1.0, 2, 3, 1.0),
    ],
    ids=["uniform", "symmetric", "x^a", "1-(1-x)^b", "arcsine", "zero", "one"],
)
def test_regularized_incomplete_beta(x, a, b, expected):
    assert regularized_incomplete(x, a, b) == pytest.approx(expected, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize(
    ("mu", "sigma", "threshold", "expected"),
    [(0, 0.1, 0.5, 1.0), (0.3, 0, 0.5, 1.0), (0.7, 0, 0.5, 0.0), (0.5, 0.6, 0.5, 0.0)],
    ids=["zero mean", "no spread below", "no spread above", "no beta fits"],
)
def test_compute_probability_edges(mu, sigma, threshold, expected):
    assert compute_probability(mu, sigma, threshold)[0] == expected


def test_beta_moments_match():
    dist = BetaDistribution.matching(0.4, 0.1**2 + 0.4**2)
    mean = dist.alpha / (dist.alpha + dist.beta)
    var = dist.alpha * dist.beta / ((dist.alpha + dist.beta) ** 2 * (dist.alpha + dist.beta + 1))
    assert mean == pytest.approx(0.4) and var == pytest.approx(0.01)


def test_batch_matches_per_node_and_follows_the_node_pods(metrics_file):
    from kubesched.testing import node_batch

    names = [f"n{i}" for i in range(6)]
    path = metrics_file(
        {
            "n0": [("CPU", "AVG", 10)],
            "n1": [("CPU", "AVG", 70), ("CPU", "STD", 15), ("Memory", "AVG", 40)],
            "n2": [("Memory", "AVG", 60), ("Memory", "STD", 20)],
            "n3": [("Unknown", "AVG", 33)],
            "n5": [("CPU", "AVG", 30), ("CPU", "STD", 5)],
        }
    )
    fw = framework({"metricsFile": path})
    pl = fw.plugin("LowRiskOverCommitment")
    running = [
        make_pod(f"r{i}").container({"cpu": "1", "memory": "1Gi"}, {"cpu": "3"}).node(n).obj()
        for i, n in enumerate(names)
    ]
    infos = [
        NodeInfo(
            node(n, cpu="4", memory="8Gi"), [PodInfo(p) for p in running if p.spec.node_name == n]
        )
        for n in names
    ]
    pods = (
        make_pod("none").obj(),
        make_pod("small").req(cpu="300m", memory="1Gi").obj(),
        make_pod("bursty").container({"cpu": "500m"}, {"cpu": "4", "memory": "9Gi"}).obj(),
    )
    for p in pods:
        state = fw.new_cycle_state()
        pl.pre_score(state, p)
        batch = pl.score_nodes(state, p, node_batch(infos)).tolist()
        assert batch == [pl.score(state, p, ni) for ni in infos]
    # A node whose pods changed is recomputed (its NodeInfo generation changed).
    before = score(fw, pods[1], infos[5])
    infos[5].add_pod(PodInfo(make_pod("more").req(cpu="2500m").node("n5").obj()))
    assert score(fw, pods[1], infos[5]) < before
