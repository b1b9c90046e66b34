"""The writer process of ``kubesched run``: bindings, pod status patches and Events sent
from a process of its own, so that their HTTP and TLS work runs beside the scheduling loop
rather than under its interpreter lock."""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from kubesched.backend.kube.client import (
    JSON,
    ForbiddenError,
    GoneError,
    KubeClient,
    NotLeaderError,
    UnauthorizedError,
    UnreachableError,
    load_configuration,
)
from kubesched.backend.kube.events import EventBroadcaster
from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError, RecordedEvent
from kubesched.config.types import ClientConnectionConfiguration

log = logging.getLogger(__name__)

SENDERS = 16
"""Requests the writer process has in flight at once (the scheduler's binding threads
wait for theirs; Events go out on the broadcaster's own thread)."""

START_TIMEOUT = 120.0
"""Seconds the writer process may take to start (a fresh interpreter importing the
Kubernetes client on a loaded machine) before ``kubesched run`` gives up."""

_ERRORS: dict[str, Callable[[str, int], BackendError]] = {
    cls.__name__: (lambda message, code, cls=cls: cls(message))
    for cls in (
        ConflictError,
        NotFoundError,
        NotLeaderError,
        UnreachableError,
        ForbiddenError,
        GoneError,
        UnauthorizedError,
    )
}
"""How an error the writer process met is raised again in the scheduling process, by the
name of its class (their constructors take the message alone)."""


def _error(name: str, message: str, code: int) -> BackendError:
    make = _ERRORS.get(name)
    return make(message, code) if make is not None else BackendError(message, code)


