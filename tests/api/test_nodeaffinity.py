"""Node selector terms, required node affinity and preferred terms (component-helpers)."""

from __future__ import annotations

import pytest

from kubesched.api import (
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    NodeSelectorTermsMatcher,
    Pod,
    PreferredSchedulingTerm,
    PreferredSchedulingTermsScorer,
    RequiredNodeAffinity,
)


def term(exprs=(), fields=()) -> NodeSelectorTerm:
    """A term from (key, op, values) tuples for labels and fields."""
    return NodeSelectorTerm.model_validate(
        {
            "matchExpressions": [{"key": k, "operator": o, "values": v} for k, o, v in exprs],
            "matchFields": [{"key": k, "operator": o, "values": v} for k, o, v in fields],
        }
    )


ZONE_A = {"zone": "a", "cpus": "8"}

TERMS = [
    # id, terms, node name, labels, expected
    ("no-terms-nothing", [], "n1", ZONE_A, False),
    ("empty-term-nothing", [term()], "n1", ZONE_A, False),
    (
        "empty-term-skipped-other-matches",
        [term(), term([("zone", "In", ["a"])])],
        "n1",
        ZONE_A,
        True,
    ),
    ("in-hit", [term([("zone", "In", ["a", "b"])])], "n1", ZONE_A, True),
    ("in-miss", [term([("zone", "In", ["b"])])], "n1", ZONE_A, False),
    ("in-missing-label", [term([("rack", "In", ["1"])])], "n1", ZONE_A, False),
    ("notin-hit", [term([("zone", "NotIn", ["b"])])], "n1", ZONE_A, True),
    ("notin-miss", [term([("zone", "NotIn", ["a"])])], "n1", ZONE_A, False),
    ("notin-missing-label", [term([("rack", "NotIn", ["1"])])], "n1", ZONE_A, True),
    ("exists", [term([("zone", "Exists", [])])], "n1", ZONE_A, True),
    ("exists-miss", [term([("rack", "Exists", [])])], "n1", ZONE_A, False),
    ("doesnotexist", [term([("rack", "DoesNotExist", [])])], "n1", ZONE_A, True),
    ("doesnotexist-miss", [term([("zone", "DoesNotExist", [])])], "n1", ZONE_A, False),
    ("gt-hit", [term([("cpus", "Gt", ["4"])])], "n1", ZONE_A, True),
    ("gt-equal-miss", [term([("cpus", "Gt", ["8"])])], "n1", ZONE_A, False),
    ("lt-hit", [term([("cpus", "Lt", ["16"])])], "n1", ZONE_A, True),
    ("lt-miss", [term([("cpus", "Lt", ["8"])])], "n1", ZONE_A, False),
    # "-1" is no label value: labels.NewRequirement refuses it, the term matches nothing.
    ("gt-negative", [term([("cpus", "Gt", ["-1"])])], "n1", ZONE_A, False),
    ("gt-label-not-integer", [term([("zone", "Gt", ["1"])])], "n1", ZONE_A, False),
    ("gt-label-float", [term([("cpus", "Gt", ["1"])])], "n1", {"cpus": "8.5"}, False),
    ("gt-label-underscore", [term([("cpus", "Gt", ["1"])])], "n1", {"cpus": "1_0"}, False),
    ("gt-label-missing", [term([("rack", "Gt", ["1"])])], "n1", ZONE_A, False),
    ("gt-value-not-integer-term-invalid", [term([("cpus", "Gt", ["x"])])], "n1", ZONE_A, False),
    ("gt-two-values-term-invalid", [term([("cpus", "Gt", ["1", "2"])])], "n1", ZONE_A, False),
    (
        "bad-operator-term-skipped",
        [term([("zone", "Equals", ["a"])]), term([("zone", "Exists", [])])],
        "n1",
        ZONE_A,
        True,
    ),
    (
        "expressions-anded",
        [term([("zone", "In", ["a"]), ("cpus", "Gt", ["10"])])],
        "n1",
        ZONE_A,
        False,
    ),
    (
        "terms-ored",
        [term([("zone", "In", ["b"])]), term([("cpus", "Gt", ["4"])])],
        "n1",
        ZONE_A,
        True,
    ),
    ("field-in-hit", [term(fields=[("metadata.name", "In", ["n1"])])], "n1", {}, True),
    ("field-in-miss", [term(fields=[("metadata.name", "In", ["n2"])])], "n1", {}, False),
    ("field-notin-hit", [term(fields=[("metadata.name", "NotIn", ["n2"])])], "n1", {}, True),
    ("field-notin-miss", [term(fields=[("metadata.name", "NotIn", ["n1"])])], "n1", {}, False),
    (
        "field-in-two-values-invalid",
        [term(fields=[("metadata.name", "In", ["n1", "n2"])])],
        "n1",
        {},
        False,
    ),
    ("field-exists-invalid", [term(fields=[("metadata.name", "Exists", [])])], "n1", {}, False),
    ("field-other-key-reads-empty", [term(fields=[("spec.x", "NotIn", ["v"])])], "n1", {}, True),
    (
        "expressions-and-fields-anded-hit",
        [term([("zone", "In", ["a"])], [("metadata.name", "In", ["n1"])])],
        "n1",
        ZONE_A,
        True,
    ),
    (
        "expressions-and-fields-anded-miss",
        [term([("zone", "In", ["a"])], [("metadata.name", "In", ["n2"])])],
        "n1",
        ZONE_A,
        False,
    ),
]


