"""The PriorityQueue: ordering, backoff, unschedulable pods, move requests, hints, gating."""

from __future__ import annotations

import threading

import pytest
from queue_testlib import (
    DEFAULT,
    fail,
    make_pod,
    pop_and_fail,
    priority_less,
    scheduling_gates,
)

from kubesched.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from kubesched.framework.status import Code, Status
from kubesched.queue import (
    UNSCHEDULABLE_TIMEOUT_EVENT,
    PriorityQueue,
    ProfileQueueing,
    calculate_backoff_duration,
)
from kubesched.queue.scheduling_queue import is_pod_updated

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
NODE_TAINT = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
NODE_ANY_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE)
POD_DELETE = ClusterEvent(EventResource.POD, ActionType.DELETE)
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)

# A small profile: NodeResourcesFit wakes on node adds and pod deletes, TaintToleration
# on taint updates, InterPodAffinity on assigned-pod adds.
HINTS = [
    ("NodeResourcesFit", NODE_ADD, None),
    ("NodeResourcesFit", POD_DELETE, None),
    ("TaintToleration", NODE_TAINT, None),
    ("InterPodAffinity", ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), None),
]


def where(q: PriorityQueue, name: str) -> str | None:
    return q.queue_of(f"uid-{name}")


def popped_names(q: PriorityQueue) -> list[str]:
    out = []
    while (qpi := q.pop(block=False)) is not None:
        out.append(qpi.pod_info.name)
    return out


# --------------------------------------------------------------------------------------
# activeQ order and pop
# --------------------------------------------------------------------------------------


def test_pop_follows_less(make_queue, clock) -> None:
    q = make_queue()
    for name, prio in [("low", 1), ("high", 10), ("mid-early", 5), ("mid-late", 5)]:
        q.add(make_pod(name, priority=prio))
        clock.step(1)
    assert popped_names(q) == ["high", "mid-early", "mid-late", "low"]
    assert q.scheduling_cycle() == 4


def test_pop_increments_attempts_and_keeps_first_timestamp(make_queue, clock) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    t0 = clock.now()
    first = q.pop(block=False)
    assert (first.attempts, first.initial_attempt_timestamp, first.timestamp) == (1, t0, t0)
    clock.step(5)
    fail(q, first, "NodeResourcesFit")
    assert first.timestamp == t0 + 5  # refreshed at the failure
    clock.step(300)
    q.flush_unschedulable_pods_leftover()
    second = q.pop(block=False)
    assert second is first
    assert (second.attempts, second.initial_attempt_timestamp) == (2, t0)


def test_pop_blocks_until_add(make_queue) -> None:
    q = make_queue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop()), daemon=True)
    t.start()
    t.join(timeout=0.05)
    assert t.is_alive() and got == []  # still waiting: nothing to pop
    q.add(make_pod("p"))
    t.join(timeout=5)
    assert not t.is_alive()
    assert got[0].pod_info.name == "p"


def test_close_unblocks_pop(make_queue) -> None:
    q = make_queue()
    got = []
    t = threading.Thread(target=lambda: got.append(q.pop()), daemon=True)
    t.start()
    t.join(timeout=0.05)
    q.close()
    t.join(timeout=5)
    assert not t.is_alive() and got == [None]
    q.add(make_pod("late"))
    assert q.pop() is None and q.closed


def test_pop_non_blocking_and_timeout(make_queue) -> None:
    q = make_queue()
    assert q.pop(block=False) is None
    assert q.pop(timeout=0.01) is None


def test_pod_without_profile_or_bound_is_ignored(make_queue) -> None:
    q = make_queue()
    q.add(make_pod("other", scheduler_name="someone-else"))
    q.add(make_pod("bound", node_name="n1"))
    q.update(None, make_pod("other2", scheduler_name="someone-else"))
    assert q.pending_pods() == ([], "activeQ:0; backoffQ:0; unschedulablePods:0")


