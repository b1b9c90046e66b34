"""NodeResourceTopologyMatch: Filter and Score on the cases of scheduler-plugins' own tests
(``filter_test.go``, ``score_test.go``), Topology Manager settings, caches, args."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    PluginArgsError,
    PodInfo,
)
from kubesched.api import parse_quantity, resolve_kind
from kubesched.backend.kube.cluster import resource_for
from kubesched.clock import FakeClock
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_contrib.noderesourcetopology import (
    NAME,
    NodeResourceTopology,
    NodeResourceTopologyMatch,
)
from kubesched_contrib.noderesourcetopology.api import AttributeInfo
from kubesched_contrib.noderesourcetopology.numa import (
    QOS_BEST_EFFORT,
    QOS_BURSTABLE,
    QOS_GUARANTEED,
    TopologyManagerConfig,
    pod_qos,
    topology_manager_config,
)
from kubesched_contrib.noderesourcetopology.resync import (
    ATTRIBUTE_FINGERPRINT,
    ATTRIBUTE_FINGERPRINT_METHOD,
    pod_fingerprint,
)

NIC = "vendor/nic1"
NIC_NO_NUMA = "vendor.com/old-nic-model"
EXTENDED = "namespace/extended"
MISSING_NIC = "vendor/notexistingnic"
GPU = "example.com/gpu"


def nrt(
    name: str,
    zones: dict[str, dict[str, tuple[str, str]]],
    *,
    policy: str | None = None,
    attributes: dict[str, str] | None = None,
    costs: dict[str, dict[str, int]] | None = None,
) -> NodeResourceTopology:
    """An NRT object: zone name -> resource -> (capacity, available)."""
    return NodeResourceTopology.model_validate(
        {
            "metadata": {"name": name, "resourceVersion": "1"},
            "topologyPolicies": [policy] if policy else [],
            "attributes": [{"name": k, "value": v} for k, v in (attributes or {}).items()],
            "zones": [
                {
                    "name": zone,
                    "type": "Node",
                    "costs": [
                        {"name": k, "value": v} for k, v in ((costs or {}).get(zone) or {}).items()
                    ],
                    "resources": [
                        {"name": r, "capacity": c, "allocatable": c, "available": a}
                        for r, (c, a) in resources.items()
                    ],
                }
                for zone, resources in zones.items()
            ],
        }
    )


def node_info(topology: NodeResourceTopology, extra: dict[str, str] | None = None) -> NodeInfo:
    """A node whose allocatable is the sum of its zones' capacities (plus ``extra``), as
    upstream's tests build it."""
    totals: dict[str, Any] = {}
    for zone in topology.zones:
        for r in zone.resources:
            totals[r.name] = totals.get(r.name, parse_quantity(0)) + r.capacity
    values = {k: str(v) for k, v in totals.items()} | (extra or {})
    return NodeInfo(make_node(topology.name).capacity(values).obj())


def gu(resources: dict[str, Any], containers: int = 1):
    """``makePodByResourceList``: requests and limits both ``resources``."""
    b = make_pod("p")
    for _ in range(containers):
        b.container(resources, resources)
    return b.obj()


def req_lim(requests: dict[str, Any], limits: dict[str, Any]):
    return make_pod("p").container(requests, limits).obj()


def req_only(requests: dict[str, Any]):
    return make_pod("p").container(requests).obj()


def plugin(nrts, args: dict[str, Any] | None = None):
    fw = make_framework(
        NodeResourceTopologyMatch, args={NAME: args or {}}, lister=StaticLister(nrts)
    )
    return fw, fw.plugin(NAME)


