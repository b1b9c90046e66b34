"""The NetworkTopology controller's costs: netperf latencies to ``NetperfCosts`` weights,
the bandwidth accounting, and when it computes them (diktyo-io/networktopology-controller).

Every expected cost here was worked out by hand from upstream's rules (node pairs in
name order; a new measurement is averaged, in integer halves, with the current cheapest
path; a missing one counts as 0).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from kubesched.api import Quantity, parse_manifests, parse_object
from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock
from kubesched.notices import collecting_notices
from kubesched.testing import make_node, make_pod
from kubesched_contrib.networkaware.api import (
    APP_GROUP_LABEL,
    APP_GROUP_SELECTOR_LABEL,
    NETPERF_COSTS,
    REGION_LABEL,
    USER_DEFINED,
    ZONE_LABEL,
    NetworkTopology,
    WeightInfo,
)
from kubesched_contrib.networkaware.controllers import NetworkTopologyController
from kubesched_contrib.networkaware.netperf import netperf_key, netperf_weights

from .conftest import netperf_field


def _node(name: str, region: str, zone: str):
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    labels |= {k: v for k, v in ((REGION_LABEL, region), (ZONE_LABEL, zone)) if v}
    return make_node(name).labels(labels).capacity(cpu="8", memory="16Gi", pods=110).obj()


def _data(latencies: dict[tuple[str, str], str]) -> dict[str, str]:
    return {netperf_key(a, b): v for (a, b), v in latencies.items()}


def _costs(weights: list[WeightInfo], key: str) -> dict[str, dict[str, int]]:
    """origin -> {destination: networkCost} of ``key`` in the NetperfCosts weights."""
    (netperf,) = [w for w in weights if w.name == NETPERF_COSTS]
    (topo,) = [t for t in netperf.topology_list if t.topology_key == key]
    return {
        o.origin: {c.destination: c.network_cost for c in o.cost_list} for o in topo.origin_list
    }


# -- netperf_weights -----------------------------------------------------------------------
# (id, nodes (name, region, zone), latencies, region costs, zone costs, pairs without one)
COST_CASES = [
    (
        "second measurement averaged with the first",
        [("a", "r1", "z1"), ("b", "r2", "z2")],
        {("a", "b"): "20", ("b", "a"): "10"},
        {"r1": {"r2": 15}, "r2": {"r1": 15}},
        {"z1": {}, "z2": {}},
        [],
    ),
    (
        "a lower first measurement stays the cost",
        [("a", "r1", "z1"), ("b", "r2", "z2")],
        {("a", "b"): "10", ("b", "a"): "30"},
        {"r1": {"r2": 10}, "r2": {"r1": 10}},
        {"z1": {}, "z2": {}},
        [],
    ),
    (
        "missing measurement counts as 0",
        [("a", "r1", "z1"), ("b", "r2", "z2")],
        {("a", "b"): "10"},
        {"r1": {"r2": 5}, "r2": {"r1": 5}},
        {"z1": {}, "z2": {}},
        [("b", "a")],
    ),
    (
        "measurement that is not an integer counts as 0",
        [("a", "r1", "z1"), ("b", "r2", "z2")],
        {("a", "b"): "10", ("b", "a"): "2.5"},
        {"r1": {"r2": 5}, "r2": {"r1": 5}},
        {"z1": {}, "z2": {}},
        [("b", "a")],
    ),
    (
        "zones of one region",
        [("a", "r", "z1"), ("b", "r", "z2"), ("c", "r", "z2")],
        {("a", "b"): "4", ("a", "c"): "6", ("b", "a"): "8", ("b", "c"): "1", ("c", "a"): "2"},
        {"r": {}},
        {"z1": {"z2": 3}, "z2": {"z1": 3}},
        [("c", "b")],
    ),
    (
        "cheaper through a third region",
        [("a", "A", "za"), ("b", "B", "zb"), ("c", "C", "zc")],
        {
            ("a", "b"): "100",
            ("a", "c"): "10",
            ("b", "a"): "100",
            ("b", "c"): "10",
            ("c", "a"): "10",
            ("c", "b"): "10",
        },
        {"A": {"B": 45, "C": 10}, "B": {"A": 45, "C": 35}, "C": {"A": 10, "B": 35}},
        {"za": {}, "zb": {}, "zc": {}},
        [],
    ),
    (
        "node without labels is in region and zone ''",
        [("a", "r1", "z1"), ("b", "", "")],
        {("a", "b"): "7", ("b", "a"): "7"},
        {"": {"r1": 7}, "r1": {"": 7}},
        {"": {}, "z1": {}},
        [],
    ),
    (
        "single node: no costs",
        [("a", "r1", "z1")],
        {},
        {"r1": {}},
        {"z1": {}},
        [],
    ),
]


@pytest.mark.parametrize(
    ("nodes", "latencies", "regions", "zones", "missing"),
    [c[1:] for c in COST_CASES],
    ids=[c[0] for c in COST_CASES],
)
def test_netperf_costs(nodes, latencies, regions, zones, missing):
    weights, unmeasured = netperf_weights(
        [_node(*n) for n in nodes], _data(latencies), [], {}, set()
    )
    assert [w.name for w in weights] == [USER_DEFINED, NETPERF_COSTS]
    assert _costs(weights, REGION_LABEL) == regions
    assert _costs(weights, ZONE_LABEL) == zones
    assert unmeasured == missing
    # Origins and destinations come sorted: NetworkOverhead's lookups rely on it.
    for key in (REGION_LABEL, ZONE_LABEL):
        assert list(_costs(weights, key)) == sorted(_costs(weights, key))


@pytest.mark.parametrize(
    ("latency", "cost", "measured"),
    [
        ("12", 12, True),
        ("+12", 12, True),
        ("012", 12, True),
        ("-3", -3, True),
        ("12.0", 0, False),
        (" 12", 0, False),
        ("12ms", 0, False),
        ("", 0, False),
        ("9223372036854775808", 0, False),
    ],
    ids=[
        "digits",
        "plus sign",
        "leading zeros",
        "negative",
        "decimal point",
        "space",
        "unit",
        "empty",
        "beyond int64",
    ],
)
def test_latencies_read_as_go_reads_integers(latency, cost, measured):
    nodes = [_node("a", "r1", "z1"), _node("b", "r2", "z2")]
    latencies = {("a", "b"): latency, ("b", "a"): latency}
    weights, unmeasured = netperf_weights(nodes, _data(latencies), [], {}, set())
    assert _costs(weights, REGION_LABEL)["r1"] == {"r2": cost}
    assert unmeasured == ([] if measured else [("a", "b"), ("b", "a")])


USER_DEFINED_WEIGHTS = """
apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1
kind: NetworkTopology
metadata: {name: nt, namespace: default}
spec:
  weights:
  - name: UserDefined
    topologyList:
    - topologyKey: topology.kubernetes.io/region
      originList:
      - origin: r2
        costList: [{destination: r1, bandwidthCapacity: "0", networkCost: 3}]
      - origin: r1
        costList: [{destination: r2, networkCost: 3}]
    - topologyKey: topology.kubernetes.io/zone
      originList:
      - origin: z2
        costList: [{destination: z1, bandwidthCapacity: 300M, networkCost: 1}]
      - origin: z1
        costList:
        - {destination: z3, bandwidthCapacity: 800M, networkCost: 1}
        - {destination: z2, bandwidthCapacity: 500M, networkCost: 1}
  - name: Custom
    topologyList: []
