"""The Trimaran live metrics sources: a load-watcher service and Prometheus, each served
by a small HTTP server in the test, their args, refreshes and failures."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from kubesched import FakeClock, NodeInfo, RealClock
from kubesched.testing import make_framework, make_pod, node_batch
from kubesched_contrib.targetloadpacking import TargetLoadPacking
from kubesched_contrib.trimaran import providers
from kubesched_contrib.trimaran.metrics import Metric, MetricsSource, TrimaranArgs
from kubesched_contrib.trimaran.providers import PROMETHEUS_QUERIES, PrometheusClient

from .conftest import node, watcher_metrics

Reply = tuple[int, bytes]


class Server:
    """An HTTP server on a free local port answering GETs with ``respond(path, query,
    headers)``; it records each request's ``(path, query, headers)`` (header names in
    lower case)."""

    def __init__(self, respond: Callable[[str, dict[str, str], dict[str, str]], Reply]) -> None:
        self.respond = respond
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append((url.path, query, headers))
                status, body = server.respond(url.path, query, headers)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    """Start a :class:`Server` (shut down after the test)."""
    started: list[Server] = []

    def start(respond: Callable[[str, dict[str, str], dict[str, str]], Reply]) -> Server:
        started.append(Server(respond))
        return started[-1]

    yield start
    for s in started:
        s.close()


class Watcher:
    """A load watcher whose answer the test changes: metrics per node, or a status."""

    def __init__(self, nodes: dict[str, list[tuple[str, str, float]]] | None = None) -> None:
        self.reply: Reply = (200, json.dumps(watcher_metrics(nodes or {})).encode())

    def set(self, nodes: dict[str, list[tuple[str, str, float]]]) -> None:
        self.reply = (200, json.dumps(watcher_metrics(nodes)).encode())

    def __call__(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
        return self.reply if path == "/watcher" else (404, b"")


def _source(address: str, handle: object = None) -> MetricsSource:
    return MetricsSource(TrimaranArgs.model_validate({"watcherAddress": address}), handle)


# -- args ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "live", "error"),
    [
        ({}, None, None),
        ({"watcherAddress": "http://load-watcher:2020"}, "watcherAddress", None),
        ({"watcherAddress": ""}, None, None),
        ({"metricProvider": {"type": "Prometheus"}}, "metricProvider", None),
        (
            {"metricProvider": {"type": "Prometheus", "address": "https://p:9090", "token": "t"}},
            "metricProvider",
            None,
        ),
        ({"metricProvider": {}}, "metricProvider", None),
        ({"metricProvider": {"type": "SignalFx", "token": "t"}}, "metricProvider", None),
        (
            {"metricProvider": {"type": "SignalFx"}},
            None,
            "metricProvider.token: Required value: SignalFx needs an access token",
        ),
        (
            {"metricProvider": {"type": "Datadog"}},
            None,
            'metricProvider.type: Unsupported value: "Datadog": supported values: '
            '"KubernetesMetricsServer", "Prometheus", "SignalFx"',
        ),
        (
            # A watcher address wins: the provider is not validated (upstream).
            {"watcherAddress": "http://w", "metricProvider": {"type": "Datadog"}},
            "watcherAddress",
            None,
        ),
        (
            {"watcherAddress": "http://w", "metricsFile": "m.json"},
            None,
            'metricsFile: Invalid value: "m.json": may not be set together with watcherAddress',
        ),
        ({"metricProvider": {"kind": "Prometheus"}}, None, "metricProvider.kind"),
    ],
    ids=[
        "annotations",
        "watcher",
        "empty watcher address",
        "prometheus",
        "prometheus with address and token",
        "default type: KubernetesMetricsServer",
        "SignalFx",
        "SignalFx without a token",
        "unknown type",
        "watcher wins over provider",
        "watcher and file",
        "unknown provider key",
    ],
)
def test_args(args, live, error):
    if error is None:
        assert TrimaranArgs.model_validate(args).live_source() == live
        return
    with pytest.raises(ValidationError) as err:
        TrimaranArgs.model_validate(args)
    problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.value.errors()]
    assert any(error in p for p in problems), problems


def test_provider_defaults_are_upstreams():
    spec = TrimaranArgs.model_validate({"metricProvider": {"type": "Prometheus"}}).metric_provider
    assert spec is not None
    assert (spec.address, spec.token, spec.insecure_skip_verify) == ("", "", True)
    assert PrometheusClient("").url == "http://prometheus-k8s:9090/api/v1/query"


# -- load watcher --------------------------------------------------------------------------
def test_watcher_metrics_are_read_when_the_plugin_is_built(serve):
    watcher = Watcher({"node-1": [("CPU", "AVG", 30), ("Memory", "STD", 2)]})
    server = serve(watcher)
    source = _source(server.url)
    assert source.node_metrics(node("node-1")) == (
        Metric("CPU", "AVG", 30),
        Metric("Memory", "STD", 2),
    )
    assert source.node_metrics(node("node-2")) is None
    assert [r[0] for r in server.requests] == ["/watcher"]


# scheduler-plugins pkg/trimaran/collector_test.go: its watcher's answer for node-1.
UPSTREAM_NODE_1 = [
    ("CPU", "AVG", 80),
    ("CPU", "STD", 16),
    ("Memory", "AVG", 25),
    ("Memory", "STD", 6.25),
]


@pytest.mark.parametrize(
    "case",
    ["TestGetAllMetrics", "TestUpdateMetrics", "TestGetNodeMetrics"],
)
def test_upstream_collector_cases(serve, case):
    watcher = Watcher({"node-1": UPSTREAM_NODE_1})
    source = _source(serve(watcher).url)
    assert source.live is not None
    expected = tuple(Metric(*m) for m in UPSTREAM_NODE_1)
    if case == "TestGetAllMetrics":
        assert source.live.current[1] == {"node-1": expected}
    elif case == "TestUpdateMetrics":
        assert source.live.refresh() and source.live.current[0] == 2
    else:
        assert source.node_metrics(node("node-1")) == expected


def test_upstream_new_collector_with_an_unreachable_watcher():
    # TestNewCollector: a watcher nobody answers at still makes a collector (no error).
    source = _source("http://deadbeef.invalid:2020")
    assert source.live is not None and source.live.current == (0, None)


@pytest.mark.parametrize(
    "reply",
    [(500, b""), (404, b""), (200, b"[1"), (200, b'{"data": {"NodeMetricsMap": 3}}')],
    ids=["server error", "not found", "not json", "wrong type"],
)
def test_a_failed_refresh_keeps_the_last_metrics(serve, reply):
    watcher = Watcher({"node-1": [("CPU", "AVG", 30)]})
    source = _source(serve(watcher).url)
    assert source.live is not None
    watcher.reply = reply
    assert not source.live.refresh()
    assert source.live.last_error
    assert source.node_metrics(node("node-1")) == (Metric("CPU", "AVG", 30),)


def test_no_metrics_until_the_watcher_answers(serve):
    watcher = Watcher()
    watcher.reply = (500, b"")
    source = _source(serve(watcher).url)
    assert source.live is not None
    table_nodes = [NodeInfo(node("node-1"))]
    # Upstream: metrics never populated, every node scores the minimum.
    assert source.node_metrics(node("node-1")) is None
    assert not source.columns(node_batch(table_nodes).table).has_metrics.any()
    watcher.set({"node-1": [("CPU", "AVG", 30)]})
    assert source.live.refresh()
    assert source.node_metrics(node("node-1")) == (Metric("CPU", "AVG", 30),)


def test_an_unreachable_watcher_is_no_metrics():
    # A port nothing listens on: connection refused.
    source = _source("http://127.0.0.1:9")
    assert source.live is not None and "GET http://127.0.0.1:9/watcher" in (
        source.live.last_error or ""
    )
    assert source.node_metrics(node("node-1")) is None


def test_scores_follow_each_refresh(serve):
    watcher = Watcher({"node-1": [("CPU", "AVG", 10)]})
    server = serve(watcher)
    fw = make_framework(
        TargetLoadPacking, args={"TargetLoadPacking": {"watcherAddress": server.url}}
    )
    pl = fw.plugin("TargetLoadPacking")
    nodes = node_batch([NodeInfo(node(cpu="4"))])
    pod = make_pod("p").req(cpu="1").obj()
    # U = 10 + 1500m / 4000m = 47.5 % over the 40 % target: round(40 × 52.5 / 60) = 35.
    assert pl.score_nodes(pod, nodes)[0] == 35
    watcher.set({"node-1": [("CPU", "AVG", 0)]})
    pl.source.live.refresh()
    # U = 37.5 % under the target: round(60 × 37.5 / 40 + 40) = 96 (the batch recomputes).
    assert pl.score_nodes(pod, nodes)[0] == 96 == pl.score(pod, nodes.infos[0])


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    ("clock", "refreshes"),
    [(RealClock(), True), (FakeClock(), False), (None, False)],
    ids=["wall clock: background refresh", "virtual time: read once", "no handle: read once"],
)
def test_background_refresh_only_on_the_wall_clock(serve, monkeypatch, clock, refreshes):
    monkeypatch.setattr(providers, "METRICS_UPDATE_INTERVAL_SECONDS", 0.05)
    watcher = Watcher({"node-1": [("CPU", "AVG", 10)]})
    server = serve(watcher)
    handle = None if clock is None else type("Handle", (), {"clock": clock})()
    source = _source(server.url, handle)
    watcher.set({"node-1": [("CPU", "AVG", 20)]})
    changed = _wait_for(
        lambda: source.node_metrics(node("node-1")) == (Metric("CPU", "AVG", 20),),
        seconds=5.0 if refreshes else 0.5,
    )
    assert changed is refreshes
    assert source.live is not None
    source.live.stop()


def test_the_refresh_thread_ends_with_its_plugin(serve, monkeypatch):
    monkeypatch.setattr(providers, "METRICS_UPDATE_INTERVAL_SECONDS", 0.05)
    server = serve(Watcher({"node-1": [("CPU", "AVG", 10)]}))
    before = {t for t in threading.enumerate() if t.name == "trimaran-metrics"}
    source = _source(server.url, type("Handle", (), {"clock": RealClock()})())
    mine = {t for t in threading.enumerate() if t.name == "trimaran-metrics"} - before
    assert len(mine) == 1
    del source
    thread = mine.pop()
    thread.join(5.0)
    assert not thread.is_alive()


# -- Prometheus ----------------------------------------------------------------------------
def _vector(samples: dict[str, float]) -> bytes:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [
                    {"metric": {"instance": n}, "value": [1700000000.0, str(v)]}
                    for n, v in samples.items()
                ],
            },
        }
    ).encode()


PROM_SAMPLES = {
    "avg_over_time(instance:node_cpu:ratio[15m])": {"node-1": 0.25, "node-2": 0.5},
    "avg_over_time(instance:node_memory_utilisation:ratio[15m])": {"node-1": 0.4},
    "stddev_over_time(instance:node_cpu:ratio[15m])": {"node-1": 0.05},
    "stddev_over_time(instance:node_memory_utilisation:ratio[15m])": {"node-1": 0.01},
}


def _prometheus(samples: dict[str, dict[str, float]]):
    def respond(path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
        if path != "/api/v1/query" or query.get("query") not in samples:
            return 400, b'{"status": "error", "errorType": "bad_data", "error": "parse error"}'
        return 200, _vector(samples[query["query"]])

    return respond


def test_prometheus_queries_are_load_watchers():
    assert [q for q, _, _ in PROMETHEUS_QUERIES] == list(PROM_SAMPLES)


def test_prometheus_metrics(serve):
    server = serve(_prometheus(PROM_SAMPLES))
    args = TrimaranArgs.model_validate(
        {"metricProvider": {"type": "Prometheus", "address": server.url, "token": "s3cret"}}
    )
    source = MetricsSource(args)
    got = source.node_metrics(node("node-1"))
    assert got is not None
    assert sorted(got, key=lambda m: (m.operator, m.type)) == pytest.approx(
        [
            Metric("CPU", "AVG", 25.0),
            Metric("Memory", "AVG", 40.0),
            Metric("CPU", "STD", 5.0),
            Metric("Memory", "STD", 1.0),
        ]
    )
    assert source.node_metrics(node("node-2")) == (Metric("CPU", "AVG", 50.0),)
    assert source.node_metrics(node("node-3")) is None
    assert {r[2].get("authorization") for r in server.requests} == {"Bearer s3cret"}


def test_one_failed_prometheus_query_fails_the_refresh(serve):
    samples = dict(PROM_SAMPLES)
    server = serve(_prometheus(samples))
    source = MetricsSource(
        TrimaranArgs.model_validate(
            {"metricProvider": {"type": "Prometheus", "address": server.url}}
        )
    )
    assert source.live is not None
    del samples["stddev_over_time(instance:node_cpu:ratio[15m])"]
    assert not source.live.refresh()
    assert "parse error" in (source.live.last_error or "")
    assert source.node_metrics(node("node-2")) == (Metric("CPU", "AVG", 50.0),)


def test_a_non_vector_prometheus_result_is_no_metrics(serve):
    matrix = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}})

    def respond(path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
        return 200, matrix.encode()

    server = serve(respond)
    client = PrometheusClient(server.url)
    assert client.fetch() == {}


# -- the metrics server (metrics.k8s.io) ---------------------------------------------------
NODE_METRICS = {
    "kind": "NodeMetricsList",
    "apiVersion": "metrics.k8s.io/v1beta1",
    "items": [
        {"metadata": {"name": "node-1"}, "usage": {"cpu": "500m", "memory": "256Mi"}},
        {"metadata": {"name": "node-2"}, "usage": {"cpu": "1500000000n", "memory": "1Gi"}},
        {"metadata": {"name": "gone"}, "usage": {"cpu": "1", "memory": "1Gi"}},
    ],
}
NODES = {
    "kind": "NodeList",
    "apiVersion": "v1",
    "metadata": {},
    "items": [
        {"metadata": {"name": n}, "status": {"capacity": {"cpu": cpu, "memory": "1Gi"}}}
        for n, cpu in (("node-1", "2"), ("node-2", "4"))
    ],
}


def _api_server(path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
    if path == "/apis/metrics.k8s.io/v1beta1/nodes":
        return 200, json.dumps(NODE_METRICS).encode()
    if path == "/api/v1/nodes":
        return 200, json.dumps(NODES).encode()
    return 404, b'{"kind": "Status", "code": 404}'


def _kubeconfig(tmp_path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def test_metrics_server_usage_over_capacity(serve, tmp_path, monkeypatch):
    # An HTTP server answering the two lists as kube-apiserver does (an envtest API server
    # serves no metrics.k8s.io: that needs metrics-server behind the aggregator).
    server = serve(_api_server)
    monkeypatch.setenv("KUBE_CONFIG", _kubeconfig(tmp_path, server.url))
    source = MetricsSource(TrimaranArgs.model_validate({"metricProvider": {}}))
    assert source.node_metrics(node("node-1")) == (
        Metric("CPU", "Latest", 25.0),
        Metric("Memory", "Latest", 25.0),
    )
    assert source.node_metrics(node("node-2")) == (
        Metric("CPU", "Latest", 37.5),
        Metric("Memory", "Latest", 100.0),
    )
    assert source.node_metrics(node("gone")) is None
    assert {r[0] for r in server.requests} == {
        "/apis/metrics.k8s.io/v1beta1/nodes",
        "/api/v1/nodes",
    }
    assert {r[2].get("authorization") for r in server.requests} == {"Bearer t"}


def test_metrics_server_without_a_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBE_CONFIG", str(tmp_path / "missing"))
    source = MetricsSource(TrimaranArgs.model_validate({"metricProvider": {}}))
    assert source.live is not None
    assert "no cluster to read NodeMetrics from" in (source.live.last_error or "")
    assert source.node_metrics(node("node-1")) is None


# -- SignalFx ------------------------------------------------------------------------------
def _signalfx(path: str, query: dict[str, str], headers: dict[str, str]) -> Reply:
    if headers.get("x-sf-token") != "sf-token":
        return 401, b"{}"
    cpu = "cpu.utilization" in query.get("query", "")
    if path == "/v1/timeserieswindow":
        # Two series: ids A (node-1) and B (node-2, by its FQDN), one point each minute.
        points = {"A": [[0, 20.0], [60000, 40.0]], "B": [[0, 10.0]]} if cpu else {"A": [[0, 50]]}
        return 200, json.dumps({"data": points, "errors": []}).encode()
    if path == "/v2/metrictimeseries":
        results = [
            {"id": "A", "dimensions": {"host": "node-1"}},
            {"id": "B", "dimensions": {"host": "node-2.dev.k8s.example.com"}},
        ]
        return 200, json.dumps({"count": 2, "results": results}).encode()
    return 404, b"{}"


def test_signalfx_averages_each_hosts_series(serve, monkeypatch):
    monkeypatch.setenv("SIGNALFX_CLUSTER_NAME", "prod")
    server = serve(_signalfx)
    args = {"metricProvider": {"type": "SignalFx", "address": server.url, "token": "sf-token"}}
    source = MetricsSource(TrimaranArgs.model_validate(args))
    assert source.node_metrics(node("node-1")) == (
        Metric("CPU", "AVG", 30.0),
        Metric("Memory", "AVG", 50.0),
    )
    assert source.node_metrics(node("node-2")) == (Metric("CPU", "AVG", 10.0),)
    window = next(q for p, q, _ in server.requests if p == "/v1/timeserieswindow")
    assert window["query"] == 'host:* AND cluster:prod AND sf_metric:"cpu.utilization"'
    assert int(window["endMs"]) - int(window["startMs"]) == 15 * 60 * 1000
    assert window["resolution"] == "60000"


def test_signalfx_refusing_the_token_is_a_failed_fetch(serve):
    server = serve(_signalfx)
    args = {"metricProvider": {"type": "SignalFx", "address": server.url, "token": "wrong"}}
    source = MetricsSource(TrimaranArgs.model_validate(args))
    assert source.live is not None and "received status code 401" in (source.live.last_error or "")
    assert source.node_metrics(node("node-1")) is None
