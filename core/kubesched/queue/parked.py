"""Parked pods (unschedulable or gated) by uid, indexed by the plugins that rejected them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

from kubesched.framework.types import QueuedPodInfo

__all__ = ["ParkedPods"]

ALWAYS = None
"""The index key of pods every event must consider (no rejecting plugin, say)."""


class ParkedPods:
    """A uid → pod mapping, in insertion order, that also finds the pods a set of
    plugins rejected without looking at the others.

    A cluster event can only help a parked pod through a plugin that rejected it and
    registered the event (upstream's ``isPodWorthRequeuing``): with thousands of pods
    parked and an event per binding, walking every pod per event is quadratic, while
    :meth:`candidates` costs only the pods of the plugins the event concerns.
    ``keys_of`` gives a pod's index keys when it is stored (its rejecting plugins, or
    :data:`ALWAYS`); the keys are remembered, so a pod's plugins may change while it
    is parked as long as it is stored again afterwards (as the queue does).
    """

    __slots__ = ("_by_key", "_keys", "_keys_of", "_next", "_pods", "_seq")

    def __init__(self, keys_of: Callable[[QueuedPodInfo], Collection[str | None]]) -> None:
        self._keys_of = keys_of
        self._pods: dict[str, QueuedPodInfo] = {}
        # uid -> position: a uid stored again keeps its first position (as a dict does).
        self._seq: dict[str, int] = {}
        self._next = 0
        self._keys: dict[str, Collection[str | None]] = {}
        self._by_key: dict[str | None, set[str]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __bool__(self) -> bool:
        return bool(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def get(self, uid: str) -> QueuedPodInfo | None:
        """The pod ``uid`` or ``None``."""
        return self._pods.get(uid)

    def values(self) -> Iterator[QueuedPodInfo]:
        """The pods, in insertion order."""
        return iter(self._pods.values())

    def __setitem__(self, uid: str, qpi: QueuedPodInfo) -> None:
        if uid in self._pods:
            self._unindex(uid)
        else:
            self._seq[uid] = self._next
            self._next += 1
        self._pods[uid] = qpi
        keys = tuple(self._keys_of(qpi))
        self._keys[uid] = keys
        for key in keys:
            self._by_key.setdefault(key, set()).add(uid)

    def pop(self, uid: str, default: QueuedPodInfo | None = None) -> QueuedPodInfo | None:
        """Remove and return the pod ``uid`` (``default`` when absent)."""
        qpi = self._pods.pop(uid, None)
        if qpi is None:
            return default
        self._unindex(uid)
        del self._seq[uid]
        return qpi

    def candidates(self, keys: Collection[str]) -> list[QueuedPodInfo]:
        """The pods indexed under any of ``keys`` or under :data:`ALWAYS`, in insertion
        order (the order in which a walk over every pod would meet them)."""
        if not self._pods:
            return []
        uids: set[str] = set(self._by_key.get(ALWAYS, ()))
        for key in keys:
            found = self._by_key.get(key)
            if found:
                uids |= found
        if len(uids) == len(self._pods):
            return list(self._pods.values())
        seq = self._seq
        return [self._pods[uid] for uid in sorted(uids, key=seq.__getitem__)]

    def _unindex(self, uid: str) -> None:
        for key in self._keys.pop(uid):
            members = self._by_key[key]
            members.discard(uid)
            if not members:
                del self._by_key[key]
