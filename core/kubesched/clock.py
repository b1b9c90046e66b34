"""Time as the scheduler sees it: the real clock, or a virtual one for tests and simulation."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

VIRTUAL_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""The date of a virtual clock's time 0: the embedded cluster's timestamps count from here."""


class Clock(Protocol):
    """A source of time in seconds. Every timer of the cache, queue and loop reads one."""

    def now(self) -> float:
        """The current time, in seconds."""
        ...


class RealClock:
    """Wall-clock time (``time.monotonic``)."""

    def now(self) -> float:
        """The monotonic time, in seconds."""
        return time.monotonic()

    def wall(self) -> datetime:
        """The date and time now (for timestamps written into objects)."""
        return datetime.now(UTC)


class FakeClock:
    """A clock that moves only when told to: tests and the simulator's virtual time."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        """The current virtual time."""
        return self._now

    def wall(self) -> datetime:
        """The date of the current virtual time (``VIRTUAL_EPOCH`` + its seconds)."""
        return VIRTUAL_EPOCH + timedelta(seconds=self._now)

    def step(self, seconds: float) -> None:
        """Move time forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        self._now += seconds

    def set(self, now: float) -> None:
        """Move time forward to ``now``."""
        if now < self._now:
            raise ValueError("a clock cannot go back")
        self._now = now
