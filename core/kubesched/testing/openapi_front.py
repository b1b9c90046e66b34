"""An HTTPS front for kube-apiserver that serves its OpenAPI v3 documents in OpenAPI's own form.

The kube-apiserver v1.36.2 binaries this project tests with marshal their OpenAPI documents
with the Go structs' embedded fields as keys (``"OperationProps": {...}``,
``"Extensions": {...}``, ``"SchemaProps": {...}``) instead of inlining them, and fail to
build ``/openapi/v2`` at all (503). kubectl reads ``/openapi/v3`` to learn whether the
server validates fields itself (the ``fieldValidation`` parameter of each kind's PATCH);
it finds nothing there, falls back to ``/openapi/v2`` and stops with "failed to download
openapi". The front passes every request through unchanged (watches stream as they come)
and rewrites only the JSON answers under ``/openapi/v3`` into the inlined form, so that
``kubectl apply`` validates on the server (strict field validation) as against any cluster.
"""

from __future__ import annotations

import http.client
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STRUCT_FIELDS = frozenset(
    {
        "SchemaProps",
        "SwaggerSchemaProps",
        "ArbitraryKeys",
        "Extensions",
        "OperationProps",
        "MediaTypeProps",
        "ParameterProps",
        "RequestBodyProps",
    }
)
"""The embedded Go struct fields that appear as keys; their contents belong one level up."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
"""Headers of one connection, not of the request or answer (RFC 9110 §7.6.1), and the
length, which the front sets itself."""

CHUNK = 64 * 1024


def inline_struct_fields(node: Any) -> Any:
    """``node`` (an OpenAPI document or part of one) with every :data:`STRUCT_FIELDS` key
    replaced by the keys it holds."""
    if isinstance(node, list):
        return [inline_struct_fields(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in STRUCT_FIELDS:
            out.update(inline_struct_fields(value) or {})
        else:
            out[key] = inline_struct_fields(value)
    return out


class OpenAPIFront:
    """Listens on ``127.0.0.1:port`` (a free port when 0) with the API server's own serving
    certificate and key, and forwards to the API server on ``upstream_port``."""

    def __init__(self, upstream_port: int, cert: Path, key: Path, port: int = 0) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        handler = type("Handler", (_Handler,), {"upstream_port": upstream_port})
        self._server = _Server(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self._server.server_address[1]

    def start(self) -> OpenAPIFront:
        """Serve on a thread of this process."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self._server.shutdown()
        self._server.server_close()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that goes away (the end of a watch, a failed handshake) is
        ordinary here; anything else is reported as the base class does."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Forwards one client connection's requests over one connection to the API server."""

    protocol_version = "HTTP/1.1"
    upstream_port = 0
    _upstream: http.client.HTTPSConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the API server logs the requests."""

    def finish(self) -> None:
        """Close the connection to the API server with the client's."""
        super().finish()
        if self._upstream is not None:
            self._upstream.close()

    def _connection(self) -> http.client.HTTPSConnection:
        if self._upstream is None:
            # The API server's certificate is the one this front serves: self-signed.
            context = ssl._create_unverified_context()
            self._upstream = http.client.HTTPSConnection(
                "127.0.0.1", self.upstream_port, context=context
            )
        return self._upstream

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        rewrite = self.command == "GET" and self.path.startswith("/openapi/v3")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        if rewrite:
            headers.pop("Accept-Encoding", None)
        answer = None
        # A kept-alive connection the API server closed meanwhile (idle, or restarted)
        # fails before the request is read: once on a new connection, as Go's client does.
        for _ in range(2):
            upstream = self._connection()
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                break
            except (OSError, http.client.HTTPException):
                upstream.close()
                self._upstream = None
        if answer is None:
            self.send_error(502, "the API server is unreachable")
            return
        json_answer = "json" in (answer.getheader("Content-Type") or "")
        if rewrite and answer.status == 200 and json_answer:
            data = json.dumps(inline_struct_fields(json.loads(answer.read()))).encode()
            self._send_head(answer, len(data))
            self.wfile.write(data)
            return
        size = answer.getheader("Content-Length")
        if self.command == "HEAD" or answer.status in (204, 304):
            self._send_head(answer, int(size or 0))
            return
        self._send_head(answer, int(size) if size is not None else None)
        if size is not None:
            while data := answer.read(CHUNK):
                self.wfile.write(data)
            return
        # A watch, or any answer of unknown length: pass each piece on as it comes.
        while data := answer.read1(CHUNK):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _send_head(self, answer: http.client.HTTPResponse, length: int | None) -> None:
        self.send_response_only(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _forward
