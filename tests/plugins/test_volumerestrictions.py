"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims in use, with
preemption's what-if (upstream volume_restrictions_test.go)."""

from __future__ import annotations

import pytest

from kubesched import Code, PodInfo, QueueingHint
from kubesched.framework.listers import StaticLister
from kubesched.testing import assert_statuses, framework_for, make_node, make_pod, run_filter
from kubesched_builtin.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    NAME,
    VolumeRestrictions,
)

from .volume_objects import claim_volume, pod_with, pvc

NODES = [make_node("n1").obj(), make_node("n2").obj()]


def gce(pd: str, ro: bool = False) -> dict:
    return {"name": f"gce-{pd}", "gcePersistentDisk": {"pdName": pd, "readOnly": ro}}


def ebs(vid: str) -> dict:
    return {"name": f"ebs-{vid}", "awsElasticBlockStore": {"volumeID": vid}}


def iscsi(iqn: str, ro: bool = False) -> dict:
    return {"name": f"iscsi-{iqn}", "iscsi": {"targetPortal": "t:3260", "iqn": iqn, "readOnly": ro}}


def rbd(monitors: list[str], image: str, pool: str | None = None, ro: bool = False) -> dict:
    source = {"monitors": monitors, "image": image, "readOnly": ro}
    if pool is not None:
        source["pool"] = pool
    return {"name": f"rbd-{image}", "rbd": source}


DISK_CASES = [
    ("same GCE PD", gce("d1"), gce("d1"), True),
    ("same GCE PD, both read-only", gce("d1", True), gce("d1", True), False),
    ("same GCE PD, one read-only", gce("d1", True), gce("d1"), True),
    ("other GCE PD", gce("d1"), gce("d2"), False),
    ("same EBS volume", ebs("vol-1"), ebs("vol-1"), True),
    ("other EBS volume", ebs("vol-1"), ebs("vol-2"), False),
    ("same iSCSI IQN", iscsi("iqn.a"), iscsi("iqn.a"), True),
    ("same iSCSI IQN, both read-only", iscsi("iqn.a", True), iscsi("iqn.a", True), False),
    ("same RBD image, shared monitor", rbd(["m1", "m2"], "img"), rbd(["m2"], "img"), True),
    (
        "same RBD image, default pool spelled out",
        rbd(["m1"], "img"),
        rbd(["m1"], "img", "rbd"),
        True,
    ),
    ("RBD image in another pool", rbd(["m1"], "img"), rbd(["m1"], "img", "other"), False),
    ("RBD image, no shared monitor", rbd(["m1"], "img"), rbd(["m3"], "img"), False),
    ("RBD image, both read-only", rbd(["m1"], "img", ro=True), rbd(["m1"], "img", ro=True), False),
]


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"), [c[1:] for c in DISK_CASES], ids=[c[0] for c in DISK_CASES]
)
def test_disk_conflicts(mine, theirs, conflict) -> None:
    fw = framework_for(VolumeRestrictions, lister=StaticLister())
    running = pod_with(theirs, name="running", uid="r", node="n1")
    statuses = run_filter(fw, pod_with(mine), NODES, pods=[running])
    expected = (Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT) if conflict else None
    assert_statuses(statuses, {"n1": expected, "n2": None})


RWOP = ("ReadWriteOncePod",)


@pytest.mark.parametrize(
    ("claims", "running", "expected"),
    [
        ([pvc("data", volume="v", modes=RWOP)], [], None),
        (
            [pvc("data", volume="v", modes=RWOP)],
            [pod_with(claim_volume("data"), name="holder", uid="h", node="n2")],
            (Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
        ),
        (
            [pvc("data", volume="v")],
            [pod_with(claim_volume("data"), name="holder", uid="h", node="n2")],
            None,
        ),
    ],
    ids=["rwop-unused", "rwop-in-use-anywhere", "rwo-shared"],
)
def test_read_write_once_pod(claims, running, expected) -> None:
    fw = framework_for(VolumeRestrictions, lister=StaticLister(claims))
    statuses = run_filter(fw, pod_with(claim_volume("data")), NODES, pods=running)
    assert_statuses(statuses, {"n1": expected, "n2": expected})


def test_missing_claim_is_unresolvable() -> None:
    fw = framework_for(VolumeRestrictions, lister=StaticLister())
    statuses = run_filter(fw, pod_with(claim_volume("data")), NODES)
    expected = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'persistentvolumeclaim "data" not found')
    assert_statuses(statuses, {"n1": expected, "n2": expected})


