"""events.k8s.io/v1 Events as upstream's broadcaster writes them: series, retries, bounded cache."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import queue
import random
import socket
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesched.backend.kube.client import MERGE_PATCH, NotLeaderError, UnreachableError
from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError, RecordedEvent
from kubesched.logsafe import safe

log = logging.getLogger(__name__)

_HOST = socket.gethostname()

MAX_QUEUED_EVENTS = 1000
"""Events waiting to be written; more are dropped (client-go's ``maxQueuedEvents`` with
``DropIfChannelFull``): a scheduler never blocks on its events. Writes waiting for a retry
count too."""

FINISH_TIME = 6 * 60.0
"""A series whose last occurrence is older than this is finished, and a single event
older than this is forgotten (client-go ``finishTime``, also the period of that sweep)."""

REFRESH_TIME = 30 * 60.0
"""How often running series are written back with their count (client-go ``refreshTime``)."""

MAX_TRIES_PER_EVENT = 12
"""Attempts at one write before it is given up (client-go ``maxTriesPerEvent``)."""

RETRY_SLEEP = 10.0
"""Seconds between two attempts, plus up to a quarter more at random so that replicas do
not retry in step after an API server outage (client-go ``defaultSleepDuration``, jitter
0.25)."""

CACHE_SIZE = 4096
"""Distinct events remembered for series (client-go's event correlator's
``maxLruCacheEntries``): the least recently seen is forgotten first. client-go's
events.k8s.io broadcaster only forgets on its 6-minute sweep; at 20 pods/s that is up to
14,400 remembered ``Scheduled`` events, which never repeat, so the bound costs no series."""


def micro_time(ts: float) -> str:
    """A ``metav1.MicroTime`` in RFC 3339 with microseconds (``ts``: Unix seconds)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Cached:
    """An Event already created, and its series (count observed, count written)."""

    body: dict[str, Any]
    event_time: float
    count: int = 1
    last_observed: float = 0.0
    written_count: int = 1

    def series(self) -> dict[str, Any]:
        """The ``series`` of this event as observed now."""
        return {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}


@dataclass(order=True)
class _Retry:
    """A write that failed on the transport, to try again at ``due`` (monotonic)."""

    due: float
    seq: int
    tries: int = field(compare=False)
    cached: _Cached = field(compare=False)
    series: bool = field(compare=False)