"""


def _user_defined_weights() -> list[WeightInfo]:
    (nt,) = parse_manifests(USER_DEFINED_WEIGHTS)
    return nt.spec.weights


@pytest.mark.parametrize(
    ("key", "origin", "destination", "capacity"),
    [
        (REGION_LABEL, "r1", "r2", "0"),
        (REGION_LABEL, "r2", "r1", "1G"),
        (ZONE_LABEL, "z2", "z1", "300M"),
        (ZONE_LABEL, "z1", "z2", "1G"),
    ],
    ids=[
        "listed without a capacity: 0",
        "listed with capacity 0: the 1G default",
        "listed: its capacity",
        "zone origins not in name order: missed by the binary search, 1G",
    ],
)
def test_bandwidth_capacity_from_user_defined(key, origin, destination, capacity):
    nodes = [_node("a", "r1", "z1"), _node("b", "r1", "z2"), _node("c", "r2", "z3")]
    weights, _ = netperf_weights(nodes, {}, _user_defined_weights(), {}, set())
    (netperf,) = [w for w in weights if w.name == NETPERF_COSTS]
    (topo,) = [t for t in netperf.topology_list if t.topology_key == key]
    (found,) = [
        c
        for o in topo.origin_list
        if o.origin == origin
        for c in o.cost_list
        if c.destination == destination
    ]
    assert found.bandwidth_capacity == Quantity(capacity)
    assert found.bandwidth_allocated == Quantity("0")


def test_user_defined_weights_kept_as_upstream_leaves_them():
    given = _user_defined_weights()
    nodes = [_node("a", "r1", "z1"), _node("b", "r1", "z2"), _node("c", "r2", "z3")]
    weights, _ = netperf_weights(nodes, {}, given, {}, set())
    # The other named weights are dropped; UserDefined's region origins are sorted
    # (upstream sorts them in place); its zone origins stay as written, and the looked-up
    # zone origin's costs are sorted by destination.
    assert [w.name for w in weights] == [USER_DEFINED, NETPERF_COSTS]
    region, zone = weights[0].topology_list
    assert [o.origin for o in region.origin_list] == ["r1", "r2"]
    assert [o.origin for o in zone.origin_list] == ["z2", "z1"]
    assert [c.destination for c in zone.origin_list[1].cost_list] == ["z3", "z2"]
    # ... on a copy: the stored object is not changed.
    assert [o.origin for o in given[0].topology_list[0].origin_list] == ["r2", "r1"]


def test_zone_pairs_are_remembered_across_computations():
    pairs: set[tuple[str, str]] = set()
    netperf_weights([_node("a", "r", "z1"), _node("b", "r", "z2")], {}, [], {}, pairs)
    assert pairs == {("z1", "z2"), ("z2", "z1")}
    # b moved to another region: z1 and z2 are still listed as linked, at cost 0.
    weights, _ = netperf_weights([_node("a", "r", "z1"), _node("b", "s", "z2")], {}, [], {}, pairs)
    assert _costs(weights, ZONE_LABEL) == {"z1": {"z2": 0}, "z2": {"z1": 0}}


# -- upstream's TestNetworkTopologyController_Run, in the embedded cluster -----------------
UPSTREAM_NODES = [
    ("n1", "us-west-1", "Z1"),
    ("n2", "us-west-1", "Z1"),
    ("n3", "us-west-1", "Z2"),
    ("n4", "us-west-1", "Z2"),
    ("n5", "us-west-2", "Z3"),
    ("n6", "us-west-2", "Z3"),
    ("n7", "us-west-2", "Z3"),
    ("n8", "us-west-2", "Z4"),
    ("n9", "us-west-2", "Z4"),
    ("n10", "us-west-2", "Z4"),
    ("n11", "us-west-2", "Z5"),
    ("n12", "us-west-2", "Z5"),
    ("n13", "us-west-2", "Z5"),
]
# Each node's latencies to the others, in the order n1..n13 without itself.
UPSTREAM_LATENCIES = {
    "n1": [4, 5, 5, 20, 30, 400, 50, 20, 30, 400, 50, 50],
    "n2": [2, 5, 5, 20, 100, 30, 50, 20, 30, 400, 50, 50],
    "n3": [5, 5, 50, 10, 20, 100, 10, 20, 30, 400, 50, 50],
    "n4": [57, 2, 4, 8, 12, 12, 43, 20, 30, 400, 50, 50],
    "n5": [30, 60, 30, 80, 1, 5, 5, 20, 30, 400, 50, 50],
    "n6": [10, 50, 10, 20, 3, 5, 5, 20, 30, 400, 50, 50],
    "n7": [10, 50, 10, 67, 5, 5, 2, 20, 30, 400, 50, 50],
    "n8": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
    "n9": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
    "n10": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
    "n11": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
    "n12": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
    "n13": [70, 10, 40, 10, 5, 5, 3, 20, 30, 400, 50, 50],
}
# (Upstream's ConfigMap is "netperfMetrics", a name kube-apiserver refuses.)
UPSTREAM_TOPOLOGY = """
apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1
kind: NetworkTopology
metadata: {name: nt-test, namespace: default}
spec:
  configmapName: netperf-metrics
  weights:
  - name: UserDefined
    topologyList:
    - topologyKey: topology.kubernetes.io/region
      originList:
      - origin: us-west-1
        costList: [{destination: us-west-2, bandwidthCapacity: 1G, networkCost: 20}]
      - origin: us-west-2
        costList: [{destination: us-west-1, bandwidthCapacity: 1G, networkCost: 30}]
    - topologyKey: topology.kubernetes.io/zone
      originList:
      - {origin: Z1, costList: [{destination: Z2, bandwidthCapacity: 500M, networkCost: 7}]}
      - {origin: Z2, costList: [{destination: Z1, bandwidthCapacity: 500M, networkCost: 5}]}
      - origin: Z3
        costList:
        - {destination: Z4, bandwidthCapacity: 500M, networkCost: 10}
        - {destination: Z5, bandwidthCapacity: 600M, networkCost: 15}
      - origin: Z4
        costList:
        - {destination: Z3, bandwidthCapacity: 500M, networkCost: 10}
        - {destination: Z5, bandwidthCapacity: 700M, networkCost: 15}
      - origin: Z5
        costList:
        - {destination: Z3, bandwidthCapacity: 500M, networkCost: 10}
        - {destination: Z4, bandwidthCapacity: 700M, networkCost: 15}
