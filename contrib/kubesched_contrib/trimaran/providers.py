"""Live node metrics for the Trimaran plugins: a load-watcher service or Prometheus.

scheduler-plugins' Trimaran collector asks a load watcher for every node's metrics when a
plugin is built, then every ``metricsUpdateIntervalSeconds`` (30 s); a failed request
keeps the metrics it had. The load watcher is either a service (``watcherAddress``: its
``GET /watcher`` answers ``WatcherMetrics`` JSON) or a library querying a metrics
provider (``metricProvider``). kubesched implements both clients here:

* :class:`WatcherClient` reads ``<watcherAddress>/watcher`` and parses it as a
  ``metricsFile`` is parsed;
* :class:`PrometheusClient` issues load-watcher's Prometheus queries,
  ``avg_over_time`` and ``stddev_over_time`` of ``instance:node_cpu:ratio`` (CPU) and
  ``instance:node_memory_utilisation:ratio`` (Memory) over its 15-minute window, each
  result's ``instance`` label naming the node and its value times 100 the percentage;
* :class:`SignalFxClient` asks SignalFx for the ``cpu.utilization`` and
  ``memory.utilization`` series of the cluster's hosts over the last 15 minutes at a
  1-minute resolution and averages each host's points (operator ``AVG``);
* :class:`MetricsServerClient` lists ``metrics.k8s.io/v1beta1`` NodeMetrics and the
  Nodes, as load-watcher's Kubernetes provider does: each node's usage in percent of its
  ``status.capacity``, operator ``Latest``.

:class:`LiveMetrics` holds what a client fetched and refreshes it in a background thread.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import urllib3

from kubesched.api import CPU, MEMORY, parse_quantity

from .loadwatcher import (
    AVERAGE,
    CPU_METRIC,
    LATEST,
    MEMORY_METRIC,
    STD,
    Metric,
    parse_watcher_metrics,
)

__all__ = [
    "DEFAULT_PROMETHEUS_ADDRESS",
    "KUBE_CONFIG_ENV",
    "METRICS_UPDATE_INTERVAL_SECONDS",
    "PROMETHEUS_QUERIES",
    "PROMETHEUS_WINDOW",
    "WATCHER_PATH",
    "LiveMetrics",
    "MetricsFetchError",
    "MetricsServerClient",
    "NodeMetricsMap",
    "PrometheusClient",
    "SignalFxClient",
    "WatcherClient",
]

log = logging.getLogger(__name__)

NodeMetricsMap = Mapping[str, tuple[Metric, ...]]
"""Metrics per node name."""

WATCHER_PATH = "/watcher"
"""load-watcher's endpoint answering every node's metrics."""
METRICS_UPDATE_INTERVAL_SECONDS = 30.0
"""How often the metrics are fetched again (upstream ``metricsUpdateIntervalSeconds``)."""
WATCHER_TIMEOUT_SECONDS = 55.0
"""load-watcher's service client gives a request this long."""
PROMETHEUS_TIMEOUT_SECONDS = 10.0
"""load-watcher gives each Prometheus query this long."""
DEFAULT_PROMETHEUS_ADDRESS = "http://prometheus-k8s:9090"
"""load-watcher's Prometheus address when ``metricProvider.address`` is empty."""
PROMETHEUS_WINDOW = "15m"
"""The range of load-watcher's queries (the window its scheduler-side client reads)."""
PROMETHEUS_INSTANCE_LABEL = "instance"
"""The result label naming the node."""

PROMETHEUS_QUERIES: tuple[tuple[str, str, str], ...] = tuple(
    (f"{function}({series}[{PROMETHEUS_WINDOW}])", rtype, operator)
    for function, operator in (("avg_over_time", AVERAGE), ("stddev_over_time", STD))
    for series, rtype in (
        ("instance:node_cpu:ratio", CPU_METRIC),
        ("instance:node_memory_utilisation:ratio", MEMORY_METRIC),
    )
)
"""``(PromQL, metric type, operator)`` of each query. load-watcher also asks for network,
disk and energy series, which no Trimaran plugin reads."""


class MetricsFetchError(Exception):
    """The metrics could not be fetched (the message says from where and why)."""


def _pool(insecure_skip_verify: bool = False) -> urllib3.PoolManager:
    if insecure_skip_verify:
        return urllib3.PoolManager(cert_reqs="CERT_NONE", assert_hostname=False)
    return urllib3.PoolManager()