class EventBroadcaster:
    """Writes ``RecordedEvent``s as events.k8s.io/v1 Events, as client-go's events
    broadcaster does.

    Isomorphic events (same regarding object, related object, type, reason, action and
    reporting controller; the note may differ) form a series: the first is created,
    the second updates it with ``series.count: 2``, later ones only count in memory and
    are written every ``refresh`` seconds while the series lasts and once more when it
    finishes (no repeat for ``finish`` seconds). A pod that keeps failing therefore costs
    two writes, then one per refresh. ``eventTime`` and ``series.lastObservedTime`` are
    the wall-clock times the events were recorded.

    Writes happen on one thread from a bounded queue that drops when full. A write that
    fails on the transport (the API server unreachable) is tried again ``retry_sleep``
    seconds later, up to ``MAX_TRIES_PER_EVENT`` times, without holding up the others;
    one the API server refuses is given up at once, as client-go does (a series whose
    event was deleted is created again). Every write is fenced: a replica that lost its
    lease writes no event (``request(..., fenced=True)``).
    """

    def __init__(
        self,
        client: Any,
        *,
        refresh: float = REFRESH_TIME,
        finish: float = FINISH_TIME,
        retry_sleep: float = RETRY_SLEEP,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.client = client
        self.refresh = refresh
        self.finish = finish
        self.retry_sleep = retry_sleep
        self.cache_size = cache_size
        self.instance = _HOST
        """``reportingInstance`` is ``<controller>-<instance>`` (upstream: the hostname;
        ``kubesched run`` uses its leader-election identity, which starts with it)."""
        self.dropped = 0
        self.written = 0
        self.given_up = 0
        self._queue: queue.Queue[tuple[RecordedEvent, float] | None] = queue.Queue(
            MAX_QUEUED_EVENTS
        )
        self._cache: OrderedDict[tuple, _Cached] = OrderedDict()
        self._retries: list[_Retry] = []
        self._seq = itertools.count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()

    @property
    def cached(self) -> int:
        """How many events are remembered for series."""
        return len(self._cache)

    def record(self, event: RecordedEvent, at: float | None = None) -> None:
        """Queue ``event``, stamped with the wall clock ``at`` (default: now; dropped if
        the queue is full)."""
        try:
            self._queue.put_nowait((event, time.time() if at is None else at))
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (up to ``timeout``) and stop; pending retries are dropped."""
        self._stop.set()
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every queued event is handled (tests); retries may remain."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)

    def pending_retries(self) -> int:
        """Writes waiting to be tried again."""
        return len(self._retries)

    # -- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        now = time.monotonic()
        next_refresh, next_sweep = now + self.refresh, now + self.finish
        while True:
            wake = min(next_refresh, next_sweep, self._retries[0].due if self._retries else 1e18)
            try:
                item = self._queue.get(timeout=min(1.0, max(0.0, wake - time.monotonic())))
            except queue.Empty:
                if self._stop.is_set():
                    return
            else:
                try:
                    if item is None:
                        return
                    self._handle(*item)
                finally:
                    self._queue.task_done()
            now = time.monotonic()
            while self._retries and self._retries[0].due <= now and not self._stop.is_set():
                retry = heapq.heappop(self._retries)
                self._attempt(retry.cached, series=retry.series, tries=retry.tries)
            if now >= next_sweep:
                self._finish_series()
                next_sweep = now + self.finish
            if now >= next_refresh:
                self._refresh_series()
                next_refresh = now + self.refresh

    @staticmethod
    def _key(event: RecordedEvent) -> tuple:
        # client-go's getKey: the note (message) is not part of it.
        return (
            event.involved_kind,
            event.involved_namespace,
            event.involved_name,
            event.related,
            event.type,
            event.reason,
            event.action,
            event.reporting_controller,
        )

    def _handle(self, event: RecordedEvent, at: float) -> None:
        key = self._key(event)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            cached.count += 1
            cached.last_observed = at
            if cached.count == 2:
                self._attempt(cached, series=True)
            return  # counted; written back at the next refresh or when the series ends
        cached = _Cached(self._body(event, at, self.instance), at, last_observed=at)
        self._cache[key] = cached
        if len(self._cache) > self.cache_size:
            _, evicted = self._cache.popitem(last=False)
            if evicted.count != evicted.written_count:
                self._attempt(evicted, series=True)
        self._attempt(cached, series=False)

    def _attempt(self, cached: _Cached, *, series: bool, tries: int = 0) -> None:
        """One try at creating the event (``series`` False) or writing its series count
        back; a transport failure schedules the next try."""
        retry = False
        try:
            if series:
                self._write_series(cached)
            else:
                self.client.request("POST", self._collection(cached), body=cached.body, fenced=True)
            self.written += 1
        except NotLeaderError:
            log.debug("event %s not written: not the leader", safe(cached.body["metadata"]["name"]))
        except UnreachableError as err:
            retry = True
            problem = str(err)
        except ConflictError as err:
            # AlreadyExists while re-creating a series' event: another write of the same
            # series got in first; patching it again is safe (client-go retries too).
            retry = series
            problem = str(err)
            if not series:
                log.warning("the API server refused an event: %s", safe(problem))
        except BackendError as err:
            log.warning(
                "the API server refused event %s (%s of %s): %s",
                safe(cached.body["reason"]),
                safe(cached.body["metadata"]["name"]),
                safe(cached.body["regarding"].get("name", "")),
                safe(str(err)),
            )
        if not retry:
            return
        tries += 1
        if tries >= MAX_TRIES_PER_EVENT:
            self.given_up += 1
            log.error(
                "could not write event %s after %d tries: %s",
                safe(cached.body["metadata"]["name"]),
                tries,
                safe(problem),
            )
            return
        if len(self._retries) >= MAX_QUEUED_EVENTS:
            self.dropped += 1
            return
        delay = self.retry_sleep * (1 + 0.25 * random.random())
        log.warning(
            "could not write event %s (try %d of %d, next in %.1fs): %s",
            safe(cached.body["metadata"]["name"]),
            tries,
            MAX_TRIES_PER_EVENT,
            delay,
            safe(problem),
        )
        heapq.heappush(
            self._retries, _Retry(time.monotonic() + delay, next(self._seq), tries, cached, series)
        )

    def _write_series(self, cached: _Cached) -> None:
        """Patch the series' count onto its event, or create it again when it was deleted
        (events expire after the API server's event TTL, an hour by default)."""
        count = cached.count
        metadata = cached.body["metadata"]
        try:
            self.client.request(
                "PATCH",
                f"{self._collection(cached)}/{metadata['name']}",
                body={"series": cached.series()},
                content_type=MERGE_PATCH,
                fenced=True,
            )
        except NotFoundError:
            self.client.request(
                "POST",
                self._collection(cached),
                body={**cached.body, "series": cached.series()},
                fenced=True,
            )
        cached.written_count = count

    @staticmethod
    def _collection(cached: _Cached) -> str:
        return f"/apis/events.k8s.io/v1/namespaces/{cached.body['metadata']['namespace']}/events"

    def _finish_series(self) -> None:
        """client-go's ``finishSeries``: forget events not seen for ``finish`` seconds,
        writing a series' last count first."""
        limit = time.time() - self.finish
        for key in [k for k, c in self._cache.items() if c.last_observed < limit]:
            cached = self._cache.pop(key)
            if cached.count != cached.written_count:
                self._attempt(cached, series=True)

    def _refresh_series(self) -> None:
        """client-go's ``refreshExistingEventSeries``: write running series' counts back."""
        for cached in list(self._cache.values()):
            if cached.count != cached.written_count:
                self._attempt(cached, series=True)

    @staticmethod
    def _body(event: RecordedEvent, at: float, instance: str) -> dict[str, Any]:
        namespace = event.involved_namespace or "default"
        name = f"{event.involved_name}.{uuid.uuid4().hex[:16]}"
        regarding = {
            "kind": event.involved_kind,
            "namespace": event.involved_namespace or None,
            "name": event.involved_name,
            "apiVersion": "v1",
        }
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(at),
            "reportingController": event.reporting_controller,
            "reportingInstance": f"{event.reporting_controller}-{instance}",
            "action": event.action or event.reason,
            "reason": event.reason,
            "note": event.message,
            "type": event.type,
            "regarding": {k: v for k, v in regarding.items() if v is not None},
        }
        if event.related:
            related_ns, _, related_name = event.related.rpartition("/")
            body["related"] = {"kind": "Node" if not related_ns else "Pod", "name": related_name}
            if related_ns:
                body["related"]["namespace"] = related_ns
        return body
