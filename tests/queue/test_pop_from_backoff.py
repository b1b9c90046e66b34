"""SchedulerPopFromBackoffQ: the queue's pop from the backoffQ, its ordering window and
PreEnqueue on the way in, each with the gate on and off."""

from __future__ import annotations

import threading

import pytest
from queue_testlib import fail, make_pod

from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo

GATES = [pytest.param(True, id="gate-on"), pytest.param(False, id="gate-off")]


def backing_off(make_queue, on: bool, *plugins: str, name: str = "p", priority: int = 0):
    """A queue (gate ``on``) with pod ``name`` failed once (by ``plugins``; none: an
    error) and moved to the backoffQ by an event during its attempt."""
    q = make_queue(pop_from_backoff_q=on)
    q.add(make_pod(name, priority=priority))
    qpi = q.pop(block=False)
    fail(q, qpi, *plugins, activated=True)
    assert q.queue_of(f"uid-{name}") == "backoff"
    return q


@pytest.mark.parametrize(
    "on, plugins, want",
    [
        pytest.param(True, ("NodeResourcesFit",), "p", id="gate-on-rejected-popped-early"),
        pytest.param(False, ("NodeResourcesFit",), None, id="gate-off-waits-for-backoff"),
        pytest.param(True, (), None, id="gate-on-error-never-popped-early"),
        pytest.param(False, (), None, id="gate-off-error"),
    ],
)
def test_pop_takes_backoff_head_when_active_is_empty(make_queue, on, plugins, want) -> None:
    q = backing_off(make_queue, on, *plugins)
    qpi = q.pop(block=False)
    assert (qpi.pod.metadata.name if qpi else None) == want
    if qpi is not None:
        assert qpi.attempts == 2
        assert q.queue_of("uid-p") == "in-flight"


@pytest.mark.parametrize("on", GATES)
def test_active_pods_go_first(make_queue, on) -> None:
    q = backing_off(make_queue, on, "NodeResourcesFit", name="old", priority=100)
    q.add(make_pod("new"))
    assert q.pop(block=False).pod.metadata.name == "new"
    assert (q.pop(block=False) is not None) is on


# The clock starts at 1000.0; the pod fails at 1000.3 with a backoff of 1 s (expiry 1001.3).
@pytest.mark.parametrize(
    "on, after, want",
    [
        pytest.param(True, 1.0, "backoff", id="gate-on-expiry-window-not-over"),
        pytest.param(True, 1.6, "backoff", id="gate-on-within-the-expiry-window"),
        pytest.param(True, 1.7, "active", id="gate-on-window-passed"),
        pytest.param(False, 0.9, "backoff", id="gate-off-before-expiry"),
        pytest.param(False, 1.0, "active", id="gate-off-at-expiry"),
    ],
)
def test_backoff_ends_with_its_ordering_window(make_queue, clock, on, after, want) -> None:
    q = make_queue(pop_from_backoff_q=on)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    clock.step(0.3)
    fail(q, qpi, "NodeResourcesFit", activated=True)
    clock.step(after)
    q.flush_backoff_q_completed()
    assert q.queue_of("uid-p") == want


@pytest.mark.parametrize(
    "on, want", [pytest.param(True, 1002.0, id="gate-on"), pytest.param(False, 1001.3, id="off")]
)
def test_next_event_time_is_when_the_window_has_passed(make_queue, clock, on, want) -> None:
    q = make_queue(pop_from_backoff_q=on)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    clock.step(0.3)
    fail(q, qpi, "NodeResourcesFit", activated=True)
    assert q.next_event_time(include_unschedulable_timeout=False) == pytest.approx(want)