"""


def _configmap(name: str, data: dict[str, str]):
    metadata = {"name": name, "namespace": "default"}
    return parse_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    )


def _upstream_objects():
    names = [n for n, _, _ in UPSTREAM_NODES]
    latencies = {
        (a, b): str(v)
        for a, row in UPSTREAM_LATENCIES.items()
        for b, v in zip([n for n in names if n != a], row, strict=True)
    }
    return (
        [_node(*n) for n in UPSTREAM_NODES],
        _configmap("netperf-metrics", _data(latencies)),
        parse_manifests(UPSTREAM_TOPOLOGY)[0],
    )


def _topology(cluster: MemoryCluster, name: str = "nt-test") -> NetworkTopology:
    return cluster.get("NetworkTopology", "default", name)


def _controller(cluster: MemoryCluster) -> NetworkTopologyController:
    (found,) = [
        c for c in cluster.extensions.controllers if isinstance(c, NetworkTopologyController)
    ]
    return found


UPSTREAM_CASES = [("Network Topology controller: 13 nodes", 13)]


@pytest.mark.parametrize(
    "desired_node_count", [c[1] for c in UPSTREAM_CASES], ids=[c[0] for c in UPSTREAM_CASES]
)
def test_upstream_network_topology_controller_run(desired_node_count):
    cluster = MemoryCluster(FakeClock(0.0))
    nodes, configmap, topology = _upstream_objects()
    cluster.apply([*nodes, configmap, topology])
    nt = _topology(cluster)
    assert nt.status.node_count == desired_node_count
    assert nt.status.weight_calculation_time == cluster.now_timestamp()
    weights = nt.spec.weights
    assert [w.name for w in weights] == [USER_DEFINED, NETPERF_COSTS]
    assert _costs(weights, REGION_LABEL) == {
        "us-west-1": {"us-west-2": 9},
        "us-west-2": {"us-west-1": 9},
    }
    assert _costs(weights, ZONE_LABEL) == {
        "Z1": {"Z2": 3},
        "Z2": {"Z1": 3},
        "Z3": {"Z4": 3, "Z5": 4},
        "Z4": {"Z3": 3, "Z5": 7},
        "Z5": {"Z3": 4, "Z4": 7},
    }
    capacities = netperf_field(weights, "bandwidth_capacity")
    assert {k: str(v) for k, v in capacities.items()} == {
        ("us-west-1", "us-west-2"): "1G",
        ("us-west-2", "us-west-1"): "1G",
        ("Z1", "Z2"): "500M",
        ("Z2", "Z1"): "500M",
        ("Z3", "Z4"): "500M",
        ("Z3", "Z5"): "600M",
        ("Z4", "Z3"): "500M",
        ("Z4", "Z5"): "700M",
        ("Z5", "Z3"): "500M",
        ("Z5", "Z4"): "700M",
    }


def test_created_one_by_one_as_loaded_at_once():
    nodes, configmap, topology = _upstream_objects()
    at_once = MemoryCluster(FakeClock(0.0))
    at_once.apply([*nodes, configmap, topology])
    one_by_one = MemoryCluster(FakeClock(0.0))
    for obj in [*nodes, configmap, topology]:
        one_by_one.create(obj)
    assert _topology(one_by_one).spec == _topology(at_once).spec
    assert _topology(one_by_one).status.node_count == 13


def test_node_count_follows_the_nodes_at_the_next_sync():
    cluster = MemoryCluster(FakeClock(0.0))
    nodes, configmap, topology = _upstream_objects()
    cluster.apply([*nodes, configmap, topology])
    cluster.delete("Node", "", "n13")
    cluster.delete("Node", "", "n12")
    cluster.create(_node("n14", "us-west-2", "Z5"))
    assert _topology(cluster).status.node_count == 13
    nt = _topology(cluster).model_copy(deep=True)
    nt.metadata.labels = {"touched": "yes"}
    cluster.update(nt)
    assert _topology(cluster).status.node_count == 12


@pytest.mark.parametrize(
    ("minutes", "recomputed"),
    [(4, False), (6, True)],
    ids=["within 5 minutes: node count only", "after 5 minutes: weights again"],
)
def test_weights_computed_again_after_five_minutes(minutes, recomputed):
    clock = FakeClock(0.0)
    cluster = MemoryCluster(clock)
    cluster.apply(
        [
            _node("a", "r1", "z1"),
            _node("b", "r2", "z2"),
            _configmap("netperf", _data({("a", "b"): "10", ("b", "a"): "10"})),
            *parse_manifests(
                "apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1\nkind: NetworkTopology\n"
                "metadata: {name: nt, namespace: default}\nspec: {configmapName: netperf}\n"
            ),
        ]
    )
    first = _topology(cluster, "nt").status.weight_calculation_time
    configmap = cluster.get("ConfigMap", "default", "netperf").model_copy(deep=True)
    configmap.data = _data({(x, y): "2" for x in "abc" for y in "abc" if x != y})
    cluster.update(configmap)
    cluster.create(_node("c", "r1", "z1"))
    clock.step(timedelta(minutes=minutes).total_seconds())
    # Neither a ConfigMap nor a node change syncs the NetworkTopology: it must change.
    assert _topology(cluster, "nt").status.node_count == 2
    nt = _topology(cluster, "nt").model_copy(deep=True)
    nt.metadata.labels = {"touched": "yes"}
    cluster.update(nt)
    nt = _topology(cluster, "nt")
    assert nt.status.node_count == 3
    assert _costs(nt.spec.weights, REGION_LABEL)["r1"] == {"r2": 2 if recomputed else 10}
    expected_time = cluster.now_timestamp() if recomputed else first
    assert nt.status.weight_calculation_time == expected_time


@pytest.mark.parametrize(
    ("spec", "noticed"),
    [("{configmapName: absent}", True), ("{weights: []}", False)],
    ids=["named ConfigMap missing: a notice", "costs written by hand: nothing to do"],
)
def test_nothing_written_without_the_configmap(spec, noticed):
    cluster = MemoryCluster(FakeClock(0.0))
    (nt,) = parse_manifests(
        "apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1\nkind: NetworkTopology\n"
        f"metadata: {{name: nt, namespace: default}}\nspec: {spec}\n"
    )
    with collecting_notices() as notices:
        cluster.apply([_node("a", "r1", "z1"), nt])
        cluster.update(_topology(cluster, "nt").model_copy(deep=True))
    status = _topology(cluster, "nt").status
    assert (status.node_count, status.weight_calculation_time) == (0, None)
    expected = [
        "NetworkTopology default/nt: ConfigMap default/absent (spec.configmapName) not found: "
        "the NetworkTopology controller leaves its weights and status as written"
    ]
    assert [str(n) for n in notices] == (expected if noticed else [])


def test_unmeasured_pairs_are_noticed_once():
    cluster = MemoryCluster(FakeClock(0.0))
    (nt,) = parse_manifests(
        "apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1\nkind: NetworkTopology\n"
        "metadata: {name: nt, namespace: default}\nspec: {configmapName: netperf}\n"
    )
    with collecting_notices() as notices:
        cluster.apply(
            [_node("a", "r1", "z1"), _node("b", "r2", "z2"), _configmap("netperf", {}), nt]
        )
    assert [str(n) for n in notices] == [
        "NetworkTopology default/nt: ConfigMap default/netperf has no integer latency for 2 "
        "of the 2 node pairs (first: netperf.p90.latency.milliseconds.origin.a.destination.b); "
        "each counts as cost 0, as the NetworkTopology controller counts it"
    ]


# -- bandwidth accounting --------------------------------------------------------------------
BANDWIDTH_APP_GROUP = """
apiVersion: appgroup.diktyo.x-k8s.io/v1alpha1
kind: AppGroup
metadata: {name: shop, namespace: default}
spec:
  workloads:
  - workload: {kind: Deployment, name: web, selector: web}
    dependencies:
    - workload: {kind: StatefulSet, name: db, selector: db}
      minBandwidth: 100M
  - workload: {kind: StatefulSet, name: db, selector: db}
    dependencies:
    - workload: {kind: Deployment, name: web, selector: web}
