"""Toleration/taint matching (v1.Toleration.ToleratesTaint, FindMatchingUntoleratedTaint)."""

from __future__ import annotations

import pytest

from kubesched.api import (
    Taint,
    Toleration,
    find_untolerated_taint,
    toleration_tolerates_taint,
    tolerations_tolerate_taint,
)


def tol(key=None, op=None, value=None, effect=None) -> Toleration:
    """A toleration."""
    return Toleration(key=key, operator=op, value=value, effect=effect)


def taint(key, value=None, effect="NoSchedule") -> Taint:
    """A taint."""
    return Taint(key=key, value=value, effect=effect)


K1 = taint("key1", "value1", "NoSchedule")

CASES = [
    ("equal-match", tol("key1", "Equal", "value1", "NoSchedule"), K1, True),
    ("exists-match", tol("key1", "Exists", None, "NoSchedule"), K1, True),
    ("empty-operator-is-equal", tol("key1", None, "value1", "NoSchedule"), K1, True),
    ("empty-string-operator-is-equal", tol("key1", "", "value1", "NoSchedule"), K1, True),
    ("equal-wrong-value", tol("key1", "Equal", "other", "NoSchedule"), K1, False),
    ("equal-no-value-vs-value", tol("key1", "Equal", None, "NoSchedule"), K1, False),
    ("equal-no-value-vs-no-value", tol("k", "Equal"), taint("k"), True),
    ("exists-ignores-value", tol("key1", "Exists", "whatever", "NoSchedule"), K1, True),
    ("wrong-key", tol("key2", "Exists"), K1, False),
    ("wrong-effect", tol("key1", "Exists", None, "NoExecute"), K1, False),
    ("empty-effect-matches-all", tol("key1", "Exists"), taint("key1", "v", "NoExecute"), True),
    (
        "empty-key-exists-matches-all",
        tol(None, "Exists"),
        taint("anything", "v", "NoExecute"),
        True,
    ),
    (
        "empty-key-exists-with-effect",
        tol("", "Exists", None, "NoSchedule"),
        taint("x", effect="PreferNoSchedule"),
        False,
    ),
    ("unknown-operator", tol("key1", "Gt", "value1"), K1, False),
]


@pytest.mark.parametrize(
    ("toleration", "the_taint", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_toleration_tolerates_taint(toleration, the_taint, expected) -> None:
    assert toleration_tolerates_taint(toleration, the_taint) is expected


# The seed's example: node1 has three taints, the pod tolerates the first two.
SEED_TAINTS = [
    taint("key1", "value1", "NoSchedule"),
    taint("key1", "value1", "NoExecute"),
    taint("key2", "value2", "NoSchedule"),
]
SEED_TOLERATIONS = [
    tol("key1", "Equal", "value1", "NoSchedule"),
    tol("key1", "Equal", "value1", "NoExecute"),
]

UNTOLERATED = [
    (
        "seed-example-key2-remains",
        SEED_TAINTS,
        SEED_TOLERATIONS,
        {"NoSchedule", "NoExecute"},
        SEED_TAINTS[2],
    ),
    ("filter-by-effect", SEED_TAINTS, SEED_TOLERATIONS, {"NoExecute"}, None),
    (
        "prefer-ignored-by-filter",
        [taint("a", effect="PreferNoSchedule")],
        [],
        {"NoSchedule", "NoExecute"},
        None,
    ),
    ("no-taints", [], [], {"NoSchedule"}, None),
    ("first-untolerated-wins", [taint("a"), taint("b")], [], {"NoSchedule"}, taint("a")),
    ("tolerate-everything", SEED_TAINTS, [tol(op="Exists")], {"NoSchedule", "NoExecute"}, None),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "expected"),
    [c[1:] for c in UNTOLERATED],
    ids=[c[0] for c in UNTOLERATED],
)
def test_find_untolerated_taint(taints, tolerations, effects, expected) -> None:
    assert find_untolerated_taint(taints, tolerations, effects) == expected


def test_tolerations_tolerate_taint() -> None:
    assert tolerations_tolerate_taint(SEED_TOLERATIONS, SEED_TAINTS[1])
    assert not tolerations_tolerate_taint(SEED_TOLERATIONS, SEED_TAINTS[2])
    assert not tolerations_tolerate_taint([], SEED_TAINTS[0])
