"""examples/load-aware: each Trimaran profile's pod lands where the README says."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from kubesched.api import load_manifests
from kubesched.config import load_config
from kubesched.simulate.driver import simulate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "load-aware"
EXPECTED = {
    "packed": "idle",
    "risk-balanced": "steady",
    "overcommitted": "jumpy",
    "frugal": "steady",
    "reserved-batch": "idle",
}


@pytest.mark.parametrize("config", ["scheduler-config.yaml", "scheduler-config-metrics-file.yaml"])
def test_outcome(config, monkeypatch):
    monkeypatch.chdir(ROOT)  # metricsFile is relative to where kubesched runs
    run = simulate(
        load_manifests([EXAMPLE / "manifests"]), config=load_config(EXAMPLE / config), seed=0
    )
    assert {p.metadata.name: p.spec.node_name for p in run.cluster.pods()} == EXPECTED


def test_outcome_from_a_load_watcher(monkeypatch, tmp_path):
    """The metrics-file profile with its file served by a load watcher (a small HTTP
    server in the test) instead: the simulation asks it once and places as before."""
    body = (EXAMPLE / "node-metrics.json").read_bytes()
    asked: list[str] = []

    class Watcher(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200 if self.path == "/watcher" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Watcher)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        address = f"http://127.0.0.1:{httpd.server_address[1]}"
        config = yaml.safe_load((EXAMPLE / "scheduler-config-metrics-file.yaml").read_text())
        sources = [e["args"] for p in config["profiles"] for e in p["pluginConfig"]]
        for args in sources:
            del args["metricsFile"]
            args["watcherAddress"] = address
        path = tmp_path / "scheduler-config.yaml"
        path.write_text(json.dumps(config))
        run = simulate(load_manifests([EXAMPLE / "manifests"]), config=load_config(path), seed=0)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert {p.metadata.name: p.spec.node_name for p in run.cluster.pods()} == EXPECTED
    # Each plugin asked once, when its profile was built (virtual time: no refresh).
    assert asked == ["/watcher"] * len(sources)
