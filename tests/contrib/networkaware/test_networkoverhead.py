"""NetworkOverhead: upstream's Filter and Score cases, args defaults, what-ifs beyond them."""

from __future__ import annotations

import pytest

from kubesched import Code
from kubesched.framework.listers import StaticLister
from kubesched.testing import framework_for, run_filter, run_score
from kubesched_contrib.networkaware import NetworkOverhead, NetworkOverheadArgs

from .conftest import app_pod, basic_objects, nodes

MESSAGE = (
    "Node {} does not meet several network requirements from Workload dependencies: "
    "Satisfied: {} Violated: {}"
)


def by_node(values):
    """``{n-1: values[0], ...}``: scores by node name (the snapshot interleaves zones)."""
    return {f"n-{i + 1}": v for i, v in enumerate(values)}


def framework(placed, objects=None, **args):
    lister = StaticLister([*(basic_objects() if objects is None else objects), *placed])
    return framework_for(
        NetworkOverhead, args={"networkTopologyName": "nt-test", **args}, lister=lister
    )


FILTER_PLACED = [app_pod("p1", node="n-2"), app_pod("p2", node="n-5"), app_pod("p3", node="n-8")]
# Upstream TestNetworkOverheadFilter (maxNetworkCost 0: only same zone or host satisfies).
FILTER_CASES = [
    (
        "p1 to allocate, n-1 to filter: n-1 does not meet network requirements",
        "p1",
        "basic",
        "n-1",
        (0, 1),
    ),
    ("p1 to allocate, n-6 to filter: n-6 meets network requirements", "p1", "basic", "n-6", None),
    (
        "p2 to allocate, n-5 to filter: n-5 does not meet network requirements",
        "p2",
        "basic",
        "n-5",
        (0, 1),
    ),
    ("p2 to allocate, n-7 to filter: n-7 meets network requirements", "p2", "basic", "n-7", None),
    (
        "p3 to allocate, no dependencies, n-1 to filter: n-1 meets network requirements",
        "p3",
        "basic",
        "n-1",
        None,
    ),
    (
        "p10 to allocate, different AppGroup, n-1 to filter: n-1 meets network requirements",
        "p10",
        "",
        "n-1",
        None,
    ),
    ("p1 on the node of its dependency", "p1", "basic", "n-5", None),
]


@pytest.mark.parametrize(
    ("name", "group", "node", "rejected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(name, group, node, rejected):
    run = run_filter(framework(FILTER_PLACED), app_pod(name, group), nodes())
    status = run[node]
    if rejected is None:
        assert status.is_success()
    else:
        assert status.code == Code.UNSCHEDULABLE
        assert status.message() == MESSAGE.format(node, *rejected)


SCORE_PLACED = [app_pod("p1", node="n-2"), app_pod("p2", node="n-5"), app_pod("p3", node="n-1")]
# Upstream TestNetworkOverheadScore: raw costs, then normalised.
SCORE_CASES = [
    (
        "AppGroup: basic, p1 to allocate, 8 nodes to score",
        "p1",
        [20, 20, 20, 20, 0, 1, 10, 10],
        [0, 0, 0, 0, 100, 95, 50, 50],
    ),
    (
        "AppGroup: basic, p2 to allocate, 8 nodes to score",
        "p2",
        [0, 1, 5, 5, 20, 20, 20, 20],
        [100, 95, 75, 75, 0, 0, 0, 0],
    ),
    (
        "AppGroup: basic, p3 to allocate, no dependency, 8 nodes to score",
        "p3",
        [0] * 8,
        [0] * 8,
    ),
]


@pytest.mark.parametrize(
    ("name", "raw", "normalized"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(name, raw, normalized):
    fw = framework(SCORE_PLACED)
    pod = app_pod(name)
    raw_run = run_score(fw, pod, nodes(), raw=True)
    assert dict(raw_run) == by_node(raw)
    # The per-node path agrees with the batch the runtime used.
    pl = fw.plugin("NetworkOverhead")
    assert {ni.name: pl.score(raw_run.state, ni) for ni in fw.snapshot.list()} == by_node(raw)
    assert dict(run_score(fw, pod, nodes())) == by_node(normalized)


@pytest.mark.parametrize(
    ("kept", "expected"),
    [
        ("NetworkTopology", [0] * 8),
        # Without costs every distance beyond the zone is unknown (100): only the
        # dependency's node (0) and its zone twin (1) are cheaper.
        ("AppGroup", [0, 0, 0, 0, 100, 99, 0, 0]),
    ],
    ids=["missing AppGroup scores equally", "missing NetworkTopology: distances unknown"],
)
def test_missing_objects(kept, expected):
    objects = [o for o in basic_objects() if o.kind == kept]
    got = run_score(framework(SCORE_PLACED, objects=objects), app_pod("p1"), nodes())
    assert dict(got) == by_node(expected)


def test_weights_name_selects_the_costs():
    # No "NetperfCosts" weights in nt-test: every other-zone/region distance is unknown.
    fw = framework(SCORE_PLACED, weightsName="NetperfCosts")
    got = run_score(fw, app_pod("p1"), nodes(), raw=True)
    assert dict(got) == by_node([100, 100, 100, 100, 0, 1, 100, 100])


def test_pods_of_other_namespaces_are_not_dependencies():
    fw = framework([app_pod("p2", node="n-5", namespace="elsewhere")])
    assert set(run_score(fw, app_pod("p1"), nodes(), raw=True).values()) == {0}


def test_args_defaults():
    a = NetworkOverheadArgs()
    assert (a.namespaces, a.weights_name, a.network_topology_name) == (
        ["default"],
        "UserDefined",
        "nt-default",
    )
    assert NetworkOverheadArgs.model_validate({"namespaces": []}).namespaces == ["default"]
