"""HTTP to the API server: the official client's config and auth, raw JSON, QPS/burst, metrics."""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import orjson
import urllib3
import yaml
from prometheus_client import CollectorRegistry, Counter, Histogram

from kubesched.backend.protocol import BackendError, ConflictError, NotFoundError
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.notices import notice

if TYPE_CHECKING:
    # The official client costs about 0.1 s to import: only commands that talk to a real
    # cluster pay it, at their first load_configuration.
    from kubernetes import client as k8s_client

log = logging.getLogger(__name__)

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"

DEFAULT_TIMEOUT = 30.0
"""Seconds a non-watch request may take (connect and read)."""

CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection to the API server."""

AUTH_REFRESH = 10.0
"""Seconds the request headers' credentials are reused before the official client's
configuration is asked again (its refresh hook re-reads the kubeconfig user's token,
which costs about 70 µs a request: two requests a pod). The client refreshes a token
5 minutes before it expires and re-reads an in-cluster token file every minute, so a
credential never gets stale in between."""


class ForbiddenError(BackendError):
    """The user may not do this (403): missing RBAC permissions."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 403)


class GoneError(BackendError):
    """The resourceVersion asked for is too old (410): relist."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 410)


class UnreachableError(BackendError):
    """The API server did not answer (connection refused, timeout, TLS failure)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 0)


class UnauthorizedError(BackendError):
    """The API server did not accept the credentials (401): wrong, expired or revoked."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 401)


class NotLeaderError(BackendError):
    """A write not sent because this replica no longer holds its lease."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 503)


_ERRORS: dict[int, type[BackendError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
}


class TokenBucket:
    """client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: ``burst`` requests
    at once, then ``qps`` a second; ``take`` blocks until a token is there."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> None:
        """Wait for one token."""
        if self.qps <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            time.sleep(wait)


REQUEST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's buckets of request and rate-limiter latency."""


class ClientMetrics:
    """client-go's REST client metrics (``rest_client_requests_total``, latency)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.latency = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.rate_limiter_latency = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )


IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
"""The service account token file of a pod (what in-cluster configuration reads)."""


def load_configuration(kubeconfig: str | None) -> k8s_client.Configuration:
    """The official client's configuration from ``kubeconfig`` (or ``$KUBECONFIG``/
    ``~/.kube/config``), or in-cluster when there is none and we run in a pod.

    The kubernetes client handles client certificates, bearer tokens, token files and
    exec credential plugins. Raises ``BackendError`` with one line saying what is wrong.
    """
    return load_configuration_and_source(kubeconfig)[0]


def load_configuration_and_source(kubeconfig: str | None) -> tuple[k8s_client.Configuration, str]:
    """``load_configuration`` and where its credentials come from, for log lines: the
    kubeconfig file and its user (token, token file, client certificate or exec plugin),
    or the in-cluster service account's token file."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    configuration = k8s_client.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
            return configuration, _kubeconfig_source(kubeconfig)
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException:
            k8s_config.load_kube_config(client_configuration=configuration)
            default = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            return configuration, _kubeconfig_source(default)
    except (ConfigException, OSError, ValueError, TypeError) as err:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster or default kubeconfig"
        raise BackendError(f"cannot load the {where}: {_one_line(err)}", 0) from err
    return configuration, f"in-cluster service account (token file {IN_CLUSTER_TOKEN})"


def _kubeconfig_source(path: str) -> str:
    """``kubeconfig PATH, user "U" (HOW)``: the current context's user and its kind of
    credentials (never the credentials themselves)."""
    try:
        with open(path.split(os.pathsep)[0], encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
        contexts = {c["name"]: c.get("context") or {} for c in config.get("contexts") or ()}
        user_name = contexts[config["current-context"]]["user"]
        users = {u["name"]: u.get("user") or {} for u in config.get("users") or ()}
        user = users[user_name]
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError):
        return f"kubeconfig {path}"
    if "tokenFile" in user:
        how = f"token file {user['tokenFile']}"
    elif "token" in user:
        how = "bearer token"
    elif "client-certificate" in user or "client-certificate-data" in user:
        how = "client certificate"
    elif "exec" in user:
        how = f"exec plugin {(user['exec'] or {}).get('command', '?')}"
    elif "auth-provider" in user:
        how = f"auth provider {(user['auth-provider'] or {}).get('name', '?')}"
    else:
        how = "no credentials"
    return f'kubeconfig {path}, user "{user_name}" ({how})'


_UNVERIFIED_SERVERS: set[str] = set()
"""The API servers whose missing TLS verification this process has reported."""
_UNVERIFIED_LOCK = threading.Lock()


