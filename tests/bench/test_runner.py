"""The bench runner on tiny sizes: sane numbers, the right scheduled counts (no timing asserts)."""

from __future__ import annotations

import pstats

import pytest

from kubesched.bench import (
    BREAKDOWN_PHASES,
    WORKLOADS,
    BenchError,
    bench_configuration,
    run_once,
    run_workload,
)
from kubesched.framework.registry import PluginRegistry, default_registry

NODES, PODS = 10, 20


def without_preemption() -> PluginRegistry:
    registry = PluginRegistry()
    for entry in default_registry():
        if entry.name != "DefaultPreemption":
            registry.add(entry)
    return registry


def _sane(r, waits_at_permit: bool = False) -> None:
    assert r.schedule_s > 0 and r.setup_s >= 0 and r.build_s >= 0
    assert r.pods_per_second == pytest.approx(r.scheduled / r.schedule_s)
    assert 0 < r.p50_ms <= r.p99_ms
    assert r.mean_ms > 0
    assert r.peak_memory_mb >= 0
    if waits_at_permit:
        # A gang's pods finish together, in the call that assumed the last member: the
        # latency is per call that finished attempts.
        assert 0 < r.attempts < r.scheduled
    else:
        assert r.attempts >= r.scheduled


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_each_workload_schedules_what_it_should(name: str) -> None:
    r, workload = run_once(name, NODES, PODS, seed=1)
    _sane(r, waits_at_permit=name == "gang")
    assert r.pending == workload.expected_unschedulable
    assert r.scheduled == PODS - workload.expected_unschedulable


def test_basic_all_scheduled_and_one_attempt_each() -> None:
    r, _ = run_once("basic", NODES, PODS)
    assert (r.scheduled, r.pending, r.attempts) == (PODS, 0, PODS)


def test_unschedulable_share_pending() -> None:
    r, _ = run_once("unschedulable", NODES, PODS, seed=7)
    assert (r.scheduled, r.pending) == (18, 2)
    assert r.attempts >= PODS


def test_breakdown_covers_the_schedule_time() -> None:
    r, _ = run_once("unschedulable", NODES, PODS, breakdown=True)
    assert r.breakdown is not None and set(r.breakdown) == set(BREAKDOWN_PHASES)
    assert all(v >= 0 for v in r.breakdown.values())
    assert sum(r.breakdown.values()) == pytest.approx(r.schedule_s, rel=0.05)
    for phase in ("queue", "snapshot", "filter", "score", "bind", "failure", "informer"):
        assert r.breakdown[phase] > 0, phase


def test_preemption_breakdown_has_postfilter() -> None:
    r, _ = run_once("preemption", 4, 4, breakdown=True)
    assert r.scheduled == 4
    assert r.breakdown["postfilter"] > 0


def test_run_workload_repeats_and_medians() -> None:
    result = run_workload("basic", NODES, PODS, repeat=3, isolate=False, breakdown=True)
    assert result.repeat == 3 and len(result.runs) == 3
    assert result.scheduled == PODS and result.pending == 0
    rates = sorted(run["pods_per_second"] for run in result.runs)
    assert result.pods_per_second == rates[1]
    assert set(result.breakdown) == set(BREAKDOWN_PHASES)
    data = result.to_dict()
    assert data["workload"] == "basic" and data["upstream"] == "SchedulingBasic"


def test_isolated_run_in_a_child_process() -> None:
    result = run_workload("basic", NODES, PODS, isolate=True)
    assert result.scheduled == PODS
    assert result.peak_memory_mb >= 0


def test_profile_written(tmp_path) -> None:
    path = tmp_path / "basic.prof"
    result = run_workload("basic", NODES, PODS, isolate=False, profile_path=str(path))
    assert result.profile == str(path)
    stats = pstats.Stats(str(path))
    assert any("schedule_one" in func for _, _, func in stats.stats)


def test_percentage_of_nodes_to_score() -> None:
    config = bench_configuration(default_registry(), 100)
    assert config.profiles[0].percentage_of_nodes_to_score == 100
    r, _ = run_once("basic", NODES, PODS, percentage_of_nodes_to_score=100)
    assert r.scheduled == PODS


def test_preemption_needs_its_plugin() -> None:
    registry = without_preemption()
    with pytest.raises(BenchError, match="DefaultPreemption"):
        run_workload("preemption", NODES, PODS, registry=registry, isolate=False)
    # The other workloads run without it.
    r, _ = run_once("unschedulable", NODES, PODS, registry=registry)
    assert r.pending == 2


def test_bad_arguments() -> None:
    with pytest.raises(BenchError, match="unknown workload"):
        run_workload("nope", 1, 1)
    with pytest.raises(BenchError, match="repeat"):
        run_workload("basic", 1, 1, repeat=0)
