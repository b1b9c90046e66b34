"""Pods held at Permit: per-plugin waits that plugins allow or reject, with deadlines."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo

MAX_PERMIT_TIMEOUT = 15 * 60.0
"""Upstream caps a Permit plugin's wait at 15 minutes (``maxTimeout``)."""

PERMIT_WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"
"""The last reason of the status Permit returns when a plugin asked the pod to wait (after
the waiting plugins' own): what a pod of a pod group that could not be placed shows."""


class WaitingPod:
    """A pod that one or more Permit plugins asked to wait.

    Each waiting plugin has a deadline. The pod is allowed once every waiting plugin
    has called ``allow``; it is rejected by the first ``reject`` or the first deadline
    that passes (``expire``). ``wait()`` blocks until then (real clock); a callback
    added with ``on_done`` runs when the verdict is known (the simulator's way).
    """

    def __init__(self, pod_info: PodInfo, deadlines: Mapping[str, float]) -> None:
        self.pod_info = pod_info
        self._pending: dict[str, float] = dict(deadlines)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._status: Status | None = None
        self._callbacks: list[Callable[[Status], None]] = []

    @property
    def pod(self):
        """The waiting pod."""
        return self.pod_info.pod

    def pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        with self._lock:
            return sorted(self._pending)

    def next_deadline(self) -> float | None:
        """The earliest deadline among the plugins still waiting, if still undecided."""
        with self._lock:
            if self._status is not None or not self._pending:
                return None
            return min(self._pending.values())

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; once all waiting plugins have, the pod is allowed."""
        with self._lock:
            if self._status is not None:
                return
            self._pending.pop(plugin, None)
            if self._pending:
                return
            status = self._status = Status()
        self._finish(status)

    def reject(self, plugin: str, message: str) -> None:
        """``plugin`` rejects the pod: the binding cycle fails with ``UNSCHEDULABLE``."""
        with self._lock:
            if self._status is not None:
                return
            status = self._status = Status(Code.UNSCHEDULABLE, message, plugin=plugin)
        self._finish(status)

    def expire(self, now: float) -> bool:
        """Reject the pod if a waiting plugin's deadline has passed; True if it did."""
        with self._lock:
            if self._status is not None:
                return False
            late = sorted(p for p, d in self._pending.items() if d <= now)
        if not late:
            return False
        plugin = late[0]
        self.reject(plugin, f"rejected due to timeout after waiting at plugin {plugin}")
        return True

    def wait(self, timeout: float | None = None) -> Status | None:
        """Block until the verdict (or ``timeout`` seconds); the verdict, or None."""
        self._done.wait(timeout)
        return self._status

    @property
    def status(self) -> Status | None:
        """The verdict, once known."""
        return self._status

    def on_done(self, callback: Callable[[Status], None]) -> None:
        """Call ``callback(status)`` when the verdict is known (now, if it is)."""
        with self._lock:
            if self._status is None:
                self._callbacks.append(callback)
                return
            status = self._status
        callback(status)

    def _finish(self, status: Status) -> None:
        self._done.set()
        for callback in self._callbacks:
            callback(status)
        self._callbacks.clear()


class WaitingPods:
    """The pods waiting at Permit, by uid (reachable by plugins through the Handle)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self._lock = threading.Lock()

    def add(self, waiting: WaitingPod) -> None:
        """Start tracking ``waiting``."""
        with self._lock:
            self._pods[waiting.pod_info.uid] = waiting

    def remove(self, uid: str) -> None:
        """Stop tracking the pod with ``uid``."""
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        """The waiting pod with ``uid``."""
        with self._lock:
            return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        with self._lock:
            return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def next_deadline(self) -> float | None:
        """The earliest deadline of any waiting pod."""
        deadlines = [d for w in self for d in (w.next_deadline(),) if d is not None]
        return min(deadlines, default=None)

    def expire(self, now: float) -> int:
        """Reject every waiting pod whose deadline passed; how many were rejected."""
        return sum(w.expire(now) for w in self)