# -- TestNodeResourceTopology (filter_test.go) ---------------------------------------------------
FILTER_NRTS = [
    nrt(
        "node1",
        {
            "node-0": {"cpu": ("20", "4"), "memory": ("8Gi", "8Gi"), NIC: ("30", "10")},
            "node-1": {"cpu": ("30", "8"), "memory": ("8Gi", "8Gi"), NIC: ("30", "10")},
        },
        policy="SingleNUMANodeContainerLevel",
    ),
    nrt(
        "node2",
        {
            "node-0": {
                "cpu": ("20", "2"),
                "memory": ("8Gi", "4Gi"),
                "hugepages-2Mi": ("128Mi", "128Mi"),
                NIC: ("30", "5"),
            },
            "node-1": {
                "cpu": ("30", "4"),
                "memory": ("8Gi", "4Gi"),
                "hugepages-2Mi": ("128Mi", "128Mi"),
                NIC: ("30", "2"),
            },
        },
        policy="SingleNUMANodeContainerLevel",
    ),
    nrt(
        "node3",
        {
            "node-0": {"cpu": ("20", "2"), "memory": ("8Gi", "4Gi"), NIC: ("30", "5")},
            "node-1": {"cpu": ("30", "4"), "memory": ("8Gi", "4Gi"), NIC: ("30", "2")},
        },
        policy="SingleNUMANodePodLevel",
    ),
    nrt(
        "badly-formed-node",
        {
            "node-0": {"cpu": ("20", "2"), "memory": ("8Gi", "4Gi"), NIC: ("30", "5")},
            "node-75": {"cpu": ("30", "4"), "memory": ("8Gi", "4Gi"), NIC: ("30", "2")},
        },
        policy="SingleNUMANodePodLevel",
    ),
    nrt(
        "extended",
        {
            "node-0": {"cpu": ("20", "4"), "memory": ("8Gi", "8Gi"), NIC: ("30", "10")},
            "node-1": {"cpu": ("30", "8"), "memory": ("8Gi", "8Gi"), NIC: ("30", "10")},
        },
        policy="SingleNUMANodeContainerLevel",
    ),
]
FILTER_NODES = [
    node_info(FILTER_NRTS[0]),
    node_info(FILTER_NRTS[1], {NIC_NO_NUMA: "4"}),
    node_info(FILTER_NRTS[2]),
    node_info(FILTER_NRTS[3]),
    node_info(FILTER_NRTS[4], {EXTENDED: "1"}),
]
CONTAINER = "cannot align container"
POD = "cannot align pod"
FILTER_CASES = [
    # (upstream case name, pod, node index, expected reason or None)
    (
        "Guaranteed QoS, pod with extended resource fit",
        gu({"cpu": 2, "memory": "2Gi", EXTENDED: 1, NIC: 3}),
        4,
        None,
    ),
    (
        "Guaranteed QoS, pod with extended resource no devices; pod fit",
        gu({"cpu": 2, "memory": "2Gi", EXTENDED: 1}),
        4,
        None,
    ),
    ("Best effort QoS, pod fit", make_pod("p").container().obj(), 0, None),
    ("Best effort QoS requesting devices, Pod Scope; pod fit", gu({NIC: 5}), 2, None),
    ("Best effort QoS requesting devices, Pod Scope; pod doesn't fit", gu({NIC: 20}), 2, POD),
    ("Best effort QoS requesting devices, Container Scope; pod fit", gu({NIC: 5}), 1, None),
    (
        "Best effort QoS requesting devices, Container Scope; pod doesn't fit",
        gu({NIC: 20}),
        0,
        CONTAINER,
    ),
    (
        "Best effort QoS requesting devices and extended resources, Container Scope",
        gu({EXTENDED: 1, NIC: 10}),
        4,
        None,
    ),
    (
        "Burstable, CPU, memory (enough) and devices (not enough), Container Scope",
        req_lim({"cpu": 3, "memory": "3Gi", NIC: 11}, {"cpu": 4, "memory": "4Gi", NIC: 11}),
        1,
        CONTAINER,
    ),
    (
        "Burstable, CPU, memory (enough) and devices (not enough), Pod Scope",
        req_lim({"cpu": 1, "memory": "1Gi", NIC: 6}, {"cpu": 2, "memory": "2Gi", NIC: 6}),
        2,
        POD,
    ),
    (
        "Burstable, CPU, memory (enough) and devices, Pod Scope; pod fit",
        req_lim({"cpu": 1, "memory": "1Gi", NIC: 5}, {"cpu": 2, "memory": "2Gi", NIC: 5}),
        2,
        None,
    ),
    (
        "Burstable, CPU, memory (not enough on NUMA) and devices, Pod Scope; pod fit",
        req_lim({"cpu": 19, "memory": "5Gi", NIC: 5}, {"cpu": 20, "memory": "6Gi", NIC: 5}),
        2,
        None,
    ),
    (
        "Burstable, CPU, memory (enough) and devices, Container Scope; pod fit",
        req_lim({"cpu": 3, "memory": "3Gi", NIC: 5}, {"cpu": 4, "memory": "4Gi", NIC: 5}),
        1,
        None,
    ),
    (
        "Burstable, CPU, memory (not enough on NUMA) and devices, Container Scope; pod fit",
        req_lim({"cpu": 5, "memory": "5Gi", NIC: 5}, {"cpu": 6, "memory": "6Gi", NIC: 5}),
        1,
        None,
    ),
    ("Guaranteed QoS, minimal, pod fit", gu({"cpu": 2, "memory": "2Gi"}), 0, None),
    (
        "Guaranteed QoS, minimal, saturating zone, pod fit",
        gu({"cpu": 8, "memory": "8Gi"}),
        0,
        None,
    ),
    (
        "Guaranteed QoS, zero quantity of unavailable resource, pod fit",
        gu({"cpu": 2, "memory": "2Gi", "hugepages-2Mi": 0, NIC: 3}),
        0,
        None,
    ),
    ("Guaranteed QoS, pod fit", gu({"cpu": 2, "memory": "2Gi", NIC: 3}), 1, None),
    (
        "Guaranteed QoS, hugepages, pod fit",
        gu({"cpu": 2, "memory": "2Gi", "hugepages-2Mi": "64Mi", NIC: 3}),
        1,
        None,
    ),
    ("Burstable QoS, pod fit", gu({"cpu": 4, NIC: 3}), 1, None),
    (
        "Burstable QoS, requesting CPU and devices (not enough), Container Scope",
        gu({"cpu": 4, NIC: 11}),
        1,
        CONTAINER,
    ),
    (
        "Burstable QoS, requesting CPU and devices (not enough), Pod Scope",
        gu({"cpu": 2, NIC: 6}),
        2,
        POD,
    ),
    (
        "Burstable QoS requesting CPU (enough) and devices, Pod Scope",
        gu({"cpu": 2, NIC: 5}),
        2,
        None,
    ),
    (
        "BurstableQoS requesting CPU (not enough on NUMA) and devices, Pod Scope",
        gu({"cpu": 20, NIC: 5}),
        2,
        None,
    ),
    (
        "Burstable QoS requesting CPU (not enough on NUMA) and devices, Container Scope",
        gu({"cpu": 4, NIC: 5}),
        1,
        None,
    ),
    (
        "Burstable QoS, requesting memory and devices (not enough), Container Scope",
        gu({"memory": "2Gi", NIC: 11}),
        1,
        CONTAINER,
    ),
    (
        "Burstable QoS, requesting memory and devices (not enough), Pod Scope",
        gu({"memory": "2Gi", NIC: 6}),
        2,
        POD,
    ),
    (
        "Burstable QoS requesting memory (not enough on NUMA) and devices, Pod Scope",
        gu({"memory": "5Gi", NIC: 5}),
        2,
        None,
    ),
    (
        "Burstable QoS requesting memory (not enough on NUMA) and devices, Container Scope",
        gu({"memory": "5Gi", NIC: 5}),
        1,
        None,
    ),
    (
        "Burstable QoS, requests only, CPU, memory and devices (not enough), Container Scope",
        req_only({"cpu": 4, "memory": "4Gi", NIC: 11}),
        1,
        CONTAINER,
    ),
    (
        "Burstable QoS, requests only, CPU, memory and devices (not enough), Pod Scope",
        req_only({"cpu": 2, "memory": "2Gi", NIC: 6}),
        2,
        POD,
    ),
    (
        "Burstable QoS, requests only, CPU, memory (not enough on NUMA), Container Scope",
        req_only({"cpu": 5, "memory": "5Gi", NIC: 5}),
        1,
        None,
    ),
    (
        "Burstable QoS with extended resources, pod fit",
        gu({EXTENDED: 1, "cpu": 4, NIC: 3}),
        4,
        None,
    ),
    (
        "Guaranteed QoS, hugepages, pod doesn't fit",
        gu({"cpu": 2, "memory": "2Gi", "hugepages-2Mi": "256Mi", NIC: 3}),
        1,
        CONTAINER,
    ),
    (
        "Guaranteed QoS, pod doesn't fit",
        gu({"cpu": 9, "memory": "1Gi", NIC: 3}),
        0,
        CONTAINER,
    ),
    (
        "Guaranteed QoS, zero request of a missing device, pod fit",
        gu({"cpu": 2, "memory": "1Gi", MISSING_NIC: 0}),
        0,
        None,
    ),
    (
        "Guaranteed QoS Topology Scope, pod doesn't fit",
        gu({"cpu": 3, "memory": "1Gi", MISSING_NIC: 0}, containers=3),
        2,
        POD,
    ),
    ("Guaranteed QoS Topology Scope, minimal, pod fit", gu({"cpu": 1, "memory": "1Gi"}), 2, None),
    (
        "Guaranteed QoS TopologyScope, minimal, saturating zone, pod fit",
        gu({"cpu": 2, "memory": "4Gi"}),
        3,
        None,
    ),
    (
        "Guaranteed QoS Topology Scope, pod fit",
        gu({"cpu": 1, "memory": "1Gi", MISSING_NIC: 0}, containers=3),
        2,
        None,
    ),
    (
        "Guaranteed QoS Topology Scope, invalid node",
        gu({"cpu": 1, "memory": "1Gi", MISSING_NIC: 0}, containers=3),
        3,
        POD,
    ),
    (
        "Guaranteed QoS, hugepages, non-NUMA affine NIC, pod fit",
        gu({"cpu": 2, "memory": "2Gi", "hugepages-2Mi": "64Mi", NIC_NO_NUMA: 3}),
        1,
        None,
    ),
    (
        "Guaranteed QoS, ephemeral-storage (non-NUMA), pod fit",
        gu({"cpu": 2, "memory": "2Gi", "ephemeral-storage": "100Mi"}),
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "reason"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter_upstream_cases(pod, node, reason):
    _, pl = plugin(FILTER_NRTS)
    status = pl.filter(state=CycleState(), pod=pod, node_info=FILTER_NODES[node])
    if reason is None:
        assert status is None
    else:
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == [reason]


# TestNodeResourceTopologyMultiContainerPodScope / ContainerScope
MULTI_NRT = nrt(
    "host0",
    {
        "node-0": {
            "cpu": ("32", "30"),
            "memory": ("64Gi", "60Gi"),
            "hugepages-2Mi": ("384Mi", "384Mi"),
            NIC: ("16", "16"),
        },
        "node-1": {
            "cpu": ("32", "32"),
            "memory": ("64Gi", "64Gi"),
            "hugepages-2Mi": ("512Mi", "512Mi"),
            NIC: ("32", "32"),
        },
    },
)


def multi(*containers: dict[str, Any]):
    b = make_pod("testpod")
    for c in containers:
        b.container(c, c)
    return b.obj()


SMALL = {"cpu": "2", "memory": "2Gi"}
MULTI_CASES = [
    (
        "gu pod fits only on a numa node",
        multi(
            SMALL,
            {"cpu": "4", "memory": "8Gi"},
            {"cpu": "26", "memory": "32Gi", "hugepages-2Mi": "512Mi", NIC: "26"},
        ),
        True,
    ),
    (
        "gu pod does not fit - not enough CPUs available on any NUMA node",
        multi(
            SMALL,
            {"cpu": "8", "memory": "8Gi"},
            {"cpu": "26", "memory": "26Gi", "hugepages-2Mi": "52Mi", NIC: "26"},
        ),
        False,
    ),
    (
        "gu pod does not fit - not enough memory available on any NUMA node",
        multi(
            {"cpu": "2", "memory": "4Gi"},
            {"cpu": "4", "memory": "16Gi"},
            {"cpu": "26", "memory": "52Gi", "hugepages-2Mi": "52Mi", NIC: "26"},
        ),
        False,
    ),
    (
        "gu pod does not fit - not enough Hugepages available on any NUMA node",
        multi(
            SMALL,
            {"cpu": "4", "memory": "8Gi"},
            {"cpu": "26", "memory": "32Gi", "hugepages-2Mi": "3328Mi", NIC: "26"},
        ),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "fits"), [c[1:] for c in MULTI_CASES], ids=[c[0] for c in MULTI_CASES]
)
def test_filter_multi_container_pod_scope(pod, fits):
    topology = MULTI_NRT.model_copy(update={"topology_policies": ["SingleNUMANodePodLevel"]})
    _, pl = plugin([topology])
    status = pl.filter(state=CycleState(), pod=pod, node_info=node_info(topology))
    assert (status is None) == fits
    if not fits:
        assert status.reasons == [POD]


def test_container_scope_takes_what_each_container_gets():
    # Two containers of 3 cpus: the first takes NUMA 0 (the lowest that fits), the second
    # must then go to NUMA 1; a third has nowhere left.
    topology = nrt(
        "n",
        {
            "node-0": {"cpu": ("4", "4"), "memory": ("4Gi", "4Gi")},
            "node-1": {"cpu": ("4", "4"), "memory": ("4Gi", "4Gi")},
        },
        policy="SingleNUMANodeContainerLevel",
    )
    _, pl = plugin([topology])
    c = {"cpu": "3", "memory": "1Gi"}
    assert pl.filter(state=CycleState(), pod=multi(c, c), node_info=node_info(topology)) is None
    assert pl.filter(
        state=CycleState(), pod=multi(c, c, c), node_info=node_info(topology)
    ).reasons == [CONTAINER]


def test_init_container_alignment():
    topology = nrt(
        "n",
        {"node-0": {"cpu": ("4", "2"), "memory": ("4Gi", "4Gi")}},
        policy="SingleNUMANodeContainerLevel",
    )
    _, pl = plugin([topology])
    pod = (
        make_pod("p").container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}).obj()
    )
    pod.spec.init_containers = [
        pod.spec.containers[0].model_copy(
            update={
                "name": "init",
                "resources": pod.spec.containers[0].resources.model_copy(
                    update={
                        "requests": {"cpu": parse_quantity(3), "memory": parse_quantity("1Gi")},
                        "limits": {"cpu": parse_quantity(3), "memory": parse_quantity("1Gi")},
                    }
                ),
            }
        )
    ]
    assert pl.filter(state=CycleState(), pod=pod, node_info=node_info(topology)).reasons == [
        "cannot align init container"
    ]


