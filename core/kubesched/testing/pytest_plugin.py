"""The ``kubesched`` pytest plugin: fixtures for testing plugins (``pytest11`` entry point).

Installed with kubesched, so every test session in an environment that has kubesched
gets these fixtures without a ``conftest.py``. Imports of the scheduler happen inside
the fixtures, so sessions that use none of them pay nothing for the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def fake_clock() -> Any:
    """A ``FakeClock`` at time 0; move it with ``step(seconds)``."""
    from kubesched.clock import FakeClock

    return FakeClock(0.0)


@pytest.fixture
def embedded_cluster(fake_clock: Any) -> Any:
    """An empty embedded cluster (``MemoryCluster``) on ``fake_clock``.

    Add objects with ``embedded_cluster.apply([...])`` or ``create(obj)``; graceful
    deletions complete when ``embedded_cluster.advance(fake_clock.now())`` reaches them.
    """
    from kubesched.backend.memory import MemoryCluster

    return MemoryCluster(fake_clock)


@pytest.fixture
def make_framework() -> Callable[..., Any]:
    """``kubesched.testing.make_framework``: a Framework for plugin classes, in order."""
    from kubesched.testing.framework import make_framework as factory

    return factory


@pytest.fixture
def framework_for() -> Callable[..., Any]:
    """``kubesched.testing.framework_for(plugin, args=..., **handle)``: a Framework for
    one plugin class, or one installed plugin by name."""
    from kubesched.testing.run import framework_for as factory

    return factory


@pytest.fixture
def snapshot() -> Callable[..., Any]:
    """``kubesched.testing.snapshot_of(nodes, pods=())``: a scheduler snapshot."""
    from kubesched.testing.run import snapshot_of

    return snapshot_of


@pytest.fixture
def simulate_small() -> Callable[..., Any]:
    """``kubesched.testing.simulate_small(*objects, nodes=3, enable=(...))``: a full
    simulation on a small embedded cluster; see ``kubesched.testing.placements``."""
    from kubesched.testing.run import simulate_small as run

    return run