def _get(
    pool: urllib3.PoolManager,
    url: str,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    fields: Mapping[str, str] | None = None,
) -> urllib3.BaseHTTPResponse:
    try:
        return pool.request(
            "GET", url, fields=fields, headers=headers, timeout=timeout, retries=False
        )
    except urllib3.exceptions.HTTPError as err:
        raise MetricsFetchError(f"GET {url}: {err}") from None


class WatcherClient:
    """load-watcher as a service: ``GET <address>/watcher``."""

    def __init__(self, address: str) -> None:
        self.url = address.rstrip("/") + WATCHER_PATH
        self._pool = _pool()

    def fetch(self) -> NodeMetricsMap:
        """Every node's metrics, as the watcher has them now."""
        resp = _get(
            self._pool,
            self.url,
            timeout=WATCHER_TIMEOUT_SECONDS,
            headers={"Content-Type": "application/json"},
        )
        if resp.status != 200:
            raise MetricsFetchError(f"received status code {resp.status} from watcher {self.url}")
        try:
            raw = json.loads(resp.data)
        except ValueError as err:
            raise MetricsFetchError(f"{self.url}: not JSON: {err}") from None
        try:
            return parse_watcher_metrics(raw, self.url)
        except ValueError as err:
            raise MetricsFetchError(str(err)) from None


class PrometheusClient:
    """load-watcher's Prometheus provider, over Prometheus's HTTP API
    (``GET /api/v1/query``)."""

    def __init__(self, address: str, token: str = "", insecure_skip_verify: bool = False) -> None:
        self.url = (address or DEFAULT_PROMETHEUS_ADDRESS).rstrip("/") + "/api/v1/query"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._pool = _pool(insecure_skip_verify)

    def fetch(self) -> NodeMetricsMap:
        """Every node's metrics from the queries of :data:`PROMETHEUS_QUERIES`; one failed
        query fails the whole fetch (load-watcher then keeps its previous metrics)."""
        per_node: dict[str, list[Metric]] = {}
        for query, rtype, operator in PROMETHEUS_QUERIES:
            for node, value in self._query(query):
                per_node.setdefault(node, []).append(Metric(rtype, operator, value * 100))
        return {node: tuple(metrics) for node, metrics in per_node.items()}

    def _query(self, query: str) -> list[tuple[str, float]]:
        resp = _get(
            self._pool,
            self.url,
            timeout=PROMETHEUS_TIMEOUT_SECONDS,
            headers=self._headers,
            fields={"query": query},
        )
        try:
            body = json.loads(resp.data)
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("status") != "success":
            detail = body.get("error") if isinstance(body, dict) else None
            raise MetricsFetchError(
                f"Prometheus query {query!r} at {self.url}: status code {resp.status}"
                + (f": {detail}" if detail else "")
            )
        data = body.get("data") or {}
        if data.get("resultType") != "vector":
            # load-watcher logs such a result and reads no metrics from it.
            log.error(
                "Prometheus query %r answered a %s, not a vector", query, data.get("resultType")
            )
            return []
        return [r for r in map(_sample, data.get("result") or ()) if r is not None]


def _sample(result: Any) -> tuple[str, float] | None:
    """``(instance, value)`` of one vector sample; None for one without a finite value."""
    try:
        node = str(result["metric"].get(PROMETHEUS_INSTANCE_LABEL, ""))
        value = float(result["value"][1])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    return (node, value) if math.isfinite(value) else None


DEFAULT_SIGNALFX_ADDRESS = "https://api.signalfx.com"
"""load-watcher's SignalFx address when ``metricProvider.address`` is empty."""
SIGNALFX_HOST_NAME_SUFFIX_ENV = "SIGNALFX_HOST_NAME_SUFFIX"
"""load-watcher's variable: a suffix of the SignalFx host names of the nodes."""
SIGNALFX_CLUSTER_NAME_ENV = "SIGNALFX_CLUSTER_NAME"
"""load-watcher's variable: the SignalFx ``cluster`` dimension of the nodes."""
SIGNALFX_WINDOW_SECONDS = 15 * 60
SIGNALFX_METRICS = (
    (CPU_METRIC, 'sf_metric:"cpu.utilization"'),
    (MEMORY_METRIC, 'sf_metric:"memory.utilization"'),
)
"""``(metric type, SignalFx query term)`` of each series load-watcher reads."""


