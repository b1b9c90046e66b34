"""Pauses inside binding cycles: parked in virtual time (the embedded run) or slept on the
wall clock and cut short at shutdown (``kubesched run``)."""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar

import pytest

from kubesched.clock import FakeClock
from kubesched.framework.runtime.pauses import VirtualPauses, WallClockPauses

_who: ContextVar[str] = ContextVar("who", default="nobody")


def _cycle(
    pauses: VirtualPauses, clock: FakeClock, log: list, name: str, waits: list[float]
) -> None:
    """A binding cycle that pauses ``waits`` in turn, logging when it resumes."""
    for seconds in waits:
        went_on = pauses.pause(seconds)
        log.append((name, clock.now(), "pauses" if went_on else "stopped"))
    log.append((name, clock.now(), "ends"))


@pytest.mark.parametrize(
    ("cycles", "expected"),
    [
        ({"a": []}, [("a", 0.0, "ends")]),
        (
            {"a": [5.0], "b": [3.0]},
            [("b", 3.0, "pauses"), ("b", 3.0, "ends"), ("a", 5.0, "pauses"), ("a", 5.0, "ends")],
        ),
        (
            {"a": [5.0, 5.0], "b": [10.0]},
            [
                ("a", 5.0, "pauses"),
                ("b", 10.0, "pauses"),
                ("b", 10.0, "ends"),
                ("a", 10.0, "pauses"),
                ("a", 10.0, "ends"),
            ],
        ),
        ({"a": [0.0]}, [("a", 0.0, "pauses"), ("a", 0.0, "ends")]),
    ],
    ids=["no-pause", "shorter-pause-first", "same-end-in-the-order-they-paused", "zero-pause"],
)
def test_virtual_pauses_resume_in_the_order_their_pauses_end(
    cycles: dict[str, list[float]], expected: list[tuple[str, float, str]]
) -> None:
    clock = FakeClock()
    pauses = VirtualPauses(clock.now)
    log: list[tuple[str, float, str]] = []
    for name, waits in cycles.items():
        # run returns when the cycle ends or first pauses.
        pauses.run(lambda n, w=waits: _cycle(pauses, clock, log, n, w), name)
    assert log == [(n, 0.0, "ends") for n, w in cycles.items() if not w]
    while (when := pauses.next_wake_time()) is not None:
        clock.set(when)
        pauses.wake_due(when)
    assert log == expected


def test_stop_resumes_every_parked_cycle_with_false() -> None:
    clock = FakeClock()
    pauses = VirtualPauses(clock.now)
    log: list[tuple[str, float, str]] = []
    pauses.run(lambda n: _cycle(pauses, clock, log, n, [600.0, 5.0]), "a")
    pauses.stop()
    assert log == [("a", 0.0, "stopped"), ("a", 0.0, "stopped"), ("a", 0.0, "ends")]
    assert pauses.next_wake_time() is None


def test_a_cycle_sees_the_callers_context() -> None:
    clock = FakeClock()
    pauses = VirtualPauses(clock.now)
    seen = []
    _who.set("the run")
    pauses.run(lambda _: seen.append(_who.get()), None)
    pauses.run(lambda _: (pauses.pause(1.0), seen.append(_who.get())), None)
    clock.set(1.0)
    pauses.wake_due(1.0)
    assert seen == ["the run", "the run"]


def test_a_pause_outside_a_binding_cycle_is_a_bug() -> None:
    with pytest.raises(RuntimeError, match="outside the scheduler's binding cycles"):
        VirtualPauses(FakeClock().now).pause(1.0)


def test_an_exception_in_a_cycle_reaches_the_caller_and_the_next_cycle_runs() -> None:
    pauses = VirtualPauses(FakeClock().now)

    def fail(_: object) -> None:
        raise ValueError("bug")

    with pytest.raises(ValueError, match="bug"):
        pauses.run(fail, None)
    done = []
    pauses.run(done.append, 1)
    assert done == [1]


def test_another_thread_runs_cycles_in_greenlets_of_its_own() -> None:
    pauses = VirtualPauses(FakeClock().now)
    done: list[str] = []
    pauses.run(done.append, "here")  # leaves an idle greenlet of this thread
    errors: list[BaseException] = []

    def elsewhere() -> None:
        try:
            pauses.run(done.append, "there")
        except BaseException as err:  # a greenlet of another thread cannot be switched to
            errors.append(err)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join(10)
    assert (done, errors) == (["here", "there"], [])


def test_wall_clock_pause_sleeps_and_stop_cuts_it_short() -> None:
    pauses = WallClockPauses()
    started = time.monotonic()
    assert pauses.pause(0.05) is True
    assert time.monotonic() - started >= 0.05
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(pauses.pause(600.0)))
    waiter.start()
    time.sleep(0.1)
    started = time.monotonic()
    pauses.stop()
    waiter.join(10)
    assert result == [False] and time.monotonic() - started < 5
    assert pauses.pause(600.0) is False  # after stop, at once
