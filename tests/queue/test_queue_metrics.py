"""scheduler_pending_pods, scheduler_queue_incoming_pods_total and
scheduler_unschedulable_pods after each queue transition."""

from __future__ import annotations

from queue_testlib import DEFAULT, fail, make_pod, scheduling_gates

from kubesched.framework.events import ActionType, ClusterEvent, EventResource

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
HINTS = [("NodeResourcesFit", NODE_ADD, None)]


def pending(metrics) -> dict[str, float]:
    get = metrics.registry.get_sample_value
    return {
        q: get("scheduler_pending_pods", {"queue": q})
        for q in ("active", "backoff", "unschedulable", "gated")
    }


def incoming(metrics, queue: str, event: str) -> float:
    value = metrics.registry.get_sample_value(
        "scheduler_queue_incoming_pods_total", {"queue": queue, "event": event}
    )
    return value or 0.0


def reasons(metrics, plugin: str) -> float:
    value = metrics.registry.get_sample_value(
        "scheduler_unschedulable_pods", {"plugin": plugin, "profile": DEFAULT}
    )
    return value or 0.0


def test_metrics_follow_every_transition(make_queue, metrics, clock) -> None:
    q = make_queue(HINTS, pre_enqueue=scheduling_gates)
    assert pending(metrics) == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}

    q.add(make_pod("p"))
    assert pending(metrics) == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert incoming(metrics, "active", "PodAdd") == 1

    q.add(make_pod("g", gates=["wait"]))
    assert pending(metrics)["gated"] == 1
    assert reasons(metrics, "SchedulingGates") == 1

    qpi = q.pop(block=False)
    assert pending(metrics)["active"] == 0

    fail(q, qpi, "NodeResourcesFit")
    assert pending(metrics) == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 1}
    assert incoming(metrics, "unschedulable", "ScheduleAttemptFailure") == 1
    assert reasons(metrics, "NodeResourcesFit") == 1

    q.move_all_to_active_or_backoff_queue(NODE_ADD)  # still backing off
    assert pending(metrics) == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 1}
    assert incoming(metrics, "backoff", "NodeAdd") == 1

    clock.step(1)
    q.flush_backoff_q_completed()
    assert pending(metrics) == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert incoming(metrics, "active", "BackoffComplete") == 1

    qpi = q.pop(block=False)
    assert reasons(metrics, "NodeResourcesFit") == 0  # counted until popped, as upstream
    fail(q, qpi)  # error
    assert pending(metrics)["backoff"] == 1
    assert incoming(metrics, "backoff", "ScheduleAttemptFailure") == 1

    q.update(make_pod("g", gates=["wait"]), make_pod("g"))
    assert pending(metrics)["gated"] == 0 and pending(metrics)["active"] == 1
    assert incoming(metrics, "active", "PodUpdate") == 1

    q.delete(make_pod("p"))
    q.delete(make_pod("g"))
    assert pending(metrics) == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert reasons(metrics, "SchedulingGates") == 0


def test_leftover_timeout_label(make_queue, metrics, clock) -> None:
    q = make_queue(HINTS, pod_max_in_unschedulable_pods_duration=60)
    q.add(make_pod("p"))
    fail(q, q.pop(block=False), "NodeResourcesFit")
    clock.step(60)
    q.flush_unschedulable_pods_leftover()
    assert incoming(metrics, "active", "UnschedulableTimeout") == 1
    assert pending(metrics)["active"] == 1


def test_deleting_an_unschedulable_pod_releases_its_reasons(make_queue, metrics) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    fail(q, q.pop(block=False), "NodeResourcesFit", "TaintToleration")
    assert (reasons(metrics, "NodeResourcesFit"), reasons(metrics, "TaintToleration")) == (1, 1)
    q.delete(make_pod("p"))
    assert (reasons(metrics, "NodeResourcesFit"), reasons(metrics, "TaintToleration")) == (0, 0)