"""
BANDWIDTH_NODES = [
    ("w1a", "west", "w1"),
    ("w1b", "west", "w1"),
    ("w2a", "west", "w2"),
    ("e1a", "east", "e1"),
    ("bare", "", ""),
]


def _shop_pod(name: str, workload: str, node: str):
    labels = {APP_GROUP_LABEL: "shop", APP_GROUP_SELECTOR_LABEL: workload}
    return make_pod(name).labels(labels).node(node).obj()


# (id, db pods' nodes, web pods' nodes, allocated (origin, destination) -> bandwidth).
# The db pods' own dependency (web) has no minBandwidth: they reserve nothing.
BANDWIDTH_CASES = [
    ("another region: between the regions", ["e1a"], ["w1a"], {("west", "east"): "100M"}),
    ("another zone of the region: between the zones", ["w2a"], ["w1a"], {("w1", "w2"): "100M"}),
    ("same zone: nothing", ["w1b"], ["w1a"], {}),
    ("same node: nothing", ["w1a"], ["w1a"], {}),
    ("dependency on an unlabelled node: nothing", ["bare"], ["w1a"], {}),
    (
        "per placed dependency pod",
        ["e1a", "w2a", "e1a"],
        ["w1a"],
        {("west", "east"): "200M", ("w1", "w2"): "100M"},
    ),
    ("per placed pod", ["e1a"], ["w1a", "w2a"], {("west", "east"): "200M"}),
]


def _allocated(controller: NetworkTopologyController) -> dict[tuple[str, str], str]:
    return {k: str(v) for k, v in controller.allocated.items() if not v.is_zero()}


@pytest.mark.parametrize(
    ("dbs", "webs", "allocated"),
    [c[1:] for c in BANDWIDTH_CASES],
    ids=[c[0] for c in BANDWIDTH_CASES],
)
def test_bandwidth_allocated(dbs, webs, allocated):
    pods = [_shop_pod(f"db-{i}", "db", n) for i, n in enumerate(dbs)]
    pods += [_shop_pod(f"web-{i}", "web", n) for i, n in enumerate(webs)]
    expected = {k: Quantity(v) for k, v in allocated.items()}
    # Placed one by one (the web pods after the pods they depend on) ...
    cluster = MemoryCluster(FakeClock(0.0))
    cluster.apply([_node(*n) for n in BANDWIDTH_NODES])
    cluster.create(parse_manifests(BANDWIDTH_APP_GROUP)[0])
    for pod in pods:
        cluster.create(pod)
    assert {k: Quantity(v) for k, v in _allocated(_controller(cluster)).items()} == expected
    # ... or loaded at once, as upstream's controller finds them when it starts.
    loaded = MemoryCluster(FakeClock(0.0))
    loaded.apply(
        [*(_node(*n) for n in BANDWIDTH_NODES), *parse_manifests(BANDWIDTH_APP_GROUP), *pods]
    )
    assert {k: Quantity(v) for k, v in _allocated(_controller(loaded)).items()} == expected
    # Deleting the web pods gives it all back.
    for i in range(len(webs)):
        cluster.delete("Pod", "default", f"web-{i}")
    cluster.advance(60.0)  # past the pods' graceful termination
    assert _allocated(_controller(cluster)) == {}


def test_bandwidth_allocated_in_the_weights():
    cluster = MemoryCluster(FakeClock(0.0))
    cluster.apply(
        [
            *(_node(*n) for n in BANDWIDTH_NODES[:4]),
            *parse_manifests(BANDWIDTH_APP_GROUP),
            _shop_pod("db-0", "db", "e1a"),
            _shop_pod("web-0", "web", "w1a"),
            _configmap("netperf", {}),
            *parse_manifests(
                "apiVersion: networktopology.diktyo.x-k8s.io/v1alpha1\nkind: NetworkTopology\n"
                "metadata: {name: nt, namespace: default}\nspec: {configmapName: netperf}\n"
            ),
        ]
    )
    allocated = netperf_field(_topology(cluster, "nt").spec.weights, "bandwidth_allocated")
    assert allocated == {
        ("east", "west"): Quantity("0"),
        ("west", "east"): Quantity("100M"),
        ("w1", "w2"): Quantity("0"),
        ("w2", "w1"): Quantity("0"),
    }