def test_profiles_are_per_scheduler_name(clock) -> None:
    gate_all = ProfileQueueing(
        lambda pi: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no", plugin="Never"), ()
    )
    q = PriorityQueue(
        priority_less, clock, profiles={DEFAULT: ProfileQueueing(), "gated-profile": gate_all}
    )
    q.add(make_pod("a"))
    q.add(make_pod("b", scheduler_name="gated-profile"))
    assert (where(q, "a"), where(q, "b")) == ("active", "gated")


def test_adding_a_known_pod_is_an_update(make_queue) -> None:
    q = make_queue()
    q.add(make_pod("p", priority=1))
    q.add(make_pod("p", priority=7))
    assert q.len_active() == 1
    assert q.pop(block=False).pod_info.priority == 7


# --------------------------------------------------------------------------------------
# backoff
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (60, 10)],
    ids=lambda v: str(v),
)
def test_backoff_duration_doubles_up_to_max(attempts, expected) -> None:
    assert calculate_backoff_duration(attempts, 1.0, 10.0) == expected


def test_backoff_duration_configurable() -> None:
    assert [calculate_backoff_duration(a, 0.5, 3.0) for a in range(1, 6)] == [0.5, 1, 2, 3, 3]


def test_error_goes_to_backoff_with_growing_backoff(make_queue, clock) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    fail(q, qpi)  # an error (no rejecting plugin): backoffQ even without a move request
    assert where(q, "p") == "backoff"
    assert q.next_event_time() == clock.now() + 1
    clock.step(1)
    q.flush_backoff_q_completed()
    qpi = q.pop(block=False)
    assert qpi.attempts == 2
    failed_at = clock.now()
    fail(q, qpi)
    assert q.next_event_time() == failed_at + 2
    clock.step(1.5)
    q.flush_backoff_q_completed()
    assert where(q, "p") == "backoff"
    clock.step(0.5)
    q.flush_backoff_q_completed()
    assert where(q, "p") == "active"


def test_flush_moves_expired_pods_and_keeps_the_rest(make_queue, clock) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    a = q.pop(block=False)
    b = q.pop(block=False)
    b.attempts = 4  # as if it had failed 3 times before: 8 s
    fail(q, a)
    fail(q, b)
    clock.step(1)
    q.flush_backoff_q_completed()
    assert (where(q, "a"), where(q, "b")) == ("active", "backoff")
    assert q.next_event_time() == clock.now() + 7


def test_backoff_counts_from_last_failure(make_queue, clock) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    clock.step(30)  # a long scheduling attempt does not eat the backoff
    fail(q, qpi)
    assert qpi.backoff_expiration is None or qpi.backoff_expiration == clock.now() + 1
    assert q.next_event_time() == clock.now() + 1


# --------------------------------------------------------------------------------------
# unschedulable pods and the leftover flush
# --------------------------------------------------------------------------------------


def test_rejected_pod_parks_until_leftover_timeout(make_queue, clock) -> None:
    q = make_queue(HINTS, pod_max_in_unschedulable_pods_duration=60)
    q.add(make_pod("p"))
    pop_and_fail(q, "NodeResourcesFit")
    failed_at = clock.now()
    assert where(q, "p") == "unschedulable"
    assert q.next_event_time() == failed_at + 60
    clock.step(59)
    q.flush_unschedulable_pods_leftover()
    assert where(q, "p") == "unschedulable"
    clock.step(1)
    q.flush_unschedulable_pods_leftover()
    assert where(q, "p") == "active"


def test_leftover_goes_to_backoff_when_still_backing_off(make_queue, clock) -> None:
    q = make_queue(HINTS, pod_max_in_unschedulable_pods_duration=5, pod_max_backoff=100)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    qpi.attempts = 5  # 16 s backoff
    fail(q, qpi, "NodeResourcesFit")
    clock.step(5)
    q.flush_unschedulable_pods_leftover()
    assert where(q, "p") == "backoff"


