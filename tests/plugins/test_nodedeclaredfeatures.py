"""NodeDeclaredFeatures: pods needing a node feature fit only nodes declaring it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched import ActionType, Code, EventResource, FeatureGates, PodInfo, QueueingHint
from kubesched.api import Pod
from kubesched.cache import new_snapshot
from kubesched.testing import assert_batch_matches_per_node, make_framework, make_node, make_pod
from kubesched_builtin.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED,
    NAME,
    NodeDeclaredFeatures,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_update,
    required_features,
)

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
REJECT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSATISFIED])
GATE_OFF = FeatureGates(
    {
        "NodeDeclaredFeatures": False,
        "ExtendWebSocketsToKubelet": False,
        "InPlacePodLevelResourcesVerticalScaling": False,
        "InPlacePodVerticalScalingInitContainers": False,
        "RestartAllContainersOnContainerExits": False,
    }
)


def pod(name: str = "p", **spec: Any) -> Pod:
    """A pod with one container ``c`` and ``spec`` merged into its spec; a ``rules`` key
    sets the container's ``restartPolicyRules`` (actions) and ``init_rules`` an init
    container's."""
    manifest = make_pod(name).manifest()
    rules = spec.pop("rules", None)
    init_rules = spec.pop("init_rules", None)
    container = manifest["spec"]["containers"][0]
    if rules is not None:
        container["restartPolicy"] = "Never"
        container["restartPolicyRules"] = [
            {"action": a, "exitCodes": {"operator": "In", "values": [42]}} for a in rules
        ]
    if init_rules is not None:
        manifest["spec"]["initContainers"] = [
            {
                "name": "init",
                "image": "busybox",
                "restartPolicy": "Never",
                "restartPolicyRules": [
                    {"action": a, "exitCodes": {"operator": "In", "values": [1]}}
                    for a in init_rules
                ],
            }
        ]
    manifest["spec"].update(spec)
    return Pod.model_validate(manifest)


INFER_CASES = [
    ("plain-pod", {}, set()),
    ("container-restarts-all", {"rules": ["RestartAllContainers"]}, {RESTART_ALL}),
    ("init-container-restarts-all", {"init_rules": ["RestartAllContainers"]}, {RESTART_ALL}),
    ("container-restart-rule-restarts-itself", {"rules": ["Restart"]}, set()),
    (
        "host-network-in-user-namespace",
        {"hostNetwork": True, "hostUsers": False},
        {USERNS_HOST_NETWORK},
    ),
    ("host-network-host-users", {"hostNetwork": True, "hostUsers": True}, set()),
    ("host-network-host-users-unset", {"hostNetwork": True}, set()),
    ("user-namespace-pod-network", {"hostUsers": False}, set()),
    (
        "both",
        {"rules": ["RestartAllContainers"], "hostNetwork": True, "hostUsers": False},
        {RESTART_ALL, USERNS_HOST_NETWORK},
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in INFER_CASES], ids=[c[0] for c in INFER_CASES]
)
def test_required_features(spec, expected) -> None:
    assert required_features(pod(**spec)) == expected


FILTER_CASES = [
    ("declares-nothing", {"rules": ["RestartAllContainers"]}, [], REJECT),
    ("declares-it", {"rules": ["RestartAllContainers"]}, [RESTART_ALL], None),
    (
        "declares-it-among-unknown-ones",
        {"rules": ["RestartAllContainers"]},
        ["SomeFutureFeature", RESTART_ALL, "ExtendWebSocketsToKubelet"],
        None,
    ),
    ("declares-another", {"rules": ["RestartAllContainers"]}, [USERNS_HOST_NETWORK], REJECT),
    (
        "declares-one-of-two-needed",
        {"rules": ["RestartAllContainers"], "hostNetwork": True, "hostUsers": False},
        [RESTART_ALL],
        REJECT,
    ),
    (
        "declares-both-needed",
        {"rules": ["RestartAllContainers"], "hostNetwork": True, "hostUsers": False},
        [USERNS_HOST_NETWORK, RESTART_ALL],
        None,
    ),
]


