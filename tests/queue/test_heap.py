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


class _Item:
    """A mutable item: ``fix`` after changing ``value`` in place."""

    def __init__(self, key: str, value: int) -> None:
        self.key, self.value = key, value

    def __repr__(self) -> str:
        return f"_Item({self.key!r}, {self.value})"


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "fix", "delete", "pop", "peek"]),
        st.sampled_from("abcdefgh"),
        st.integers(0, 3),  # few values: many ties, broken by arrival
    ),
    max_size=80,
)


@given(_OPS)
def test_keyed_heap_pops_what_the_less_heap_pops(ops) -> None:
    """KeyedHeap (heapq on a sort key) and Heap (``less``) hold the same total order,
    so every operation answers the same, with ties, updates, fixes and deletes."""
    from kubesched.queue.heap import KeyedHeap

    plain: Heap[_Item] = Heap(key=lambda i: i.key, less=lambda a, b: a.value < b.value)
    keyed: KeyedHeap[_Item] = KeyedHeap(key=lambda i: i.key, sort_key=lambda i: i.value)
    mirror: dict[str, _Item] = {}  # one shared object per key, as the queue keeps
    for op, key, value in ops:
        if op in ("add", "update"):
            item = mirror[key] = _Item(key, value)
            plain.add_or_update(item)
            keyed.add_or_update(item)
        elif op == "fix" and key in mirror and key in plain:
            mirror[key].value = value
            plain.fix(key)
            keyed.fix(key)
        elif op == "delete":
            assert plain.delete(key) is keyed.delete(key)
        elif op == "pop":
            assert plain.pop() is keyed.pop()
        elif op == "peek":
            assert plain.peek() is keyed.peek()
        assert len(plain) == len(keyed)
        assert (key in plain) == (key in keyed)
        assert plain.get(key) is keyed.get(key)
        assert sorted(map(id, plain.list())) == sorted(map(id, keyed.list()))
    assert drain(plain) == drain(keyed)


def test_keyed_heap_drops_stale_entries() -> None:
    from kubesched.queue.heap import KeyedHeap

    h: KeyedHeap[_Item] = KeyedHeap(key=lambda i: i.key, sort_key=lambda i: i.value)
    item = _Item("a", 0)
    for v in range(1000):
        item.value = v
        h.add_or_update(item)
    assert len(h) == 1 and len(h._entries) <= 2 * len(h) + 65
    h.clear()
    assert h.pop() is None and h.peek() is None and h.list() == []
