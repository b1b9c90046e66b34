"""Label selector semantics (apimachinery's LabelSelectorAsSelector and SelectorFromSet)."""

from __future__ import annotations

import pytest

from kubesched.api import (
    MATCH_EVERYTHING,
    MATCH_NOTHING,
    LabelSelector,
    compile_label_selector,
    selector_from_set,
)


def sel(match_labels=None, exprs=None) -> LabelSelector:
    """A LabelSelector from a matchLabels dict and (key, op, values) tuples."""
    return LabelSelector.model_validate(
        {
            "matchLabels": match_labels,
            "matchExpressions": None
            if exprs is None
            else [{"key": k, "operator": op, "values": v} for k, op, v in exprs],
        }
    )


CASES = [
    # id, selector, labels, expected
    ("nil-matches-nothing", None, {"app": "web"}, False),
    ("nil-matches-nothing-empty-labels", None, {}, False),
    ("empty-matches-everything", sel(), {"app": "web"}, True),
    ("empty-matches-empty-labels", sel(), {}, True),
    ("empty-lists-match-everything", sel({}, []), {"x": "y"}, True),
    ("match-labels-hit", sel({"app": "web"}), {"app": "web", "tier": "fe"}, True),
    ("match-labels-wrong-value", sel({"app": "web"}), {"app": "db"}, False),
    ("match-labels-missing", sel({"app": "web"}), {}, False),
    ("match-labels-all-required", sel({"a": "1", "b": "2"}), {"a": "1"}, False),
    ("in-hit", sel(exprs=[("env", "In", ["prod", "qa"])]), {"env": "qa"}, True),
    ("in-miss", sel(exprs=[("env", "In", ["prod", "qa"])]), {"env": "dev"}, False),
    ("in-missing-key", sel(exprs=[("env", "In", ["prod"])]), {}, False),
    ("notin-hit", sel(exprs=[("env", "NotIn", ["prod"])]), {"env": "dev"}, True),
    ("notin-miss", sel(exprs=[("env", "NotIn", ["prod"])]), {"env": "prod"}, False),
    ("notin-missing-key-matches", sel(exprs=[("env", "NotIn", ["prod"])]), {}, True),
    ("exists-hit", sel(exprs=[("gpu", "Exists", [])]), {"gpu": ""}, True),
    ("exists-miss", sel(exprs=[("gpu", "Exists", [])]), {"cpu": "x"}, False),
    ("doesnotexist-hit", sel(exprs=[("gpu", "DoesNotExist", [])]), {}, True),
    ("doesnotexist-miss", sel(exprs=[("gpu", "DoesNotExist", [])]), {"gpu": "1"}, False),
    (
        "labels-and-expressions-anded-hit",
        sel({"app": "web"}, [("env", "In", ["prod"])]),
        {"app": "web", "env": "prod"},
        True,
    ),
    (
        "labels-and-expressions-anded-miss",
        sel({"app": "web"}, [("env", "In", ["prod"])]),
        {"app": "web", "env": "dev"},
        False,
    ),
    (
        "expressions-anded",
        sel(exprs=[("a", "Exists", []), ("b", "DoesNotExist", [])]),
        {"a": "1", "b": "2"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("selector", "labels", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_compile_label_selector(selector, labels, expected) -> None:
    assert compile_label_selector(selector).matches(labels) is expected


INVALID = [
    ("unknown-operator", sel(exprs=[("a", "Gt", ["1"])]), "not a valid label selector operator"),
    ("in-without-values", sel(exprs=[("a", "In", [])]), "can't be empty"),
    ("notin-without-values", sel(exprs=[("a", "NotIn", [])]), "can't be empty"),
    ("exists-with-values", sel(exprs=[("a", "Exists", ["x"])]), "must be empty"),
]


@pytest.mark.parametrize(
    ("selector", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_selectors_raise(selector, message) -> None:
    with pytest.raises(ValueError, match=message):
        compile_label_selector(selector)


SETS = [
    ("empty-set-everything", {}, {"a": "b"}, True),
    ("none-everything", None, {}, True),
    ("pair-hit", {"app": "web"}, {"app": "web", "x": "y"}, True),
    ("pair-miss", {"app": "web"}, {"app": "db"}, False),
    ("pair-missing", {"app": "web"}, {}, False),
]


@pytest.mark.parametrize(
    ("labelset", "labels", "expected"), [c[1:] for c in SETS], ids=[c[0] for c in SETS]
)
def test_selector_from_set(labelset, labels, expected) -> None:
    assert selector_from_set(labelset).matches(labels) is expected


def test_matchers_are_hashable_and_compare_by_content() -> None:
    a = compile_label_selector(sel({"b": "2", "a": "1"}, [("x", "In", ["2", "1"])]))
    b = compile_label_selector(sel({"a": "1", "b": "2"}, [("x", "In", ["1", "2"])]))
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert compile_label_selector(sel()) == MATCH_EVERYTHING
    assert compile_label_selector(None) == MATCH_NOTHING
    assert MATCH_EVERYTHING != MATCH_NOTHING
    assert selector_from_set({"a": "1"}) == compile_label_selector(sel({"a": "1"}))


def test_matcher_properties_and_string() -> None:
    m = compile_label_selector(
        sel(
            {"app": "web"},
            [
                ("tier", "In", ["b", "a"]),
                ("x", "NotIn", ["1"]),
                ("gpu", "Exists", []),
                ("old", "DoesNotExist", []),
            ],
        )
    )
    assert str(m) == "app=web,gpu,!old,tier in (a,b),x notin (1)"
    assert not m.matches_everything and not m.matches_nothing
    assert MATCH_EVERYTHING.matches_everything
    assert MATCH_NOTHING.matches_nothing
    assert m({"app": "web", "tier": "a", "gpu": "1"})
