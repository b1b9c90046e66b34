"""NodeAffinity: nodeSelector, required/preferred node affinity and the profile's addedAffinity."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

from kubesched import ActionType, Code, EventResource, NodeBatch, PodInfo, QueueingHint
from kubesched.api import Node, Pod
from kubesched.cache import new_snapshot
from kubesched.testing import make_framework, make_node, make_pod, node_batch
from kubesched_builtin.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    NodeAffinityArgs,
)

POD = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_POD])
ENFORCED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_ENFORCED])


def _node(name: str, labels: dict[str, str]) -> Node:
    # Not validated: these tests parse label values the API server refuses ("-2", "+0")
    # exactly as upstream's strconv does.
    return Node.model_validate(make_node(name).labels(labels).manifest())


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    r: dict[str, Any] = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def pod(
    node_selector: dict[str, str] | None = None,
    terms: list[dict[str, Any]] | None = None,
    preferred: list[tuple[int, dict[str, Any]]] | None = None,
) -> Pod:
    m = make_pod("p").manifest()
    m["spec"]["containers"] = [{"name": "c", "image": "busybox"}]
    if node_selector is not None:
        m["spec"]["nodeSelector"] = node_selector
    node_affinity: dict[str, Any] = {}
    if terms is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": terms
        }
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    if node_affinity:
        m["spec"]["affinity"] = {"nodeAffinity": node_affinity}
    return Pod.model_validate(m)


def node(name: str, **labels: str) -> Node:
    return (
        make_node(name)
        .labels({k.replace("__", "/").replace("_", "-"): v for k, v in labels.items()})
        .obj()
    )


def check_filter(fw, p: Pod, nodes: list[Node]):
    """PreFilter, then Filter per node and in batches; returns (prefilter, verdicts by node)."""
    snap = new_snapshot([], nodes)
    fw.set_snapshot(snap)
    infos = snap.list()
    pi = PodInfo(p)
    state = fw.new_cycle_state()
    result, status, _ = fw.run_pre_filter_plugins(state, pi, infos)
    plugin = fw.plugin(NAME)
    one = [plugin.filter(state, p, ni) for ni in infos]
    many = list(plugin.filter_nodes(state, p, NodeBatch(snap.table, range(len(infos)), infos)))
    assert one == many
    odd = list(range(len(infos)))[1::2]
    assert list(
        plugin.filter_nodes(state, p, NodeBatch(snap.table, odd, [infos[i] for i in odd]))
    ) == [one[i] for i in odd]
    verdicts = {
        ni.name: None if s is None else (s.code, s.reasons)
        for ni, s in zip(infos, one, strict=True)
    }
    skipped = NAME in state.skip_filter_plugins
    pre = "skip" if skipped else (result.node_names if result is not None else None)
    if not status.is_success():
        pre = (status.code, status.reasons)
    return pre, verdicts


FILTER_CASES = [
    ("no-constraints-skips", dict(), {"n1": {}}, "skip", {"n1": None}),
    ("selector-missing-label", dict(node_selector={"foo": "bar"}), {"n1": {}}, None, {"n1": POD}),
    (
        "selector-same-labels",
        dict(node_selector={"foo": "bar"}),
        {"n1": {"foo": "bar"}},
        None,
        {"n1": None},
    ),
    (
        "selector-superset",
        dict(node_selector={"foo": "bar"}),
        {"n1": {"foo": "bar", "baz": "blah"}},
        None,
        {"n1": None},
    ),
    (
        "selector-subset",
        dict(node_selector={"foo": "bar", "baz": "blah"}),
        {"n1": {"foo": "bar"}},
        None,
        {"n1": POD},
    ),
    ("empty-selector-map-skips", dict(node_selector={}), {"n1": {}}, "skip", {"n1": None}),
    (
        "in-matches",
        dict(terms=[{"matchExpressions": [req("foo", "In", "bar", "value2")]}]),
        {"n1": {"foo": "bar"}, "n2": {"foo": "value3"}, "n3": {}},
        None,
        {"n1": None, "n2": POD, "n3": POD},
    ),
    (
        "gt-numeric",
        dict(terms=[{"matchExpressions": [req("kernel-version", "Gt", "0204")]}]),
        {
            "n1": {"kernel-version": "0206"},
            "n2": {"kernel-version": "0204"},
            "n3": {"kernel-version": "x"},
        },
        None,
        {"n1": None, "n2": POD, "n3": POD},
    ),
    (
        # labels.NewRequirement checks every value as a label value, and "-1" is none:
        # upstream's term does not parse and matches no node, whatever the labels.
        "lt-numeric-negative",
        dict(terms=[{"matchExpressions": [req("n", "Lt", "-1")]}]),
        {"n1": {"n": "-2"}, "n2": {"n": "-1"}, "n3": {"n": "+0"}, "n4": {}},
        None,
        {"n1": POD, "n2": POD, "n3": POD, "n4": POD},
    ),
    (
        "lt-numeric-compares-negative-labels",
        dict(terms=[{"matchExpressions": [req("n", "Lt", "1")]}]),
        {"n1": {"n": "-2"}, "n2": {"n": "1"}, "n3": {"n": "+0"}, "n4": {}},
        None,
        {"n1": None, "n2": POD, "n3": None, "n4": POD},
    ),
    (
        "notin-and-doesnotexist",
        dict(
            terms=[
                {
                    "matchExpressions": [
                        req("mem-type", "NotIn", "DDR", "DDR2"),
                        req("GPU", "DoesNotExist"),
                    ]
                }
            ]
        ),
        {
            "n1": {"mem-type": "DDR3"},
            "n2": {"mem-type": "DDR"},
            "n3": {"GPU": "NVIDIA-GRID-K1"},
            "n4": {},
        },
        None,
        {"n1": None, "n2": POD, "n3": POD, "n4": None},
    ),
    (
        "exists-wrong-key",
        dict(terms=[{"matchExpressions": [req("foo", "Exists")]}]),
        {"n1": {"bar": "value2"}, "n2": {"foo": ""}},
        None,
        {"n1": POD, "n2": None},
    ),
    ("empty-terms-list", dict(terms=[]), {"n1": {"foo": "bar"}}, None, {"n1": POD}),
    (
        "empty-term",
        dict(terms=[{"matchExpressions": []}]),
        {"n1": {"foo": "bar"}},
        None,
        {"n1": POD},
    ),
    (
        "terms-are-ored",
        dict(
            terms=[
                {"matchExpressions": [req("foo", "In", "x")]},
                {"matchExpressions": [req("diffkey", "In", "wrong", "value2")]},
            ]
        ),
        {"n1": {"diffkey": "value2"}, "n2": {"foo": "y"}},
        None,
        {"n1": None, "n2": POD},
    ),
    (
        "selector-and-affinity-both-needed",
        dict(node_selector={"foo": "bar"}, terms=[{"matchExpressions": [req("zone", "In", "a")]}]),
        {"n1": {"foo": "bar", "zone": "a"}, "n2": {"foo": "bar"}, "n3": {"zone": "a"}},
        None,
        {"n1": None, "n2": POD, "n3": POD},
    ),
    (
        "invalid-term-never-matches",
        dict(
            terms=[
                {"matchExpressions": [req("foo", "Gt", "notanint")]},
                {"matchExpressions": [req("foo", "In", "bar")]},
            ]
        ),
        {"n1": {"foo": "bar"}, "n2": {"foo": "7"}},
        None,
        {"n1": None, "n2": POD},
    ),
    (
        "invalid-operator-never-matches",
        dict(terms=[{"matchExpressions": [req("foo", "Like", "bar")]}]),
        {"n1": {"foo": "bar"}},
        None,
        {"n1": POD},
    ),
    (
        "match-fields-narrows",
        dict(terms=[{"matchFields": [req("metadata.name", "In", "n1")]}]),
        {"n1": {}, "n2": {}},
        frozenset({"n1"}),
        {"n1": None, "n2": POD},
    ),
    (
        "match-fields-and-expressions-in-one-term",
        dict(
            terms=[
                {
                    "matchFields": [req("metadata.name", "In", "n1")],
                    "matchExpressions": [req("foo", "In", "bar")],
                }
            ]
        ),
        {"n1": {"foo": "bar"}, "n2": {"foo": "bar"}, "n3": {}},
        frozenset({"n1"}),
        {"n1": None, "n2": POD, "n3": POD},
    ),
    (
        "match-fields-union-of-terms",
        dict(
            terms=[
                {"matchFields": [req("metadata.name", "In", "n1")]},
                {"matchFields": [req("metadata.name", "In", "n2")]},
            ]
        ),
        {"n1": {}, "n2": {}, "n3": {}},
        frozenset({"n1", "n2"}),
        {"n1": None, "n2": None, "n3": POD},
    ),
    (
        "one-term-without-name-field-no-narrowing",
        dict(
            terms=[
                {"matchFields": [req("metadata.name", "In", "n1")]},
                {"matchExpressions": [req("foo", "In", "bar")]},
            ]
        ),
        {"n1": {}, "n2": {"foo": "bar"}, "n3": {}},
        None,
        {"n1": None, "n2": None, "n3": POD},
    ),
    (
        "match-fields-notin-no-narrowing",
        dict(terms=[{"matchFields": [req("metadata.name", "NotIn", "n1")]}]),
        {"n1": {}, "n2": {}},
        None,
        {"n1": POD, "n2": None},
    ),
    (
        "match-fields-other-key-reads-empty",
        dict(terms=[{"matchFields": [req("metadata.namespace", "NotIn", "x")]}]),
        {"n1": {}},
        None,
        {"n1": None},
    ),
    (
        "conflicting-name-fields",
        dict(
            terms=[
                {
                    "matchFields": [
                        req("metadata.name", "In", "n1"),
                        req("metadata.name", "In", "n2"),
                    ]
                }
            ]
        ),
        {"n1": {}, "n2": {}},
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_CONFLICT]),
        {"n1": POD, "n2": POD},
    ),
    (
        "name-field-of-unknown-node",
        dict(terms=[{"matchFields": [req("metadata.name", "In", "ghost")]}]),
        {"n1": {}},
        frozenset({"ghost"}),
        {"n1": POD},
    ),
]


@pytest.mark.parametrize(
    ("spec", "nodes", "pre", "expected"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(spec, nodes, pre, expected) -> None:
    fw = make_framework(NodeAffinity)
    got_pre, verdicts = check_filter(fw, pod(**spec), [_node(n, lbl) for n, lbl in nodes.items()])
    assert got_pre == pre
    assert verdicts == expected


ADDED = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [req("scheduler-profile", "In", "foo")]}]
    }
}


@pytest.mark.parametrize(
    ("spec", "pre", "expected"),
    [
        (dict(), None, {"n1": None, "n2": ENFORCED, "n3": ENFORCED, "n4": None}),
        (
            dict(node_selector={"zone": "a"}),
            None,
            {"n1": None, "n2": ENFORCED, "n3": ENFORCED, "n4": POD},
        ),
        (
            dict(terms=[{"matchFields": [req("metadata.name", "In", "n3")]}]),
            frozenset({"n3"}),
            {"n1": POD, "n2": ENFORCED, "n3": ENFORCED, "n4": POD},
        ),
    ],
    ids=["added-only", "added-and-selector", "added-checked-first"],
)
def test_added_affinity_filter(spec, pre, expected) -> None:
    fw = make_framework(NodeAffinity, args={NAME: {"addedAffinity": ADDED}})
    nodes = [
        make_node("n1").labels({"scheduler-profile": "foo", "zone": "a"}).obj(),
        make_node("n2").labels({"zone": "a"}).obj(),
        make_node("n3").labels({"scheduler-profile": "bar"}).obj(),
        make_node("n4").labels({"scheduler-profile": "foo"}).obj(),
    ]
    got_pre, verdicts = check_filter(fw, pod(**spec), nodes)
    assert got_pre == pre
    assert verdicts == expected


def score_of(fw, p: Pod, nodes: list[Node]):
    snap = new_snapshot([], nodes)
    fw.set_snapshot(snap)
    infos = snap.list()
    pi = PodInfo(p)
    state = fw.new_cycle_state()
    status = fw.run_pre_score_plugins(state, pi, infos)
    if NAME in state.skip_score_plugins:
        return "skip", None
    assert status.is_success(), status
    plugin = fw.plugin(NAME)
    one = [plugin.score(state, p, ni) for ni in infos]
    assert (
        list(plugin.score_nodes(state, p, NodeBatch(snap.table, range(len(infos)), infos))) == one
    )
    result = fw.run_score_plugins(state, pi, node_batch(infos))
    (ps,) = result.plugins
    return (
        dict(zip(result.names, ps.raw.tolist(), strict=True)),
        dict(zip(result.names, ps.normalized.tolist(), strict=True)),
    )


FOO_BAR = {"matchExpressions": [req("foo", "In", "bar")]}
KEY_VALUE = {"matchExpressions": [req("key", "In", "value")]}
ALL_THREE = {
    "matchExpressions": [req("foo", "In", "bar"), req("key", "In", "value"), req("az", "In", "az1")]
}
SCORE_NODES = {
    "m1": {"foo": "bar"},
    "m2": {"key": "value"},
    "m3": {"az": "az1"},
    "m5": {"foo": "bar", "key": "value", "az": "az1"},
}


@pytest.mark.parametrize(
    ("preferred", "raw", "normalized"),
    [
        (None, "skip", None),
        ([], "skip", None),
        (
            [(2, FOO_BAR)],
            {"m1": 2, "m2": 0, "m3": 0, "m5": 2},
            {"m1": 100, "m2": 0, "m3": 0, "m5": 100},
        ),
        (
            [(2, FOO_BAR), (4, KEY_VALUE), (5, ALL_THREE)],
            {"m1": 2, "m2": 4, "m3": 0, "m5": 11},
            {"m1": 18, "m2": 36, "m3": 0, "m5": 100},
        ),
        (
            [(0, FOO_BAR)],
            {"m1": 0, "m2": 0, "m3": 0, "m5": 0},
            {"m1": 0, "m2": 0, "m3": 0, "m5": 0},
        ),
        (
            [
                (3, {"matchExpressions": []}),
                (1, {"matchFields": [req("metadata.name", "In", "m3")]}),
            ],
            {"m1": 0, "m2": 0, "m3": 1, "m5": 0},
            {"m1": 0, "m2": 0, "m3": 100, "m5": 0},
        ),
    ],
    ids=[
        "no-affinity",
        "empty-preferred",
        "one-term",
        "weights-add-up",
        "zero-weight",
        "empty-term-and-name-field",
    ],
)
def test_score(preferred, raw, normalized) -> None:
    fw = make_framework(NodeAffinity)
    nodes = [make_node(n).labels(lbl).obj() for n, lbl in SCORE_NODES.items()]
    got_raw, got_norm = score_of(fw, pod(preferred=preferred), nodes)
    assert got_raw == raw
    assert got_norm == normalized


def test_score_with_added_preferred() -> None:
    added = {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "preference": KEY_VALUE}]
    }
    fw = make_framework(NodeAffinity, args={NAME: {"addedAffinity": added}})
    nodes = [make_node(n).labels(lbl).obj() for n, lbl in SCORE_NODES.items()]
    # Added terms alone: PreScore does not skip.
    assert score_of(fw, pod(), nodes) == (
        {"m1": 0, "m2": 3, "m3": 0, "m5": 3},
        {"m1": 0, "m2": 100, "m3": 0, "m5": 100},
    )
    assert score_of(fw, pod(preferred=[(2, FOO_BAR)]), nodes) == (
        {"m1": 2, "m2": 3, "m3": 0, "m5": 5},
        {"m1": 40, "m2": 60, "m3": 0, "m5": 100},
    )


def test_invalid_preferred_term_is_a_prescore_error() -> None:
    fw = make_framework(NodeAffinity)
    p = pod(preferred=[(1, {"matchExpressions": [req("foo", "Gt", "1", "2")]})])
    pi = PodInfo(p)
    status = fw.run_pre_score_plugins(fw.new_cycle_state(), pi, [])
    assert status.code is Code.ERROR
    assert "exactly one value is required" in status.message()


def test_vectorised_agrees_with_per_node_on_random_cases() -> None:
    rng = random.Random(7)
    keys = ["zone", "tier", "gen", "gpu"]
    values = ["a", "b", "c", "1", "2", "10", "-3", "x1"]
    nodes = []
    for i in range(40):
        labels = {k: rng.choice(values) for k in keys if rng.random() < 0.6}
        nodes.append(_node(f"n{i}", labels))
    ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]

    def random_req():
        op = rng.choice(ops)
        key = rng.choice(keys)
        if op in ("Exists", "DoesNotExist"):
            return req(key, op)
        if op in ("Gt", "Lt"):
            return req(key, op, rng.choice(["0", "2", "5", "bad"]))
        return req(key, op, *rng.sample(values, rng.randint(1, 3)))

    def random_term():
        term: dict[str, Any] = {
            "matchExpressions": [random_req() for _ in range(rng.randint(0, 3))]
        }
        if rng.random() < 0.3:
            term["matchFields"] = [
                req("metadata.name", rng.choice(["In", "NotIn"]), f"n{rng.randrange(40)}")
            ]
        return term

    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [req("gpu", "DoesNotExist")]},
                {"matchExpressions": [req("gpu", "Lt", "5")]},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 7, "preference": {"matchExpressions": [req("tier", "In", "a", "b")]}}
        ],
    }
    for fw in (
        make_framework(NodeAffinity),
        make_framework(NodeAffinity, args={NAME: {"addedAffinity": added}}),
    ):
        for _ in range(60):
            selector = {rng.choice(keys): rng.choice(values)} if rng.random() < 0.3 else None
            terms = (
                [random_term() for _ in range(rng.randint(1, 3))] if rng.random() < 0.8 else None
            )
            preferred = [(rng.randint(1, 100), random_term()) for _ in range(rng.randint(0, 3))]
            p = pod(selector, terms, preferred)
            check_filter(fw, p, nodes)  # asserts per-node == batch
            snap = new_snapshot([], nodes)
            infos = snap.list()
            state = fw.new_cycle_state()
            if (
                fw.run_pre_score_plugins(state, PodInfo(p), infos).is_success()
                and NAME not in state.skip_score_plugins
            ):
                plugin = fw.plugin(NAME)
                one = [plugin.score(state, p, ni) for ni in infos]
                rows = list(range(len(infos)))[::3]
                assert list(
                    plugin.score_nodes(
                        state, p, NodeBatch(snap.table, rows, [infos[i] for i in rows])
                    )
                ) == [one[i] for i in rows]


# -- args ----------------------------------------------------------------------------------


def test_args_default() -> None:
    assert NodeAffinityArgs().added_affinity is None
    assert NodeAffinityArgs.model_validate({"addedAffinity": ADDED}).added_affinity is not None


@pytest.mark.parametrize(
    ("added", "message"),
    [
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [req("foo", "Like", "x")]}]
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            '.matchExpressions[0].operator: Unsupported value: "Like": supported values: "In", '
            '"NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
        (
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [req("foo", "In")]}]
                }
            },
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0].values: Invalid value: []string(nil): for 'in', 'notin' "
            "operators, values set can't be empty",
        ),
        (
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {"matchFields": [req("metadata.name", "In", "a", "b")]},
                    }
                ]
            },
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values",
        ),
    ],
    ids=["bad-operator", "in-without-values", "preferred-field-two-values"],
)
def test_args_validation(added, message) -> None:
    with pytest.raises(ValidationError) as excinfo:
        NodeAffinityArgs.model_validate({"addedAffinity": added})
    assert message in str(excinfo.value)


def test_args_validation_reports_every_error() -> None:
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [req("foo", "Like", "x")]}]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [req("foo", "Gt", "x")]}}
        ],
    }
    with pytest.raises(ValidationError) as excinfo:
        NodeAffinityArgs.model_validate({"addedAffinity": added})
    text = str(excinfo.value)
    assert "[addedAffinity.requiredDuring" in text and ", addedAffinity.preferredDuring" in text


def test_args_unknown_key() -> None:
    with pytest.raises(ValidationError, match="addedAfinity"):
        NodeAffinityArgs.model_validate({"addedAfinity": ADDED})


# -- events --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("added", "old", "new", "expected"),
    [
        (None, None, {"foo": "bar"}, QueueingHint.QUEUE),
        (None, None, {"foo": "baz"}, QueueingHint.SKIP),
        (None, {"foo": "baz"}, {"foo": "bar"}, QueueingHint.QUEUE),
        (None, {"foo": "bar"}, {"foo": "bar", "x": "y"}, QueueingHint.SKIP),
        (None, {"foo": "bar"}, {"foo": "baz"}, QueueingHint.SKIP),
        (ADDED, None, {"foo": "bar"}, QueueingHint.SKIP),
        (ADDED, None, {"foo": "bar", "scheduler-profile": "foo"}, QueueingHint.QUEUE),
    ],
    ids=[
        "added-matching",
        "added-not-matching",
        "updated-to-match",
        "updated-still-matching",
        "updated-to-not-match",
        "enforced-not-matching",
        "enforced-matching",
    ],
)
def test_node_change_hint(added, old, new, expected) -> None:
    fw = make_framework(NodeAffinity, args={NAME: {"addedAffinity": added}})
    regs = [(e, h) for p, e, h in fw.events_to_register() if p == NAME]
    ((event, hint),) = regs
    assert event.resource is EventResource.NODE
    assert event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    p = pod(node_selector={"foo": "bar"})
    old_node = make_node("n").labels(old).obj() if old is not None else None
    assert hint(p, old_node, make_node("n").labels(new).obj()) is expected


# -- configuration -------------------------------------------------------------------------

SEED_CONFIG = (
    __import__("pathlib").Path(__file__).resolve().parents[1]
    / "fixtures"
    / "k8s-docs"
    / "config-node-affinity-per-profile.yaml"
)


def test_seed_per_profile_config_enforces_added_affinity() -> None:
    import yaml

    from kubesched.config import config_from_dict
    from kubesched.framework.registry import PluginRegistry

    data = yaml.safe_load(SEED_CONFIG.read_text())
    data["apiVersion"] = "kubescheduler.config.k8s.io/v1"
    config_from_dict(data, PluginRegistry.discover())  # validates the args
    (entry,) = data["profiles"][1]["pluginConfig"]
    fw = make_framework(NodeAffinity, args={NAME: NodeAffinityArgs.model_validate(entry["args"])})
    nodes = [
        make_node("foo-node").labels({"scheduler-profile": "foo"}).obj(),
        make_node("other").obj(),
    ]
    _, verdicts = check_filter(fw, pod(), nodes)
    assert verdicts == {"foo-node": None, "other": ENFORCED}


def test_bad_added_affinity_in_config_names_the_field() -> None:
    from kubesched.config import config_from_dict
    from kubesched.errors import UserInputError
    from kubesched.framework.registry import PluginRegistry

    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "s",
                "pluginConfig": [
                    {
                        "name": "NodeAffinity",
                        "args": {
                            "addedAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [req("a", "Gt", "1", "2")]}
                                    ]
                                }
                            }
                        },
                    }
                ],
            }
        ],
    }
    with pytest.raises(UserInputError) as excinfo:
        config_from_dict(data, PluginRegistry.discover())
    text = str(excinfo.value)
    assert "profiles[0].pluginConfig[0].args" in text
    assert "nodeSelectorTerms[0].matchExpressions[0].values" in text
