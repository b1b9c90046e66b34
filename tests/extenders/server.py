"""A scheduler extender webhook for the tests: ``http.server`` in a thread, serving an
in-process extender object over the v1 protocol's JSON (as a real extender would), with
knobs for failures, delays and TLS."""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kubesched.api import Node, Pod, parse_object
from kubesched.extenders import ExtenderBindingArgs, Victims
from kubesched.extenders.types import field_of
from kubesched.serving.certs import self_signed_pair


@dataclass
class Behaviour:
    """How the server misbehaves: per verb, an HTTP status to answer instead, an
    ``Error`` to put in the answer, or a delay before answering (seconds)."""

    status: dict[str, int] = field(default_factory=dict)
    error: dict[str, str] = field(default_factory=dict)
    delay: dict[str, float] = field(default_factory=dict)


class ExtenderServer:
    """Serves ``logic`` (an ``InProcessExtender``) at ``url``; each verb is the path
    (``/filter``, ``/prioritize``, ``/preempt``, ``/bind``). ``nodes`` is the node cache
    used when the scheduler sends node names only (nodeCacheCapable). ``requests``
    records ``(verb, body)`` of every call."""

    def __init__(
        self, logic: Any, nodes: list[Node] = (), tls: tuple[Path, Path] | None = None
    ) -> None:
        self.logic = logic
        self.nodes = {n.metadata.name: n for n in nodes}
        self.behaviour = Behaviour()
        self.requests: list[tuple[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                verb = self.path.strip("/").rsplit("/", 1)[-1]
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((verb, body))
                time.sleep(server.behaviour.delay.get(verb, 0))
                code = server.behaviour.status.get(verb, 200)
                answer = server.answer(verb, body) if code == 200 else {}
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    @staticmethod
    def node_of(manifest: dict[str, Any]) -> Node:
        """A Node manifest as the server's node cache holds it."""
        return parse_object(manifest)

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def verbs(self) -> list[str]:
        """The verbs called so far, in order."""
        return [verb for verb, _ in self.requests]

    # -- the protocol, server side ------------------------------------------------------
    def _nodes(self, body: dict[str, Any]) -> tuple[list[Node], bool]:
        names = field_of(body, "NodeNames")
        if names is not None:
            return [self.nodes[n] for n in names], True
        items = field_of(body, "Nodes")["items"]
        return [parse_object({"apiVersion": "v1", "kind": "Node", **i}) for i in items], False

    def answer(self, verb: str, body: dict[str, Any]) -> Any:
        """What the extender answers to ``body`` at ``verb``."""
        error = self.behaviour.error.get(verb)
        if error is not None:
            return {"Error": error}
        if verb == "bind":
            args = [body[k] for k in ("PodName", "PodNamespace", "PodUID", "Node")]
            self.logic.bind(ExtenderBindingArgs(*args))
            return {}
        pod = parse_object({"apiVersion": "v1", "kind": "Pod", **body["Pod"]})
        if verb == "filter":
            nodes, by_name = self._nodes(body)
            result = self.logic.filter(pod, nodes)
            passing = result.node_names or []
            return {
                "NodeNames": passing if by_name else None,
                "Nodes": None
                if by_name
                else {
                    "items": [i for i in body["Nodes"]["items"] if i["metadata"]["name"] in passing]
                },
                "FailedNodes": result.failed_nodes,
                "FailedAndUnresolvableNodes": result.failed_and_unresolvable_nodes,
                "Error": result.error,
            }
        if verb == "prioritize":
            nodes, _ = self._nodes(body)
            return [{"Host": h.host, "Score": h.score} for h in self.logic.prioritize(pod, nodes)]
        if verb == "preempt":
            victims = {}
            full = body.get("NodeNameToVictims")
            for node, v in (full or body.get("NodeNameToMetaVictims") or {}).items():
                pods = [
                    parse_object({"apiVersion": "v1", "kind": "Pod", **p})
                    if full
                    # By UID only: the extender would look the pod up in its cache.
                    else Pod.model_validate({"metadata": {"uid": p["UID"]}})
                    for p in v["Pods"]
                ]
                victims[node] = Victims(pods, v["NumPDBViolations"])
            kept = self.logic.preempt(pod, victims)
            return {
                "NodeNameToMetaVictims": {
                    node: {
                        "Pods": [{"UID": uid} for uid in m.pod_uids],
                        "NumPDBViolations": m.num_pdb_violations,
                    }
                    for node, m in kept.items()
                }
            }
        raise AssertionError(f"unknown verb {verb!r}")


@contextlib.contextmanager
def extender_server(logic: Any, nodes: list[Node] = (), **kw: Any) -> Iterator[ExtenderServer]:
    """An ``ExtenderServer`` for the duration of the ``with`` block."""
    server = ExtenderServer(logic, nodes, **kw)
    try:
        yield server
    finally:
        server.close()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate (for ``extender.test``, ``localhost`` and ``127.0.0.1``)
    and its key, as PEM files in ``directory``."""
    cert_pem, key_pem = self_signed_pair("extender.test")
    cert_path, key_path = directory / "extender.crt", directory / "extender.key"
    cert_path.write_bytes(cert_pem)
    key_path.write_bytes(key_pem)
    return cert_path, key_path
