"""events.k8s.io/v1 Events with upstream's broadcaster semantics: series, bounded queue."""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.backend.kube.client import MERGE_PATCH
from kubesched.backend.protocol import BackendError, RecordedEvent

log = logging.getLogger(__name__)

_HOST = socket.gethostname()

MAX_QUEUED_EVENTS = 1000
"""Events waiting to be written; more are dropped (client-go's ``maxQueuedEvents`` with
``DropIfChannelFull``): a scheduler never blocks on its events."""

FINISH_TIME = 6 * 60.0
"""A series whose last occurrence is older than this is finished (client-go ``finishTime``)."""

REFRESH_TIME = 30 * 60.0
"""How often running series are written back with their count (client-go ``refreshTime``)."""


def micro_time(ts: float) -> str:
    """A ``metav1.MicroTime`` in RFC 3339 with microseconds."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Cached:
    """An Event already written, and its series."""

    body: dict[str, Any]
    name: str
    namespace: str
    count: int = 1
    last_observed: float = 0.0
    written_count: int = 1


class EventBroadcaster:
    """Writes ``RecordedEvent``s as events.k8s.io/v1 Events, as client-go's events
    broadcaster does.

    Isomorphic events (same regarding object, related object, reason, action and
    reporting controller; the note may differ) form a series: the first is created,
    the second updates it with ``series.count: 2``, later ones only count in memory and
    are written every ``refresh`` seconds while the series lasts. A pod that keeps
    failing therefore costs two writes, then one per refresh. Writes happen on one
    thread from a bounded queue that drops when full.
    """

    def __init__(
        self, client: Any, *, refresh: float = REFRESH_TIME, finish: float = FINISH_TIME
    ) -> None:
        self.client = client
        self.refresh = refresh
        self.finish = finish
        self.instance = _HOST
        """``reportingInstance`` is ``<controller>-<instance>`` (upstream: the hostname;
        ``kubesched run`` uses its leader-election identity, which starts with it)."""
        self.dropped = 0
        self.written = 0
        self._queue: queue.Queue[RecordedEvent | None] = queue.Queue(MAX_QUEUED_EVENTS)
        self._cache: dict[tuple, _Cached] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()

    def record(self, event: RecordedEvent) -> None:
        """Queue ``event`` (dropped if the queue is full)."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (up to ``timeout``) and stop."""
        self._stop.set()
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until every queued event is written (tests)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)

    def _run(self) -> None:
        next_refresh = time.monotonic() + self.refresh
        while True:
            try:
                event = self._queue.get(timeout=min(self.refresh, 1.0))
            except queue.Empty:
                event = None
                if self._stop.is_set():
                    return
            else:
                try:
                    if event is None:
                        return
                    self._handle(event)
                finally:
                    self._queue.task_done()
            if time.monotonic() >= next_refresh:
                self._refresh_series()
                next_refresh = time.monotonic() + self.refresh

    @staticmethod
    def _key(event: RecordedEvent) -> tuple:
        # client-go's getKey: the note (message) and type are not part of it.
        return (
            event.involved_kind,
            event.involved_namespace,
            event.involved_name,
            event.related,
            event.reason,
            event.action,
            event.reporting_controller,
        )

    def _handle(self, event: RecordedEvent) -> None:
        now = event.timestamp or time.time()
        key = self._key(event)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and now - cached.last_observed <= self.finish:
                cached.count += 1
                cached.last_observed = now
                if cached.count != 2:
                    return  # counted; written back at the next refresh
                write = cached
            else:
                write = None
        if write is not None:
            self._write_series(write)
            return
        body = self._body(event, now, self.instance)
        try:
            self.client.request(
                "POST",
                f"/apis/events.k8s.io/v1/namespaces/{body['metadata']['namespace']}/events",
                body=body,
            )
        except BackendError as err:
            log.warning(
                "could not write event %s for %s: %s", event.reason, event.involved_name, err
            )
            return
        self.written += 1
        with self._lock:
            self._cache[key] = _Cached(
                body, body["metadata"]["name"], body["metadata"]["namespace"], last_observed=now
            )

    def _write_series(self, cached: _Cached) -> None:
        patch = {
            "series": {"count": cached.count, "lastObservedTime": micro_time(cached.last_observed)}
        }
        try:
            self.client.request(
                "PATCH",
                f"/apis/events.k8s.io/v1/namespaces/{cached.namespace}/events/{cached.name}",
                body=patch,
                content_type=MERGE_PATCH,
            )
        except BackendError as err:
            log.warning("could not update event series %s: %s", cached.name, err)
            return
        self.written += 1
        cached.written_count = cached.count

    def _refresh_series(self) -> None:
        now = time.time()
        with self._lock:
            finished = [k for k, c in self._cache.items() if now - c.last_observed > self.finish]
            for k in finished:
                pending = self._cache.pop(k)
                if pending.count != pending.written_count:
                    self._write_series(pending)
            running = [c for c in self._cache.values() if c.count != c.written_count]
        for cached in running:
            self._write_series(cached)

    @staticmethod
    def _body(event: RecordedEvent, now: float, instance: str) -> dict[str, Any]:
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
            "eventTime": micro_time(now),
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
