"""TargetLoadPacking: args, predicted usage, scores, placed pods, batch == per node."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kubesched import NodeInfo, PodInfo
from kubesched.api import Node
from kubesched.cache import new_snapshot
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_contrib.targetloadpacking import (
    DEFAULT_CPU_UTILIZATION_ANNOTATION,
    TargetLoadPacking,
    TargetLoadPackingArgs,
    predict_utilization,
)


def node(
    name: str, util: str | None, cpu: str = "4", key: str = DEFAULT_CPU_UTILIZATION_ANNOTATION
):
    m = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).manifest()
    if util is not None:
        m["metadata"]["annotations"] = {key: util}
    return Node.model_validate(m)


POD_REQ_1 = make_pod("req1").req(cpu="1").obj()  # predicted 1500m (1.5 × request)
POD_LIMIT = make_pod("lim").container({"cpu": "250m"}, {"cpu": "500m"}).obj()  # limit: 500m
POD_NONE = make_pod("none").obj()  # no request: default 1000m
POD_OVERHEAD = make_pod("ovh").req(cpu="1").overhead(cpu="100m").obj()  # 1600m

CASES = [
    # (id, node, pod, args, expected score); capacity 4 cpu, target 40 by default
    ("penalised-above-target", node("n", "10"), POD_REQ_1, {}, 35),  # U = 47.5
    ("packed-below-target", node("n", "0"), POD_REQ_1, {}, 96),  # U = 37.5
    ("limit-used-as-prediction", node("n", "0"), POD_LIMIT, {}, 59),  # U = 12.5 -> 58.75
    ("default-request-half-rounds-up", node("n", "0"), POD_NONE, {}, 78),  # U = 25 -> 77.5
    ("overhead-counts-at-target", node("n", "0"), POD_OVERHEAD, {}, 100),  # U = 40
    ("over-capacity", node("n", "90"), POD_REQ_1, {}, 0),  # U = 127.5
    ("exactly-full", node("n", "62.5"), POD_REQ_1, {}, 0),  # U = 100
    ("no-annotation", node("n", None), POD_REQ_1, {}, 0),
    ("bad-annotation", node("n", "lots"), POD_REQ_1, {}, 0),
    ("negative-annotation", node("n", "-5"), POD_REQ_1, {}, 0),
    ("higher-target", node("n", "10"), POD_REQ_1, {"targetUtilization": 60}, 92),
    (
        "target-100-packs-everything-to-100",
        node("n", "10"),
        POD_REQ_1,
        {"targetUtilization": 100},
        100,
    ),
    ("multiplier", node("n", "0"), POD_REQ_1, {"defaultRequestsMultiplier": "1"}, 78),
    ("default-requests", node("n", "0"), POD_NONE, {"defaultRequests": {"cpu": "2"}}, 33),
    (
        "custom-annotation",
        node("n", "10", key="load/cpu"),
        POD_REQ_1,
        {"cpuUtilizationAnnotation": "load/cpu"},
        35,
    ),
    (
        "no-capacity",
        Node.model_validate(
            {"metadata": {"name": "n", "annotations": {DEFAULT_CPU_UTILIZATION_ANNOTATION: "50"}}}
        ),
        POD_REQ_1,
        {},
        40,
    ),
]


def framework(args=None):
    return make_framework(TargetLoadPacking, args={"TargetLoadPacking": args or {}})


@pytest.mark.parametrize(
    ("node_obj", "pod", "args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_score(node_obj, pod, args, expected):
    fw = framework(args)
    pl = fw.plugin("TargetLoadPacking")
    ni = NodeInfo(node_obj)
    assert pl.score(pod, ni) == expected
    assert pl.score_nodes(pod, node_batch([ni])).tolist() == [expected]


def test_batch_matches_per_node_on_a_mixed_cluster():
    nodes = [node(f"n{i}", u) for i, u in enumerate(["0", "10", "35", "62.5", None, "x", "99"])]
    fw = framework()
    pl = fw.plugin("TargetLoadPacking")
    infos = [NodeInfo(n) for n in nodes]
    for pod in (POD_REQ_1, POD_LIMIT, POD_NONE, POD_OVERHEAD):
        assert pl.score_nodes(pod, node_batch(infos)).tolist() == [
            pl.score(pod, ni) for ni in infos
        ]
    # Through the runtime: no normalisation, scores stay as computed.
    state = fw.new_cycle_state()
    result = fw.run_score_plugins(state, PodInfo(POD_REQ_1), node_batch(infos))
    assert result.totals.tolist() == [96, 35, 18, 0, 0, 0, 0]


def test_placed_pods_add_their_predicted_usage_until_they_leave():
    n = node("n", "0")
    fw = framework()
    pl = fw.plugin("TargetLoadPacking")
    placed = make_pod("placed").uid("u1").req(cpu="1").node("n").obj()
    state = fw.new_cycle_state()
    fw.run_reserve_plugins_reserve(state, PodInfo(placed), "n")
    snap = new_snapshot([placed], [n])
    (ni,) = snap.list()
    # U = (1500 + 1500) / 4000 = 75 % > 40: penalised to round(40 × 25 / 60) = 17.
    assert pl.score(POD_REQ_1, ni) == 17
    assert pl.score_nodes(POD_REQ_1, node_batch([ni])).tolist() == [17]
    # Gone from the node (deleted): no longer counted.
    assert pl.score(POD_REQ_1, NodeInfo(n)) == 96
    # Unreserved: forgotten.
    fw.run_reserve_plugins_unreserve(state, PodInfo(placed), "n")
    assert pl.score(POD_REQ_1, ni) == 96


def test_predict_utilization_sums_containers():
    pod = make_pod("p").container({"cpu": "200m"}).container(None, {"cpu": "1"}).container().obj()
    assert predict_utilization(pod, 1000, 1.5) == 300 + 1000 + 1000


def test_args_defaults():
    a = TargetLoadPackingArgs()
    assert a.target_utilization == 40
    assert a.default_requests["cpu"].milli_value() == 1000
    assert a.default_requests_multiplier == "1.5"
    assert TargetLoadPackingArgs(target_utilization=0).target_utilization == 40
    assert TargetLoadPackingArgs(target_utilization=-3).target_utilization == 40


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"defaultRequestsMultiplier": "x1"}, "unable to parse DefaultRequestsMultiplier"),
        ({"targetUtilization": 101}, "Invalid value: 101: not in valid range [1, 100]"),
        ({"cpuUtilizationAnnotation": ""}, "must not be empty"),
        ({"metricProvider": {"type": "SignalFx"}}, "SignalFx needs an access token"),
    ],
    ids=["bad-multiplier", "target-above-100", "empty-annotation", "signalfx-without-token"],
)
def test_args_validation(args, message):
    with pytest.raises(ValidationError) as err:
        TargetLoadPackingArgs.model_validate(args)
    assert message in str(err.value)


def test_pods_that_left_their_node_are_forgotten():
    from kubesched import NodeInfo, PodInfo
    from kubesched.testing import make_node, make_pod
    from kubesched_contrib.targetloadpacking import TargetLoadPacking

    plugin = TargetLoadPacking(None, None)
    node = make_node("n").capacity(cpu="4", memory="8Gi").obj()
    stays, leaves = (PodInfo(make_pod(n).req(cpu="1").obj()) for n in ("stays", "leaves"))
    plugin.reserve(stays.pod, stays, "n")
    plugin.reserve(leaves.pod, leaves, "n")
    assert plugin._missing(NodeInfo(node, [stays, leaves])) > 0
    alone = plugin._missing(NodeInfo(node, [stays]))
    assert set(plugin._placed["n"]) == {stays.uid}
    assert alone == plugin._placed["n"][stays.uid]