@pytest.mark.parametrize(
    "policy",
    ["none", "best-effort", "restricted"],
)
def test_filter_admits_everything_but_single_numa_node(policy):
    topology = nrt(
        "n",
        {"node-0": {"cpu": ("2", "1"), "memory": ("1Gi", "1Gi")}},
        attributes={"topologyManagerPolicy": policy},
    )
    _, pl = plugin([topology])
    assert (
        pl.filter(
            state=CycleState(), pod=gu({"cpu": 2, "memory": "1Gi"}), node_info=node_info(topology)
        )
        is None
    )


def test_filter_and_score_without_nrt_object():
    _, pl = plugin([])
    info = NodeInfo(make_node("bare").capacity(cpu="4", memory="4Gi").obj())
    pod = gu({"cpu": 2, "memory": "1Gi"})
    assert pl.filter(state=CycleState(), pod=pod, node_info=info) is None
    assert pl.score(pod=pod, node_info=info) == 0


# -- Topology Manager settings (nodeconfig) ----------------------------------------------------
CONFIG_CASES = [
    ("defaults", [], {}, TopologyManagerConfig("none", "container", 8)),
    (
        "legacy-pod-level",
        ["SingleNUMANodePodLevel"],
        {},
        TopologyManagerConfig("single-numa-node", "pod", 8),
    ),
    (
        "legacy-restricted-container",
        ["RestrictedContainerLevel"],
        {},
        TopologyManagerConfig("restricted", "container", 8),
    ),
    (
        "attributes-win",
        ["SingleNUMANodePodLevel"],
        {"topologyManagerPolicy": "best-effort", "topologyManagerScope": "container"},
        TopologyManagerConfig("best-effort", "container", 8),
    ),
    (
        "invalid-attributes-ignored",
        [],
        {"topologyManagerPolicy": "strict", "topologyManagerScope": "node"},
        TopologyManagerConfig("none", "container", 8),
    ),
    (
        "max-numa-nodes",
        [],
        {"topologyManagerMaxNUMANodes": "16"},
        TopologyManagerConfig("none", "container", 16),
    ),
    (
        "max-numa-nodes-at-least-2",
        [],
        {"topologyManagerMaxNUMANodes": "1"},
        TopologyManagerConfig("none", "container", 8),
    ),
    (
        "max-numa-nodes-capped",
        [],
        {"topologyManagerMaxNUMANodes": "5000"},
        TopologyManagerConfig("none", "container", 1024),
    ),
]


