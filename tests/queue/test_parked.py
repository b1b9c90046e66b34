"""ParkedPods: the plugin index of unschedulable and gated pods, and the queue's use of it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from queue_testlib import DEFAULT, fail, make_pod, priority_less

from kubesched.clock import FakeClock
from kubesched.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.queue import PriorityQueue, ProfileQueueing
from kubesched.queue.parked import ALWAYS, ParkedPods


def qpi(name: str, *plugins: str) -> QueuedPodInfo:
    q = QueuedPodInfo(PodInfo(make_pod(name)), 0.0)
    q.unschedulable_plugins = set(plugins)
    return q


def keys_of(q: QueuedPodInfo) -> frozenset[str | None]:
    return frozenset(q.unschedulable_plugins) or frozenset((ALWAYS,))


def names(pods: list[QueuedPodInfo]) -> list[str]:
    return [p.pod_info.name for p in pods]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ((), ["none"]),
        (("A",), ["a", "none", "ab"]),
        (("B",), ["none", "b", "ab"]),
        (("A", "B"), ["a", "none", "b", "ab"]),
        (("C",), ["none"]),
    ],
    ids=["only-always", "one-plugin", "other-plugin", "both", "unknown-plugin"],
)
def test_candidates_are_the_plugins_pods_and_always_in_insertion_order(keys, expected) -> None:
    parked = ParkedPods(keys_of)
    for name, plugins in [("a", "A"), ("none", ""), ("b", "B"), ("ab", "AB")]:
        parked[name] = qpi(name, *plugins)
    assert names(parked.candidates(keys)) == expected


def test_stored_again_keeps_position_and_takes_new_keys() -> None:
    parked = ParkedPods(keys_of)
    first, second = qpi("first", "A"), qpi("second", "A")
    parked["first"], parked["second"] = first, second
    first.unschedulable_plugins = {"B"}
    parked["first"] = first
    assert names(parked.candidates(["A"])) == ["second"]
    assert names(parked.candidates(["A", "B"])) == ["first", "second"]
    assert list(parked) == ["first", "second"]


def test_pop_removes_from_the_index() -> None:
    parked = ParkedPods(keys_of)
    parked["a"] = qpi("a", "A")
    assert parked.pop("a").pod_info.name == "a"
    assert parked.pop("a") is None
    assert (len(parked), bool(parked), "a" in parked) == (0, False, False)
    assert parked.candidates(["A"]) == []
    parked["a"] = qpi("a", "B")  # a new insertion, at the end
    assert names(parked.candidates(["B"])) == ["a"]


# The queue: an event moves exactly the pods a full walk with upstream's
# isPodWorthRequeuing would move, in the same order.
PLUGINS = ["A", "B", "C", "D"]
EVENTS = [
    ClusterEvent(EventResource.NODE, ActionType.ADD),
    ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD),
    ClusterEvent(EventResource.POD, ActionType.DELETE),
]


def skip_odd(pod, old, new) -> QueueingHint:
    return (
        QueueingHint.SKIP
        if pod.metadata.name.endswith(("1", "3", "5", "7", "9"))
        else (QueueingHint.QUEUE)
    )


HINTS = (
    ("A", EVENTS[0], None),
    ("A", EVENTS[3], None),
    ("B", EVENTS[1], skip_odd),
    ("C", ClusterEvent(EventResource.POD, ActionType.ADD), None),  # matches assigned adds
    # D registers nothing the events match.
    ("D", ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD), None),
)


def expected_moves(rejectors: list[set[str]], event: ClusterEvent) -> list[str]:
    moved = []
    for i, plugins in enumerate(rejectors):
        if not plugins:
            continue  # an error: the pod went to the backoffQ, not parked
        for plugin, registered, hint in HINTS:
            if plugin in plugins and registered.matches(event):
                pod = make_pod(f"p{i}")
                if hint is None or hint(pod, None, None) is QueueingHint.QUEUE:
                    moved.append(f"p{i}")
                    break
    return moved


@settings(max_examples=60, deadline=None)
@given(
    rejectors=st.lists(st.sets(st.sampled_from(PLUGINS), max_size=3), max_size=20),
    event=st.sampled_from(EVENTS),
)
def test_queue_moves_what_a_walk_over_every_pod_would(rejectors, event) -> None:
    clock = FakeClock(1000.0)
    q = PriorityQueue(priority_less, clock, profiles={DEFAULT: ProfileQueueing(None, HINTS)})
    for i, plugins in enumerate(rejectors):
        q.add(make_pod(f"p{i}"))
        fail(q, q.pop(block=False), *sorted(plugins))
    clock.step(60)  # every backoff over: moved pods reach the activeQ
    q.move_all_to_active_or_backoff_queue(event)
    active = []
    while (popped := q.pop(block=False)) is not None:
        active.append(popped.pod_info.name)
    assert sorted(active) == sorted(expected_moves(rejectors, event))