class WriterProcess:
    """The scheduling process's end of the writer process.

    ``request`` sends one fenced write and waits for its answer (raising the same
    ``BackendError`` the in-process client would); ``record`` hands an Event to the
    writer process's ``EventBroadcaster`` (series, retries and drops happen there). What
    crosses the pipe is small: the method, path, body and content type of a write and
    its status; an Event's fields and time; each request's status code and durations,
    for the REST client metrics of the scheduling process.

    Fencing: the writer process sends a write only while the monotonic clock (one clock
    for every process of the machine) is before ``fence_until``, which the leader
    elector moves at each renewal (``renewed + renewDeadline``) and sets to minus
    infinity when leadership is lost or released, so it stops at the same moment as the
    elector's ``is_leader``. Without leader election it is plus infinity.

    If the writer process exits while the scheduler runs, every write waiting for it
    fails with ``UnreachableError`` (the binding rolls back) and ``on_exit`` is called:
    ``kubesched run`` then stops with a non-zero status rather than hang.
    """

    def __init__(
        self,
        kubeconfig: str | None,
        connection: ClientConnectionConfiguration,
        *,
        on_exit: Callable[[str], None] | None = None,
        observe: Callable[[str, str, float, float | None], None] | None = None,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.connection = connection
        self.on_exit = on_exit
        self.observe = observe
        """Told of each request the writer process made (``KubeClient.observe`` of the
        scheduling process's client: its REST client metrics count them)."""
        self._fence = multiprocessing.RawValue("d", math.inf)
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._ids = itertools.count()
        self._closing = False
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        """The writer process's id once started."""
        return self._process.pid if self._process is not None else None

    def fence_until(self, until: float | None) -> None:
        """Writes are sent until ``until`` (``time.monotonic()``), none with None."""
        self._fence.value = -math.inf if until is None else until

    def start(self, identity: str) -> None:
        """Start the writer process (its Events' ``reportingInstance`` from ``identity``)
        and wait until it is ready; ``BackendError`` if it cannot start.

        Forked while this process has one thread (``kubesched run`` starts it before any
        other): the child has every module already, where a spawned one would import
        them again (tens of seconds on a loaded machine, during which ``/readyz`` would
        wait). With other threads running, whose locks a forked child could inherit
        held, it is spawned."""
        ctx = multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")
        ours, theirs = ctx.Pipe()
        self._process = ctx.Process(
            target=serve,
            args=(theirs, ours, self.kubeconfig, self.connection, identity, self._fence),
            name="kubesched-writer",
            daemon=True,
        )
        self._process.start()
        theirs.close()
        self._conn = ours
        if not ours.poll(START_TIMEOUT):
            self._process.kill()
            raise BackendError(f"the writer process did not start in {START_TIMEOUT:.0f}s", 0)
        try:
            ready = ours.recv()
        except (EOFError, OSError):
            ready = ("exited",)
        if ready[0] != "ready":
            self._process.join(5)
            why = ready[1] if len(ready) > 1 else f"exit code {self._process.exitcode}"
            raise BackendError(f"the writer process could not start: {why}", 0)
        self._reader = threading.Thread(target=self._read, name="writer-replies", daemon=True)
        self._reader.start()
        log.info("writer process started (pid %d, %s)", self._process.pid, ctx.get_start_method())

    def request(self, method: str, path: str, body: Any, content_type: str = JSON) -> Any:
        """One fenced write through the writer process; its decoded answer."""
        future: Future[Any] = Future()
        key = next(self._ids)
        self._pending[key] = future
        try:
            self._send(("request", key, method, path, body, content_type))
        except (OSError, ValueError) as err:
            self._pending.pop(key, None)
            raise UnreachableError(f"the writer process is gone: {err}") from err
        return future.result()

    def record(self, event: RecordedEvent) -> None:
        """Hand ``event`` to the writer process's broadcaster, stamped with the time now."""
        try:
            self._send(("event", event, time.time()))
        except (OSError, ValueError):
            log.debug("event %s not handed over: the writer process is gone", event.reason)

    def close(self, timeout: float = 10.0) -> None:
        """Let the writer process finish its writes and queued Events, then stop it."""
        self._closing = True
        if self._process is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._send(("close",))
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        if self._reader is not None:
            self._reader.join(5)
        if self._conn is not None:
            self._conn.close()

    def _send(self, message: tuple[Any, ...]) -> None:
        assert self._conn is not None, "the writer process is not started"
        with self._send_lock:
            self._conn.send(message)

    def _read(self) -> None:
        """Hand each answer to the write waiting for it and each request's figures to
        ``observe``, until the writer process exits."""
        assert self._conn is not None and self._process is not None
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            if message[0] == "observed":
                if self.observe is not None:
                    self.observe(*message[1:])
                continue
            _, key, ok, payload = message
            future = self._pending.pop(key, None)
            if future is None:
                continue
            if ok:
                future.set_result(payload)
            else:
                future.set_exception(_error(*payload))
        self._process.join(5)
        why = f"the writer process exited (exit code {self._process.exitcode})"
        for key in list(self._pending):
            future = self._pending.pop(key, None)
            if future is not None:
                future.set_exception(UnreachableError(why))
        if not self._closing:
            log.error("%s", why)
            if self.on_exit is not None:
                self.on_exit(why)


def serve(
    conn: Connection,
    parents: Connection,
    kubeconfig: str | None,
    connection: ClientConnectionConfiguration,
    identity: str,
    fence: Any,
) -> None:
    """The writer process: send the writes and Events that arrive on ``conn`` until it
    says ``close`` or the scheduling process goes away (``parents`` is the scheduling
    process's end of the pipe: closed here, so that its exit ends the pipe)."""
    parents.close()
    # Signals are for the scheduling process, which stops this one in order (a Ctrl-C
    # reaches the whole process group: this process would otherwise die first).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        client = KubeClient(load_configuration(kubeconfig), connection)
    except BackendError as err:
        conn.send(("failed", str(err)))
        return
    client.fence = lambda: time.monotonic() < fence.value
    events = EventBroadcaster(client)
    events.instance = identity
    send_lock = threading.Lock()

    def tell(message: tuple[Any, ...]) -> None:
        # The scheduling process may be gone: the receive loop then ends this process.
        with send_lock, contextlib.suppress(OSError, ValueError):
            conn.send(message)

    def reply(key: int, ok: bool, payload: Any) -> None:
        tell(("reply", key, ok, payload))

    client.on_response = lambda *observed: tell(("observed", *observed))

    def write(key: int, method: str, path: str, body: Any, content_type: str) -> None:
        try:
            answer = client.request(method, path, body=body, content_type=content_type, fenced=True)
        except BackendError as err:
            reply(key, False, (type(err).__name__, str(err), err.code))
        except Exception as err:  # a bug here must fail the write, not hang its binding
            reply(key, False, ("BackendError", f"{type(err).__name__}: {err}", 500))
        else:
            # The scheduler reads nothing of a write's answer: no need to send it back.
            reply(key, True, None if answer is None else True)

    conn.send(("ready",))
    with ThreadPoolExecutor(SENDERS, thread_name_prefix="write") as senders:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break  # the scheduling process is gone
            if message[0] == "request":
                senders.submit(write, *message[1:])
            elif message[0] == "event":
                events.record(message[1], at=message[2])
            elif message[0] == "close":
                break
    events.close()
    client.close()
