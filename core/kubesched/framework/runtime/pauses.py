"""Pauses inside binding cycles: on the wall clock, cut short at shutdown, or in virtual time.

A binding-cycle plugin that polls the cluster (DynamicResources waiting for a device's
binding conditions) pauses between looks through ``Handle.pause``. Upstream's binding
cycle is a goroutine that sleeps under a context the scheduler cancels when it stops;
here :class:`WallClockPauses` does that for ``kubesched run`` (one thread per binding
cycle), and :class:`VirtualPauses` for the embedded cluster, where everything runs on
one thread in virtual time: each binding cycle runs in a greenlet, a pause parks it, the
scheduling loop goes on with other pods, and the cycle resumes when the simulation's
clock reaches the pause's end.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from greenlet import getcurrent, greenlet

__all__ = ["BindingPauses", "VirtualPauses", "WallClockPauses"]

_Item = TypeVar("_Item")


class BindingPauses(Protocol):
    """Where binding cycles run and pause (the scheduler owns one)."""

    def run(self, cycle: Callable[[_Item], None], item: _Item) -> None:
        """Run ``cycle(item)``; it may pause (see :meth:`pause`)."""
        ...

    def pause(self, seconds: float) -> bool:
        """Pause the calling binding cycle for ``seconds``; False when the scheduler is
        stopping (the cycle should give up)."""
        ...

    def next_wake_time(self) -> float | None:
        """When the earliest paused cycle resumes (virtual time), or None."""
        ...

    def wake_due(self, now: float) -> None:
        """Resume the cycles whose pause ends at or before ``now``."""
        ...

    def stop(self) -> None:
        """End every pause now, and every later one at once (the scheduler stops)."""
        ...


class WallClockPauses:
    """Pauses of binding cycles that run on their own threads (``kubesched run``)."""

    def __init__(self) -> None:
        self._stopped = threading.Event()

    def run(self, cycle: Callable[[_Item], None], item: _Item) -> None:
        """Run ``cycle(item)`` in the calling thread."""
        cycle(item)

    def pause(self, seconds: float) -> bool:
        """Block the calling thread for ``seconds``, or until :meth:`stop`."""
        return not self._stopped.wait(max(0.0, seconds))

    def next_wake_time(self) -> float | None:
        """None: the threads wake by themselves."""
        return None

    def wake_due(self, now: float) -> None:
        """Nothing to do: the threads wake by themselves."""

    def stop(self) -> None:
        """Wake every pausing thread with False."""
        self._stopped.set()


class VirtualPauses:
    """Pauses of binding cycles on the scheduling loop's thread, in virtual time.

    Each cycle runs in a greenlet, in a copy of the caller's context (notices collected
    around the run reach it). A pause parks the greenlet and hands control back to
    whoever started or last resumed it; :meth:`wake_due` resumes the parked ones in the
    order their pauses end (then in the order they paused), so a run is deterministic.
    A greenlet whose cycle ended serves the next one: making a greenlet costs a hundred
    times more than switching to one, and nearly every cycle ends without a pause.
    """

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._parked: list[tuple[float, int, Any]] = []
        self._idle: list[Any] = []
        self._idle_thread = threading.get_ident()
        self._seq = itertools.count()
        self._stopped = False

    def run(self, cycle: Callable[[_Item], None], item: _Item) -> None:
        """Run ``cycle(item)`` until it ends or pauses."""
        thread = threading.get_ident()
        if thread != self._idle_thread:
            # A greenlet runs only in the thread that made it: a simulation taken over by
            # another thread (a resilience sweep's world, reused by each Dask task) or
            # forked from one makes its own.
            self._idle, self._idle_thread = [], thread
        runner = self._idle.pop() if self._idle else greenlet(self._serve)
        runner.gr_context = contextvars.copy_context()
        runner.parent = getcurrent()
        runner.switch(cycle, item)

    def _serve(self, cycle: Callable[[Any], None], item: Any) -> None:
        """A runner's life: one cycle after the other, idle in between."""
        me = getcurrent()
        while True:
            # An exception ends the greenlet (and reaches whoever switched to it): only
            # a cycle that ended normally leaves its runner idle for the next.
            cycle(item)
            self._idle.append(me)
            cycle, item = me.parent.switch()

    def pause(self, seconds: float) -> bool:
        """Park the calling cycle until the clock is ``seconds`` later."""
        if self._stopped:
            return False
        current = getcurrent()
        if current.parent is None:
            raise RuntimeError("a binding cycle pauses outside the scheduler's binding cycles")
        heapq.heappush(self._parked, (self._now() + max(0.0, seconds), next(self._seq), current))
        current.parent.switch()
        return not self._stopped

    def next_wake_time(self) -> float | None:
        """When the earliest parked cycle resumes, or None."""
        return self._parked[0][0] if self._parked else None

    def wake_due(self, now: float) -> None:
        """Resume, one after the other, every cycle whose pause ends by ``now``."""
        while self._parked and self._parked[0][0] <= now:
            self._resume(heapq.heappop(self._parked)[2])

    def stop(self) -> None:
        """Resume every parked cycle, its pause returning False."""
        self._stopped = True
        while self._parked:
            self._resume(heapq.heappop(self._parked)[2])

    @staticmethod
    def _resume(runner: Any) -> None:
        # Control comes back here when the cycle ends or pauses again.
        runner.parent = getcurrent()
        runner.switch()
