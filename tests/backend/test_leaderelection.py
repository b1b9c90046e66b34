"""Leader election (client-go's) on the embedded cluster's Leases, with a controlled clock."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from kubesched.backend.memory import MemoryCluster
from kubesched.backend.protocol import BackendError
from kubesched.clock import FakeClock
from kubesched.config.types import LeaderElectionConfiguration
from kubesched.leaderelection import LeaderElectionMetrics, LeaderElector

CONFIG = LeaderElectionConfiguration(
    lease_duration=15.0, renew_deadline=10.0, retry_period=2.0, resource_name="sched"
)


class Ticker:
    """The candidates' local monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(FakeClock())


def _elector(cluster, identity: str, ticker: Ticker, registry=None) -> LeaderElector:
    metrics = LeaderElectionMetrics(registry) if registry is not None else None
    return LeaderElector(cluster, CONFIG, identity, metrics=metrics, monotonic=ticker)


def test_first_candidate_creates_the_lease_and_leads(cluster) -> None:
    t = Ticker()
    a = _elector(cluster, "a", t)
    assert a.try_acquire_or_renew()
    lease = cluster.get_lease("kube-system", "sched")
    assert lease is not None
    assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) == ("a", 15)
    assert lease.spec.lease_transitions == 0
    assert a.is_leader()


@pytest.mark.parametrize(
    ("elapsed", "b_acquires"),
    [(14.9, False), (15.1, True)],
    ids=["before-lease-duration", "after-lease-duration"],
)
def test_standby_takes_over_only_after_lease_duration_without_change(
    cluster, elapsed: float, b_acquires: bool
) -> None:
    t = Ticker()
    a, b = _elector(cluster, "a", t), _elector(cluster, "b", t)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes the record now
    t.now += elapsed
    assert b.try_acquire_or_renew() is b_acquires
    lease = cluster.get_lease("kube-system", "sched")
    assert lease.spec.holder_identity == ("b" if b_acquires else "a")
    assert lease.spec.lease_transitions == (1 if b_acquires else 0)


def test_renewal_keeps_acquire_time_and_resets_the_standby_wait(cluster) -> None:
    t = Ticker()
    a, b = _elector(cluster, "a", t), _elector(cluster, "b", t)
    assert a.try_acquire_or_renew()
    acquired = cluster.get_lease("kube-system", "sched").spec.acquire_time
    assert not b.try_acquire_or_renew()
    t.now += 10
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # a new record: b's wait starts again
    t.now += 10
    assert not b.try_acquire_or_renew()
    assert cluster.get_lease("kube-system", "sched").spec.acquire_time == acquired


def test_leader_stops_acting_after_renew_deadline(cluster) -> None:
    t = Ticker()
    a = _elector(cluster, "a", t)
    assert a.try_acquire_or_renew()
    t.now += 9.9
    assert a.is_leader()
    t.now += 0.2
    assert not a.is_leader()  # before any standby may take over (15 s)


def test_release_frees_the_lease_at_once(cluster) -> None:
    t = Ticker()
    a, b = _elector(cluster, "a", t), _elector(cluster, "b", t)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    assert not a.is_leader()
    lease = cluster.get_lease("kube-system", "sched")
    assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) in (("", 1), (None, 1))
    assert b.try_acquire_or_renew()


def test_on_renewed_follows_is_leader(cluster) -> None:
    """``on_renewed`` tells the deadline up to which ``is_leader`` holds (what fences the
    writer process), moved at each renewal, and None once the lease is released."""
    t = Ticker()
    a = _elector(cluster, "a", t)
    told: list[float | None] = []
    a.on_renewed = told.append
    assert a.try_acquire_or_renew()
    assert told == [100.0 + CONFIG.renew_deadline]
    t.now += 5
    assert a.try_acquire_or_renew()
    assert told[-1] == 105.0 + CONFIG.renew_deadline
    t.now = 115.0 - 0.01
    assert a.is_leader()
    t.now = 115.0 + 0.01
    assert not a.is_leader()
    a.release()
    assert told[-1] is None


def test_conflicting_update_loses_the_race(cluster) -> None:
    """Two standbys take an expired lease at once: the API's optimistic concurrency lets
    only one update win."""
    t = Ticker()
    a, b, c = (_elector(cluster, n, t) for n in "abc")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew() and not c.try_acquire_or_renew()
    t.now += 16
    stale = cluster.get_lease("kube-system", "sched")
    assert b.try_acquire_or_renew()
    with pytest.raises(BackendError):
        cluster.update_lease(stale)
    assert not c.try_acquire_or_renew()


def test_run_leads_then_reports_a_lost_lease(cluster) -> None:
    """``run`` acquires, renews, and returns True when renewals fail for renewDeadline;
    the metric follows."""
    registry = CollectorRegistry()
    config = LeaderElectionConfiguration(
        lease_duration=0.6, renew_deadline=0.4, retry_period=0.1, resource_name="sched"
    )
    started = threading.Event()
    a = LeaderElector(
        cluster,
        config,
        "a",
        metrics=LeaderElectionMetrics(registry),
        on_started_leading=started.set,
    )
    told: list[float | None] = []
    a.on_renewed = told.append
    stop = threading.Event()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(a.run(stop)))
    thread.start()
    assert started.wait(5)
    assert registry.get_sample_value("leader_election_master_status", {"name": "sched"}) == 1
    # Another writer takes the lease: a's renewals fail from now on.
    lease = cluster.get_lease("kube-system", "sched")
    cluster.update_lease(
        lease.model_copy(update={"spec": lease.spec.model_copy(update={"holder_identity": "x"})})
    )
    thread.join(5)
    assert result == [True]
    assert not a.is_leader()
    assert told[-1] is None  # the writer process is fenced off too
    assert registry.get_sample_value("leader_election_master_status", {"name": "sched"}) == 0
