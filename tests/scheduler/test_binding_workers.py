"""BindingWorkers: binding cycles on a fixed set of threads, in order, then in the caller's."""

from __future__ import annotations

import threading
import time

import pytest

from kubesched.scheduler.scheduler import BindingWorkers


class _Cycles:
    """Binding cycles that record which thread ran them and how many ran at once."""

    def __init__(self, hold: float = 0.0) -> None:
        self.hold = hold
        self.ran: list[tuple[int, str]] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, binding) -> None:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.hold)
        with self._lock:
            self.running -= 1
            self.ran.append((binding, threading.current_thread().name))


@pytest.mark.parametrize(
    ("size", "bindings", "most"),
    [(1, 5, 1), (4, 12, 4), (16, 3, 3), (0, 2, 1)],
    ids=["one-thread", "more-bindings-than-threads", "more-threads-than-bindings", "size-0-is-1"],
)
def test_bindings_run_on_at_most_size_worker_threads(size: int, bindings: int, most: int) -> None:
    cycles = _Cycles(hold=0.05)
    workers = BindingWorkers(size, cycles)
    for b in range(bindings):
        workers.submit(b)
    workers.shutdown()  # waits for every queued and running binding
    assert sorted(b for b, _ in cycles.ran) == list(range(bindings))
    assert all(name.startswith("binding_") for _, name in cycles.ran)
    assert cycles.most == most


def test_one_worker_runs_bindings_in_the_order_submitted() -> None:
    cycles = _Cycles()
    workers = BindingWorkers(1, cycles)
    for b in range(20):
        workers.submit(b)
    workers.shutdown()
    assert [b for b, _ in cycles.ran] == list(range(20))


@pytest.mark.parametrize("started", [True, False], ids=["after-bindings", "never-started"])
def test_after_shutdown_a_binding_runs_in_the_callers_thread(started: bool) -> None:
    """What ``Scheduler.close`` relies on: a pod rejected at Permit while closing still
    rolls back, on the thread that rejected it."""
    cycles = _Cycles()
    workers = BindingWorkers(2, cycles)
    if started:
        workers.submit("before")
    workers.shutdown()
    workers.submit("after")
    ran = dict(cycles.ran)
    assert ran["after"] == threading.current_thread().name
    assert ("before" in ran) is started


class _Gated:
    """Binding cycles that wait until released, one release each."""

    def __init__(self) -> None:
        self.release = threading.Semaphore(0)
        self.started: list[int] = []

    def __call__(self, binding) -> None:
        self.started.append(binding)
        assert self.release.acquire(timeout=10)


@pytest.mark.parametrize(
    ("submit", "blocks"),
    [("submit_when_free", True), ("submit", False)],
    ids=["loop-waits-for-a-free-worker", "permit-callbacks-never-wait"],
)
def test_only_the_loop_waits_for_a_free_worker(submit: str, blocks: bool) -> None:
    cycles = _Gated()
    workers = BindingWorkers(2, cycles)
    workers.submit(0)
    workers.submit(1)
    third = threading.Thread(target=getattr(workers, submit), args=(2,))
    third.start()
    third.join(0.3)
    assert third.is_alive() is blocks
    cycles.release.release()  # one worker frees up: the waiting hand-over goes through
    third.join(10)
    assert not third.is_alive()
    for _ in range(2):
        cycles.release.release()
    workers.shutdown()
    assert sorted(cycles.started) == [0, 1, 2]