@pytest.mark.parametrize(
    ("policies", "attributes", "expected"),
    [c[1:] for c in CONFIG_CASES],
    ids=[c[0] for c in CONFIG_CASES],
)
def test_topology_manager_config(policies, attributes, expected):
    obj = NodeResourceTopology.model_validate(
        {
            "metadata": {"name": "n"},
            "topologyPolicies": policies,
            "attributes": [{"name": k, "value": v} for k, v in attributes.items()],
        }
    )
    assert topology_manager_config(obj) == expected


QOS_CASES = [
    ("best-effort", make_pod("p").container().obj(), QOS_BEST_EFFORT),
    ("guaranteed", gu({"cpu": 1, "memory": "1Gi"}), QOS_GUARANTEED),
    (
        "limits-only-default-requests",
        make_pod("p").container(None, {"cpu": 1, "memory": "1Gi"}).obj(),
        QOS_GUARANTEED,
    ),
    ("cpu-only", gu({"cpu": 1}), QOS_BURSTABLE),
    (
        "requests-below-limits",
        req_lim({"cpu": 1, "memory": "1Gi"}, {"cpu": 2, "memory": "1Gi"}),
        QOS_BURSTABLE,
    ),
    ("device-only", gu({NIC: 1}), QOS_BEST_EFFORT),
]


