"""Fixtures for the scheduling queue tests: a FakeClock, fresh metrics, a queue factory.

This directory has no ``__init__.py`` on purpose: as a package it would be imported
as ``queue`` and shadow the standard library's ``queue`` module.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from queue_testlib import DEFAULT, Hints, QueueFactory, priority_less

from kubesched.clock import FakeClock
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.metrics import Metrics
from kubesched.queue import PriorityQueue, ProfileQueueing


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def make_queue(clock: FakeClock, metrics: Metrics) -> QueueFactory:
    """``make_queue(hints=..., pre_enqueue=..., **queue_kwargs)``: a queue with one profile
    (``default-scheduler``) on the test's clock and metrics."""

    def factory(
        hints: Hints = (),
        pre_enqueue: Callable[[PodInfo], Status | None] | None = None,
        **kwargs,
    ) -> PriorityQueue:
        kwargs.setdefault("profiles", {DEFAULT: ProfileQueueing(pre_enqueue, tuple(hints))})
        return PriorityQueue(priority_less, clock, metrics=metrics, **kwargs)

    return factory
