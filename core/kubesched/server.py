"""The scheduler's HTTP server: /metrics (Prometheus), /healthz, /livez, /readyz; TLS optional."""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

Check = Callable[[], tuple[bool, str]]
"""A named health check returns (ok, detail)."""


class HealthServer:
    """Serves ``registry`` on ``/metrics`` and the checks on the health endpoints.

    ``/healthz`` and ``/livez`` run ``live_checks``; ``/readyz`` runs those and
    ``ready_checks`` (informers synced, leader election). Each answers ``ok`` (200) or
    the failing checks (500); ``?verbose`` lists every check as ``[+]name ok`` /
    ``[-]name failed: detail``, as the Kubernetes components do.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        address: str = "127.0.0.1",
        port: int = 10259,
        live_checks: dict[str, Check] | None = None,
        ready_checks: dict[str, Check] | None = None,
        tls_cert_file: str | None = None,
        tls_key_file: str | None = None,
    ) -> None:
        self.registry = registry
        self.live_checks = dict(live_checks or {"ping": lambda: (True, "")})
        self.ready_checks = dict(ready_checks or {})
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server._handle(self)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("http: " + format, *args)

        self.httpd = ThreadingHTTPServer((address, port), Handler)
        self.httpd.daemon_threads = True
        if tls_cert_file:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls_cert_file, tls_key_file)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.scheme = "https" if tls_cert_file else "http"
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the real one when asked for port 0)."""
        return self.httpd.server_address[1]

    def start(self) -> None:
        """Serve on a background thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (if started) and close the socket."""
        if self._thread is not None:
            self.httpd.shutdown()
        self.httpd.server_close()

    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        url = urlsplit(req.path)
        path = url.path.rstrip("/") or "/"
        if path == "/metrics":
            self._send(req, 200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
            return
        checks = {
            "/healthz": self.live_checks,
            "/livez": self.live_checks,
            "/readyz": {**self.live_checks, **self.ready_checks},
        }.get(path)
        if checks is None:
            self._send(req, 404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        lines, healthy = [], True
        for name, check in checks.items():
            try:
                ok, detail = check()
            except Exception as err:  # a broken check reports, never kills the server
                ok, detail = False, str(err)
            healthy &= ok
            lines.append(f"[+]{name} ok" if ok else f"[-]{name} failed: {detail}")
        verbose = "verbose" in url.query
        if healthy:
            body = "\n".join([*lines, f"{path[1:]} check passed"]) + "\n" if verbose else "ok"
        else:
            body = "\n".join([*lines, f"{path[1:]} check failed"]) + "\n"
        self._send(req, 200 if healthy else 500, body.encode(), "text/plain; charset=utf-8")

    @staticmethod
    def _send(req: BaseHTTPRequestHandler, code: int, body: bytes, content_type: str) -> None:
        req.send_response(code)
        req.send_header("Content-Type", content_type)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)
