"""Informers: list, then watch from the list's resourceVersion; relist on 410 or a dropped watch."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from kubesched.api import KubeObject
from kubesched.backend.kube.client import GoneError, KubeClient
from kubesched.backend.protocol import BackendError, EventType, WatchEvent
from kubesched.logsafe import safe

log = logging.getLogger(__name__)

LIST_PAGE_SIZE = 500
"""Objects per page of a consistent list (client-go's pager default)."""

MIN_WATCH_TIMEOUT = 300.0
"""A watch asks the server to end it after 5 to 10 minutes (client-go's reflector)."""

BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
"""Retry delays after a failed list or a dropped watch (client-go: 800 ms up to 30 s)."""


@dataclass(frozen=True)
class Resource:
    """A kind the scheduler watches: its REST collection and its model."""

    kind: str
    path: str
    model: type[KubeObject]
    field_selector: str = ""
    """Only objects matching it; one that stops matching arrives as a deletion."""

    @property
    def namespaced(self) -> bool:
        """Whether its objects live in namespaces (the model says)."""
        return self.model.namespaced

    @property
    def group(self) -> str:
        """The API group ("" for the core group), as RBAC names it."""
        parts = self.path.split("/")
        return "" if parts[1] == "api" else parts[2]

    @property
    def plural(self) -> str:
        """The resource name (``persistentvolumeclaims``), as RBAC names it."""
        return self.path.rsplit("/", 1)[1]

    def object_path(self, namespace: str | None, name: str, subresource: str = "") -> str:
        """The REST path of one object (and of its ``subresource`` if given)."""
        prefix, plural = self.path.rsplit("/", 1)
        scope = f"/namespaces/{namespace or 'default'}" if self.namespaced else ""
        path = f"{prefix}{scope}/{plural}/{name}"
        return f"{path}/{subresource}" if subresource else path


class Informer:
    """One kind's list+watch loop and its store (the objects as last seen, by key).

    Every change reaches ``emit`` exactly once and in order: a watch event whose
    resourceVersion the store already has is dropped, and a relist is turned into the
    differences with the store (added, changed, gone) rather than replayed.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        emit: Callable[[WatchEvent], None],
        *,
        watch_timeout: float = MIN_WATCH_TIMEOUT,
    ) -> None:
        self.client = client
        self.resource = resource
        self.emit = emit
        self.watch_timeout = watch_timeout
        self.store: dict[str, KubeObject] = {}
        self.resource_version = ""
        self.lock = threading.RLock()
        """Held while the store changes and its events are emitted."""
        self.synced = threading.Event()
        self.relists = 0
        self.last_error: BaseException | None = None
        self._stop = threading.Event()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start the list+watch thread."""
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource.kind}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (closes the open watch)."""
        self._stop.set()
        resp = self._response
        if resp is not None:
            try:
                resp.shutdown()
            except Exception:  # closing a broken connection: nothing left to do
                log.debug("closing the %s watch failed", self.resource.kind, exc_info=True)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        delay = BACKOFF_INITIAL
        must_list = True
        while not self._stop.is_set():
            try:
                if must_list:
                    self.relist()
                    must_list = False
                self._watch()
                delay = BACKOFF_INITIAL  # a watch the server ended normally: watch on
            except GoneError:
                log.info("%s watch: resourceVersion too old, relisting", self.resource.kind)
                must_list = True
                delay = BACKOFF_INITIAL
            except (BackendError, urllib3.exceptions.HTTPError, OSError, ValueError) as err:
                if self._stop.is_set():
                    return
                self.last_error = err
                log.warning(
                    "%s list/watch failed, relisting in %.1fs: %s",
                    self.resource.kind,
                    delay,
                    safe(str(err).splitlines()[0] if str(err) else type(err).__name__),
                )
                must_list = True
                self._stop.wait(delay * (1 + random.random() * 0.2))
                delay = min(delay * 2, BACKOFF_MAX)

    # -- list ---------------------------------------------------------------------------
    def relist(self) -> None:
        """List every object and apply the differences with the store as events."""
        items, rv = self._list()
        with self.lock:
            seen = set()
            for obj in items:
                key = obj.key
                seen.add(key)
                old = self.store.get(key)
                if old is None:
                    self.store[key] = obj
                    self.emit(WatchEvent(EventType.ADDED, obj))
                elif old.metadata.resource_version != obj.metadata.resource_version:
                    self.store[key] = obj
                    self.emit(WatchEvent(EventType.MODIFIED, obj, old))
            for key in [k for k in self.store if k not in seen]:
                self.emit(WatchEvent(EventType.DELETED, self.store.pop(key)))
            self.resource_version = rv
            if self.synced.is_set():
                self.relists += 1
            self.synced.set()

    def _list(self) -> tuple[list[KubeObject], str]:
        items: list[KubeObject] = []
        selector = self.resource.field_selector or None
        query: dict[str, Any] = {"limit": LIST_PAGE_SIZE, "fieldSelector": selector}
        rv = ""
        while True:
            page = self.client.request("GET", self.resource.path, query=query, timeout=120.0)
            meta = page.get("metadata") or {}
            rv = rv or meta.get("resourceVersion", "")
            items.extend(self.decode(item) for item in page.get("items") or ())
            token = meta.get("continue")
            if not token:
                return items, rv
            query = {"limit": LIST_PAGE_SIZE, "continue": token, "fieldSelector": selector}

    def decode(self, data: dict[str, Any]) -> KubeObject:
        """An API object (list items lack kind and apiVersion) as kubesched's model."""
        data.setdefault("kind", self.resource.kind)
        return self.resource.model.model_validate(data)

    # -- watch --------------------------------------------------------------------------
    def _watch(self) -> None:
        timeout = self.watch_timeout * (1 + random.random())
        query = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": int(timeout),
            "fieldSelector": self.resource.field_selector or None,
        }
        # The read timeout is past the server's: a silent connection is a dropped watch.
        resp, events = self.client.stream(self.resource.path, query, timeout + 30)
        self._response = resp
        try:
            for raw in events:
                if self._stop.is_set():
                    return
                self._apply(raw)
        finally:
            self._response = None
            resp.release_conn()

    def _apply(self, raw: dict[str, Any]) -> None:
        kind = raw.get("type")
        data = raw.get("object") or {}
        if kind == "ERROR":
            code = data.get("code", 500)
            message = data.get("message", "watch error")
            raise GoneError(message) if code == 410 else BackendError(message, code)
        if kind == "BOOKMARK":
            self.resource_version = (data.get("metadata") or {}).get("resourceVersion", "")
            return
        obj = self.decode(data)
        key, rv = obj.key, obj.metadata.resource_version
        with self.lock:
            old = self.store.get(key)
            if kind == "DELETED":
                if old is not None:
                    del self.store[key]
                    self.emit(WatchEvent(EventType.DELETED, obj))
            elif old is None:
                self.store[key] = obj
                self.emit(WatchEvent(EventType.ADDED, obj))
            elif old.metadata.resource_version != rv:
                self.store[key] = obj
                self.emit(WatchEvent(EventType.MODIFIED, obj, old))
            self.resource_version = rv or self.resource_version
