"""``kubesched compare`` hands the real kube-scheduler no pod before it has seen every node:
the scheduler talks to the API server through a proxy that holds its node watch, as a busy
machine delays it, and compare waits (or says, after ``--timeout``, what it waited for)."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from kubesched.cli.main import main
from kubesched.testing import make_node, make_pod
from kubesched.testing.envtest import ControlPlane, free_port

from .conftest import Api, start_kube_scheduler, wait_for

pytestmark = pytest.mark.envtest

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                         "host", "proxy-connection", "upgrade", "te", "trailer"})  # fmt: skip


@dataclass
class Hold:
    """What the proxy does: holds node watch events while ``open`` is clear, and records
    the pod status writes (the scheduler's answers) it forwards."""

    open: threading.Event = field(default_factory=threading.Event)
    answered: list[str] = field(default_factory=list)


def _handler(control_plane: ControlPlane, hold: Hold) -> type[BaseHTTPRequestHandler]:
    host, port = urlsplit(control_plane.url).hostname, urlsplit(control_plane.url).port
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the API server's self-signed cert on 127.0.0.1

    class Forward(BaseHTTPRequestHandler):
        """Forwards one plain-HTTP request to the API server over HTTPS as the admin."""

        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Authorization"] = f"Bearer {control_plane.token('admin')}"
            upstream = http.client.HTTPSConnection(host, port, context=context, timeout=600)
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            resp = upstream.getresponse()
            url = urlsplit(self.path)
            watch = parse_qs(url.query).get("watch", [""])[0] in ("true", "1")
            if self.command == "PATCH" and url.path.endswith("/status") and "/pods/" in url.path:
                hold.answered.append(url.path)
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in _HOP_BY_HOP:
                    self.send_header(k, v)
            if not watch:
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            try:
                while chunk := resp.read1(65536):
                    if url.path == "/api/v1/nodes":
                        hold.open.wait()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (OSError, http.client.HTTPException):
                # The API server ended the watch (its timeout) or the scheduler went.
                self.close_connection = True
            finally:
                upstream.close()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    return Forward


@pytest.fixture(scope="module")
def held_scheduler(control_plane: ControlPlane, tmp_path_factory) -> Iterator[Hold]:
    """The real kube-scheduler whose node watch events reach it only while the hold is
    open (it starts open)."""
    hold = Hold()
    hold.open.set()
    proxy = ThreadingHTTPServer(("127.0.0.1", free_port()), _handler(control_plane, hold))
    proxy.daemon_threads = True
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    workdir = tmp_path_factory.mktemp("held-scheduler")
    kubeconfig = workdir / "proxy.kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "proxy",
                      "cluster": {"server": f"http://127.0.0.1:{proxy.server_address[1]}"}}],
        "users": [{"name": "proxy", "user": {}}],
        "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}],
        "current-context": "proxy",
    }))  # fmt: skip
    connection = {"clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000}}
    # Ready once its informers synced: their first lists are not held, the later events are.
    proc = start_kube_scheduler(control_plane, workdir, connection)
    yield hold
    hold.open.set()
    proc.terminate()
    proc.wait(30)
    proxy.shutdown()
    proxy.server_close()


def _manifests(tmp_path: Path) -> Path:
    docs = [
        make_node("n1").capacity(cpu="4", memory="16Gi", pods=110).manifest(),
        make_node("n2").capacity(cpu="2", memory="16Gi", pods=110).manifest(),
        make_pod("web").req(cpu="1", memory="1Gi").manifest(),
    ]
    for d in docs:
        d["metadata"].pop("uid", None)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _compared_pods(api: Api) -> list[str]:
    return [p["metadata"]["name"] for p in api.client.request("GET", "/api/v1/pods")["items"]
            if p["metadata"]["namespace"].startswith("compare-")
            and not p["metadata"]["name"].startswith("probe-")]  # fmt: skip


def test_compare_waits_until_the_scheduler_has_every_node(
    held_scheduler: Hold, api: Api, tmp_path: Path, capsys
) -> None:
    held_scheduler.answered.clear()
    held_scheduler.open.clear()
    result: dict[str, Any] = {}
    argv = ["compare", str(_manifests(tmp_path)), "--kubeconfig", str(api.cp.kubeconfig),
            "-o", "json"]  # fmt: skip
    runner = threading.Thread(target=lambda: result.update(code=main(argv)), daemon=True)
    runner.start()
    try:
        # The scheduler answers with the nodes it knows (none): compare must not go on.
        wait_for(lambda: held_scheduler.answered, 30, "the scheduler to answer a probe")
        wait_for(lambda: len(held_scheduler.answered) >= 3, 30, "probes answered again")
        assert not _compared_pods(api)
    finally:
        held_scheduler.open.set()
    runner.join(60)
    assert result.get("code") == 0, capsys.readouterr().err
    (web,) = json.loads(capsys.readouterr().out)["pods"]
    assert (web["verdict"], web["realNode"]) == ("agree", "n1"), web
    assert not web["realMessage"]
    namespaces = api.client.request("GET", "/api/v1/namespaces")["items"]
    assert not [n for n in namespaces if n["metadata"]["name"].startswith("compare-")]


@pytest.mark.parametrize(
    ("scheduler_name", "expected"),
    [
        ("default-scheduler", "did not see the 2 nodes compare created within 2s: its last "
                              "answer to compare's probe pod saw 0 (default-scheduler: '"),
        ("nobody", "no scheduler answered compare's probe pod within 2s: does a kube-scheduler "
                   "serve the API server at https://127.0.0.1:"),
    ],
    ids=["nodes-never-seen", "no-scheduler-serves"],
)  # fmt: skip
def test_compare_gives_up_after_the_timeout(
    held_scheduler: Hold, api: Api, tmp_path: Path, capsys, scheduler_name: str, expected: str
) -> None:
    held_scheduler.open.clear()
    manifests = _manifests(tmp_path)
    docs = list(yaml.safe_load_all(manifests.read_text()))
    docs[-1]["spec"]["schedulerName"] = scheduler_name
    manifests.write_text(yaml.safe_dump_all(docs))
    try:
        code = main(["compare", str(manifests), "--kubeconfig", str(api.cp.kubeconfig),
                     "--timeout", "2"])  # fmt: skip
    finally:
        held_scheduler.open.set()
    err = capsys.readouterr().err
    assert code == 1
    assert expected in " ".join(err.split()), err
    assert not _compared_pods(api)
    namespaces = api.client.request("GET", "/api/v1/namespaces")["items"]
    assert not [n for n in namespaces if n["metadata"]["name"].startswith("compare-")]
