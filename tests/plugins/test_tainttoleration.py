"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score."""

from __future__ import annotations

import pytest

from kubesched import (
    ActionType,
    Code,
    EventResource,
    FeatureGates,
    NodeBatch,
    PodInfo,
    QueueingHint,
)
from kubesched.api import Pod
from kubesched.cache import new_snapshot
from kubesched.testing import (
    assert_batch_matches_per_node,
    assert_scores,
    batch_verdicts,
    make_framework,
    make_node,
    make_pod,
    run_score,
)
from kubesched_builtin.tainttoleration import (
    COMPARISON_GATE,
    ERR_REASON_UNTOLERATED,
    NAME,
    TaintToleration,
    count_intolerable_prefer_no_schedule,
)

REJECT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNTOLERATED])


def build_pod(tolerations):
    builder = make_pod("p")
    for t in tolerations:
        builder.toleration(**t)
    return builder.obj()


def build_node(name, taints):
    builder = make_node(name)
    for key, value, effect in taints:
        builder.taint(key, value, effect)
    return builder.obj()


FILTER_CASES = [
    ("no-taints", [], [], None),
    ("untolerated-noschedule", [], [("dedicated", "user1", "NoSchedule")], REJECT),
    (
        "equal-other-value",
        [dict(key="dedicated", value="user2", effect="NoSchedule")],
        [("dedicated", "user1", "NoSchedule")],
        REJECT,
    ),
    (
        "equal-same-value",
        [dict(key="dedicated", value="user1", effect="NoSchedule")],
        [("dedicated", "user1", "NoSchedule")],
        None,
    ),
    (
        "exists-with-key",
        [dict(key="foo", operator="Exists", effect="NoSchedule")],
        [("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "multiple-all-tolerated",
        [
            dict(key="dedicated", value="user2", effect="NoSchedule"),
            dict(key="foo", operator="Exists", effect="NoSchedule"),
        ],
        [("dedicated", "user2", "NoSchedule"), ("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "effect-mismatch",
        [dict(key="foo", value="bar", effect="PreferNoSchedule")],
        [("foo", "bar", "NoSchedule")],
        REJECT,
    ),
    ("prefer-no-schedule-ignored", [], [("foo", "bar", "PreferNoSchedule")], None),
    ("no-execute-enforced", [], [("foo", "bar", "NoExecute")], REJECT),
    (
        "empty-effect-tolerates-all-effects",
        [dict(key="foo", value="bar")],
        [("foo", "bar", "NoExecute"), ("foo", "bar", "NoSchedule")],
        None,
    ),
    (
        "empty-key-exists-tolerates-everything",
        [dict(operator="Exists")],
        [("a", "1", "NoSchedule"), ("b", "", "NoExecute")],
        None,
    ),
    (
        # The Kubernetes docs ("Taints and Tolerations"): three taints, two tolerations: no fit.
        "seed-two-of-three-tolerated",
        [
            dict(key="key1", value="value1", effect="NoSchedule"),
            dict(key="key1", value="value1", effect="NoExecute"),
        ],
        [
            ("key1", "value1", "NoSchedule"),
            ("key1", "value1", "NoExecute"),
            ("key2", "value2", "NoSchedule"),
        ],
        REJECT,
    ),
    (
        "seed-all-three-tolerated",
        [
            dict(key="key1", value="value1", effect="NoSchedule"),
            dict(key="key1", value="value1", effect="NoExecute"),
            dict(key="key2", operator="Exists"),
        ],
        [
            ("key1", "value1", "NoSchedule"),
            ("key1", "value1", "NoExecute"),
            ("key2", "value2", "NoSchedule"),
        ],
        None,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(tolerations, taints, expected) -> None:
    pod = build_pod(tolerations)
    # The tainted node among untainted ones and a copy with the same taints: the
    # batch path groups nodes by taint list.
    nodes = [
        build_node("a", []),
        build_node("b", taints),
        build_node("c", []),
        build_node("d", taints),
    ]
    snap = new_snapshot([], nodes)
    infos = snap.list()
    fw = make_framework(TaintToleration)
    plugin = fw.plugin(NAME)
    pi = PodInfo(pod)
    one = [plugin.filter(pi, ni) for ni in infos]
    many = batch_verdicts(
        plugin.filter_nodes(pi, NodeBatch(snap.table, range(len(infos)), infos)), len(infos)
    )
    assert one == many
    got = {
        ni.name: None if s is None else (s.code, s.reasons)
        for ni, s in zip(infos, one, strict=True)
    }
    assert got == {"a": None, "b": expected, "c": None, "d": expected}
    rows = [snap.table.index["d"], snap.table.index["a"]]
    sub = [snap.get("d"), snap.get("a")]
    assert batch_verdicts(plugin.filter_nodes(pi, NodeBatch(snap.table, rows, sub)), 2) == [
        plugin.filter(pi, ni) for ni in sub
    ]


SCORE_CASES = [
    (
        "tolerated-beats-intolerable",
        [dict(key="foo", value="bar", effect="PreferNoSchedule")],
        {"n1": [("foo", "bar", "PreferNoSchedule")], "n2": [("foo", "blah", "PreferNoSchedule")]},
        {"n1": 0, "n2": 1},
        {"n1": 100, "n2": 0},
    ),
    (
        "all-tolerated-all-max",
        [
            dict(key="cpu-type", value="arm64", effect="PreferNoSchedule"),
            dict(key="disk-type", value="ssd", effect="PreferNoSchedule"),
        ],
        {
            "n1": [],
            "n2": [("cpu-type", "arm64", "PreferNoSchedule")],
            "n3": [
                ("cpu-type", "arm64", "PreferNoSchedule"),
                ("disk-type", "ssd", "PreferNoSchedule"),
            ],
        },
        {"n1": 0, "n2": 0, "n3": 0},
        {"n1": 100, "n2": 100, "n3": 100},
    ),
    (
        "other-effects-ignored",
        [dict(key="foo", value="bar", effect="PreferNoSchedule")],
        {
            "n1": [],
            "n2": [("cpu-type", "arm64", "NoSchedule")],
            "n3": [("foo", "bar", "PreferNoSchedule"), ("cpu-type", "arm64", "PreferNoSchedule")],
        },
        {"n1": 0, "n2": 0, "n3": 1},
        {"n1": 100, "n2": 100, "n3": 0},
    ),
    (
        "counts-normalised-in-reverse",
        [],
        {
            "n1": [],
            "n2": [("a", "", "PreferNoSchedule")],
            "n3": [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")],
            "n4": [
                ("a", "", "PreferNoSchedule"),
                ("b", "", "PreferNoSchedule"),
                ("c", "", "PreferNoSchedule"),
            ],
        },
        {"n1": 0, "n2": 1, "n3": 2, "n4": 3},
        {"n1": 100, "n2": 67, "n3": 34, "n4": 0},
    ),
    (
        "noschedule-toleration-does-not-count",
        [dict(key="a", operator="Exists", effect="NoSchedule"), dict(key="b", operator="Exists")],
        {"n1": [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")], "n2": []},
        {"n1": 1, "n2": 0},
        {"n1": 0, "n2": 100},
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "raw", "normalized"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(tolerations, node_taints, raw, normalized) -> None:
    nodes = [build_node(n, t) for n, t in node_taints.items()]
    pod = build_pod(tolerations)
    fw = make_framework(TaintToleration)
    # score_nodes agrees with score, on all nodes and on a shuffled subset.
    assert_batch_matches_per_node(fw, NAME, pod, nodes)
    assert_scores(run_score(fw, pod, nodes, raw=True), raw)
    assert_scores(run_score(fw, pod, nodes), normalized)


def test_events_and_hints() -> None:
    fw = make_framework(TaintToleration)
    regs = {(e.resource, e.action): h for p, e, h in fw.events_to_register() if p == NAME}
    node_hint = regs[(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)]
    pod_hint = regs[(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS)]
    pod = build_pod([dict(key="a", operator="Exists")])
    tainted_a = build_node("n", [("a", "", "NoSchedule")])
    tainted_b = build_node("n", [("b", "", "NoSchedule")])
    clean = build_node("n", [])
    assert node_hint(pod, None, clean) is QueueingHint.QUEUE
    assert node_hint(pod, None, tainted_a) is QueueingHint.QUEUE
    assert node_hint(pod, None, tainted_b) is QueueingHint.SKIP
    assert node_hint(pod, tainted_b, tainted_a) is QueueingHint.QUEUE
    assert node_hint(pod, clean, tainted_a) is QueueingHint.SKIP
    assert node_hint(pod, clean, tainted_b) is QueueingHint.SKIP
    me = make_pod("p").uid("u").obj()
    assert (
        pod_hint(me, me, make_pod("p").uid("u").toleration("x", operator="Exists").obj())
        is QueueingHint.QUEUE
    )
    assert pod_hint(me, None, make_pod("q").uid("v").obj()) is QueueingHint.SKIP


def _comparing_pod(operator: str, value: str, effect: str = "NoSchedule") -> Pod:
    # Built from the manifest: the API server's validation refuses Gt/Lt while its own
    # TaintTolerationComparisonOperators gate is off (the builder validates as it does).
    manifest = make_pod("p").manifest()
    manifest["spec"]["tolerations"] = [
        {"key": "tier", "operator": operator, "value": value, "effect": effect}
    ]
    return Pod.model_validate(manifest)


COMPARISON_CASES = [
    ("gt-greater", "Gt", "5", "10", True, None),
    ("gt-equal", "Gt", "10", "10", True, REJECT),
    ("gt-less", "Gt", "20", "10", True, REJECT),
    ("lt-less", "Lt", "20", "10", True, None),
    ("lt-equal", "Lt", "10", "10", True, REJECT),
    ("negative-toleration", "Gt", "-7", "3", True, None),
    ("int64-max", "Lt", "9223372036854775807", "0", True, None),
    ("beyond-int64", "Lt", "9223372036854775808", "1", True, REJECT),
    ("leading-zero-toleration", "Gt", "05", "10", True, REJECT),
    ("leading-zero-taint", "Gt", "5", "010", True, REJECT),
    ("plus-sign", "Gt", "+5", "10", True, REJECT),
    ("minus-zero", "Gt", "-0", "1", True, REJECT),
    ("not-a-number", "Gt", "5", "ten", True, REJECT),
    ("gate-off-gt", "Gt", "5", "10", False, REJECT),
    ("gate-off-lt", "Lt", "20", "10", False, REJECT),
]


@pytest.mark.parametrize(
    ("operator", "toleration", "taint", "gate", "expected"),
    [c[1:] for c in COMPARISON_CASES],
    ids=[c[0] for c in COMPARISON_CASES],
)
def test_comparison_operators(operator, toleration, taint, gate, expected) -> None:
    """``Gt``/``Lt`` compare the taint's integer value with the toleration's, only under
    the TaintTolerationComparisonOperators gate (off by default in v1.36)."""
    gates = FeatureGates({COMPARISON_GATE: gate})
    fw = make_framework(TaintToleration, feature_gates=gates)
    pod = _comparing_pod(operator, toleration)
    nodes = [build_node("a", []), build_node("b", [("tier", taint, "NoSchedule")])]
    snap = new_snapshot([], nodes)
    plugin = fw.plugin(NAME)
    got = {ni.name: plugin.filter(PodInfo(pod), ni) for ni in snap.list()}
    assert {n: None if s is None else (s.code, s.reasons) for n, s in got.items()} == {
        "a": None,
        "b": expected,
    }
    assert_batch_matches_per_node(fw, NAME, pod, nodes)
    prefer = _comparing_pod(operator, toleration, effect="PreferNoSchedule")
    node = build_node("c", [("tier", taint, "PreferNoSchedule")])
    count = count_intolerable_prefer_no_schedule(
        node.spec.taints, prefer.spec.tolerations, comparison_operators=gate
    )
    assert count == (0 if expected is None else 1)
    hint = next(h for name, _, h in fw.events_to_register() if name == NAME)
    tolerated = QueueingHint.QUEUE if expected is None else QueueingHint.SKIP
    assert hint(pod, None, build_node("b", [("tier", taint, "NoSchedule")])) == tolerated