def test_next_event_time_is_none_without_timers(make_queue) -> None:
    q = make_queue(pre_enqueue=scheduling_gates)
    assert q.next_event_time() is None
    q.add(make_pod("gated", gates=["wait"]))
    q.add(make_pod("active"))
    assert q.next_event_time() is None


# --------------------------------------------------------------------------------------
# move requests: events, registrations, hints, moveRequestCycle
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rejectors", "event", "moves"),
    [
        (["NodeResourcesFit"], NODE_ADD, True),
        (["NodeResourcesFit"], NODE_TAINT, False),
        (["TaintToleration"], NODE_TAINT, True),
        (["TaintToleration"], NODE_ANY_UPDATE, True),
        (["TaintToleration"], NODE_ADD, False),
        (["NodeResourcesFit"], ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), True),
        (["NodeResourcesFit", "TaintToleration"], NODE_TAINT, True),
        (["NodeAffinity"], NODE_ADD, False),
        (["NodeResourcesFit"], PVC_ADD, False),
        (["NodeResourcesFit"], UNSCHEDULABLE_TIMEOUT_EVENT, True),
    ],
    ids=[
        "registered",
        "other-event",
        "taint-registered",
        "any-update-includes-taint",
        "taint-plugin-ignores-add",
        "pod-registration-matches-assigned-pod",
        "any-rejector-suffices",
        "rejector-registered-nothing-matching",
        "event-nobody-registered",
        "wildcard-moves-all",
    ],
)
def test_move_only_on_events_of_rejecting_plugins(make_queue, clock, rejectors, event, moves):
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    pop_and_fail(q, *rejectors)
    clock.step(10)  # backoff over: a moved pod goes straight to the activeQ
    q.move_all_to_active_or_backoff_queue(event)
    assert where(q, "p") == ("active" if moves else "unschedulable")


def test_moved_pod_still_backing_off_goes_to_backoff(make_queue) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    pop_and_fail(q, "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert where(q, "p") == "backoff"


def test_error_pod_in_unschedulable_moves_on_any_event(make_queue, clock) -> None:
    """A pod with no rejecting plugin is worth retrying on any event of interest."""
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    fail(q, qpi, "NodeResourcesFit")
    qpi.unschedulable_plugins.clear()  # e.g. a plugin cleared its reason
    # The queue stores a parked pod again after changing its plugins (ParkedPods' index).
    q._unschedulable[qpi.pod_info.uid] = qpi
    clock.step(10)
    q.move_all_to_active_or_backoff_queue(NODE_TAINT)
    assert where(q, "p") == "active"


def boom(pod, old, new):
    raise RuntimeError("hint bug")


@pytest.mark.parametrize(
    ("hint", "moves"),
    [
        (lambda pod, old, new: QueueingHint.SKIP, False),
        (lambda pod, old, new: QueueingHint.QUEUE, True),
        (boom, True),
        (None, True),
        (
            lambda pod, old, new: QueueingHint.QUEUE if new == "big-node" else QueueingHint.SKIP,
            True,
        ),
        (lambda pod, old, new: QueueingHint.QUEUE if new == "tiny" else QueueingHint.SKIP, False),
    ],
    ids=["skip", "queue", "raising-counts-as-queue", "no-hint", "looks-at-object", "object-no"],
)
def test_queueing_hint_decides(make_queue, clock, hint, moves) -> None:
    q = make_queue([("NodeResourcesFit", NODE_ADD, hint)])
    q.add(make_pod("p"))
    pop_and_fail(q, "NodeResourcesFit")
    clock.step(10)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, "big-node")
    assert where(q, "p") == ("active" if moves else "unschedulable")