class SignalFxClient:
    """load-watcher's SignalFx provider: ``GET /v1/timeserieswindow`` for the values and
    ``GET /v2/metrictimeseries`` for the host of each series, token in ``X-SF-Token``,
    TLS not verified (as load-watcher)."""

    def __init__(self, address: str, token: str) -> None:
        self.url = (address or DEFAULT_SIGNALFX_ADDRESS).rstrip("/")
        self._headers = {"X-SF-Token": token, "Content-Type": "application/json"}
        self._pool = _pool(insecure_skip_verify=True)
        suffix = os.environ.get(SIGNALFX_HOST_NAME_SUFFIX_ENV, "")
        cluster = os.environ.get(SIGNALFX_CLUSTER_NAME_ENV, "")
        self._filter = f"host:*{suffix} AND cluster:{cluster}"

    def fetch(self) -> NodeMetricsMap:
        """Every host's average CPU and memory utilisation over the last 15 minutes."""
        end_ms = int(time.time()) * 1000
        per_node: dict[str, list[Metric]] = {}
        for rtype, term in SIGNALFX_METRICS:
            query = f"{self._filter} AND {term}"
            data = self._get_json(
                "/v1/timeserieswindow",
                {
                    "query": query,
                    "startMs": str(end_ms - SIGNALFX_WINDOW_SECONDS * 1000),
                    "endMs": str(end_ms),
                    "resolution": "60000",
                },
            )
            metadata = self._get_json("/v2/metrictimeseries", {"query": query, "limit": "10000"})
            for host, value in _signalfx_averages(data, metadata):
                per_node.setdefault(host, []).append(Metric(rtype, AVERAGE, value))
        return {node: tuple(metrics) for node, metrics in per_node.items()}

    def _get_json(self, path: str, fields: Mapping[str, str]) -> Any:
        url = self.url + path
        resp = _get(
            self._pool, url, timeout=WATCHER_TIMEOUT_SECONDS, headers=self._headers, fields=fields
        )
        if resp.status != 200:
            raise MetricsFetchError(f"received status code {resp.status} from {url}")
        try:
            return json.loads(resp.data)
        except ValueError as err:
            raise MetricsFetchError(f"{url}: not JSON: {err}") from None


def _signalfx_averages(data: Any, metadata: Any) -> list[tuple[str, float]]:
    """``(node, mean of the series' values)`` per series of a time-series window, each
    series' host found in the metadata by its id; a host's FQDN is cut at its first dot
    (``alpha.dev.k8s.com``: node ``alpha``), as load-watcher does."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get("results"), list):
        raise MetricsFetchError("SignalFx metadata without results")
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise MetricsFetchError("SignalFx time series without data")
    hosts = {}
    for result in metadata["results"]:
        host = result.get("dimensions", {}).get("host") if isinstance(result, dict) else None
        if isinstance(host, str) and isinstance(result.get("id"), str):
            hosts[result["id"]] = host.split(".", 1)[0]
    out = []
    for key, points in data["data"].items():
        values = (
            [
                p[1]
                for p in points
                if isinstance(p, list) and len(p) >= 2 and isinstance(p[1], (int, float))
            ]
            if isinstance(points, list)
            else []
        )
        if key in hosts and values:
            out.append((hosts[key], sum(values) / len(values)))
    return out


KUBE_CONFIG_ENV = "KUBE_CONFIG"
"""load-watcher's environment variable naming the kubeconfig of its Kubernetes provider."""