@pytest.mark.parametrize(
    ("terms", "name", "labels", "expected"), [c[1:] for c in TERMS], ids=[c[0] for c in TERMS]
)
def test_node_selector_terms(terms, name, labels, expected) -> None:
    assert NodeSelectorTermsMatcher(terms).matches(name, labels) is expected


def test_invalid_terms_are_recorded_or_raise_when_strict() -> None:
    terms = [term([("cpus", "Gt", ["x"])]), term([("zone", "In", [])])]
    m = NodeSelectorTermsMatcher(terms)
    assert len(m.errors) == 2
    assert "nodeSelectorTerms[0].matchExpressions[0].values[0]" in m.errors[0]
    assert "must be an integer" in m.errors[0]
    with pytest.raises(ValueError, match="can't be empty"):
        NodeSelectorTermsMatcher(terms[1:], strict=True)


def node(name: str, labels: dict[str, str]) -> Node:
    """A node with a name and labels."""
    return Node.model_validate({"metadata": {"name": name, "labels": labels}})


def pod(spec: dict) -> Pod:
    """A pod with the given spec (plus one container)."""
    return Pod.model_validate({"metadata": {"name": "p"}, "spec": {"containers": [{}], **spec}})


def required(*terms_: dict) -> dict:
    """An affinity block with required node affinity terms."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms_)}
        }
    }


IN_ZONE_A = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
ADDED_FOO = NodeAffinity.model_validate(
    {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "scheduler-profile", "operator": "In", "values": ["foo"]}
                    ]
                }
            ]
        }
    }
)

REQUIRED = [
    ("no-constraints", {}, None, {}, True),
    ("node-selector-hit", {"nodeSelector": {"zone": "a"}}, None, {"zone": "a"}, True),
    ("node-selector-miss", {"nodeSelector": {"zone": "a"}}, None, {"zone": "b"}, False),
    (
        "node-selector-every-pair",
        {"nodeSelector": {"zone": "a", "disk": "ssd"}},
        None,
        {"zone": "a"},
        False,
    ),
    ("affinity-hit", {"affinity": required(IN_ZONE_A)}, None, {"zone": "a"}, True),
    ("affinity-miss", {"affinity": required(IN_ZONE_A)}, None, {"zone": "b"}, False),
    ("affinity-empty-terms-list", {"affinity": required()}, None, {"zone": "a"}, False),
    ("affinity-no-required", {"affinity": {"nodeAffinity": {}}}, None, {}, True),
    (
        "selector-and-affinity-both",
        {"nodeSelector": {"disk": "ssd"}, "affinity": required(IN_ZONE_A)},
        None,
        {"zone": "a"},
        False,
    ),
    ("added-affinity-hit", {}, ADDED_FOO, {"scheduler-profile": "foo"}, True),
    ("added-affinity-miss", {}, ADDED_FOO, {}, False),
    (
        "added-and-pod-affinity",
        {"affinity": required(IN_ZONE_A)},
        ADDED_FOO,
        {"scheduler-profile": "foo", "zone": "b"},
        False,
    ),
    ("added-without-required", {}, NodeAffinity(), {}, True),
]


@pytest.mark.parametrize(
    ("spec", "added", "labels", "expected"), [c[1:] for c in REQUIRED], ids=[c[0] for c in REQUIRED]
)
def test_required_node_affinity(spec, added, labels, expected) -> None:
    r = RequiredNodeAffinity(pod(spec), added)
    assert r.matches(node("n1", labels)) is expected
    assert r.matches_labels("n1", labels) is expected


def test_required_node_affinity_with_match_fields() -> None:
    p = pod(
        {
            "affinity": required(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
            )
        }
    )
    r = RequiredNodeAffinity(p)
    assert not r.matches(node("n1", {}))
    assert r.matches(node("n2", {}))


def pref(weight: int, *exprs) -> PreferredSchedulingTerm:
    """A preferred term of ``weight`` from (key, op, values) tuples."""
    return PreferredSchedulingTerm(weight=weight, preference=term(exprs))


PREFERRED = [
    ("no-terms", [], {"a": "1"}, 0),
    ("one-hit", [pref(5, ("a", "In", ["1"]))], {"a": "1"}, 5),
    ("one-miss", [pref(5, ("a", "In", ["2"]))], {"a": "1"}, 0),
    (
        "sum-of-hits",
        [pref(1, ("label-1", "In", ["key-1"])), pref(50, ("label-2", "In", ["key-2"]))],
        {"label-1": "key-1", "label-2": "key-2"},
        51,
    ),
    (
        "only-matching-summed",
        [pref(1, ("label-1", "In", ["key-1"])), pref(50, ("label-2", "In", ["key-2"]))],
        {"label-2": "key-2"},
        50,
    ),
    ("weight-zero-skipped", [pref(0, ("a", "Exists", []))], {"a": "1"}, 0),
    ("empty-preference-matches-nothing", [pref(10)], {"a": "1"}, 0),
]


@pytest.mark.parametrize(
    ("terms", "labels", "expected"), [c[1:] for c in PREFERRED], ids=[c[0] for c in PREFERRED]
)
def test_preferred_scheduling_terms(terms, labels, expected) -> None:
    scorer = PreferredSchedulingTermsScorer(terms)
    assert scorer.score("n1", labels) == expected
    assert scorer.score_node(node("n1", labels)) == expected


def test_preferred_invalid_term_raises() -> None:
    with pytest.raises(ValueError, match="preferredSchedulingTerms\\[0\\]"):
        PreferredSchedulingTermsScorer([pref(3, ("a", "Lt", ["x"]))])