def test_hint_receives_pod_and_objects(make_queue) -> None:
    seen = []
    q = make_queue(
        [("NodeResourcesFit", NODE_ADD, lambda *args: seen.append(args) or QueueingHint.SKIP)]
    )
    q.add(make_pod("p"))
    pop_and_fail(q, "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(NODE_ADD, "old", "new")
    ((pod, old, new),) = seen
    assert (pod.metadata.name, old, new) == ("p", "old", "new")


def test_only_hints_of_rejecting_plugins_run(make_queue) -> None:
    calls = []

    def record(name):
        return lambda pod, old, new: calls.append(name) or QueueingHint.SKIP

    q = make_queue([("A", NODE_ADD, record("A")), ("B", NODE_ADD, record("B"))])
    q.add(make_pod("p"))
    pop_and_fail(q, "B")
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert calls == ["B"]


def test_pending_plugin_queue_skips_backoff(make_queue) -> None:
    q = make_queue([("Gang", NODE_ADD, None), ("NodeResourcesFit", NODE_ADD, None)])
    q.add(make_pod("pending"))
    q.add(make_pod("rejected"))
    fail(q, q.pop(block=False), pending=["Gang"])
    fail(q, q.pop(block=False), "NodeResourcesFit")
    q.move_all_to_active_or_backoff_queue(NODE_ADD)  # both still in their 1 s backoff
    assert (where(q, "pending"), where(q, "rejected")) == ("active", "backoff")


def test_pre_check_limits_the_pods_considered(make_queue, clock) -> None:
    q = make_queue(HINTS)
    for name in ("a", "b"):
        q.add(make_pod(name))
    pop_and_fail(q, "NodeResourcesFit")
    pop_and_fail(q, "NodeResourcesFit")
    clock.step(10)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, pre_check=lambda pod: pod.name == "b")
    assert (where(q, "a"), where(q, "b")) == ("unschedulable", "active")


@pytest.mark.parametrize(
    ("event", "when", "pre_check", "expected"),
    [
        (None, None, None, "unschedulable"),
        (NODE_ADD, "during", None, "backoff"),
        (PVC_ADD, "during", None, "unschedulable"),
        (NODE_TAINT, "during", None, "unschedulable"),
        (NODE_ADD, "during", "not-p", "unschedulable"),
        (NODE_ADD, "before", None, "unschedulable"),
    ],
    ids=[
        "no-event",
        "rejector-event-during-attempt",
        "uninteresting-event",
        "another-plugins-event",
        "pre-check-leaves-the-pod-out",
        "event-before-pop",
    ],
)
def test_events_during_the_attempt(make_queue, event, when, pre_check, expected) -> None:
    """A pod failing after an event that may help it (one its rejecting plugin
    registered, as upstream's in-flight events with queueing hints) must not park; any
    other event leaves it to the unschedulable pods."""
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    if when == "before":
        q.move_all_to_active_or_backoff_queue(event)
    qpi = q.pop(block=False)
    if when == "during":
        check = (lambda pod: pod.metadata.name != "p") if pre_check else None
        q.move_all_to_active_or_backoff_queue(event, pre_check=check)
    fail(q, qpi, "NodeResourcesFit")
    assert where(q, "p") == expected


def test_assigned_pod_added_moves_pods_of_registered_plugins(make_queue, clock) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("affinity"))
    q.add(make_pod("fit"))
    pop_and_fail(q, "InterPodAffinity")
    pop_and_fail(q, "NodeResourcesFit")
    clock.step(10)
    q.assigned_pod_added(make_pod("web", node_name="n1"))
    assert (where(q, "affinity"), where(q, "fit")) == ("active", "unschedulable")


def test_assigned_pod_updated_uses_the_given_event(make_queue, clock) -> None:
    label_update = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)
    q = make_queue([("InterPodAffinity", label_update, None)])
    q.add(make_pod("p"))
    pop_and_fail(q, "InterPodAffinity")
    clock.step(10)
    old, new = make_pod("w", node_name="n1"), make_pod("w", node_name="n1", labels={"a": "b"})
    q.assigned_pod_updated(old, new, ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE))
    assert where(q, "p") == "unschedulable"
    q.assigned_pod_updated(old, new, label_update)
    assert where(q, "p") == "active"


