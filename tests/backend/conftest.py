"""Fixtures of the embedded-cluster tests: a virtual clock and an empty MemoryCluster."""

from __future__ import annotations

import pytest

from kubesched.backend.memory import MemoryCluster
from kubesched.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def cluster(clock: FakeClock) -> MemoryCluster:
    return MemoryCluster(clock)
