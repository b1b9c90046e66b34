"""The HTTP(S) client of one extender: the v1 protocol's JSON over POST, through urllib3."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError as Urllib3ConnectTimeout,
)
from urllib3.exceptions import (
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)

from kubesched.api import Node, Pod
from kubesched.config.types import Extender as ExtenderConfig
from kubesched.config.types import ExtenderTLSConfig
from kubesched.extenders.types import (
    ExtenderBindingArgs,
    ExtenderError,
    ExtenderFilterResult,
    HostPriority,
    MetaVictims,
    Victims,
    field_of,
)


def ssl_context(enable_https: bool, tls: ExtenderTLSConfig | None) -> ssl.SSLContext | None:
    """The TLS settings client-go would make of ``tlsConfig`` (None: plain HTTP is fine).

    As kube-scheduler: with ``enableHTTPS`` and no CA, the server is not verified.
    """
    tls = tls or ExtenderTLSConfig()
    has_ca = bool(tls.ca_file or tls.ca_data)
    insecure = tls.insecure or (enable_https and not has_ca)
    has_cert = bool(tls.cert_file or tls.cert_data)
    if not (enable_https or has_ca or has_cert or tls.insecure or tls.server_name):
        return None
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif tls.ca_data:
        with _loading("tlsConfig.caData"):
            ctx.load_verify_locations(cadata=tls.ca_data.decode(errors="replace"))
    elif tls.ca_file:
        with _loading(f"tlsConfig.caFile {tls.ca_file}"):
            ctx.load_verify_locations(cafile=tls.ca_file)
    if has_cert:
        what = (
            "tlsConfig.certData/keyData" if tls.cert_data else f"tlsConfig.certFile {tls.cert_file}"
        )
        with _loading(what):
            _load_client_cert(ctx, tls)
    return ctx


@contextlib.contextmanager
def _loading(what: str) -> Iterator[None]:
    """Turn a failure to read TLS material into an ``ExtenderError`` saying which."""
    try:
        yield
    except (OSError, ssl.SSLError, ValueError) as err:
        raise ExtenderError(f"{what}: {getattr(err, 'strerror', None) or err}") from None


def _load_client_cert(ctx: ssl.SSLContext, tls: ExtenderTLSConfig) -> None:
    # The ssl module reads a certificate chain only from files: inline data is written
    # to private temporary files for the load, then removed.
    paths: list[str] = []
    try:
        cert, key = tls.cert_file, tls.key_file or None
        for data, kind in ((tls.cert_data, "cert"), (tls.key_data, "key")):
            if not data:
                continue
            fd, path = tempfile.mkstemp(prefix=f"kubesched-extender-{kind}-")
            paths.append(path)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            if kind == "cert":
                cert = path
            else:
                key = path
        ctx.load_cert_chain(cert, key)
    finally:
        for path in paths:
            os.unlink(path)


class HTTPExtenderClient:
    """Sends the extender's verbs as ``POST urlPrefix/verb`` with JSON bodies shaped as
    upstream's Go structs (field names as Go writes them), and reads the answers as Go
    would (field names matched case-insensitively)."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.config = config
        self.url_prefix = config.url_prefix.rstrip("/")
        context = ssl_context(config.enable_https, config.tls_config)
        pool_kw: dict[str, Any] = {}
        if context is not None:
            pool_kw["ssl_context"] = context
            server_name = config.tls_config.server_name if config.tls_config else ""
            if server_name:
                pool_kw["server_hostname"] = server_name
                pool_kw["assert_hostname"] = server_name
        self.pool = urllib3.PoolManager(
            timeout=urllib3.Timeout(total=config.http_timeout), retries=False, **pool_kw
        )

    # -- the verbs ----------------------------------------------------------------------
    def filter(self, pod: Pod, nodes: Sequence[Node]) -> ExtenderFilterResult:
        """POST ``filterVerb``; the nodes that pass by name."""
        answer = _object(self.send(self.config.filter_verb, self._node_args(pod, nodes)))
        names = field_of(answer, "NodeNames")
        if not (self.config.node_cache_capable and names is not None):
            # As upstream: names count only from an extender that caches nodes; otherwise
            # the Nodes listed pass (none when it lists none).
            listed = field_of(answer, "Nodes")
            names = [
                (item.get("metadata") or {}).get("name", "")
                for item in (field_of(listed, "items") or [] if listed else [])
            ]
        return ExtenderFilterResult(
            node_names=names,
            failed_nodes=dict(field_of(answer, "FailedNodes") or {}),
            failed_and_unresolvable_nodes=dict(
                field_of(answer, "FailedAndUnresolvableNodes") or {}
            ),
            error=field_of(answer, "Error") or "",
        )

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> list[HostPriority]:
        """POST ``prioritizeVerb``; a ``HostPriorityList``."""
        answer = self.send(self.config.prioritize_verb, self._node_args(pod, nodes))
        return [
            HostPriority(field_of(h, "Host") or "", int(field_of(h, "Score") or 0))
            for h in (answer or [])
        ]

    def preempt(self, pod: Pod, node_to_victims: Mapping[str, Victims]) -> dict[str, MetaVictims]:
        """POST ``preemptVerb``: the victims by UID when the extender caches nodes, else
        as pods; the answer always by UID."""
        args: dict[str, Any] = {"Pod": pod.to_dict()}
        if self.config.node_cache_capable:
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = {
                node: {
                    "Pods": [{"UID": p.metadata.uid} for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in node_to_victims.items()
            }
        else:
            args["NodeNameToVictims"] = {
                node: {
                    "Pods": [p.to_dict() for p in v.pods],
                    "NumPDBViolations": v.num_pdb_violations,
                }
                for node, v in node_to_victims.items()
            }
            args["NodeNameToMetaVictims"] = None
        answer = _object(self.send(self.config.preempt_verb, args))
        result: dict[str, MetaVictims] = {}
        for node, meta in (field_of(answer, "NodeNameToMetaVictims") or {}).items():
            meta = meta or {}
            result[node] = MetaVictims(
                [field_of(p, "UID") or "" for p in field_of(meta, "Pods") or []],
                int(field_of(meta, "NumPDBViolations") or 0),
            )
        return result

    def bind(self, args: ExtenderBindingArgs) -> None:
        """POST ``bindVerb``; an ``Error`` in the answer fails the binding."""
        answer = self.send(
            self.config.bind_verb,
            {
                "PodName": args.pod_name,
                "PodNamespace": args.pod_namespace,
                "PodUID": args.pod_uid,
                "Node": args.node,
            },
        )
        error = field_of(answer, "Error") if isinstance(answer, Mapping) else None
        if error:
            raise ExtenderError(error)

    # -- transport ----------------------------------------------------------------------
    def _node_args(self, pod: Pod, nodes: Sequence[Node]) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return {
                "Pod": pod.to_dict(),
                "Nodes": None,
                "NodeNames": [n.metadata.name for n in nodes],
            }
        return {
            "Pod": pod.to_dict(),
            "Nodes": {"metadata": {}, "items": [n.to_dict() for n in nodes]},
            "NodeNames": None,
        }

    def send(self, verb: str, args: Any) -> Any:
        """POST ``args`` to ``urlPrefix/verb`` and decode the JSON answer."""
        url = f"{self.url_prefix}/{verb}"
        try:
            response = self.pool.request(
                "POST",
                url,
                body=json.dumps(args).encode(),
                headers={"Content-Type": "application/json"},
            )
        except HTTPError as err:
            raise ExtenderError(f'Post "{url}": {_go_reason(url, err)}') from None
        if response.status != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {response.status}")
        try:
            answer = json.loads(response.data or b"null")
        except ValueError as err:
            raise ExtenderError(f"decoding the answer of {url}: {err}") from None
        return answer if answer is not None else {}


def _object(answer: Any) -> Mapping[str, Any]:
    if not isinstance(answer, Mapping):
        raise ExtenderError(f"json: cannot unmarshal {type(answer).__name__} into an object")
    return answer


def _go_reason(url: str, err: HTTPError) -> str:
    """Why a request failed, in the words of Go's net/http where the cause is common
    (so that FailedScheduling messages read as kube-scheduler's)."""
    cause = getattr(err, "reason", None) or err
    # urllib3's NewConnectionError is also a ConnectTimeoutError: test it first.
    if isinstance(cause, NewConnectionError):
        original = cause.__context__ or cause
        if isinstance(original, ConnectionRefusedError):
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            return f"dial tcp {parts.hostname}:{port}: connect: connection refused"
        if isinstance(original, socket.gaierror):
            return f"dial tcp: lookup {urlsplit(url).hostname}: no such host"
        return str(original)
    if isinstance(cause, ReadTimeoutError | Urllib3ConnectTimeout):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    if isinstance(cause, SSLError):
        return f"tls: {cause}"
    return str(cause)