class MetricsServerClient:
    """load-watcher's Kubernetes provider: ``metrics.k8s.io/v1beta1`` NodeMetrics over
    the nodes' capacity, through the kubernetes client.

    The cluster is the one of the kubeconfig named by ``$KUBE_CONFIG`` (load-watcher's
    variable), else the pod's service account (in a cluster), else the default
    kubeconfig (``$KUBECONFIG``, ``~/.kube/config``); it is looked up at the first fetch.
    """

    def __init__(self) -> None:
        self._api: Any = None
        self.source = "metrics.k8s.io/v1beta1 nodes"

    def fetch(self) -> NodeMetricsMap:
        """Every node's CPU and memory usage (``Latest``) in percent of its capacity; a
        node without capacity, or missing from the node list, is left out."""
        # Imported here: the kubernetes client takes a noticeable time to import, which
        # only a profile reading the metrics server should pay.
        from kubernetes import client, config

        if self._api is None:
            configuration = client.Configuration()
            path = os.environ.get(KUBE_CONFIG_ENV)
            try:
                if path:
                    config.load_kube_config(config_file=path, client_configuration=configuration)
                else:
                    try:
                        config.load_incluster_config(client_configuration=configuration)
                    except config.ConfigException:
                        config.load_kube_config(client_configuration=configuration)
            except (config.ConfigException, OSError) as err:
                raise MetricsFetchError(f"no cluster to read NodeMetrics from: {err}") from None
            self._api = client.ApiClient(configuration)
        try:
            usage = client.CustomObjectsApi(self._api).list_cluster_custom_object(
                "metrics.k8s.io", "v1beta1", "nodes", _request_timeout=WATCHER_TIMEOUT_SECONDS
            )
            nodes = client.CoreV1Api(self._api).list_node(_request_timeout=WATCHER_TIMEOUT_SECONDS)
        except (client.ApiException, urllib3.exceptions.HTTPError) as err:
            raise MetricsFetchError(f"listing {self.source}: {err}") from None
        capacity = {
            n.metadata.name: (n.status.capacity or {}) if n.status else {} for n in nodes.items
        }
        metrics: dict[str, tuple[Metric, ...]] = {}
        for item in usage.get("items") or ():
            name = (item.get("metadata") or {}).get("name", "")
            if name not in capacity:
                log.error("unable to find host %s in node list caching capacity", name)
                continue
            found = _percentages(item.get("usage") or {}, capacity[name])
            if found:
                metrics[name] = found
        return metrics


def _percentages(usage: Mapping[str, str], capacity: Mapping[str, str]) -> tuple[Metric, ...]:
    """``Latest`` CPU and memory metrics of one node: usage over capacity, in percent."""
    out = []
    for resource, rtype, amount in (
        (CPU, CPU_METRIC, lambda q: q.milli_value()),
        (MEMORY, MEMORY_METRIC, lambda q: q.value()),
    ):
        try:
            used = amount(parse_quantity(usage[resource]))
            total = amount(parse_quantity(capacity[resource]))
        except (KeyError, ValueError):
            continue
        if total > 0:
            out.append(Metric(rtype, LATEST, 100 * used / total))
    return tuple(out)


class LiveMetrics:
    """The metrics a client last fetched (``current``: ``(generation, metrics)``, metrics
    None until a fetch succeeds), refreshed by :meth:`refresh` or a background thread."""

    def __init__(self, fetch: Callable[[], NodeMetricsMap], source: str) -> None:
        self._fetch = fetch
        self.source = source
        self.current: tuple[int, NodeMetricsMap | None] = (0, None)
        self.last_error: str | None = None
        self._stop = threading.Event()

    def refresh(self) -> bool:
        """Fetch again; on failure keep the metrics there were and log why (as upstream's
        collector does). True when the fetch succeeded."""
        try:
            metrics = self._fetch()
        except MetricsFetchError as err:
            self.last_error = str(err)
            log.error("unable to update node metrics from %s: %s", self.source, err)
            return False
        self.last_error = None
        # One tuple assigned at once: a reader never sees a generation with other metrics.
        self.current = (self.current[0] + 1, metrics)
        return True

    def start(self, interval: float | None = None) -> None:
        """Refresh every ``interval`` seconds (default
        :data:`METRICS_UPDATE_INTERVAL_SECONDS`) in a daemon thread until :meth:`stop`, or
        until this object is garbage (the plugin that owned it is gone)."""
        if interval is None:
            interval = METRICS_UPDATE_INTERVAL_SECONDS
        stop = self._stop
        ref = weakref.ref(self)
        # The thread holds only a weak reference, so that it never keeps its owner alive.
        weakref.finalize(self, stop.set)
        threading.Thread(
            target=_refresh_loop, args=(ref, stop, interval), name="trimaran-metrics", daemon=True
        ).start()

    def stop(self) -> None:
        """Stop the background refresh."""
        self._stop.set()


def _refresh_loop(
    ref: weakref.ReferenceType[LiveMetrics], stop: threading.Event, interval: float
) -> None:
    while not stop.wait(interval):
        live = ref()
        if live is None:
            return
        live.refresh()
        del live
