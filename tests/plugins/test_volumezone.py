"""VolumeZone: bound PVs' zone/region labels against the node's (upstream volume_zone_test.go)."""

from __future__ import annotations

import pytest

from kubesched import Code, QueueingHint
from kubesched.framework.listers import StaticLister
from kubesched.testing import assert_statuses, framework_for, make_node, make_pod, run_filter
from kubesched_builtin.volumezone import ERR_REASON_CONFLICT, NAME, VolumeZone

from .volume_objects import claim_volume, pod_with, pv, pvc, storage_class

U = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
GA_ZONE, GA_REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"

NODES = [
    make_node("ga-a").labels({GA_ZONE: "a", GA_REGION: "r1"}).obj(),
    make_node("ga-b").labels({GA_ZONE: "b", GA_REGION: "r1"}).obj(),
    make_node("beta-a").labels({BETA_ZONE: "a", BETA_REGION: "r1"}).obj(),
    make_node("no-zone").labels({"other": "x"}).obj(),
]


def bound(labels):
    return [pvc("data", volume="pv-1"), pv("pv-1", claim="data", labels=labels)]


CASES = [
    ("no volumes", [], make_pod("p").obj(), dict.fromkeys(["ga-a", "ga-b", "beta-a", "no-zone"])),
    (
        "GA zone label",
        bound({GA_ZONE: "a"}),
        pod_with(claim_volume("data")),
        {
            "ga-a": None,
            "ga-b": (U, ERR_REASON_CONFLICT),
            "beta-a": (U, ERR_REASON_CONFLICT),
            "no-zone": None,
        },
    ),
    (
        "beta zone label matches the node's beta or GA label",
        bound({BETA_ZONE: "a"}),
        pod_with(claim_volume("data")),
        {"ga-a": None, "ga-b": (U, ERR_REASON_CONFLICT), "beta-a": None, "no-zone": None},
    ),
    (
        "multi-zone PV (zones joined by __)",
        bound({GA_ZONE: "a__b"}),
        pod_with(claim_volume("data")),
        {"ga-a": None, "ga-b": None, "beta-a": (U, ERR_REASON_CONFLICT), "no-zone": None},
    ),
    (
        "region label",
        bound({GA_REGION: "r2"}),
        pod_with(claim_volume("data")),
        {
            "ga-a": (U, ERR_REASON_CONFLICT),
            "ga-b": (U, ERR_REASON_CONFLICT),
            "beta-a": (U, ERR_REASON_CONFLICT),
            "no-zone": None,
        },
    ),
    (
        "PV without topology labels",
        bound({"other": "x"}),
        pod_with(claim_volume("data")),
        dict.fromkeys(["ga-a", "ga-b", "beta-a", "no-zone"]),
    ),
    (
        "unbound claim of a WaitForFirstConsumer class is skipped",
        [storage_class("wffc"), pvc("data", cls="wffc")],
        pod_with(claim_volume("data")),
        dict.fromkeys(["ga-a", "ga-b", "beta-a", "no-zone"]),
    ),
    (
        "unbound claim of an Immediate class",
        [storage_class("fast", mode="Immediate"), pvc("data", cls="fast")],
        pod_with(claim_volume("data")),
        dict.fromkeys(["ga-a", "ga-b", "beta-a", "no-zone"], (U, "PersistentVolume had no name")),
    ),
    (
        "unbound claim without class",
        [pvc("data", cls=None)],
        pod_with(claim_volume("data")),
        dict.fromkeys(
            ["ga-a", "ga-b", "beta-a", "no-zone"],
            (U, "PersistentVolumeClaim had no pv name and storageClass name"),
        ),
    ),
    (
        "claim not found",
        [],
        pod_with(claim_volume("data")),
        dict.fromkeys(
            ["ga-a", "ga-b", "beta-a", "no-zone"], (U, 'persistentvolumeclaim "data" not found')
        ),
    ),
    (
        "PV not found",
        [pvc("data", volume="gone")],
        pod_with(claim_volume("data")),
        dict.fromkeys(
            ["ga-a", "ga-b", "beta-a", "no-zone"], (U, 'persistentvolume "gone" not found')
        ),
    ),
]


@pytest.mark.parametrize(
    ("objects", "pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_filter(objects, pod, expected) -> None:
    fw = framework_for(VolumeZone, lister=StaticLister(objects))
    assert_statuses(run_filter(fw, pod, NODES), expected)


def test_pre_filter_skips_pods_without_zoned_volumes() -> None:
    fw = framework_for(VolumeZone, lister=StaticLister(bound({"other": "x"})))
    state = fw.new_cycle_state()
    run_filter(fw, pod_with(claim_volume("data")), NODES, state=state)
    assert NAME in state.skip_filter_plugins


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, pv("pv-1", labels={GA_ZONE: "a"}), QueueingHint.QUEUE),
        (pv("pv-1", labels={GA_ZONE: "a"}), pv("pv-1", labels={GA_ZONE: "b"}), QueueingHint.QUEUE),
        (
            pv("pv-1", labels={GA_ZONE: "a"}),
            pv("pv-1", labels={GA_ZONE: "a", "x": "y"}),
            QueueingHint.SKIP,
        ),
    ],
    ids=["added", "zone-changed", "other-label"],
)
def test_pv_change_hint(old, new, expected) -> None:
    plugin = VolumeZone(None, None)
    assert plugin.is_schedulable_after_pv_change(pod_with(claim_volume("data")), old, new) is (
        expected
    )


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (storage_class("w"), QueueingHint.QUEUE),
        (storage_class("i", "Immediate"), QueueingHint.SKIP),
    ],
    ids=["wait-for-first-consumer", "immediate"],
)
def test_storage_class_hint(cls, expected) -> None:
    plugin = VolumeZone(None, None)
    assert plugin.is_schedulable_after_storage_class_added(make_pod().obj(), None, cls) is expected