def test_activate(make_queue, clock) -> None:
    q = make_queue(HINTS)
    for name in ("parked", "backing-off", "flying", "stranger"):
        q.add(make_pod(name))
        clock.step(0.25)  # distinct timestamps: FIFO pop order
    pop_and_fail(q, "NodeResourcesFit")  # parked -> unschedulable
    pop_and_fail(q)  # backing-off -> backoffQ (error)
    flying = q.pop(block=False)
    q.activate([make_pod("parked"), make_pod("backing-off"), make_pod("flying")])
    assert (where(q, "parked"), where(q, "backing-off")) == ("active", "active")
    # The in-flight pod is requeued as after an event that may help it.
    fail(q, flying, "NodeResourcesFit")
    assert where(q, "flying") == "backoff"
    q.activate({"default/nobody": make_pod("nobody")})  # unknown pods are ignored
    assert where(q, "nobody") is None


# --------------------------------------------------------------------------------------
# gating (PreEnqueue)
# --------------------------------------------------------------------------------------


def test_gated_pod_waits_for_update_removing_gate(make_queue) -> None:
    q = make_queue(HINTS, pre_enqueue=scheduling_gates)
    gated = make_pod("p", gates=["example.com/wait"])
    q.add(gated)
    assert where(q, "p") == "gated" and q.pop(block=False) is None
    qpi = q.get_pod("p")
    assert (qpi.gated, qpi.gating_plugin, qpi.attempts) == (True, "SchedulingGates", 0)
    # Events never ungate a pod held by SchedulingGates (upstream skips it).
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    q.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT_EVENT)
    assert where(q, "p") == "gated"
    still = make_pod("p", gates=["example.com/wait"], labels={"x": "y"})
    q.update(gated, still)
    assert where(q, "p") == "gated"
    q.update(still, make_pod("p"))
    assert where(q, "p") == "active"
    qpi = q.pop(block=False)
    assert (qpi.gated, qpi.gating_plugin, qpi.unschedulable_plugins) == (False, None, set())


def test_gated_pod_released_by_event_of_gating_plugin(make_queue) -> None:
    quota_ok = {"value": False}

    def quota(pod_info):
        return (
            None
            if quota_ok["value"]
            else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "over quota", plugin="Quota")
        )

    q = make_queue([("Quota", PVC_ADD, None)], pre_enqueue=quota)
    q.add(make_pod("p"))
    assert where(q, "p") == "gated"
    q.move_all_to_active_or_backoff_queue(PVC_ADD)  # PreEnqueue re-runs, still failing
    assert where(q, "p") == "gated"
    quota_ok["value"] = True
    q.move_all_to_active_or_backoff_queue(NODE_ADD)  # not Quota's event
    assert where(q, "p") == "gated"
    q.move_all_to_active_or_backoff_queue(PVC_ADD)
    assert where(q, "p") == "active"


@pytest.mark.parametrize(
    ("action", "moves"),
    [(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, True), (ActionType.UPDATE_OTHER, False)],
    ids=["generated-claim", "other-status-change"],
)
def test_status_update_of_a_gated_pod_asks_the_hints(make_queue, action, moves) -> None:
    """The resourceclaim controller names a pod's claim in its status: the gating
    plugin's hint for that pod update lets it in (upstream, queueing hints on); other
    status-only changes (the scheduler's own conditions) move nothing."""
    claims = {"ready": False}

    def dra(pod_info):
        if claims["ready"]:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no claim", plugin="DRA")

    registered = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    hint_calls = []

    def hint(pod, old, new):
        hint_calls.append(pod.name)
        return QueueingHint.QUEUE

    q = make_queue([("DRA", registered, hint)], pre_enqueue=dra)
    pod = make_pod("p")
    q.add(pod)
    assert where(q, "p") == "gated"
    claims["ready"] = True
    updated = pod.model_copy(deep=True)
    updated.status.phase = "Pending"  # a status change only
    q.update(pod, updated, ClusterEvent(EventResource.UNSCHEDULED_POD, action))
    assert where(q, "p") == ("active" if moves else "gated")
    assert hint_calls == (["p"] if moves else [])