def _say_tls_unverified(host: str) -> None:
    """Report once per process and server that its certificate is not verified (the
    kubeconfig's ``insecure-skip-tls-verify``), as a notice; and silence urllib3's
    ``InsecureRequestWarning``, which would say it again at every request."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    with _UNVERIFIED_LOCK:
        if host in _UNVERIFIED_SERVERS:
            return
        _UNVERIFIED_SERVERS.add(host)
    notice(
        f"TLS verification is off for the API server {host} (insecure-skip-tls-verify): "
        "its certificate is not checked"
    )


class KubeClient:
    """Requests to one API server with the official client's connection and credentials.

    Bodies are JSON in and out, decoded with orjson (kubesched's pydantic models parse
    them; the typed client's models are much slower, see docs/run.md). ``qps``/``burst``
    throttle every request but watches, as client-go does.
    """

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        connection: ClientConnectionConfiguration | None = None,
        registry: CollectorRegistry | None = None,
        *,
        credentials: str = "",
    ) -> None:
        connection = connection or ClientConnectionConfiguration()
        self.configuration = configuration
        self.credentials = credentials
        """Where the credentials come from, for log lines (``load_configuration_and_source``)."""
        # Binding threads, informers and the event writer share the pool.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
        from kubernetes import client as k8s_client

        self.api_client = k8s_client.ApiClient(configuration)
        self._pool = self.api_client.rest_client.pool_manager
        self.host = configuration.host.rstrip("/")
        self._host_label = urlsplit(self.host).netloc
        if not configuration.verify_ssl and self.host.startswith("https://"):
            _say_tls_unverified(self.host)
        # Requests go straight to the API server's connection pool: the pool manager's
        # URL parsing and pool lookup cost about 40 µs a request. Through a proxy, the
        # manager (a ProxyManager) knows how to reach it.
        self._direct: urllib3.HTTPConnectionPool | None = (
            None
            if isinstance(self._pool, urllib3.ProxyManager)
            else self._pool.connection_from_url(self.host)
        )
        self._prefix = urlsplit(self.host).path
        """The server's path prefix, if any (``https://host/k8s/clusters/c-1``)."""
        self.limiter = TokenBucket(connection.qps, connection.burst)
        self.election_limiter = TokenBucket(connection.qps, connection.burst)
        """The leader election's own bucket (kube-scheduler gives its elector a client of
        its own): renewals never queue behind binds and events, so a busy leader does
        not lose its lease to its own rate limit."""
        # kubesched decodes JSON only: a protobuf content type (upstream's default) is
        # asked for with JSON as the fallback the server then always picks.
        accept = connection.accept_content_types or connection.content_type or JSON
        self.accept = JSON if PROTOBUF in accept and JSON not in accept else accept
        if JSON not in self.accept:
            self.accept = f"{self.accept}, {JSON}"
        self.metrics = ClientMetrics(registry or CollectorRegistry())
        self._auth: dict[str, str] = {}
        self._auth_at = -AUTH_REFRESH
        self._auth_lock = threading.Lock()
        # Each request observes three metrics: their children by verb, made once (each
        # ``labels`` call takes the metric's lock, contended by the binding threads).
        self._observers: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
        self._timeouts: dict[float, urllib3.Timeout] = {}
        self.on_response: Callable[[str, str, float, float | None], None] | None = None
        """When set, told of each request's method, status code (``<error>`` when none
        came), seconds in the rate limiter and seconds on the wire, after its metrics
        are observed (the writer process hands them to the scheduling process's)."""
        self.fence: Callable[[], bool] | None = None
        """When set, a ``fenced`` request is sent only while it returns True, asked after
        the rate limiter's wait, right before the request goes out (a replica that lost
        its lease sends none of the writes it queued while it led)."""

    def close(self) -> None:
        """Close the connection pool."""
        self.api_client.close()

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": self.accept, "User-Agent": "kubesched", **self._credentials()}
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _credentials(self) -> dict[str, str]:
        """The authentication headers, asked of the official client's configuration at
        most every ``AUTH_REFRESH`` seconds (it refreshes expiring tokens itself)."""
        now = time.monotonic()
        if now - self._auth_at >= AUTH_REFRESH:
            with self._auth_lock:
                if now - self._auth_at >= AUTH_REFRESH:
                    self._auth = {
                        auth["key"]: auth["value"]
                        for auth in self.configuration.auth_settings().values()
                        if auth.get("value")
                    }
                    self._auth_at = now
        return self._auth

    def _timeout(self, read: float) -> urllib3.Timeout:
        """The request timeout reading for ``read`` seconds, made once per value."""
        timeout = self._timeouts.get(read)
        if timeout is None:
            timeout = self._timeouts[read] = urllib3.Timeout(connect=CONNECT_TIMEOUT, read=read)
        return timeout

    def _observe(self, method: str) -> tuple[Any, Any, dict[str, Any]]:
        """The rate-limiter and latency histograms of ``method`` and its request
        counters by status code (children of the labelled metrics, made once)."""
        observers = self._observers.get(method)
        if observers is None:
            host, m = self._host_label, self.metrics
            observers = self._observers[method] = (
                m.rate_limiter_latency.labels(method, host),
                m.latency.labels(method, host),
                {},
            )
        return observers

    def observe(self, method: str, code: str, waited: float, latency: float | None) -> None:
        """Count one request in the REST client metrics: its rate limiter wait, its
        latency (None when no answer came) and its status code."""
        limiter_latency, latency_metric, _ = self._observe(method)
        limiter_latency.observe(waited)
        if latency is not None:
            latency_metric.observe(latency)
        self._count(code, method)
        if self.on_response is not None:
            self.on_response(method, code, waited, latency)

    def _count(self, code: str, method: str) -> None:
        counters = self._observe(method)[2]
        counter = counters.get(code)
        if counter is None:
            counter = counters[code] = self.metrics.requests.labels(code, method, self._host_label)
        counter.inc()

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        """The absolute URL of ``path`` with ``query``."""
        return self.host + _with_query(path, query)

    def _send(
        self, method: str, path: str, query: dict[str, Any] | None, **kwargs: Any
    ) -> urllib3.BaseHTTPResponse:
        """One HTTP exchange, without retries or redirects."""
        if self._direct is None:
            return self._pool.request(method, self.url(path, query), retries=False, **kwargs)
        return self._direct.urlopen(
            method,
            self._prefix + _with_query(path, query),
            retries=False,
            redirect=False,
            **kwargs,
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = DEFAULT_TIMEOUT,
        fenced: bool = False,
        election: bool = False,
    ) -> Any:
        """One request; the decoded JSON answer. ``body`` goes out as JSON, or as it is
        when it is bytes already encoded in ``content_type`` (a YAML document, say).
        Raises ``BackendError`` subclasses with the API server's message (404, 409, 403,
        410, ...) or ``UnreachableError``; a
        ``fenced`` one raises ``NotLeaderError``, unsent, when ``fence`` says no; an
        ``election`` one (the Lease) waits in ``election_limiter``."""
        fence = self.fence if fenced else None
        if fence is not None and not fence():
            # Already not leading: no wait in the rate limiter for a write never sent.
            raise NotLeaderError(f"not the leader any more: {method} {path} not sent")
        started = time.monotonic()
        (self.election_limiter if election else self.limiter).take()
        waited = time.monotonic()
        if fence is not None and not fence():
            # Asked again after the wait: the lease may have been lost meanwhile.
            raise NotLeaderError(f"not the leader any more: {method} {path} not sent")
        data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        try:
            resp = self._send(
                method,
                path,
                query,
                body=data,
                headers=self._headers(content_type if data is not None else None),
                timeout=self._timeout(timeout),
            )
        except urllib3.exceptions.HTTPError as err:
            self.observe(method, "<error>", waited - started, None)
            raise UnreachableError(
                f"cannot reach the API server at {self.host}: {_one_line(err)}"
            ) from err
        self.observe(method, str(resp.status), waited - started, time.monotonic() - waited)
        if resp.status >= 400:
            raise status_error(resp.status, resp.data)
        return orjson.loads(resp.data) if resp.data else None

    def stream(
        self, path: str, query: dict[str, Any], timeout: float
    ) -> tuple[urllib3.BaseHTTPResponse, Iterator[dict[str, Any]]]:
        """A watch: the open response (to close it) and the decoded events as they come.
        Not throttled (client-go's watches are not either)."""
        try:
            resp = self._send(
                "GET",
                path,
                query,
                headers=self._headers(None),
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=timeout),
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as err:
            raise UnreachableError(
                f"cannot reach the API server at {self.host}: {_one_line(err)}"
            ) from err
        self._count(str(resp.status), "WATCH")
        if resp.status >= 400:
            data = resp.read()
            resp.release_conn()
            raise status_error(resp.status, data)
        return resp, _lines(resp)


def _with_query(path: str, query: dict[str, Any] | None) -> str:
    """``path`` with the parameters of ``query`` that are set."""
    q = {k: v for k, v in (query or {}).items() if v is not None}
    return path + ("?" + urlencode(q) if q else "")


def _lines(resp: urllib3.BaseHTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON objects of a watch stream, one a line."""
    rest = b""
    for chunk in resp.stream(64 * 1024, decode_content=False):
        # One split a chunk: cutting the lines off the buffer one at a time copied the
        # rest of a 64 KiB chunk per event (a bind's event is about 2.5 KiB).
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
    if rest.strip():
        yield orjson.loads(rest)


def status_error(code: int, data: bytes | None) -> BackendError:
    """The ``BackendError`` of an API ``Status`` answer with HTTP ``code``."""
    message = ""
    if data:
        try:
            message = orjson.loads(data).get("message", "")
        except (orjson.JSONDecodeError, AttributeError):
            message = data[:200].decode("utf-8", "replace")
    message = message or f"HTTP {code}"
    cls = _ERRORS.get(code)
    return cls(message) if cls is not None else BackendError(message, code)


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[-1] if text else type(err).__name__