@pytest.mark.parametrize(("pod", "qos"), [c[1:] for c in QOS_CASES], ids=[c[0] for c in QOS_CASES])
def test_pod_qos(pod, qos):
    assert pod_qos(pod) == qos


# -- TestNodeResourceScorePlugin (score_test.go) -------------------------------------------------
def default_numa_nodes(policy: str | None = None, attributes=None):
    zones = {
        "node1": ("4", "500Mi"),
        "node2": ("2", "50Mi"),
        "node3": ("6", "60Mi"),
    }
    return [
        nrt(
            name,
            {z: {"cpu": (c, c), "memory": (m, m)} for z in ("node-0", "node-1")},
            policy=policy,
            attributes=attributes,
        )
        for name, (c, m) in zones.items()
    ]


def scores(nrts, pod, args, only=None):
    _, pl = plugin(nrts, args)
    return {
        t.name: pl.score(pod=pod, node_info=node_info(t))
        for t in nrts
        if only is None or t.name in only
    }


POD1 = gu({"cpu": 2, "memory": str(20 * 1024 * 1024)})
SCORE_CASES = [
    # (upstream case, strategy, NRT objects kept, expected scores)
    ("MostAllocated strategy", "MostAllocated", None, {"node1": 27, "node2": 70, "node3": 33}),
    (
        "BalancedAllocation strategy",
        "BalancedAllocation",
        None,
        {"node1": 89, "node2": 82, "node3": 100},
    ),
    ("LeastAllocated strategy", "LeastAllocated", None, {"node1": 73, "node2": 30, "node3": 66}),
    (
        "No data at all, MostAllocated strategy",
        "MostAllocated",
        set(),
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    (
        "One node with NRT data, MostAllocated strategy",
        "MostAllocated",
        {"node1"},
        {"node1": 27, "node2": 0, "node3": 0},
    ),
    (
        "One node with NRT data, LeastAllocated strategy",
        "LeastAllocated",
        {"node1"},
        {"node1": 73, "node2": 0, "node3": 0},
    ),
    (
        "One node with NRT data, BalancedAllocation strategy",
        "BalancedAllocation",
        {"node1"},
        {"node1": 89, "node2": 0, "node3": 0},
    ),
]


@pytest.mark.parametrize(
    ("strategy", "kept", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score_upstream_cases(strategy, kept, expected):
    all_nrts = default_numa_nodes("SingleNUMANodeContainerLevel")
    kept_nrts = [t for t in all_nrts if kept is None or t.name in kept]
    _, pl = plugin(kept_nrts, {"scoringStrategy": {"type": strategy}})
    got = {t.name: pl.score(pod=POD1, node_info=node_info(t)) for t in all_nrts}
    assert got == expected


def test_score_non_guaranteed_pod_is_max_everywhere():
    got = scores(default_numa_nodes("SingleNUMANodeContainerLevel"), req_only({"cpu": 1}), {})
    assert set(got.values()) == {100}


def test_score_needs_single_numa_node_policy():
    got = scores(default_numa_nodes("BestEffortContainerLevel"), POD1, {})
    assert set(got.values()) == {0}


def test_score_weights():
    nrts = default_numa_nodes("SingleNUMANodePodLevel")
    args = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
        }
    }
    # Node1: cpu 50 × 3 + memory 4 × 1 = 154 / 4
    assert scores(nrts, POD1, args, {"node1"}) == {"node1": 38}


# -- TestNodeResourceScorePluginLeastNUMA ----------------------------------------------------------
COSTS_4 = {
    "node-0": {"node-0": 10, "node-1": 12, "node-2": 20, "node-3": 20},
    "node-1": {"node-0": 12, "node-1": 10, "node-2": 20, "node-3": 20},
    "node-2": {"node-0": 20, "node-1": 20, "node-2": 10, "node-3": 12},
    "node-3": {"node-0": 20, "node-1": 20, "node-2": 12, "node-3": 10},
}


def four_numa_nodes():
    def zones(gpus):
        return {
            f"node-{i}": {"cpu": ("2", "2"), "memory": ("50Mi", "50Mi"), GPU: (g, g)}
            for i, g in enumerate(gpus)
        }

    return [
        nrt("node1", zones("1100"), policy="BestEffortContainerLevel", costs=COSTS_4),
        nrt("node2", zones("1010"), policy="BestEffortContainerLevel", costs=COSTS_4),
    ]


def least_numa_pod(*containers: dict[str, str]):
    return multi(*containers)


MEM = {"memory": "50Mi"}
LEAST_NUMA_CASES = [
    (
        "container scope, one container case 1",
        "Container",
        [{"cpu": "2"} | MEM],
        None,
        {"node1": 94, "node2": 94, "node3": 94},
    ),
    (
        "container scope, one container case 2",
        "Container",
        [{"cpu": "4"} | MEM],
        None,
        {"node1": 94, "node2": 82, "node3": 94},
    ),
    (
        "container scope, one container case 3",
        "Container",
        [{"cpu": "6"} | MEM],
        None,
        {"node1": 82, "node2": 0, "node3": 94},
    ),
    (
        "container scope, two containers case 1",
        "Container",
        [{"cpu": "2"} | MEM, {"cpu": "2"} | MEM],
        None,
        {"node1": 94, "node2": 94, "node3": 94},
    ),
    (
        "container scope, two containers case 2",
        "Container",
        [{"cpu": "1"} | MEM, {"cpu": "3"} | MEM],
        None,
        {"node1": 94, "node2": 82, "node3": 94},
    ),
    (
        "container scope, two containers case 3",
        "Container",
        [{"cpu": "5"} | MEM, {"cpu": "3"} | MEM],
        None,
        {"node1": 82, "node2": 0, "node3": 94},
    ),
    (
        "container scope, two containers non NUMA resource",
        "Container",
        [{"example.com/non-numa": "1"}, {"example.com/non-numa": "2"}],
        None,
        {"node1": 100, "node2": 100, "node3": 100},
    ),
    (
        "pod scope, two containers case 1",
        "Pod",
        [{"cpu": "2"} | MEM, {"cpu": "2"} | MEM],
        None,
        {"node1": 94, "node2": 82, "node3": 82},
    ),
    (
        "pod scope, two containers case 2",
        "Pod",
        [{"cpu": "1"} | MEM, {"cpu": "3"} | MEM],
        None,
        {"node1": 94, "node2": 82, "node3": 82},
    ),
    (
        "pod scope, two containers case 3",
        "Pod",
        [{"cpu": "5"} | MEM, {"cpu": "3"} | MEM],
        None,
        {"node1": 82, "node2": 0, "node3": 82},
    ),
    (
        "pod scope, one containers non NUMA resource",
        "Pod",
        [{"example.com/non-numa": "1"}],
        None,
        {"node1": 100, "node2": 100, "node3": 100},
    ),
    (
        "container scope, one container, 4 NUMA nodes, 1 gpu",
        "Container",
        [{"cpu": "2", GPU: "1"} | MEM],
        four_numa_nodes,
        {"node1": 94, "node2": 94},
    ),
    (
        "container scope, one container, 4 NUMA nodes, 2 gpu",
        "Container",
        [{"cpu": "2", GPU: "2"} | MEM],
        four_numa_nodes,
        {"node1": 82, "node2": 76},
    ),
    (
        "container scope, 2 containers, 4 NUMA nodes, 2 gpu in one container",
        "Container",
        [{"cpu": "2", GPU: "2"} | MEM, {"cpu": "2"} | MEM],
        four_numa_nodes,
        {"node1": 82, "node2": 76},
    ),
]


@pytest.mark.parametrize(
    ("scope", "containers", "nodes", "expected"),
    [c[1:] for c in LEAST_NUMA_CASES],
    ids=[c[0] for c in LEAST_NUMA_CASES],
)
def test_score_least_numa_nodes_upstream_cases(scope, containers, nodes, expected):
    nrts = nodes() if nodes else default_numa_nodes(f"BestEffort{scope}Level")
    got = scores(nrts, least_numa_pod(*containers), {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert got == expected


# -- caches -------------------------------------------------------------------------------------
def two_zone(name="n", cpu="4"):
    return nrt(
        name,
        {
            "node-0": {"cpu": (cpu, cpu), "memory": ("8Gi", "8Gi")},
            "node-1": {"cpu": (cpu, cpu), "memory": ("8Gi", "8Gi")},
        },
        policy="SingleNUMANodePodLevel",
    )


def test_passthrough_ignores_placed_pods():
    topology = two_zone()
    fw, pl = plugin([topology])
    pod = gu({"cpu": 4, "memory": "1Gi"})
    placed = gu({"cpu": 4, "memory": "1Gi"})
    fw.run_reserve_plugins_reserve(fw.new_cycle_state(), PodInfo(placed), "n")
    info = node_info(topology)
    info.add_pod(PodInfo(placed))
    assert pl.filter(state=CycleState(), pod=pod, node_info=info) is None


def test_overreserve_books_reserved_pods_on_every_zone():
    topology = two_zone()
    fw, pl = plugin([topology], {"cacheResyncPeriodSeconds": 5})
    info = node_info(topology)
    placed = gu({"cpu": 1, "memory": "1Gi"})
    state = fw.new_cycle_state()
    fw.run_reserve_plugins_reserve(state, PodInfo(placed), "n")
    info.add_pod(PodInfo(placed))
    # 3 cpus left on *each* zone (pessimistic): 4 no longer fits, 3 does.
    assert pl.filter(
        state=CycleState(), pod=gu({"cpu": 4, "memory": "1Gi"}), node_info=info
    ).reasons == [POD]
    assert (
        pl.filter(state=CycleState(), pod=gu({"cpu": 3, "memory": "1Gi"}), node_info=info) is None
    )
    # Unreserve gives it back.
    fw.run_reserve_plugins_unreserve(state, PodInfo(placed), "n")
    assert (
        pl.filter(state=CycleState(), pod=gu({"cpu": 4, "memory": "1Gi"}), node_info=info) is None
    )


def fingerprinted(topology, pods, *, method: str | None = None, cpu: str = "4"):
    """The agent's next object for ``topology``: ``cpu`` available per zone, with the
    pod-set fingerprint of ``pods`` (``(namespace, name)``) and its method if given."""
    attributes = [AttributeInfo(name=ATTRIBUTE_FINGERPRINT, value=pod_fingerprint(pods))]
    if method:
        attributes.append(AttributeInfo(name=ATTRIBUTE_FINGERPRINT_METHOD, value=method))
    fresh = two_zone(topology.name, cpu=cpu)
    return fresh.model_copy(update={"attributes": [*fresh.attributes, *attributes]})


def overreserve(lister, clock, cache: dict[str, Any] | None = None):
    args = {"cacheResyncPeriodSeconds": 5, "cache": cache or {}}
    fw = make_framework(NodeResourceTopologyMatch, args={NAME: args}, lister=lister, clock=clock)
    return fw, fw.plugin(NAME)


@pytest.mark.parametrize(
    ("agent", "flushed"),
    [
        (None, False),
        ("no-fingerprint", False),
        ("fingerprint-of-the-node-pods", True),
        ("fingerprint-of-other-pods", False),
        ("exclusive-method-without-the-shared-pod", True),
        ("exclusive-method-with-the-shared-pod", False),
    ],
    ids=[
        "pod-gone-keeps-its-booking",
        "update-without-fingerprint-ignored",
        "resync-fingerprint-match-flushes",
        "resync-fingerprint-mismatch",
        "resync-method-with-exclusive-resources",
        "resync-method-exclusive-counts-shared-pod-mismatch",
    ],
)
def test_overreserve_resync(agent, flushed):
    # Upstream (cache/overreserve.go): bookings go only with Unreserve or a resync of a
    # node the Filter rejected, once per period, when the agent's object carries the
    # fingerprint of the pods on the node.
    topology = two_zone()
    lister, clock = StaticLister([topology]), FakeClock()
    fw, pl = overreserve(lister, clock)
    big = gu({"cpu": 4, "memory": "1Gi"})
    placed = gu({"cpu": 1, "memory": "1Gi"})
    shared = make_pod("shared").container({"cpu": "100m"}).obj()
    fw.run_reserve_plugins_reserve(fw.new_cycle_state(), PodInfo(placed), "n")
    on_node = node_info(topology)
    on_node.add_pod(PodInfo(placed))
    on_node.add_pod(PodInfo(shared))
    assert pl.filter(state=CycleState(), pod=big, node_info=on_node).reasons == [POD]
    if agent is None:
        # Deleted or preempted: the node's pods change, the booking stays.
        assert pl.filter(state=CycleState(), pod=big, node_info=node_info(topology)).reasons == [
            POD
        ]
        return
    both = [("default", "p"), ("default", "shared")]
    update = {
        "no-fingerprint": two_zone(),
        "fingerprint-of-the-node-pods": fingerprinted(topology, both),
        "fingerprint-of-other-pods": fingerprinted(topology, [("default", "other")]),
        "exclusive-method-without-the-shared-pod": fingerprinted(
            topology, [("default", "p")], method="with-exclusive-resources"
        ),
        "exclusive-method-with-the-shared-pod": fingerprinted(
            topology, both, method="with-exclusive-resources"
        ),
    }[agent]
    lister.add(update)
    # Within the period of the rejection: no resync yet.
    assert pl.filter(state=CycleState(), pod=big, node_info=on_node).reasons == [POD]
    clock.step(5)  # the next resync
    verdict = pl.filter(state=CycleState(), pod=big, node_info=on_node)
    assert (verdict is None) is flushed


@pytest.mark.parametrize(
    ("detect", "foreign", "usable"),
    [
        ("All", "best-effort", False),
        ("All", "own-profile", True),
        ("OnlyExclusiveResources", "best-effort", True),
        ("OnlyExclusiveResources", "guaranteed-whole-cpus", False),
        ("OnlyExclusiveResources", "burstable-whole-cpus", True),
        ("None", "guaranteed-whole-cpus", True),
    ],
    ids=[
        "all-foreign-pod-marks-node",
        "all-pod-of-the-profile-is-not-foreign",
        "only-exclusive-shared-pod-ignored",
        "only-exclusive-exclusive-pod-marks-node",
        "only-exclusive-burstable-cpus-shared",
        "detection-off",
    ],
)
def test_foreign_pods(detect, foreign, usable):
    # Upstream (cache/foreign_pods.go): a pod another scheduler placed makes the node's
    # NRT data unusable (Filter: invalid node topology data, Score 0) until a resync
    # finds an object accounting for it.
    topology = two_zone()
    lister, clock = StaticLister([topology]), FakeClock()
    _, pl = overreserve(lister, clock, {"foreignPodsDetect": detect})
    pod = gu({"cpu": 1, "memory": "1Gi"})
    info = node_info(topology)
    assert pl.filter(state=CycleState(), pod=pod, node_info=info) is None
    builder = make_pod("other").scheduler_name(
        "default-scheduler" if foreign == "own-profile" else "other-scheduler"
    )
    if foreign == "guaranteed-whole-cpus":
        builder = builder.container({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})
    elif foreign == "burstable-whole-cpus":
        builder = builder.container({"cpu": "2"})
    else:
        builder = builder.container()
    info.add_pod(PodInfo(builder.obj()))
    status = pl.filter(state=CycleState(), pod=pod, node_info=info)
    if usable:
        assert status is None
        return
    assert status.reasons == ["invalid node topology data"]
    assert pl.score(pod=pod, node_info=info) == 0
    # The agent's next object counts the foreign pod: the next resync takes it.
    lister.add(fingerprinted(topology, [("default", "other")]))
    clock.step(5)
    assert pl.filter(state=CycleState(), pod=pod, node_info=info) is None


@pytest.mark.parametrize(
    ("pods", "sign"),
    [
        (
            [
                ("production", "jaeger-dpgjk"),
                ("production", "nginx-rt684"),
                ("production", "envoy-g9m22"),
            ],
            "pfp0v001607b76a0e9d3aeb4",
        ),
        (
            [
                ("analytics", "controller-69dkj"),
                ("kube-public", "subscriber-tq6v7"),
                ("kube-public", "transformer-hfbng"),
                ("kube-public", "validator-c6pn5"),
                ("kube-system", "proxy-wszrd"),
                ("middleware", "processor-jkrl4"),
                ("network", "gateway-vsll5"),
                ("network", "importer-kzdfr"),
                ("network", "importer-q5vt9"),
                ("staging", "prometheus-bwgbn"),
            ],
            "pfp0v001567144e4a561bb5a",
        ),
    ],
    ids=["compat-tiny-3pods-1ns", "compat-small-10pods-3ns"],
)
def test_pod_fingerprint_compat(pods, sign):
    # podfingerprint's testdata: the same signature, in any order.
    assert pod_fingerprint(pods) == sign
    assert pod_fingerprint(reversed(pods)) == sign


def test_discard_reserved_nodes():
    topology = two_zone()
    fw, pl = plugin([topology], {"discardReservedNodes": True, "cacheResyncPeriodSeconds": 5})
    pod = gu({"cpu": 1, "memory": "1Gi"})
    placed = gu({"cpu": 1, "memory": "1Gi"})
    state = fw.new_cycle_state()
    fw.run_reserve_plugins_reserve(state, PodInfo(placed), "n")
    status = pl.filter(state=CycleState(), pod=pod, node_info=node_info(topology))
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["invalid node topology data"]
    assert pl.score(pod=pod, node_info=node_info(topology)) == 0
    fw.run_post_bind_plugins(state, PodInfo(placed), "n")
    assert pl.filter(state=CycleState(), pod=pod, node_info=node_info(topology)) is None


# -- args ------------------------------------------------------------------------------------------
def test_args_defaults():
    args = NodeResourceTopologyMatch.Args()
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    assert args.cache_resync_period_seconds == 0
    assert args.discard_reserved_nodes is False
    assert args.cache.foreign_pods_detect == "All"
    assert args.cache.resync_method == "Autodetect"
    assert args.cache.informer_mode == "Dedicated"
    assert args.cache.resync_scope == "All"


def test_args_zero_weight_means_one():
    args = NodeResourceTopologyMatch.Args.model_validate(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}}
    )
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1)]


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        (
            {"scoringStrategy": {"type": "Spread"}},
            "scoringStrategy.type",
            "invalid ScoringStrategyType",
        ),
        ({"cache": {"resyncMethod": "Sometimes"}}, "cache.resyncMethod", "Sometimes"),
        ({"scoringStrategy": {"kind": "x"}}, "scoringStrategy.kind", ""),
    ],
    ids=["unknown-strategy", "unknown-resync-method", "unknown-key"],
)
def test_args_errors(args, path, message):
    with pytest.raises(PluginArgsError) as err:
        make_framework(NodeResourceTopologyMatch, args={NAME: args}, lister=StaticLister([]))
    assert path in str(err.value)
    assert message in str(err.value)