def test_pre_enqueue_runs_again_when_leaving_backoff(make_queue, clock) -> None:
    closed = {"value": False}

    def gate(pod_info):
        return (
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "closed", plugin="Door")
            if closed["value"]
            else None
        )

    q = make_queue(HINTS, pre_enqueue=gate)
    q.add(make_pod("p"))
    pop_and_fail(q)
    closed["value"] = True
    clock.step(1)
    q.flush_backoff_q_completed()
    assert where(q, "p") == "gated"


def test_raising_pre_enqueue_gates(make_queue) -> None:
    def bad(pod_info):
        raise ValueError("bug")

    q = make_queue(pre_enqueue=bad)
    q.add(make_pod("p"))
    assert where(q, "p") == "gated"


# --------------------------------------------------------------------------------------
# update and delete
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "step", "expected"),
    [
        ({"labels": {"app": "web2"}}, 10, "active"),
        ({"labels": {"app": "web2"}}, 0, "backoff"),
        ({"priority": 9}, 10, "active"),
        ({"resource_version": "99"}, 10, "unschedulable"),
        ({"nominated_node_name": "n1"}, 10, "unschedulable"),
    ],
    ids=["labels-backoff-done", "labels-still-backing-off", "spec", "resource-version", "status"],
)
def test_update_of_unschedulable_pod(make_queue, clock, change, step, expected) -> None:
    q = make_queue(HINTS)
    old = make_pod("p", labels={"app": "web"}, resource_version="1")
    q.add(old)
    pop_and_fail(q, "NodeResourcesFit")
    clock.step(step)
    kwargs = {"labels": {"app": "web"}, "resource_version": "1", **change}
    new = make_pod("p", **kwargs)
    q.update(old, new)
    assert where(q, "p") == expected
    assert q.get_pod("p").pod is new  # the stored pod is the new version either way


def test_update_in_active_reorders(make_queue, clock) -> None:
    q = make_queue()
    a, b = make_pod("a", priority=1), make_pod("b", priority=2)
    q.add(a)
    q.add(b)
    q.update(a, make_pod("a", priority=5))
    assert popped_names(q) == ["a", "b"]


def test_update_in_backoff_stays_in_backoff(make_queue) -> None:
    q = make_queue(HINTS)
    pod = make_pod("p")
    q.add(pod)
    pop_and_fail(q)
    q.update(pod, make_pod("p", labels={"x": "1"}))
    assert where(q, "p") == "backoff"
    assert q.get_pod("p").pod_info.labels == {"x": "1"}


def test_update_of_unknown_pod_adds_it(make_queue) -> None:
    q = make_queue()
    q.update(None, make_pod("p"))
    assert where(q, "p") == "active"


def test_update_to_bound_removes(make_queue) -> None:
    q = make_queue()
    q.add(make_pod("p"))
    q.update(make_pod("p"), make_pod("p", node_name="n1"))
    assert where(q, "p") is None


def _put_in(q: PriorityQueue, queue: str) -> None:
    if queue == "gated":
        q.add(make_pod("p", gates=["g"]))
        return
    q.add(make_pod("p"))
    if queue == "backoff":
        pop_and_fail(q)
    elif queue == "unschedulable":
        pop_and_fail(q, "NodeResourcesFit")
    elif queue == "in-flight":
        q.pop(block=False)


@pytest.mark.parametrize("queue", ["active", "backoff", "unschedulable", "gated", "in-flight"])
def test_delete_from_every_sub_queue(make_queue, metrics, queue) -> None:
    q = make_queue(HINTS, pre_enqueue=scheduling_gates)
    _put_in(q, queue)
    assert where(q, "p") == queue
    q.delete(make_pod("p"))
    assert q.pending_pods() == ([], "activeQ:0; backoffQ:0; unschedulablePods:0")
    for name in ("active", "backoff", "unschedulable", "gated"):
        assert metrics.registry.get_sample_value("scheduler_pending_pods", {"queue": name}) == 0