@pytest.mark.parametrize(
    ("spec", "declared", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(spec, declared, expected) -> None:
    p = pod(**spec)
    # The node under test between two declaring nothing and one declaring the same: the
    # batch path groups nodes by what they declare.
    nodes = [
        make_node("a").obj(),
        make_node("b").declared_features(*declared).obj(),
        make_node("c").obj(),
        make_node("d").declared_features(*declared).obj(),
    ]
    snap = new_snapshot([], nodes)
    fw = make_framework(NodeDeclaredFeatures)
    fw.set_snapshot(snap)
    state = fw.new_cycle_state()
    _, status, _ = fw.run_pre_filter_plugins(state, PodInfo(p), snap.list())
    assert status is None or status.is_success()
    plugin = fw.plugin(NAME)
    verdicts = {ni.name: plugin.filter(state, ni) for ni in snap.list()}
    got = {n: None if s is None else (s.code, s.reasons) for n, s in verdicts.items()}
    assert got == {"a": REJECT, "b": expected, "c": REJECT, "d": expected}
    assert_batch_matches_per_node(fw, NAME, p, nodes)


@pytest.mark.parametrize(
    "gates", [FeatureGates(), GATE_OFF], ids=["gate-on-pod-needs-nothing", "gate-off"]
)
def test_pre_filter_skips(gates) -> None:
    """A pod needing no feature skips the Filter; with the gate off every pod does (the
    plugin then runs only where a profile enables it explicitly)."""
    fw = make_framework(NodeDeclaredFeatures, feature_gates=gates)
    needy = gates is GATE_OFF
    p = pod(rules=["RestartAllContainers"]) if needy else pod()
    snap = new_snapshot([], [make_node("a").obj()])
    fw.set_snapshot(snap)
    state = fw.new_cycle_state()
    fw.run_pre_filter_plugins(state, PodInfo(p), snap.list())
    assert NAME in state.skip_filter_plugins
    if needy:
        assert [e for e in fw.events_to_register() if e[0] == NAME] == []


def test_events() -> None:
    fw = make_framework(NodeDeclaredFeatures)
    regs = [(e.resource, e.action, h) for name, e, h in fw.events_to_register() if name == NAME]
    assert regs == [
        (
            EventResource.NODE,
            ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE,
            is_schedulable_after_node_change,
        ),
        (EventResource.UNSCHEDULED_POD, ActionType.UPDATE, is_schedulable_after_pod_update),
    ]


NODE_HINT_CASES = [
    ("node-added", None, [RESTART_ALL], QueueingHint.QUEUE),
    ("features-unchanged", [RESTART_ALL], [RESTART_ALL], QueueingHint.SKIP),
    ("feature-declared", [], [RESTART_ALL], QueueingHint.QUEUE),
    ("feature-withdrawn", [RESTART_ALL], [], QueueingHint.QUEUE),
    ("nothing-either-way", [], [], QueueingHint.SKIP),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [c[1:] for c in NODE_HINT_CASES],
    ids=[c[0] for c in NODE_HINT_CASES],
)
def test_node_hint(old, new, expected) -> None:
    old_node = None if old is None else make_node("n").declared_features(*old).obj()
    new_node = make_node("n").declared_features(*new).obj()
    rejected = pod(rules=["RestartAllContainers"])
    assert is_schedulable_after_node_change(rejected, old_node, new_node) == expected


POD_HINT_CASES = [
    ("needs-changed", "p", {"rules": ["RestartAllContainers"]}, {}, QueueingHint.QUEUE),
    (
        "needs-unchanged",
        "p",
        {"rules": ["RestartAllContainers"]},
        {"rules": ["RestartAllContainers"]},
        QueueingHint.SKIP,
    ),
    ("another-pod", "q", {"rules": ["RestartAllContainers"]}, {}, QueueingHint.SKIP),
]


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [c[1:] for c in POD_HINT_CASES],
    ids=[c[0] for c in POD_HINT_CASES],
)
def test_pod_hint(name, old, new, expected) -> None:
    rejected = pod(rules=["RestartAllContainers"])
    assert is_schedulable_after_pod_update(rejected, pod(name, **old), pod(name, **new)) == expected
