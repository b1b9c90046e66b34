"""NodeVolumeLimits: unique CSI volumes per driver against CSINode allocatable.count
(upstream csi_test.go): bound PVs, unbound claims, ephemeral claims, shared volumes,
migrated in-tree volumes."""

from __future__ import annotations

import pytest

from kubesched import Code, FeatureGates, QueueingHint
from kubesched.api import CSIDriver, CSINode
from kubesched.framework.listers import StaticLister
from kubesched.testing import (
    assert_batch_matches_per_node,
    assert_statuses,
    framework_for,
    make_node,
    make_pod,
    run_filter,
)
from kubesched_builtin.nodevolumelimits import (
    ERR_REASON_DRIVER_NOT_INSTALLED,
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NAME,
    VOLUME_LIMIT_SCALING_GATE,
    NodeVolumeLimits,
)

from .volume_objects import DRIVER, claim_volume, csi_node, pod_with, pv, pvc, storage_class

EXCEEDED = (Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
NODE = [make_node("n1").obj()]
MIGRATED = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}


def csi_pv(name: str, handle: str | None = None, driver: str = DRIVER):
    return pv(name, claim=None, csi={"driver": driver, "volumeHandle": handle or name})


def bound_claims(*names: str, handle_of=lambda n: n) -> list:
    out = []
    for n in names:
        out += [pvc(n, volume=f"pv-{n}"), csi_pv(f"pv-{n}", handle_of(n))]
    return out


def running(*claims: str, name: str = "r") -> object:
    return pod_with(*(claim_volume(c) for c in claims), name=name, uid=name, node="n1")


CASES = [
    ("under the limit", bound_claims("a", "b"), 2, [running("a")], ["b"], None),
    ("at the limit", bound_claims("a", "b", "c"), 2, [running("a", "b")], ["c"], EXCEEDED),
    (
        "a volume already attached counts once",
        bound_claims("a", "b"),
        2,
        [running("a", "b")],
        ["a"],
        None,
    ),
    (
        "two claims of one volume count once",
        bound_claims("a", "b", handle_of=lambda n: "same"),
        1,
        [],
        ["a", "b"],
        None,
    ),
    ("no limit published", bound_claims("a", "b", "c"), None, [running("a", "b")], ["c"], None),
    (
        "unbound claim counts under its class's driver",
        [*bound_claims("a"), storage_class("wffc"), pvc("new", cls="wffc")],
        1,
        [running("a")],
        ["new"],
        EXCEEDED,
    ),
    (
        "unbound claim without class is not counted",
        [*bound_claims("a"), pvc("new", cls=None)],
        1,
        [running("a")],
        ["new"],
        None,
    ),
    (
        "other drivers do not count",
        [*bound_claims("a"), pvc("b", volume="pv-b"), csi_pv("pv-b", driver="other.csi")],
        1,
        [running("a")],
        ["b"],
        None,
    ),
]