def test_pod_deleted_during_attempt_is_not_requeued(make_queue) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    q.delete(make_pod("p"))
    fail(q, qpi, "NodeResourcesFit")
    assert where(q, "p") is None and q.in_flight_pods() == []


def test_pod_updated_during_attempt_goes_to_backoff_with_new_version(make_queue) -> None:
    q = make_queue(HINTS)
    old = make_pod("p")
    q.add(old)
    qpi = q.pop(block=False)
    q.update(old, make_pod("p", labels={"fixed": "yes"}))
    assert where(q, "p") == "in-flight"  # not queued twice
    fail(q, qpi, "NodeResourcesFit")
    assert where(q, "p") == "backoff"
    assert q.get_pod("p").pod_info.labels == {"fixed": "yes"}


def test_irrelevant_update_during_attempt_does_not_requeue(make_queue) -> None:
    q = make_queue(HINTS)
    old = make_pod("p", resource_version="1")
    q.add(old)
    qpi = q.pop(block=False)
    q.update(old, make_pod("p", resource_version="2"))
    fail(q, qpi, "NodeResourcesFit")
    assert where(q, "p") == "unschedulable"


def test_done_ends_in_flight(make_queue) -> None:
    q = make_queue()
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    assert [p.metadata.name for p in q.in_flight_pods()] == ["p"]
    q.done(qpi.pod_info.uid)
    assert q.in_flight_pods() == []


def test_add_unschedulable_ignores_already_queued(make_queue) -> None:
    q = make_queue(HINTS)
    q.add(make_pod("p"))
    qpi = q.pop(block=False)
    q.add(make_pod("p"))  # in flight: remembered, not queued
    assert q.len_active() == 0
    q.done(qpi.pod_info.uid)
    q.add(make_pod("p"))
    fail(q, qpi, "NodeResourcesFit")
    assert (q.len_active(), q.len_unschedulable()) == (1, 0)


# --------------------------------------------------------------------------------------
# inspection and run loops
# --------------------------------------------------------------------------------------


def test_pending_pods_summary(make_queue, clock) -> None:
    q = make_queue(HINTS, pre_enqueue=scheduling_gates)
    for name in ("a", "b", "c", "d"):
        q.add(make_pod(name))
        clock.step(0.25)
    q.add(make_pod("g", gates=["x"]))
    pop_and_fail(q)  # a -> backoff
    pop_and_fail(q, "NodeResourcesFit")  # b -> unschedulable
    pods, summary = q.pending_pods()
    assert summary == "activeQ:2; backoffQ:1; unschedulablePods:2"
    assert sorted(p.metadata.name for p in pods) == ["a", "b", "c", "d", "g"]
    assert (q.len_active(), q.len_backoff(), q.len_unschedulable(), q.len_gated()) == (2, 1, 1, 1)
    assert sorted(p.metadata.name for p in q.pods_in_active_q()) == ["c", "d"]


def test_run_starts_loops_that_stop(make_queue) -> None:
    q = make_queue()
    stop = threading.Event()
    threads = q.run(stop)
    assert all(t.daemon and t.is_alive() for t in threads)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in threads)
    threads = q.run()
    q.close()
    for t in threads:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in threads)


def _changed(pod, change: str):
    new = pod.model_copy(deep=True)
    if change == "status":
        new.status.phase = "Pending"
    elif change == "resourceVersion":
        new.metadata.resource_version = "99"
    elif change == "finalizers":
        new.metadata.finalizers = ["example.com/keep"]
    elif change == "labels":
        new.metadata.labels = {"app": "web"}
    return new


@pytest.mark.parametrize(
    ("change", "updated"),
    [("status", False), ("resourceVersion", False), ("finalizers", False), ("labels", True)],
    ids=["status", "resource-version", "finalizers", "labels"],
)
def test_is_pod_updated_ignores_what_upstream_strips(change: str, updated: bool) -> None:
    pod = make_pod("p", resource_version="1")
    assert is_pod_updated(pod, _changed(pod, change)) is updated
