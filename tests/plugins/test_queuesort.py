"""PrioritySort: higher priority first, then the earlier enqueue time."""

from __future__ import annotations

import pytest

from kubesched import PodInfo, QueuedPodInfo
from kubesched.testing import make_framework, make_pod
from kubesched_builtin.queuesort import PrioritySort


def qpi(name: str, priority: int | None, ts: float) -> QueuedPodInfo:
    builder = make_pod(name)
    if priority is not None:
        builder.priority(priority)
    return QueuedPodInfo(PodInfo(builder.obj()), ts)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((10, 2.0), (1, 1.0), True),
        ((1, 1.0), (10, 2.0), False),
        ((5, 1.0), (5, 2.0), True),
        ((5, 2.0), (5, 1.0), False),
        ((5, 1.0), (5, 1.0), False),
        ((None, 1.0), (0, 2.0), True),
        ((None, 2.0), (-1, 1.0), True),
        ((-5, 1.0), (None, 2.0), False),
    ],
    ids=[
        "higher-priority-first",
        "lower-priority-later",
        "tie-earlier-first",
        "tie-later-second",
        "equal-is-not-less",
        "unset-priority-is-zero",
        "zero-beats-negative",
        "negative-loses-to-unset",
    ],
)
def test_less(a, b, expected) -> None:
    fw = make_framework(PrioritySort)
    less = fw.queue_sort_less()
    assert less(qpi("a", *a), qpi("b", *b)) is expected


def test_sorts_a_list() -> None:
    import functools

    fw = make_framework(PrioritySort)
    less = fw.queue_sort_less()
    pods = [
        qpi("low", 1, 0.0),
        qpi("high-late", 9, 3.0),
        qpi("high-early", 9, 1.0),
        qpi("mid", 5, 2.0),
    ]
    ordered = sorted(
        pods, key=functools.cmp_to_key(lambda x, y: -1 if less(x, y) else (1 if less(y, x) else 0))
    )
    assert [p.pod_info.name for p in ordered] == ["high-early", "high-late", "mid", "low"]