def test_kind_is_registered_and_cluster_scoped():
    assert resolve_kind("NodeResourceTopology") is NodeResourceTopology
    obj = two_zone("worker-1")
    assert obj.key == "worker-1"
    assert obj.api_version == "topology.node.k8s.io/v1alpha2"


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("NodeResourceTopology", "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"),
        ("SeccompProfile", "/apis/security-profiles-operator.x-k8s.io/v1beta1/seccompprofiles"),
        ("PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"),
    ],
    ids=["y-to-ies", "plain-s", "podgroup-unchanged"],
)
def test_crd_collection_of_a_cluster(kind, path):
    resource = resource_for(kind)
    assert resource.path == path
    assert resource.namespaced is (kind != "NodeResourceTopology")


def test_batches_equal_single_calls():
    nrts = default_numa_nodes("SingleNUMANodePodLevel")
    _, pl = plugin(nrts[:2], {"scoringStrategy": {"type": "MostAllocated"}})
    infos = [node_info(t) for t in nrts]
    batch = node_batch(infos)
    pod = gu({"cpu": 3, "memory": "20Mi"})
    singles = [pl.filter(state=CycleState(), pod=pod, node_info=i) for i in infos]
    batched = pl.filter_nodes(state=CycleState(), pod=pod, nodes=batch)
    assert [s and s.reasons for s in batched] == [s and s.reasons for s in singles]
    assert [s and s.reasons for s in singles] == [None, ["cannot align pod"], None]
    scores = [pl.score(pod=pod, node_info=i) for i in infos]
    assert list(pl.score_nodes(pod=pod, nodes=batch)) == scores == [39, 20, 0]
    # Again, from the verdicts remembered per node; a pod that fits everywhere: None.
    assert list(pl.score_nodes(pod=pod, nodes=batch)) == scores
    assert (
        pl.filter_nodes(state=CycleState(), pod=gu({"cpu": 1, "memory": "1Mi"}), nodes=batch)
        is None
    )


