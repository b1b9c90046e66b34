"""The scheduler's HTTPS server: /metrics, /healthz, /livez, /readyz, /configz, /debug/pprof/,
behind delegated authentication and authorization, on a bounded number of threads."""

from __future__ import annotations

import json
import logging
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kubesched.serving.auth import (
    AuthenticationError,
    Authenticator,
    AuthorizationError,
    Authorizer,
    UserInfo,
)
from kubesched.serving.debug import INDEX, cpu_profile, thread_stacks

log = logging.getLogger(__name__)

Check = Callable[[], tuple[bool, str]]
"""A named health check returns (ok, detail)."""

TEXT = "text/plain; charset=utf-8"

MAX_PROFILE_SECONDS = 300
"""The longest CPU profile one request may ask for (it holds a worker thread meanwhile)."""


@dataclass(frozen=True)
class ConnectionLimits:
    """How many threads serve, and how long a connection may take.

    A connection that sent nothing waits on one selector thread, not a worker; a
    worker takes it once bytes arrive, and each connection serves one request.
    ``request_timeout`` bounds the time from accept to a read request head (the TLS
    handshake included), as Go's ``ReadHeaderTimeout`` (32 s in the Kubernetes
    components): idle and slow clients are cut then. ``write_timeout`` bounds each
    write of the answer. Past ``max_connections`` open connections the oldest idle one
    is closed for a new one.
    """

    workers: int = 8
    max_connections: int = 1024
    request_timeout: float = 32.0
    write_timeout: float = 60.0


