"""Buffered histogram observations expose exactly what per-value observe calls would."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from kubesched.metrics import FLUSH_EVERY, Metrics


def _exposition(registry: CollectorRegistry) -> list[str]:
    """The extension-point histogram's lines; ``_created`` timestamps differ between two
    registries, everything else must match."""
    return [
        line
        for line in generate_latest(registry).decode().splitlines()
        if "extension_point_duration" in line and "_created" not in line
    ]


@pytest.mark.parametrize(
    "values",
    [
        [],
        [0.0001],  # exactly a bound: the ``le`` bucket of that bound
        [0.0, 1e-9, 0.0002, 0.00020000001, 0.2048, 0.4096, 5.0, 1e9],
        [random.Random(seed).expovariate(1000) for seed in range(500)],
    ],
    ids=["none", "on-a-bound", "edges-and-inf", "random"],
)
def test_buffered_child_matches_observe(values: list[float]) -> None:
    metrics = Metrics()
    child = metrics.histogram(metrics.framework_extension_point_duration, "Filter", "Success", "p")
    reference = CollectorRegistry()
    plain = Histogram(
        "scheduler_framework_extension_point_duration_seconds",
        "Latency for running all plugins of a specific extension point.",
        ["extension_point", "status", "profile"],
        buckets=[0.0001 * 2**i for i in range(12)],
        registry=reference,
    )
    plain_child = plain.labels("Filter", "Success", "p")
    for v in values:
        child.observe(v)
        plain_child.observe(v)
    assert _exposition(metrics.registry) == _exposition(reference)
    # A second collection adds nothing twice.
    assert _exposition(metrics.registry) == _exposition(reference)


def test_get_sample_value_sees_buffered_observations() -> None:
    metrics = Metrics()
    child = metrics.histogram(metrics.scheduling_attempt_duration, "scheduled", "p")
    assert child is metrics.histogram(metrics.scheduling_attempt_duration, "scheduled", "p")
    for v in (0.001, 0.003, 100.0):
        child.observe(v)
    get = metrics.registry.get_sample_value
    labels = {"result": "scheduled", "profile": "p"}
    assert get("scheduler_scheduling_attempt_duration_seconds_count", labels) == 3
    assert get("scheduler_scheduling_attempt_duration_seconds_sum", labels) == pytest.approx(
        100.004
    )
    assert (
        get("scheduler_scheduling_attempt_duration_seconds_bucket", {**labels, "le": "0.001"}) == 1
    )


def test_tick_flushes_without_a_scrape() -> None:
    metrics = Metrics()
    child = metrics.histogram(metrics.pod_scheduling_attempts)
    child.observe(1)
    for _ in range(FLUSH_EVERY - 1):
        metrics.tick()
    assert child.values == [1]
    metrics.tick()
    assert child.values == []
    assert metrics.pod_scheduling_attempts._sum.get() == 1