def test_pods_without_restricted_volumes_skip() -> None:
    fw = framework_for(VolumeRestrictions, lister=StaticLister([pvc("data", volume="v")]))
    state = fw.new_cycle_state()
    run_filter(fw, pod_with(claim_volume("data")), NODES, state=state)
    assert NAME in state.skip_filter_plugins


def test_preemption_what_if_removes_the_holder() -> None:
    """Removing the pod that uses the claim (a preemption victim) frees it; adding it back
    conflicts again: the state follows pre_filter_remove_pod / pre_filter_add_pod."""
    fw = framework_for(VolumeRestrictions, lister=StaticLister([pvc("data", modes=RWOP)]))
    holder = pod_with(claim_volume("data"), name="holder", uid="h", node="n1")
    state = fw.new_cycle_state()
    pod = pod_with(claim_volume("data"))
    statuses = run_filter(fw, pod, NODES, pods=[holder], state=state)
    assert statuses["n1"].code is Code.UNSCHEDULABLE
    plugin = fw.plugin(NAME)
    node_info = fw.snapshot.get("n1")
    what_if = state.clone()
    plugin.pre_filter_remove_pod(what_if, PodInfo(holder))
    assert plugin.filter(what_if, pod, node_info) is None
    plugin.pre_filter_add_pod(what_if, PodInfo(holder))
    assert plugin.filter(what_if, pod, node_info).code is Code.UNSCHEDULABLE
    # The original state is untouched by the what-if.
    assert plugin.filter(state, pod, node_info).code is Code.UNSCHEDULABLE


@pytest.mark.parametrize(
    ("deleted", "expected"),
    [
        (pod_with(gce("d1"), name="x", uid="x", node="n1"), QueueingHint.QUEUE),
        (pod_with(claim_volume("data"), name="x", uid="x", node="n1"), QueueingHint.QUEUE),
        (pod_with(gce("other"), name="x", uid="x", node="n1"), QueueingHint.SKIP),
        (make_pod("x").obj(), QueueingHint.SKIP),
    ],
    ids=["disk-holder", "claim-holder", "other-disk", "no-volumes"],
)
def test_pod_deleted_hint(deleted, expected) -> None:
    pod = pod_with(gce("d1"), claim_volume("data"))
    assert VolumeRestrictions(None, None).is_schedulable_after_pod_deleted(pod, deleted, None) is (
        expected
    )


def test_scheduler_preempts_the_holder_of_a_read_write_once_pod_claim() -> None:
    """End to end: the claim is in use by a low-priority pod; a high-priority pod wanting
    it preempts that pod (the only way to free the claim) and then runs."""
    from kubesched.api import NOT_SUPPORTED_PROVISIONER, PriorityClass
    from kubesched.testing import placements, simulate_small

    from .volume_objects import pv, storage_class

    high = PriorityClass.model_validate({"metadata": {"name": "high"}, "value": 1000})
    holder = pod_with(claim_volume("data"), name="holder", uid="h", node="node-0")
    wanting = pod_with(claim_volume("data"), name="wanting", uid="w")
    wanting.spec.priority_class_name = "high"
    run = simulate_small(
        storage_class("fast", mode="Immediate", provisioner=NOT_SUPPORTED_PROVISIONER),
        pv("vol", cls="fast", modes=RWOP),
        pvc("data", cls="fast", modes=RWOP),
        high,
        holder,
        wanting,
        nodes=2,
    )
    where = placements(run)
    assert "default/holder" not in where  # preempted
    assert where["default/wanting"] in {"node-0", "node-1"}
    assert any(e.reason == "Preempted" and e.involved_name == "holder" for e in run.cluster.events)