@pytest.mark.parametrize(
    "change", ["update", "delete", "create"], ids=["object-updated", "object-deleted", "new-object"]
)
def test_batches_follow_nrt_changes(change):
    # The batch verdicts are kept per group of equal NRT data; a change of any object
    # must reach the next cycle, and equal data on two nodes must share a verdict.
    full, tight = two_zone("a"), two_zone("b", cpu="1")
    lister = StaticLister([full, tight] if change != "create" else [full])
    fw = make_framework(NodeResourceTopologyMatch, args={NAME: {}}, lister=lister)
    pl = fw.plugin(NAME)
    batch = node_batch([node_info(full), node_info(two_zone("b"))])
    pod = gu({"cpu": 2, "memory": "1Gi"})
    before = pl.filter_nodes(state=CycleState(), pod=pod, nodes=batch)
    if change == "create":
        assert before is None
        lister.add(tight)
        expected = [None, [POD]]
    else:
        assert [s and s.reasons for s in before] == [None, [POD]]
        if change == "update":
            lister.add(two_zone("b"))
        else:
            lister.remove(tight)
        expected = None
    after = pl.filter_nodes(state=CycleState(), pod=pod, nodes=batch)
    assert (after if after is None else [s and s.reasons for s in after]) == expected
    singles = [pl.filter(state=CycleState(), pod=pod, node_info=i) for i in batch.infos]
    assert [s and s.reasons for s in singles] == (expected or [None, None])


def test_events_to_register():
    # As upstream's EventsToRegister: NRT objects created or updated may fit the pod now.
    _, pl = plugin([])
    events = pl.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        (EventResource.NODE_RESOURCE_TOPOLOGY, ActionType.ADD | ActionType.UPDATE),
    ]
    assert all(e.queueing_hint is None for e in events)