def _status(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, as the Kubernetes components answer 401/403/500."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if code != 401:
        body["details"] = {}
    body["code"] = code
    return json.dumps(body).encode() + b"\n"


class HealthServer:
    """Serves ``registry`` on ``/metrics`` and the checks on the health endpoints.

    ``/healthz`` and ``/livez`` run ``live_checks``; ``/readyz`` runs those and
    ``ready_checks`` (informers synced, leader election). Each answers ``ok`` (200) or
    the failing checks (500); ``?verbose`` lists every check as ``[+]name ok`` (and its
    detail, if any) / ``[-]name failed: detail``, as the Kubernetes components do.
    ``configz`` gives ``/configz``'s configuration; ``profiling`` serves
    ``/debug/pprof/``. Every request is authenticated by ``authenticator`` and
    authorized by ``authorizer`` (verb ``get``, its path) before anything else.
    ``tls`` serves HTTPS; without it, plain HTTP (tests, or behind a proxy).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        address: str = "127.0.0.1",
        port: int = 10259,
        live_checks: dict[str, Check] | None = None,
        ready_checks: dict[str, Check] | None = None,
        tls: ssl.SSLContext | None = None,
        authenticator: Authenticator | None = None,
        authorizer: Authorizer | None = None,
        configz: Callable[[], dict[str, Any]] | None = None,
        profiling: bool = False,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.registry = registry
        self.live_checks = dict(live_checks or {"ping": lambda: (True, "")})
        self.ready_checks = dict(ready_checks or {})
        self.tls = tls
        self.authenticator = authenticator or Authenticator(None)
        self.authorizer = authorizer or Authorizer(None)
        self.configz = configz
        self.profiling = profiling
        self.limits = limits or ConnectionLimits()
        self.scheme = "https" if tls is not None else "http"
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._listener = socket.create_server(
            (address, port),
            family=family,
            backlog=128,
            dualstack_ipv6=family == socket.AF_INET6 and socket.has_dualstack_ipv6(),
        )
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="http")
        self._lock = threading.Lock()
        self._busy = 0
        # Connections whose request head a worker is reading: fd → deadline.
        self._reading: dict[int, float] = {}
        self._profiling_lock = threading.Lock()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """The address it listens on."""
        return self._listener.getsockname()[0]

    @property
    def port(self) -> int:
        """The port it listens on (the real one when asked for port 0)."""
        return self._listener.getsockname()[1]

    def start(self) -> None:
        """Serve on a background thread."""
        self._thread = threading.Thread(target=self._serve, name="http-accept", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (if started) and close the socket; requests in flight are not
        waited for. Stopping twice does nothing more."""
        if self._closing.is_set():
            return
        self._closing.set()
        self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._selector.close()
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- connections ----------------------------------------------------------------------
    def _serve(self) -> None:
        sel = self._selector
        sel.register(self._listener, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        # Connections that sent nothing yet → their deadline; oldest first.
        waiting: dict[socket.socket, float] = {}
        while not self._closing.is_set():
            for key, _ in sel.select(timeout=0.5):
                sock = key.fileobj
                if sock is self._listener:
                    self._accept(waiting)
                elif sock is self._wake_r:
                    self._wake_r.recv(64)
                else:
                    assert isinstance(sock, socket.socket)
                    sel.unregister(sock)
                    deadline = waiting.pop(sock)
                    with self._lock:
                        self._busy += 1
                    self._pool.submit(self._connection, sock, deadline)
            now = time.monotonic()
            for sock, deadline in list(waiting.items()):
                if deadline > now:
                    break
                self._drop(sock, waiting)
            self._cut_slow_heads(now)
        for sock in list(waiting):
            self._drop(sock, waiting)

    def _accept(self, waiting: dict[socket.socket, float]) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # out of file descriptors: the others go on
                log.warning("http: accept: %s", err)
                return
            with self._lock:
                busy = self._busy
            if len(waiting) + busy >= self.limits.max_connections:
                if not waiting:
                    sock.close()
                    continue
                self._drop(next(iter(waiting)), waiting)
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ)
            waiting[sock] = time.monotonic() + self.limits.request_timeout

    def _drop(self, sock: socket.socket, waiting: dict[socket.socket, float]) -> None:
        self._selector.unregister(sock)
        del waiting[sock]
        sock.close()

    def _cut_slow_heads(self, now: float) -> None:
        """Shut down the connections whose request head is still not read at their
        deadline (a client sending a byte now and then): the worker's read fails."""
        with self._lock:
            for fd, deadline in list(self._reading.items()):
                if deadline <= now:
                    del self._reading[fd]
                    cut = socket.socket(fileno=fd)
                    try:
                        cut.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    finally:
                        cut.detach()

    def _connection(self, sock: socket.socket, deadline: float) -> None:
        """One connection on a worker: the TLS handshake, one request, close."""
        fd = sock.fileno()
        try:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            sock.settimeout(remaining)  # blocking reads, each bounded by the deadline
            with self._lock:
                self._reading[fd] = deadline
            conn = sock
            if self.tls is not None:
                conn = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            try:
                if isinstance(conn, ssl.SSLSocket):
                    conn.do_handshake()
                _Handler(conn, conn.getpeername(), self, lambda: self._head_read(fd, conn))
            finally:
                # Forgotten before the descriptor closes: the number may be reused.
                with self._lock:
                    self._reading.pop(fd, None)
                conn.close()
        except (OSError, ValueError) as err:  # handshake refused, timed out, cut, reset
            log.debug("http: connection: %s", err)
        finally:
            with self._lock:
                self._reading.pop(fd, None)
                self._busy -= 1
            sock.close()

    def _head_read(self, fd: int, conn: socket.socket) -> None:
        with self._lock:
            self._reading.pop(fd, None)
        conn.settimeout(self.limits.write_timeout)

    # -- requests -------------------------------------------------------------------------
    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        url = urlsplit(req.path)
        conn = req.connection
        peer = conn.getpeercert() if isinstance(conn, ssl.SSLSocket) else None
        try:
            user = self.authenticator.authenticate(req.headers.get("Authorization"), peer)
        except AuthenticationError as err:
            log.debug("http: %s %s: unauthorized: %s", req.command, url.path, err)
            self._send(req, 401, _status(401, "Unauthorized", "Unauthorized"), "application/json")
            return
        verb = req.command.lower()
        try:
            allowed, reason = self.authorizer.authorize(user, verb, url.path)
        except AuthorizationError as err:
            message = f'Internal Server Error: "{url.path}": {err}'
            self._send(req, 500, _status(500, "InternalError", message), "application/json")
            return
        if not allowed:
            self._forbidden(req, user, verb, url.path, reason)
            return
        self._route(req, url.path, parse_qs(url.query, keep_blank_values=True))

    def _forbidden(
        self, req: BaseHTTPRequestHandler, user: UserInfo, verb: str, path: str, reason: str
    ) -> None:
        message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
        if reason:
            message += f": {reason}"
        self._send(req, 403, _status(403, "Forbidden", message), "application/json")

    def _route(self, req: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]]) -> None:
        if path == "/metrics":
            self._send(req, 200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
            return
        checks = {
            "/healthz": self.live_checks,
            "/livez": self.live_checks,
            "/readyz": {**self.live_checks, **self.ready_checks},
        }.get(path)
        if checks is not None:
            self._checks(req, path, checks, "verbose" in query)
        elif path == "/configz" and self.configz is not None:
            body = json.dumps({"componentconfig": self.configz()}).encode()
            self._send(req, 200, body, "application/json")
        elif path.startswith("/debug/pprof") and self.profiling:
            self._pprof(req, path.removeprefix("/debug/pprof").strip("/"), query)
        else:
            self._send(req, 404, b"404 page not found\n", TEXT)

    def _checks(
        self, req: BaseHTTPRequestHandler, path: str, checks: dict[str, Check], verbose: bool
    ) -> None:
        lines, healthy = [], True
        for name, check in checks.items():
            try:
                ok, detail = check()
            except Exception as err:  # a broken check reports, never kills the server
                ok, detail = False, str(err)
            healthy &= ok
            if ok:
                lines.append(f"[+]{name} ok {detail}" if detail else f"[+]{name} ok")
            else:
                lines.append(f"[-]{name} failed: {detail}")
        if healthy:
            body = "\n".join([*lines, f"{path[1:]} check passed"]) + "\n" if verbose else "ok"
        else:
            body = "\n".join([*lines, f"{path[1:]} check failed"]) + "\n"
        self._send(req, 200 if healthy else 500, body.encode(), TEXT)

    def _pprof(self, req: BaseHTTPRequestHandler, name: str, query: dict[str, list[str]]) -> None:
        if name == "":
            self._send(req, 200, INDEX.encode(), TEXT)
        elif name == "goroutine":
            self._send(req, 200, thread_stacks().encode(), TEXT)
        elif name == "profile":
            text = (query.get("seconds") or ["30"])[0]
            try:
                seconds = int(text)
            except ValueError:
                seconds = 0
            if not 0 < seconds <= MAX_PROFILE_SECONDS:
                message = f"seconds={text}: must be an integer in [1, {MAX_PROFILE_SECONDS}]\n"
                self._send(req, 400, message.encode(), TEXT)
                return
            if not self._profiling_lock.acquire(blocking=False):
                message = b"Could not enable CPU profiling: cpu profiling already in use\n"
                self._send(req, 500, message, TEXT)
                return
            try:
                profile = cpu_profile(seconds)
            finally:
                self._profiling_lock.release()
            self._send(
                req,
                200,
                json.dumps(profile).encode(),
                "application/json",
                {"Content-Disposition": 'attachment; filename="profile.speedscope.json"'},
            )
        else:
            self._send(req, 404, f"Unknown profile: {name}\n".encode(), TEXT)

    @staticmethod
    def _send(
        req: BaseHTTPRequestHandler,
        code: int,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        req.send_response(code)
        for name, value in (headers or {}).items():
            req.send_header(name, value)
        req.send_header("Content-Type", content_type)
        req.send_header("Content-Length", str(len(body)))
        req.send_header("X-Content-Type-Options", "nosniff")
        req.end_headers()
        req.wfile.write(body)


class _Handler(BaseHTTPRequestHandler):
    """One connection's request, handed to the ``HealthServer``."""

    def __init__(
        self,
        conn: socket.socket,
        address: Any,
        server: HealthServer,
        on_head: Callable[[], None],
    ) -> None:
        self.health = server
        self.on_head = on_head
        super().__init__(conn, address, server)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        self.on_head()
        self.health._handle(self)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("http: " + format, *args)
