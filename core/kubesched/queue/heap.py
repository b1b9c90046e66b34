"""Binary heaps ordered by a ``less`` function (or a sort key), with update and delete by key."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Heap", "KeyedHeap"]


class Heap(Generic[T]):
    """A min-heap of items ordered by ``less(a, b)`` ("``a`` comes out before ``b``").

    Each item has a key (``key(item)``); a key is in the heap at most once, so
    adding an item whose key is present replaces it and restores the order
    (upstream's ``heap.Heap.AddOrUpdate``). Items that ``less`` cannot tell apart come
    out in the order they were added: upstream's are told apart by their queue
    timestamps, but pods loaded into a simulation together share one virtual
    timestamp, and arrival order is then the faithful (and repeatable) tie-break. Not
    thread-safe: the scheduling queue guards it with its own lock.
    """

    __slots__ = ("_arrivals", "_index", "_items", "_key", "_less", "_order")

    def __init__(self, key: Callable[[T], Hashable], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        # key -> position in _items; kept in step with every swap so that update and
        # delete need no linear search.
        self._index: dict[Hashable, int] = {}
        # key -> arrival number, the tie-break between items ``less`` finds equal.
        self._order: dict[Hashable, int] = {}
        self._arrivals = 0

    def _before(self, a: T, b: T) -> bool:
        """``a`` comes out before ``b``: by ``less``, then by arrival."""
        if self._less(a, b):
            return True
        if self._less(b, a):
            return False
        return self._order[self._key(a)] < self._order[self._key(b)]

    # -- queries ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """The items in heap (not sorted) order."""
        return iter(list(self._items))

    def get(self, key: Hashable) -> T | None:
        """The item with ``key``, or ``None``."""
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        """The first item (without removing it), or ``None`` when empty."""
        return self._items[0] if self._items else None

    def list(self) -> list[T]:
        """A copy of the items, in heap (not sorted) order."""
        return list(self._items)

    # -- changes ----------------------------------------------------------------------
    def add_or_update(self, item: T) -> None:
        """Add ``item``, or replace the item with the same key and re-position it."""
        k = self._key(item)
        i = self._index.get(k)
        if i is None:
            self._items.append(item)
            self._index[k] = len(self._items) - 1
            self._order[k] = self._arrivals
            self._arrivals += 1
            self._up(len(self._items) - 1)
        else:
            self._items[i] = item
            self._fix(i)

    def fix(self, key: Hashable) -> None:
        """Restore the order after the item with ``key`` changed in place."""
        i = self._index.get(key)
        if i is not None:
            self._fix(i)

    def pop(self) -> T | None:
        """Remove and return the first item, or ``None`` when empty."""
        if not self._items:
            return None
        return self._remove_at(0)

    def delete(self, key: Hashable) -> T | None:
        """Remove and return the item with ``key``, or ``None`` if absent."""
        i = self._index.get(key)
        if i is None:
            return None
        return self._remove_at(i)

    def clear(self) -> None:
        """Remove every item."""
        self._items.clear()
        self._index.clear()
        self._order.clear()

    # -- internals --------------------------------------------------------------------
    def _remove_at(self, i: int) -> T:
        items = self._items
        last = len(items) - 1
        if i != last:
            self._swap(i, last)
        item = items.pop()
        key = self._key(item)
        del self._index[key]
        del self._order[key]
        if i < len(items):
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._down(i):
            self._up(i)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i])] = i
        self._index[self._key(items[j])] = j

    def _up(self, i: int) -> None:
        items, less = self._items, self._before
        while i > 0:
            parent = (i - 1) // 2
            if not less(items[i], items[parent]):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> bool:
        """Sift down from ``i``; True if the item moved."""
        items, less = self._items, self._before
        n = len(items)
        start = i
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            right = left + 1
            if right < n and less(items[right], items[left]):
                child = right
            if not less(items[child], items[i]):
                break
            self._swap(i, child)
            i = child
        return i > start


class KeyedHeap(Generic[T]):
    """:class:`Heap`'s interface and order for a ``less`` that a sort key expresses:
    ``less(a, b)`` exactly when ``sort_key(a) < sort_key(b)`` (PrioritySort's
    ``(-priority, timestamp)``).

    The order of :class:`Heap` is total (``less``, then arrival), so any heap with the
    same order pops the same sequence; this one keeps ``(sort_key, arrival)`` entries
    in :mod:`heapq`, whose sifting runs in C with tuple comparisons instead of a
    Python ``less`` call per comparison. An update or delete leaves the old entry in
    place, marked stale, and (for an update) pushes a new one keeping the item's
    arrival number, as :class:`Heap` keeps it; stale entries are dropped when they
    reach the top, and the list is rebuilt when they outnumber the live ones.
    """

    __slots__ = ("_arrivals", "_entries", "_key", "_live", "_pushes", "_sort_key")

    def __init__(self, key: Callable[[T], Hashable], sort_key: Callable[[T], Any]) -> None:
        self._key = key
        self._sort_key = sort_key
        # [sort key, arrival, push number, item, live]: lists, so that an entry can be
        # marked stale; the push number is unique, so items are never compared (an
        # updated item's stale and live entries share the sort key and arrival).
        self._entries: list[list[Any]] = []
        self._live: dict[Hashable, list[Any]] = {}
        self._arrivals = 0
        self._pushes = 0

    # -- queries ----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def __iter__(self) -> Iterator[T]:
        """The items in heap (not sorted) order."""
        return iter(self.list())

    def get(self, key: Hashable) -> T | None:
        """The item with ``key``, or ``None``."""
        entry = self._live.get(key)
        return None if entry is None else entry[3]

    def peek(self) -> T | None:
        """The first item (without removing it), or ``None`` when empty."""
        self._drop_stale()
        return self._entries[0][3] if self._entries else None

    def list(self) -> list[T]:
        """A copy of the items, in heap (not sorted) order."""
        return [e[3] for e in self._entries if e[4]]

    # -- changes ----------------------------------------------------------------------
    def add_or_update(self, item: T) -> None:
        """Add ``item``, or replace the item with the same key and re-position it."""
        k = self._key(item)
        old = self._live.get(k)
        if old is None:
            arrival = self._arrivals
            self._arrivals += 1
        else:
            old[4] = False
            arrival = old[1]
        self._push(k, item, arrival)

    def fix(self, key: Hashable) -> None:
        """Restore the order after the item with ``key`` changed in place."""
        old = self._live.get(key)
        if old is not None:
            old[4] = False
            self._push(key, old[3], old[1])

    def pop(self) -> T | None:
        """Remove and return the first item, or ``None`` when empty."""
        self._drop_stale()
        if not self._entries:
            return None
        entry = heapq.heappop(self._entries)
        del self._live[self._key(entry[3])]
        return entry[3]

    def delete(self, key: Hashable) -> T | None:
        """Remove and return the item with ``key``, or ``None`` if absent."""
        entry = self._live.pop(key, None)
        if entry is None:
            return None
        entry[4] = False
        return entry[3]

    def clear(self) -> None:
        """Remove every item."""
        self._entries.clear()
        self._live.clear()

    # -- internals --------------------------------------------------------------------
    def _push(self, key: Hashable, item: T, arrival: int) -> None:
        entry = [self._sort_key(item), arrival, self._pushes, item, True]
        self._pushes += 1
        self._live[key] = entry
        heapq.heappush(self._entries, entry)
        if len(self._entries) > 2 * len(self._live) + 64:
            # Mostly stale entries: rebuild so that memory and sifting stay proportional.
            self._entries = [e for e in self._entries if e[4]]
            heapq.heapify(self._entries)

    def _drop_stale(self) -> None:
        entries = self._entries
        while entries and not entries[0][4]:
            heapq.heappop(entries)
