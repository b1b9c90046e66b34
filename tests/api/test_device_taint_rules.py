"""DeviceTaintRule (DRADeviceTaintRules): which devices a rule selects, the slices as the
scheduler sees them with the rules' taints, and the API server's ``timeAdded`` stamp."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import (
    DeviceTaintRule,
    ResourceSlice,
    parse_object,
    rule_matches_device,
    with_rule_taints,
)
from kubesched.backend.memory import MemoryCluster
from kubesched.backend.memory.naming import timestamp
from kubesched.clock import FakeClock


def _rule(
    name: str, selector: dict[str, str] | None, effect: str = "NoSchedule"
) -> DeviceTaintRule:
    spec: dict[str, Any] = {"taint": {"key": f"example.com/{name}", "effect": effect}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return parse_object(
        {
            "apiVersion": "resource.k8s.io/v1beta2",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def _slice(taints: list[dict[str, Any]] | None = None) -> ResourceSlice:
    return parse_object(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "taints": taints or []}, {"name": "gpu-1"}],
            },
        }
    )


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        (None, False),
        ({}, True),
        ({"driver": "gpu.example.com"}, True),
        ({"driver": "nic.example.com"}, False),
        ({"pool": "n1"}, True),
        ({"pool": "n2"}, False),
        ({"device": "gpu-0"}, True),
        ({"device": "gpu-1"}, False),
        ({"driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}, True),
        ({"driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}, False),
    ],
    ids=[
        "no-selector-nothing",
        "empty-selector-everything",
        "driver",
        "other-driver",
        "pool",
        "other-pool",
        "device",
        "other-device",
        "all-three",
        "one-of-three-differs",
    ],
)
def test_a_rule_selects_by_driver_pool_and_device(
    selector: dict[str, str] | None, matches: bool
) -> None:
    rule = _rule("r", selector)
    assert rule_matches_device(rule, "gpu.example.com", "n1", "gpu-0") is matches


def test_the_rules_taints_follow_the_slices_own_in_rule_name_order() -> None:
    own = {"key": "example.com/driver", "effect": "NoExecute"}
    rules = [_rule("b", {"device": "gpu-0"}), _rule("a", {}), _rule("c", {"device": "gpu-9"})]
    (tainted,) = with_rule_taints([_slice([own])], rules)
    assert [[t.key for t in d.taints] for d in tainted.spec.devices] == [
        ["example.com/driver", "example.com/a", "example.com/b"],
        ["example.com/a"],
    ]


def test_a_slice_no_rule_selects_is_handed_back_unchanged() -> None:
    sl = _slice()
    assert with_rule_taints([sl], [_rule("r", {"pool": "elsewhere"})])[0] is sl
    assert sl.spec.devices[0].taints == []


@pytest.mark.parametrize(
    ("new_effect", "given", "expected"),
    [
        ("NoSchedule", None, 0.0),
        ("NoExecute", None, 60.0),
        ("NoExecute", 30.0, 30.0),
        ("NoSchedule", 30.0, 30.0),
    ],
    ids=[
        "same-effect-keeps-time",
        "new-effect-old-time-restamped",
        "new-effect-new-time-kept",
        "same-effect-new-time-kept",
    ],
)
def test_time_added_is_stamped_as_the_api_server_does(
    new_effect: str, given: float | None, expected: float
) -> None:
    """Created without ``timeAdded``: now. An update at 60 s that changes the effect but
    keeps the old time is stamped again (the time says when the effect began); a time
    given with the update is kept."""
    clock = FakeClock()
    cluster = MemoryCluster(clock)
    created = cluster.create(_rule("r", {}))
    assert created.spec.taint.time_added == timestamp(0.0)
    clock.set(60.0)
    new = created.model_copy(deep=True)
    new.spec.taint.effect = new_effect
    if given is not None:
        new.spec.taint.time_added = timestamp(given)
    assert cluster.update(new).spec.taint.time_added == timestamp(expected)
