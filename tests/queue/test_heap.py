"""The keyed binary heap: order by ``less``, replace by key, delete by key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.queue import Heap


def make_heap() -> Heap[tuple[str, int]]:
    """Items are (key, value); smaller value first."""
    return Heap(key=lambda item: item[0], less=lambda a, b: a[1] < b[1])


def drain(heap: Heap) -> list:
    out = []
    while (item := heap.pop()) is not None:
        out.append(item)
    return out


def test_pops_in_order() -> None:
    h = make_heap()
    for k, v in [("a", 5), ("b", 1), ("c", 3), ("d", 4), ("e", 2)]:
        h.add_or_update((k, v))
    assert len(h) == 5
    assert h.peek() == ("b", 1)
    assert [k for k, _ in drain(h)] == ["b", "e", "c", "d", "a"]
    assert h.pop() is None and h.peek() is None


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        (("a", 0), ["a", "b", "c"]),
        (("c", 9), ["b", "a", "c"]),
        (("b", 1), ["b", "a", "c"]),
    ],
    ids=["move-up", "move-down", "same-place"],
)
def test_add_existing_key_replaces_and_reorders(update, expected) -> None:
    h = make_heap()
    for item in [("a", 2), ("b", 1), ("c", 3)]:
        h.add_or_update(item)
    h.add_or_update(update)
    assert len(h) == 3
    assert h.get(update[0]) == update
    assert [k for k, _ in drain(h)] == expected


def test_delete_by_key() -> None:
    h = make_heap()
    for i, k in enumerate("abcdef"):
        h.add_or_update((k, i))
    assert h.delete("c") == ("c", 2)
    assert h.delete("c") is None
    assert "c" not in h and "d" in h
    assert [k for k, _ in drain(h)] == ["a", "b", "d", "e", "f"]


def test_fix_after_in_place_change() -> None:
    h: Heap[list] = Heap(key=lambda item: item[0], less=lambda a, b: a[1] < b[1])
    items = [["a", 1], ["b", 2], ["c", 3]]
    for item in items:
        h.add_or_update(item)
    items[2][1] = 0
    h.fix("c")
    assert h.peek() == ["c", 0]


ops = st.lists(
    st.tuples(st.sampled_from(["add", "delete", "pop"]), st.integers(0, 9), st.integers(-50, 50)),
    max_size=80,
)


@given(ops)
def test_matches_a_sorted_model(operations) -> None:
    """Any sequence of add/update/delete/pop behaves like a dict sorted on demand."""
    h = make_heap()
    model: dict[str, int] = {}
    for op, k, v in operations:
        key = f"k{k}"
        if op == "add":
            h.add_or_update((key, v))
            model[key] = v
        elif op == "delete":
            assert h.delete(key) == ((key, model.pop(key)) if key in model else None)
        else:
            item = h.pop()
            if not model:
                assert item is None
            else:
                assert item is not None and item[1] == min(model.values())
                del model[item[0]]
        assert len(h) == len(model)
        assert sorted(h.list()) == sorted(model.items())


def test_items_less_cannot_tell_apart_come_out_in_arrival_order():
    # Every item compares equal: only arrival order can decide, as for pods loaded into
    # a simulation at one virtual instant.
    heap = Heap(lambda item: item, lambda a, b: False)
    for name in ("c", "a", "d", "b", "e"):
        heap.add_or_update(name)
    heap.delete("d")
    heap.add_or_update("d")  # re-added: arrives last
    assert [heap.pop() for _ in range(5)] == ["c", "a", "b", "e", "d"]
