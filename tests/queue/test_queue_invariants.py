"""Random operation sequences: no pod is lost or held twice, and the gauges stay exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from queue_testlib import DEFAULT, fail, make_pod, priority_less, scheduling_gates

from kubesched.clock import FakeClock
from kubesched.framework.events import ActionType, ClusterEvent, EventResource
from kubesched.metrics import Metrics
from kubesched.queue import PriorityQueue, ProfileQueueing

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
NAMES = ["a", "b", "c", "d"]

operation = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("update"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("pop-fail"), st.sampled_from(["", "NodeResourcesFit"]), st.booleans()),
    st.tuples(st.just("pop-done"), st.none(), st.none()),
    st.tuples(st.just("move"), st.none(), st.none()),
    st.tuples(st.just("tick"), st.sampled_from([0.5, 1, 4, 30, 300]), st.none()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=40))
def test_every_pending_pod_is_in_exactly_one_place(ops) -> None:
    clock = FakeClock(0)
    metrics = Metrics()
    q = PriorityQueue(
        priority_less,
        clock,
        profiles={
            DEFAULT: ProfileQueueing(scheduling_gates, [("NodeResourcesFit", NODE_ADD, None)])
        },
        metrics=metrics,
    )
    pending: set[str] = set()  # pods the cluster has, unbound
    versions: dict[str, int] = {}
    for op, arg, flag in ops:
        if op in ("add", "update"):
            versions[arg] = versions.get(arg, 0) + 1
            pod = make_pod(arg, labels={"v": str(versions[arg])}, gates=["g"] if flag else ())
            (q.add if op == "add" else lambda p: q.update(None, p))(pod)
            pending.add(arg)
        elif op == "delete":
            q.delete(make_pod(arg))
            pending.discard(arg)
        elif op == "pop-fail":
            qpi = q.pop(block=False)
            if qpi is not None:
                fail(q, qpi, *([arg] if arg else []), activated=bool(flag))
        elif op == "pop-done":
            qpi = q.pop(block=False)
            if qpi is not None:  # bound: the cluster no longer has it pending
                q.done(qpi.pod_info.uid)
                pending.discard(qpi.pod_info.name)
        elif op == "move":
            q.move_all_to_active_or_backoff_queue(NODE_ADD)
        else:
            clock.step(arg)
            q.flush_backoff_q_completed()
            q.flush_unschedulable_pods_leftover()

        pods, _ = q.pending_pods()
        queued = [p.metadata.name for p in pods]
        assert len(queued) == len(set(queued)), "a pod is held twice"
        assert set(queued) == pending, "a pending pod was lost, or a gone one kept"
        sizes = {
            "active": q.len_active(),
            "backoff": q.len_backoff(),
            "unschedulable": q.len_unschedulable(),
            "gated": q.len_gated(),
        }
        assert sum(sizes.values()) == len(queued)
        for name, size in sizes.items():
            assert (
                metrics.registry.get_sample_value("scheduler_pending_pods", {"queue": name}) == size
            )
        for name in pending:
            assert q.queue_of(f"uid-{name}") in sizes
