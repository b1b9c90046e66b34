"""PreFilterResult merging and upstream's default score normalisation."""

import pytest

from kubesched import NodeScores, PreFilterResult, default_normalize_score


@pytest.mark.parametrize(
    ("scores", "reverse", "expected"),
    [
        ([10, 20, 40], False, [25, 50, 100]),
        ([10, 20, 40], True, [75, 50, 0]),
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        ([1, 3], False, [33, 100]),
        ([7], True, [0]),
        ([], False, []),
    ],
    ids=["scale", "reverse", "all-zero", "all-zero-reverse", "floor-division", "single", "empty"],
)
def test_default_normalize_score(scores, reverse, expected):
    ns = NodeScores([f"n{i}" for i in range(len(scores))], scores)
    default_normalize_score(100, reverse, ns)
    assert ns.values.tolist() == expected


def test_pre_filter_result_merge():
    everything = PreFilterResult()
    ab = PreFilterResult(frozenset({"a", "b"}))
    bc = PreFilterResult(frozenset({"b", "c"}))
    assert everything.all_nodes() and not ab.all_nodes()
    assert everything.merge(ab) == ab
    assert ab.merge(everything) == ab
    assert ab.merge(None) == ab
    assert ab.merge(bc).node_names == {"b"}
    assert ab.merge(PreFilterResult(frozenset({"z"}))).node_names == frozenset()


def test_node_scores_as_dict():
    assert NodeScores(["a", "b"], [1, 2]).as_dict() == {"a": 1, "b": 2}
