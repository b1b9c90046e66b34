"""NodeResourceTopologyMatch with ``preemptionMode: Enabled``: the victims' release on the
cases of scheduler-plugins' ``preemption/preemption_test.go`` and its Filter on those of
``filter_preemption_test.go`` (case ids name the upstream cases), where the NUMA placement
comes from, the arg, and the whole dry run with DefaultPreemption."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import CycleState, NodeInfo, PluginArgsError, PodInfo
from kubesched.api import Pod, parse_quantity, resource_value
from kubesched.cache import new_snapshot
from kubesched.clock import FakeClock
from kubesched.framework.listers import StaticLister
from kubesched.testing import make_framework, make_node
from kubesched_contrib.noderesourcetopology import NAME, NodeResourceTopologyMatch
from kubesched_contrib.noderesourcetopology.api import AttributeInfo
from kubesched_contrib.noderesourcetopology.numa import numa_nodes
from kubesched_contrib.noderesourcetopology.numaplacement import (
    ATTRIBUTE_METADATA,
    ATTRIBUTE_VECTOR,
    PlacementInfo,
    decode,
    encode,
)
from kubesched_contrib.noderesourcetopology.preemption import (
    ERR_EXCEEDS_ALLOCATABLE,
    ERR_NO_CONTAINERS,
    ERR_NO_PLACEMENT,
    ERR_NO_VICTIMS,
    ERR_NOTHING_TO_ADD,
    REASON_MISSING_NUMA_MAPPING,
    EvictionSimulationError,
    MissingNUMAMappingError,
    numa_after_eviction,
    zone_allocatable,
)
from kubesched_contrib.noderesourcetopology.resync import (
    ATTRIBUTE_FINGERPRINT,
    nrt_resource_names,
    pod_fingerprint,
)

from .test_noderesourcetopology import nrt

DEV_A = "example-device.com/deviceA"
DEV_B = "example-device.com/deviceB"

Spec = tuple[str, dict[str, str], dict[str, str]]


def pod(
    namespace: str,
    name: str,
    containers: list[Spec],
    *,
    init: list[tuple[str, dict[str, str], dict[str, str], bool]] = (),  # type: ignore[assignment]
    node: str | None = None,
    priority: int = 0,
) -> Pod:
    """A pod of named containers: (name, requests, limits); init: (..., sidecar)."""

    def container(name: str, requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
        return {"name": name, "image": "i", "resources": {"requests": requests, "limits": limits}}

    return Pod.model_validate(
        {
            "metadata": {"namespace": namespace, "name": name, "uid": f"{namespace}-{name}"},
            "spec": {
                "nodeName": node,
                "priority": priority,
                "containers": [container(*c) for c in containers],
                "initContainers": [
                    container(n, r, lim) | ({"restartPolicy": "Always"} if sidecar else {})
                    for n, r, lim, sidecar in init
                ],
            },
        }
    )


def guaranteed(namespace: str, name: str, cpu: str, memory: str, **kw: Any) -> Pod:
    """``makeGuaranteedPod``: one container ``cnt`` with requests = limits."""
    res = {"cpu": cpu, "memory": memory}
    return pod(namespace, name, [("cnt", res, res)], **kw)


def best_effort(namespace: str, name: str, **kw: Any) -> Pod:
    return pod(namespace, name, [("cnt", {}, {})], **kw)


# -- preemption_test.go: TestGetNRTPostPodsEviction -----------------------------------------------
TEST_NRT = nrt(
    "node-0",
    {
        "node-0": {"cpu": ("10", "1"), "memory": ("500Mi", "100Mi"), DEV_A: ("8", "1")},
        "node-1": {"cpu": ("10", "1"), "memory": ("500Mi", "100Mi"), DEV_B: ("8", "2")},
    },
)


def ten_containers() -> PlacementInfo:
    """``getTestEncodedInfo10Containers``: ten containers on two NUMA nodes."""
    placement = [
        (("ns-a", "pod-0", "cnt-0"), 0),
        (("ns-a", "pod-0", "cnt-1"), 0),
        (("ns-a", "pod-0", "cnt-3"), 0),
        (("ns-a", "pod-a-1", "cnt-0"), 0),
        (("ns-a", "pod-a-2", "cnt-0"), 0),
        (("ns-b", "pod-0", "cnt-0"), 1),
        (("ns-b", "pod-0", "cnt-1"), 1),
        (("ns-b", "pod-0", "cnt-3"), 1),
        (("ns-b", "pod-1", "cnt-0"), 1),
        (("ns-b", "pod-2", "cnt-0"), 1),
    ]
    return decode(encode(2, placement), [ident for ident, _ in placement])


def _res(cpu: str, memory: str, **devices: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory} | {
        DEV_A if k == "a" else DEV_B: v for k, v in devices.items()
    }


MIXED_VICTIMS = [
    pod(
        "ns-a",
        "pod-0",
        [
            ("cnt-0", _res("1", "100Mi", a="1"), _res("2", "100Mi", a="1")),
            ("cnt-1", _res("1", "100Mi", a="2"), _res("2", "200Mi", a="2")),
            ("cnt-2", _res("1", "100Mi"), _res("2", "200Mi")),
            ("cnt-3", _res("1", "100Mi", a="1"), _res("2", "200Mi", a="1")),
        ],
    ),
    pod("ns-b", "pod-1", [("cnt-0", {DEV_B: "3"}, {DEV_B: "3"})]),
    pod("ns-b", "pod-2", [("cnt-0", _res("2", "100Mi", b="3"), _res("2", "100Mi", b="3"))]),
]

SIDECAR = _res("1", "100Mi", a="1")
ONCE = _res("5", "400Mi", a="5")
CPU_MEM = _res("1", "100Mi")

UNCHANGED = {
    0: {"cpu": "1", "memory": "100Mi", DEV_A: "1"},
    1: {"cpu": "1", "memory": "100Mi", DEV_B: "2"},
}

EVICTION_CASES = [
    ("no victims", [], ten_containers(), ERR_NO_VICTIMS, UNCHANGED),
    (
        "empty numa placement info with victims",
        [guaranteed("default", "pod-0", "1", "100Mi")],
        None,
        ERR_NO_PLACEMENT,
        UNCHANGED,
    ),
    (
        "victims with non-exclusive resources",
        [best_effort("default", "pod-0")],
        ten_containers(),
        ERR_NOTHING_TO_ADD,
        UNCHANGED,
    ),
    (
        "mixed victims with exclusive resources",
        MIXED_VICTIMS,
        ten_containers(),
        None,
        {
            0: {"cpu": "1", "memory": "100Mi", DEV_A: "5"},
            1: {"cpu": "3", "memory": "200Mi", DEV_B: "8"},
        },
    ),
    # Upstream's release skips the container and finds nothing to add; its Filter test
    # ("eviction simulation failure") wants the missing mapping reported, as here.
    (
        "victim not found in numa placement info",
        [pod("ns-a", "newpod", [("cnt-0", _res("1", "100Mi", a="1"), _res("1", "100Mi", a="1"))])],
        ten_containers(),
        "no NUMA mapping for container ns-a/newpod/cnt-0",
        UNCHANGED,
    ),
    (
        "resources release exceeds allocatable",
        [
            pod(
                "ns-a",
                "pod-0",
                [("cnt-0", _res("15", "100Mi", a="20"), _res("15", "100Mi", a="20"))],
            )
        ],
        ten_containers(),
        ERR_EXCEEDS_ALLOCATABLE,
        UNCHANGED,
    ),
    (
        "numa placement info with no containers",
        [guaranteed("default", "pod-0", "1", "100Mi")],
        PlacementInfo({}),
        ERR_NO_CONTAINERS,
        UNCHANGED,
    ),
    (
        "victim with restartable init container exclusive resources",
        [
            pod(
                "ns-a",
                "pod-0",
                [("cnt-1", CPU_MEM, CPU_MEM)],
                init=[("cnt-0", SIDECAR, SIDECAR, True)],
            )
        ],
        ten_containers(),
        None,
        {0: {"cpu": "3", "memory": "300Mi", DEV_A: "2"}, 1: UNCHANGED[1]},
    ),
    (
        "non-restartable init container resources are not accumulated",
        [
            pod(
                "ns-a",
                "pod-0",
                [("cnt-0", SIDECAR, SIDECAR)],
                init=[("init-once", ONCE, ONCE, False)],
            )
        ],
        ten_containers(),
        None,
        {0: {"cpu": "2", "memory": "200Mi", DEV_A: "2"}, 1: UNCHANGED[1]},
    ),
]


@pytest.mark.parametrize(
    ("victims", "placement", "error", "expected"),
    [c[1:] for c in EVICTION_CASES],
    ids=[c[0] for c in EVICTION_CASES],
)
def test_numa_after_eviction(victims, placement, error, expected):
    numa = numa_nodes(TEST_NRT.zones)
    run = lambda: numa_after_eviction(  # noqa: E731
        numa, zone_allocatable(TEST_NRT), victims, placement, nrt_resource_names(TEST_NRT)
    )
    if error is None:
        after = run()
    else:
        with pytest.raises(EvictionSimulationError, match=error):
            run()
        after = numa
    got = {n.numa_id: n.resources for n in after}
    assert got == {
        nid: {name: resource_value(name, q) for name, q in _quantities(res).items()}
        for nid, res in expected.items()
    }
    # The cached zones are never changed.
    assert {n.numa_id: n.resources for n in numa} == {
        nid: {name: resource_value(name, q) for name, q in _quantities(res).items()}
        for nid, res in UNCHANGED.items()
    }


def _quantities(res: dict[str, str]) -> dict[str, Any]:
    return {k: parse_quantity(v) for k, v in res.items()}


def test_missing_mapping_is_its_own_error():
    with pytest.raises(MissingNUMAMappingError):
        numa_after_eviction(
            numa_nodes(TEST_NRT.zones),
            zone_allocatable(TEST_NRT),
            EVICTION_CASES[4][1],
            ten_containers(),
            nrt_resource_names(TEST_NRT),
        )


# -- filter_preemption_test.go: TestFilter_PreemptionFlow -----------------------------------------
NODE = "node-preempt"


def preemption_nrt(on_node: list[Pod], placed: dict[str, int]) -> Any:
    """``makePreemptionNRT`` (container scope; NUMA 0 full, NUMA 1 with 2 cpus) as the
    agent writes it: the fingerprint of ``on_node`` and the NUMA node of each pod named
    in ``placed`` (its container ``cnt``)."""
    obj = nrt(
        NODE,
        {
            "node-0": {"cpu": ("4", "0"), "memory": ("8Gi", "7Gi")},
            "node-1": {"cpu": ("4", "2"), "memory": ("8Gi", "8Gi")},
        },
        policy="SingleNUMANodeContainerLevel",
        attributes={
            ATTRIBUTE_FINGERPRINT: pod_fingerprint(
                (p.metadata.namespace, p.metadata.name) for p in on_node
            )
        },
    )
    if placed:
        payload = encode(2, [(("default", name, "cnt"), nid) for name, nid in placed.items()])
        obj.attributes.append(AttributeInfo(name=ATTRIBUTE_METADATA, value=payload.pack_metadata()))
        for zone in obj.zones:
            vector = payload.vectors.get(int(zone.name.removeprefix("node-")))
            if vector:
                zone.attributes.append(AttributeInfo(name=ATTRIBUTE_VECTOR, value=vector))
    return obj


def info_with(pods: list[Pod]) -> NodeInfo:
    ni = NodeInfo(make_node(NODE).capacity({"cpu": "8", "memory": "16Gi", "pods": "110"}).obj())
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni


VICTIM = guaranteed("default", "victim", "4", "1Gi")
PREEMPTOR = guaranteed("default", "preemptor", "4", "1Gi")
VICTIM2 = guaranteed("ns-2", "victim2", "4", "1Gi")
PLACED = guaranteed("default", "placed-pod", "2", "512Mi")
BE0 = best_effort("default", "non-exclusive-0")
BE1 = best_effort("default", "non-exclusive-1")
EXCLUSIVE_VICTIM = guaranteed("default", "exclusive-victim", "4", "1Gi")
TOO_LARGE = guaranteed("default", "too-large", "8", "1Gi")

ALIGN = "cannot align container"

# (id, mode, pods the agent knew, their NUMA nodes, pods arriving since, victims, preemptor,
#  reason or None, node marked for a resync)
FLOW_CASES = [
    (
        "without preemption (default mode) pod remains unschedulable",
        "Disabled",
        [VICTIM],
        {"victim": 0},
        [],
        [],
        PREEMPTOR,
        ALIGN,
        True,
    ),
    (
        "without preemption victims (default mode) pod is unschedulable",
        "Enabled",
        [VICTIM],
        {"victim": 0},
        [],
        [],
        PREEMPTOR,
        ALIGN,
        True,
    ),
    (
        "victim eviction makes node schedulable",
        "Enabled",
        [VICTIM],
        {"victim": 0},
        [],
        [VICTIM],
        PREEMPTOR,
        None,
        False,
    ),
    (
        "victims without NUMA placement info preserve the normal Filter behavior"
        " - no preemption effect",
        "Enabled",
        [VICTIM],
        {},
        [],
        [VICTIM],
        PREEMPTOR,
        ALIGN,
        False,
    ),
    (
        "preemption mode is disabled, preserve the normal Filter behavior even if eviction"
        " seems like a solution - no preemption effect",
        "Disabled",
        [VICTIM],
        {"victim": 0},
        [],
        [VICTIM],
        PREEMPTOR,
        ALIGN,
        True,
    ),
    (
        "preemption with eviction simulation failure results in unschedulable",
        "Enabled",
        [VICTIM],
        {"victim": 0},
        [VICTIM2],
        [VICTIM2],
        PREEMPTOR,
        REASON_MISSING_NUMA_MAPPING,
        True,
    ),
    (
        "preemption with only non-exclusive victims continues filtering without resync",
        "Enabled",
        [BE0, BE1, PLACED],
        {"placed-pod": 0},
        [],
        [BE0, BE1],
        PREEMPTOR,
        ALIGN,
        False,
    ),
    (
        "preemption with mixed victims fails eviction simulation and triggers resync",
        "Enabled",
        [BE0, BE1, PLACED],
        {"placed-pod": 0},
        [EXCLUSIVE_VICTIM],
        [BE0, BE1, EXCLUSIVE_VICTIM],
        PREEMPTOR,
        REASON_MISSING_NUMA_MAPPING,
        True,
    ),
    (
        "preemption with unschedulable result skips over-reserve marking",
        "Enabled",
        [VICTIM],
        {"victim": 0},
        [],
        [VICTIM],
        TOO_LARGE,
        ALIGN,
        False,
    ),
]


@pytest.mark.parametrize(
    ("mode", "known", "placed", "arrived", "victims", "preemptor", "reason", "marked"),
    [c[1:] for c in FLOW_CASES],
    ids=[c[0] for c in FLOW_CASES],
)
def test_filter_preemption_flow(mode, known, placed, arrived, victims, preemptor, reason, marked):
    fw = make_framework(
        NodeResourceTopologyMatch,
        args={NAME: {"preemptionMode": mode, "cacheResyncPeriodSeconds": 5}},
        lister=StaticLister([preemption_nrt(known, placed)]),
        clock=FakeClock(),
    )
    pl = fw.plugin(NAME)
    # The placement is decoded while the node runs what the agent reported; pods that
    # arrive later are not in it.
    pl.cache.get(info_with(known))
    assert (pl.cache.placement(info_with(known)) is not None) == bool(placed)
    ni = info_with([*known, *arrived])
    state = CycleState()
    preemptor_info = PodInfo(preemptor)
    for victim in victims:
        ni.remove_pod(PodInfo(victim))
        status = fw.run_pre_filter_extension_remove_pod(state, preemptor_info, PodInfo(victim), ni)
        assert status.is_success()
    status = fw.run_filter_plugins(state, preemptor_info, ni)
    assert status.reasons == ([reason] if reason else [])
    assert pl.cache._views[NODE].maybe_overreserved is marked


def test_reprieved_victim_counts_again():
    # RemovePod then AddPod (a reprieve): the victim's zone is consumed again.
    fw = make_framework(
        NodeResourceTopologyMatch,
        args={NAME: {"preemptionMode": "Enabled"}},
        lister=StaticLister([preemption_nrt([VICTIM], {"victim": 0})]),
    )
    ni = info_with([VICTIM])
    state = CycleState()
    pi = PodInfo(PREEMPTOR)
    fw.run_pre_filter_extension_remove_pod(state, pi, PodInfo(VICTIM), ni)
    clone = state.clone()
    assert fw.run_filter_plugins(state, pi, ni).is_success()
    fw.run_pre_filter_extension_add_pod(clone, pi, PodInfo(VICTIM), ni)
    assert fw.run_filter_plugins(clone, pi, ni).reasons == [ALIGN]
    # The clone's reprieve left the first state's victims alone.
    assert fw.run_filter_plugins(state, pi, ni).is_success()


# -- where the placement comes from ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("fingerprint_of", "decoded"),
    [([VICTIM], True), ([], False), (None, False)],
    ids=["fingerprint-of-the-pods", "fingerprint-of-other-pods", "no-fingerprint"],
)
def test_placement_needs_the_fingerprint_of_the_pods(fingerprint_of, decoded):
    obj = preemption_nrt(fingerprint_of or [], {"victim": 0})
    if fingerprint_of is None:
        obj.attributes = [a for a in obj.attributes if a.name != ATTRIBUTE_FINGERPRINT]
    fw = make_framework(
        NodeResourceTopologyMatch,
        args={NAME: {"preemptionMode": "Enabled"}},
        lister=StaticLister([obj]),
    )
    placement = fw.plugin(NAME).cache.placement(info_with([VICTIM]))
    assert (placement is not None) is decoded
    if decoded:
        assert placement.numa_affinity("default", "victim", "cnt") == 0


def test_failed_placement_is_tried_again_when_the_pods_change():
    obj = preemption_nrt([VICTIM], {"victim": 0})
    fw = make_framework(
        NodeResourceTopologyMatch,
        args={NAME: {"preemptionMode": "Enabled"}},
        lister=StaticLister([obj]),
    )
    cache = fw.plugin(NAME).cache
    ni = info_with([VICTIM, PLACED])  # the agent has not seen placed-pod yet
    assert cache.placement(ni) is None
    ni.remove_pod(PodInfo(PLACED))  # now the pods are those it reported
    assert cache.placement(ni).containers == 1


# -- the arg --------------------------------------------------------------------------------------
def test_preemption_mode_default_and_extensions():
    assert NodeResourceTopologyMatch.Args().preemption_mode == "Disabled"
    lister = StaticLister([])
    disabled = make_framework(NodeResourceTopologyMatch, lister=lister)
    enabled = make_framework(
        NodeResourceTopologyMatch, args={NAME: {"preemptionMode": "Enabled"}}, lister=lister
    )
    # Disabled, the extensions are hidden: preemption's dry run stays batched.
    assert not disabled.pre_filter_extensions_active(CycleState())
    assert enabled.pre_filter_extensions_active(CycleState())


def test_preemption_mode_invalid():
    with pytest.raises(PluginArgsError) as err:
        make_framework(
            NodeResourceTopologyMatch,
            args={NAME: {"preemptionMode": "Sometimes"}},
            lister=StaticLister([]),
        )
    assert (
        'preemptionMode: Unsupported value: "Sometimes": supported values: "Disabled", "Enabled"'
        in str(err.value)
    )


def test_dry_run_leaves_the_overreserve_view_alone():
    # A foreign victim removed in the dry run is no foreign pod leaving the node: the
    # cache looks at the snapshot's pods, so the node stays usable afterwards.
    foreign = guaranteed("default", "foreign", "4", "1Gi", node=NODE)
    foreign.spec.scheduler_name = "other-scheduler"
    ours = guaranteed("default", "victim", "4", "1Gi", node=NODE)
    clock = FakeClock()
    fw = make_framework(
        NodeResourceTopologyMatch,
        args={NAME: {"preemptionMode": "Enabled", "cacheResyncPeriodSeconds": 5}},
        lister=StaticLister([preemption_nrt([foreign, ours], {"foreign": 1, "victim": 0})]),
        clock=clock,
    )
    node = make_node(NODE).capacity({"cpu": "8", "memory": "16Gi", "pods": "110"}).obj()
    fw.set_snapshot(new_snapshot([foreign, ours], [node]))
    cache = fw.plugin(NAME).cache
    ni = fw.snapshot.get(NODE)
    assert cache.get(ni) == (None, False)  # a foreign pod on the node
    clock.step(5)
    assert cache.get(ni)[1]  # resynced: the object accounts for it
    dry = ni.clone()
    dry.remove_pod(PodInfo(foreign))
    state = CycleState()
    pi = PodInfo(PREEMPTOR)
    fw.run_pre_filter_extension_remove_pod(state, pi, PodInfo(foreign), dry)
    # (the release would leave NUMA 1 above its allocatable: the zones stay as they are)
    assert fw.run_filter_plugins(state, pi, dry).reasons == [ALIGN]
    assert cache.get(ni)[1]