@pytest.mark.parametrize(
    "low_fails_at, high_fails_at, want",
    [
        pytest.param(0.1, 0.5, ["high", "low"], id="same-window-by-priority"),
        pytest.param(0.1, 1.5, ["low", "high"], id="earlier-window-first"),
    ],
)
def test_backoff_q_order(make_queue, clock, low_fails_at, high_fails_at, want) -> None:
    """With the gate, pods whose backoffs end in one window leave the backoffQ by
    priority (the activeQ's order), an earlier window before a later one."""
    q = make_queue(pop_from_backoff_q=True)
    q.add(make_pod("low", priority=1))
    q.add(make_pod("high", priority=9))
    failures = sorted([(low_fails_at, "low"), (high_fails_at, "high")], key=lambda f: f[0])
    popped = {qpi.pod.metadata.name: qpi for qpi in (q.pop(block=False), q.pop(block=False))}
    now = 0.0
    for at, name in failures:
        clock.step(at - now)
        now = at
        fail(q, popped[name], "NodeResourcesFit", activated=True)
    assert [q.pop(block=False).pod.metadata.name for _ in range(2)] == want


class Gate:
    """A PreEnqueue that gates pods while ``closed`` and counts its calls."""

    def __init__(self) -> None:
        self.closed = False
        self.calls = 0

    def __call__(self, pod_info: PodInfo) -> Status | None:
        self.calls += 1
        if self.closed:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "held", plugin="Holder")
        return None


@pytest.mark.parametrize(
    "on, want_where, want_calls",
    [
        pytest.param(True, "gated", 2, id="gate-on-checked-entering-backoff"),
        pytest.param(False, "backoff", 1, id="gate-off-checked-leaving-backoff"),
    ],
)
def test_pre_enqueue_runs_when_entering_the_backoff_q(
    make_queue, clock, on, want_where, want_calls
) -> None:
    gate = Gate()
    q = make_queue(pre_enqueue=gate, pop_from_backoff_q=on)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    gate.closed = True
    fail(q, qpi, "NodeResourcesFit", activated=True)
    assert q.queue_of("uid-p") == want_where
    assert gate.calls == want_calls
    if on:
        assert qpi.gating_plugin == "Holder"
        assert "Holder" in qpi.unschedulable_plugins


@pytest.mark.parametrize(
    "on, want_calls",
    [pytest.param(True, 0, id="gate-on-not-rechecked"), pytest.param(False, 1, id="gate-off")],
)
def test_leaving_the_backoff_q_skips_pre_enqueue_with_the_gate(
    make_queue, clock, on, want_calls
) -> None:
    gate = Gate()
    q = make_queue(pre_enqueue=gate, pop_from_backoff_q=on)
    q.add(make_pod("p"))
    fail(q, q.pop(block=False), "NodeResourcesFit", activated=True)
    clock.step(5)
    before = gate.calls
    q.flush_backoff_q_completed()
    assert q.queue_of("uid-p") == "active"
    assert gate.calls - before == want_calls


def test_blocked_pop_wakes_for_a_pod_entering_the_backoff_q(make_queue) -> None:
    q = make_queue(pop_from_backoff_q=True)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    got = []
    waiter = threading.Thread(target=lambda: got.append(q.pop(block=True, timeout=10)))
    waiter.start()
    fail(q, qpi, "NodeResourcesFit", activated=True)
    waiter.join(10)
    assert [g.pod.metadata.name for g in got] == ["p"]


@pytest.mark.parametrize(
    "on, max_backoff, plugins, want",
    [
        pytest.param(True, 0, ("NodeResourcesFit",), "active", id="gate-on-max-0-rejected"),
        pytest.param(True, 0, (), "active", id="gate-on-max-0-error"),
        pytest.param(False, 0, ("NodeResourcesFit",), "active", id="gate-off-max-0-rejected"),
        pytest.param(True, 10, ("NodeResourcesFit",), "backoff", id="gate-on-max-10"),
        pytest.param(False, 10, (), "backoff", id="gate-off-max-10-error"),
    ],
)
def test_max_backoff_0_skips_the_backoff_q(make_queue, clock, on, max_backoff, plugins, want):
    """Upstream's ``TestPriorityQueue_AddUnschedulableIfNotPresent`` with
    ``WithPodMaxBackoffDuration(0)``: no backoff at all, not even the ordering window's
    second; a pod that may be retried goes straight back to the activeQ."""
    q = make_queue(pop_from_backoff_q=on, pod_max_backoff=max_backoff)
    q.add(make_pod("p"))
    clock.step(0.5)  # mid-window: the window alone would hold the pod for half a second
    fail(q, q.pop(block=False), *plugins, activated=True)
    assert q.queue_of("uid-p") == want
