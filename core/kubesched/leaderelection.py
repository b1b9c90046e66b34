"""Lease-based leader election (client-go's leaderelection): acquire, renew, release."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from kubesched.api import Lease, LeaseSpec, ObjectMeta
from kubesched.backend.protocol import BackendError
from kubesched.config.types import LeaderElectionConfiguration
from kubesched.config.validation import JITTER_FACTOR
from kubesched.logsafe import safe

log = logging.getLogger(__name__)


class LeaderElectionMetrics:
    """client-go's leader election metrics: ``leader_election_master_status{name}`` (1 on
    the leader, 0 otherwise) and the transitions this replica saw."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=registry,
        )
        self.transitions = Counter(
            "leader_election_transitions",
            "Leader transitions (this replica starting or stopping to lead), by lease.",
            ["name"],
            registry=registry,
        )


class LeaderElector:
    """One candidate for the Lease ``resourceNamespace/resourceName`` on ``backend``.

    As client-go: a candidate takes the lease when it is free, or when its record has
    not changed for ``leaseDuration`` as this candidate observed it (its own clock, never
    the timestamps in the record); the leader renews every ``retryPeriod`` and stops
    leading when it could not renew for ``renewDeadline``. ``is_leader()`` is also False
    once ``renewDeadline`` passed since the last successful renewal, so the leader stops
    acting before any other candidate can take over (leaseDuration > renewDeadline).
    ``run`` returns when leadership is lost or ``stop`` is set; ``release`` frees the
    lease so that a successor need not wait for it to expire.
    """

    def __init__(
        self,
        backend: Any,
        config: LeaderElectionConfiguration,
        identity: str,
        *,
        metrics: LeaderElectionMetrics | None = None,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.config = config
        self.identity = identity
        self.name = config.resource_name
        self.namespace = config.resource_namespace
        self.metrics = metrics
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.monotonic = monotonic
        self.observed: Lease | None = None
        self._observed_record: tuple | None = None
        self._observed_time = 0.0
        self._renewed_at: float | None = None
        self.on_renewed: Callable[[float | None], None] | None = None
        """Told, at each change, until when (``monotonic``) ``is_leader`` holds, or None
        once it does not: how a write sent from another process is fenced."""
        self.reported_leader = ""
        self._lock = threading.Lock()
        if metrics is not None:
            metrics.master_status.labels(self.name).set(0)

    @property
    def description(self) -> str:
        """``namespace/name`` of the lease."""
        return f"{self.namespace}/{self.name}"

    def is_leader(self) -> bool:
        """Whether this candidate holds the lease and renewed it within renewDeadline."""
        with self._lock:
            return (
                self._renewed_at is not None
                and self.monotonic() - self._renewed_at < self.config.renew_deadline
            )

    def _set_renewed(self, at: float | None) -> bool:
        """Record a renewal at ``at`` (None: leadership lost or given up) and tell
        ``on_renewed``; whether the lease was held before."""
        with self._lock:
            held = self._renewed_at is not None
            self._renewed_at = at
            if self.on_renewed is not None:
                self.on_renewed(None if at is None else at + self.config.renew_deadline)
        return held

    # -- the loop -----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> bool:
        """Acquire, then renew until leadership is lost or ``stop`` is set. Returns True
        if this candidate led and lost the lease (not for a ``stop``)."""
        log.info("attempting to acquire leader lease %s...", self.description)
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            self._wait(stop)
        if stop.is_set():
            return False
        log.info("successfully acquired lease %s", self.description)
        self._transition(True)
        if self.on_started_leading is not None:
            self.on_started_leading()
        lost = self._renew(stop)
        self._transition(False)
        if self.on_stopped_leading is not None:
            self.on_stopped_leading()
        return lost

    def _renew(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            deadline = self.monotonic() + self.config.renew_deadline
            renewed = False
            while not stop.is_set() and self.monotonic() < deadline:
                if self.try_acquire_or_renew():
                    renewed = True
                    break
                stop.wait(min(self.config.retry_period, max(0.0, deadline - self.monotonic())))
            if stop.is_set():
                return False
            if not renewed:
                log.error("failed to renew lease %s: timed out", self.description)
                self._set_renewed(None)
                return True
            stop.wait(self.config.retry_period)
        return False

    def _wait(self, stop: threading.Event) -> None:
        stop.wait(self.config.retry_period * (1 + random.random() * (JITTER_FACTOR - 1)))

    def _transition(self, leading: bool) -> None:
        if self.metrics is not None:
            self.metrics.master_status.labels(self.name).set(1 if leading else 0)
            self.metrics.transitions.labels(self.name).inc()
        if not leading:
            log.info("stopped leading %s", self.description)

    # -- one attempt --------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        """client-go's ``tryAcquireOrRenew``: create the lease, or take or renew it."""
        now = datetime.now(UTC)
        started = self.monotonic()
        try:
            current = self.backend.get_lease(self.namespace, self.name)
        except BackendError as err:
            log.error("error retrieving resource lock %s: %s", self.description, safe(err))
            return False
        if current is None:
            lease = Lease(
                metadata=ObjectMeta(name=self.name, namespace=self.namespace),
                spec=self._spec(now, acquire_time=now, transitions=0),
            )
            try:
                created = self.backend.create_lease(lease)
            except BackendError as err:
                log.error("error initially creating leader election record: %s", safe(err))
                return False
            self._observe(created, started, renewed=True)
            return True
        spec = current.spec
        record = (
            spec.holder_identity,
            spec.lease_duration_seconds,
            spec.acquire_time,
            spec.renew_time,
            spec.lease_transitions,
        )
        if record != self._observed_record:
            self._observed_record = record
            self._observed_time = started
            self.observed = current
            self._report_leader(spec.holder_identity or "")
        holder = spec.holder_identity or ""
        i_hold = holder == self.identity
        duration = spec.lease_duration_seconds or self.config.lease_duration
        if holder and not i_hold and self._observed_time + duration > started:
            log.debug("lock is held by %s and has not yet expired", safe(holder))
            return False
        transitions = spec.lease_transitions or 0
        if i_hold:
            new_spec = self._spec(now, acquire_time=spec.acquire_time, transitions=transitions)
        else:
            new_spec = self._spec(now, acquire_time=now, transitions=transitions + 1)
        updated = current.model_copy(update={"spec": new_spec})
        try:
            written = self.backend.update_lease(updated)
        except BackendError as err:
            log.error("failed to update lock %s: %s", self.description, safe(err))
            return False
        self._observe(written, started, renewed=True)
        return True

    def _spec(self, now: datetime, *, acquire_time: datetime | None, transitions: int) -> LeaseSpec:
        return LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, int(self.config.lease_duration)),
            acquire_time=acquire_time,
            renew_time=now,
            lease_transitions=transitions,
        )

    def _observe(self, lease: Lease, started: float, *, renewed: bool) -> None:
        spec = lease.spec
        self._observed_record = (
            spec.holder_identity,
            spec.lease_duration_seconds,
            spec.acquire_time,
            spec.renew_time,
            spec.lease_transitions,
        )
        self._observed_time = started
        self.observed = lease
        if renewed:
            # Counted from the attempt's start: the lease may be older than its reply.
            self._set_renewed(started)
        self._report_leader(spec.holder_identity or "")

    def _report_leader(self, holder: str) -> None:
        if holder and holder != self.reported_leader:
            self.reported_leader = holder
            if holder == self.identity:
                log.info("this replica (%s) is the leader of %s", safe(holder), self.description)
            else:
                log.info("new leader of %s: %s", self.description, safe(holder))

    def release(self) -> bool:
        """Give the lease up (client-go ``ReleaseOnCancel``): empty holder, 1 s duration."""
        held = self._set_renewed(None)
        if not held or self.observed is None:
            return False
        try:
            current = self.backend.get_lease(self.namespace, self.name)
            if current is None or current.spec.holder_identity != self.identity:
                return False
            now = datetime.now(UTC)
            spec = current.spec.model_copy(
                update={
                    "holder_identity": "",
                    "lease_duration_seconds": 1,
                    "renew_time": now,
                    "acquire_time": now,
                }
            )
            self.backend.update_lease(current.model_copy(update={"spec": spec}))
        except BackendError as err:
            log.error("failed to release lock %s: %s", self.description, safe(err))
            return False
        log.info("released lease %s", self.description)
        return True