@pytest.mark.parametrize(
    ("objects", "limit", "pods", "claims", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_filter(objects, limit, pods, claims, expected) -> None:
    lister = StaticLister([*objects, csi_node("n1", count=limit)])
    fw = framework_for(NodeVolumeLimits, lister=lister)
    pod = pod_with(*(claim_volume(c) for c in claims))
    assert_statuses(run_filter(fw, pod, NODE, pods=pods), {"n1": expected})


def ebs_pod(*vids: str, name: str = "p", node: str = "") -> object:
    vols = [{"name": v, "awsElasticBlockStore": {"volumeID": f"aws://zone/{v}"}} for v in vids]
    return pod_with(*vols, name=name, uid=name, node=node)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [(MIGRATED, EXCEEDED), ({}, None)],
    ids=["migrated-on-node", "not-migrated"],
)
def test_migrated_in_tree_volumes_count_under_the_csi_driver(annotations, expected) -> None:
    lister = StaticLister([csi_node("n1", driver="ebs.csi.aws.com", count=1, **annotations)])
    fw = framework_for(NodeVolumeLimits, lister=lister)
    statuses = run_filter(fw, ebs_pod("vol-2"), NODE, pods=[ebs_pod("vol-1", name="r", node="n1")])
    assert_statuses(statuses, {"n1": expected})


def test_missing_claim_of_the_new_pod_is_unresolvable() -> None:
    fw = framework_for(NodeVolumeLimits, lister=StaticLister([csi_node("n1", count=1)]))
    statuses = run_filter(fw, pod_with(claim_volume("gone")), NODE)
    assert_statuses(
        statuses,
        {
            "n1": (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                'looking up PVC default/gone: persistentvolumeclaim "gone" not found',
            )
        },
    )


OTHER = "other.csi.example.com"


def _driver(name: str = DRIVER, prevent: bool | None = True) -> CSIDriver:
    spec = {} if prevent is None else {"preventPodSchedulingIfMissing": prevent}
    return CSIDriver.model_validate({"metadata": {"name": name}, "spec": spec})


def _csi_node(node: str, *drivers: str) -> CSINode:
    entries = [{"name": d, "nodeID": node} for d in drivers]
    return CSINode.model_validate({"metadata": {"name": node}, "spec": {"drivers": entries}})


def _missing(driver: str = DRIVER) -> tuple[Code, str]:
    return (Code.UNSCHEDULABLE, ERR_REASON_DRIVER_NOT_INSTALLED.format(driver=driver))


NODES3 = [make_node(n).obj() for n in ("n1", "n2", "n3")]
WFFC_NEW = [storage_class("wffc"), pvc("new", cls="wffc")]
SCALING_CASES = [
    # (id, gate, objects beside the claim and its class, claims, expected per node)
    (
        "driver missing on the node",
        True,
        [_driver(), _csi_node("n1", DRIVER), _csi_node("n2", OTHER)],
        {"n1": None, "n2": _missing(), "n3": _missing()},
    ),
    (
        "the driver does not ask",
        True,
        [_driver(prevent=False), _csi_node("n1", DRIVER), _csi_node("n2", OTHER)],
        {"n1": None, "n2": None, "n3": None},
    ),
    (
        "prevent unset",
        True,
        [_driver(prevent=None), _csi_node("n2", OTHER)],
        {"n1": None, "n2": None, "n3": None},
    ),
    (
        "no CSIDriver object",
        True,
        [_csi_node("n2", OTHER)],
        {"n1": None, "n2": None, "n3": None},
    ),
    (
        "gate off",
        False,
        [_driver(), _csi_node("n2", OTHER)],
        {"n1": None, "n2": None, "n3": None},
    ),
    (
        "checked before the limits: a node under its limit still needs the driver",
        True,
        [_driver(), _csi_node("n1", DRIVER), csi_node("n2", driver=OTHER, count=5)],
        {"n1": None, "n2": _missing(), "n3": _missing()},
    ),
]


@pytest.mark.parametrize(
    ("gate", "objects", "expected"),
    [c[1:] for c in SCALING_CASES],
    ids=[c[0] for c in SCALING_CASES],
)
def test_volume_limit_scaling_keeps_pods_off_nodes_without_their_driver(
    gate, objects, expected
) -> None:
    """With VolumeLimitScaling on, a driver whose CSIDriver sets
    ``preventPodSchedulingIfMissing`` must be listed in the node's CSINode (a node without
    CSINode lists none) for the pods that need it."""
    gates = FeatureGates({VOLUME_LIMIT_SCALING_GATE: gate})
    fw = framework_for(
        NodeVolumeLimits, lister=StaticLister([*WFFC_NEW, *objects]), feature_gates=gates
    )
    pod = pod_with(claim_volume("new"))
    assert_statuses(run_filter(fw, pod, NODES3), expected)
    assert_batch_matches_per_node(fw, NAME, pod, NODES3)


def test_volume_limit_scaling_names_the_first_missing_driver() -> None:
    """Of several missing drivers the first by name is reported (upstream's map order
    picks any)."""
    gates = FeatureGates({VOLUME_LIMIT_SCALING_GATE: True})
    objects = [
        *bound_claims("a"),
        _driver(),
        _driver(OTHER),
        storage_class("other", provisioner=OTHER),
        pvc("b", cls="other"),
    ]
    fw = framework_for(NodeVolumeLimits, lister=StaticLister(objects), feature_gates=gates)
    pod = pod_with(claim_volume("a"), claim_volume("b"))
    assert_statuses(run_filter(fw, pod, NODE), {"n1": _missing(DRIVER)})


def test_a_driver_registering_on_the_node_does_not_requeue() -> None:
    """A CSINode update that only adds a driver does not requeue the pods rejected for
    missing it, as kube-scheduler v1.36.2 with VolumeLimitScaling on (checked: such a pod
    was not retried within 40 s of its driver's registration; the periodic flush retries
    it)."""
    gates = FeatureGates({VOLUME_LIMIT_SCALING_GATE: True})
    plugin = framework_for(NodeVolumeLimits, feature_gates=gates).plugin(NAME)
    old, new = _csi_node("n1", OTHER), _csi_node("n1", OTHER, DRIVER)
    assert plugin.is_schedulable_after_csi_node_updated(make_pod().obj(), old, new) is (
        QueueingHint.SKIP
    )


def test_pods_without_volumes_skip() -> None:
    fw = framework_for(NodeVolumeLimits, lister=StaticLister())
    state = fw.new_cycle_state()
    run_filter(fw, make_pod("p").obj(), NODE, state=state)
    assert NAME in state.skip_filter_plugins


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (csi_node("n1", count=1), csi_node("n1", count=2), QueueingHint.QUEUE),
        (csi_node("n1", count=2), csi_node("n1", count=1), QueueingHint.SKIP),
        (csi_node("n1", count=2), csi_node("n1"), QueueingHint.QUEUE),
        (csi_node("n1", count=1), csi_node("n1", count=1, **MIGRATED), QueueingHint.QUEUE),
    ],
    ids=["limit-raised", "limit-lowered", "limit-removed", "migration-changed"],
)
def test_csi_node_update_hint(old, new, expected) -> None:
    plugin = framework_for(NodeVolumeLimits).plugin(NAME)
    assert plugin.is_schedulable_after_csi_node_updated(make_pod().obj(), old, new) is expected


def test_filter_nodes_matches_filter() -> None:
    nodes = [make_node(f"n{i}").obj() for i in range(6)]
    claims = [f"c{i}" for i in range(8)]
    objects = [
        *bound_claims(*claims),
        *(csi_node(f"n{i}", count=i % 3 + 1) for i in range(5)),  # n5 has no CSINode
    ]
    placed = [
        pod_with(claim_volume(c), name=f"r{i}", uid=f"r{i}", node=f"n{i % 6}")
        for i, c in enumerate(claims[:6])
    ]
    fw = framework_for(NodeVolumeLimits, lister=StaticLister(objects))
    pod = pod_with(claim_volume("c6"), claim_volume("c7"))
    assert_batch_matches_per_node(fw, NAME, pod, nodes, pods=placed)
