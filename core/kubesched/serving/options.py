"""``kubesched run``'s serving flags (kube-scheduler's names, defaults) and the server they make."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from prometheus_client import CollectorRegistry

from kubesched.backend.kube.client import KubeClient, load_configuration
from kubesched.config.duration import parse_duration
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.errors import UserInputError
from kubesched.server import Check, HealthServer
from kubesched.serving.auth import Authenticator, Authorizer, lookup_client_ca
from kubesched.serving.certs import serving_context

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")

REVIEW_CONNECTION = ClientConnectionConfiguration(qps=200, burst=400)
"""The rate of the clients of ``--authentication-kubeconfig``/``--authorization-kubeconfig``
(upstream's delegated clients: 200 QPS, burst 400)."""


@dataclass
class ServingOptions:
    """The secure server's settings: where it listens, its certificate, who may ask."""

    bind_address: str = "0.0.0.0"
    secure_port: int = 10259
    cert_dir: str | None = None
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    authentication_kubeconfig: str | None = None
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = True
    authentication_token_webhook_cache_ttl: float = 10.0
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0


def _duration(flag: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = parse_duration(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: {err}") from err
        if value < 0:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: must not be negative")
        return value

    return parse


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    for path in paths:
        if not path.startswith("/"):
            raise argparse.ArgumentTypeError(f"{path!r}: a path starts with /")
        if "*" in path[:-1]:
            raise argparse.ArgumentTypeError(f"{path!r}: '*' may only end a path")
    return paths


def _bool(text: str) -> bool:
    value = text.lower()
    if value in ("true", "1", "t", "yes"):
        return True
    if value in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r}: not true or false")


def _add_bool(group: Any, flag: str, default: bool, help: str) -> None:
    """A Go-style boolean flag: ``--flag``, ``--flag=true`` or ``--flag=false``."""
    group.add_argument(
        flag, nargs="?", const=True, default=default, type=_bool, metavar="BOOL", help=help
    )


def _add_duration(group: Any, flag: str, default: float, help: str) -> None:
    """A Go duration flag (``10s``, ``1m30s``), in seconds."""
    group.add_argument(flag, type=_duration(flag), default=default, metavar="DURATION", help=help)


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """Add kube-scheduler's secure serving, authentication and authorization flags."""
    d = ServingOptions()
    group = parser.add_argument_group("secure serving")
    group.add_argument(
        "--bind-address",
        default=d.bind_address,
        metavar="IP",
        help="address of the HTTPS server; 0.0.0.0 or :: for every interface "
        f"(default: {d.bind_address})",
    )
    group.add_argument(
        "--secure-port",
        type=int,
        default=d.secure_port,
        metavar="N",
        help="port of the HTTPS server with authentication and authorization; 0: serve no "
        f"HTTP(S) at all (default: {d.secure_port})",
    )
    group.add_argument(
        "--cert-dir",
        metavar="DIR",
        help="where the self-signed certificate is kept (kubesched.crt, kubesched.key) "
        "when no --tls-cert-file is given (default: made for this run only)",
    )
    group.add_argument("--tls-cert-file", metavar="FILE", help="the HTTPS certificate (chain)")
    group.add_argument("--tls-private-key-file", metavar="FILE", help="its private key")
    group = parser.add_argument_group("authentication")
    group.add_argument(
        "--authentication-kubeconfig",
        metavar="FILE",
        help="kubeconfig allowed to create tokenreviews (default: the scheduler's own)",
    )
    _add_bool(
        group,
        "--authentication-skip-lookup",
        d.authentication_skip_lookup,
        "do not read the client CA from kube-system/extension-apiserver-authentication",
    )
    _add_bool(
        group,
        "--authentication-tolerate-lookup-failure",
        d.authentication_tolerate_lookup_failure,
        "go on without client certificates when that lookup fails (default: true)",
    )
    _add_duration(
        group,
        "--authentication-token-webhook-cache-ttl",
        d.authentication_token_webhook_cache_ttl,
        "how long TokenReview answers are kept (default: 10s)",
    )
    group.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="client certificates signed by these CAs authenticate as their CommonName "
        "(Organizations: groups)",
    )
    group = parser.add_argument_group("authorization")
    group.add_argument(
        "--authorization-kubeconfig",
        metavar="FILE",
        help="kubeconfig allowed to create subjectaccessreviews (default: the scheduler's own)",
    )
    group.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=d.authorization_always_allow_paths,
        metavar="PATHS",
        help="comma-separated paths served without authorization; a trailing * matches a "
        f"prefix (default: {','.join(d.authorization_always_allow_paths)})",
    )
    _add_duration(
        group,
        "--authorization-webhook-cache-authorized-ttl",
        d.authorization_webhook_cache_authorized_ttl,
        "how long allowed SubjectAccessReview answers are kept (default: 10s)",
    )
    _add_duration(
        group,
        "--authorization-webhook-cache-unauthorized-ttl",
        d.authorization_webhook_cache_unauthorized_ttl,
        "how long denied SubjectAccessReview answers are kept (default: 10s)",
    )


def serving_options(args: argparse.Namespace) -> ServingOptions | None:
    """The options of the parsed flags, checked; None with ``--secure-port 0``."""
    if not 0 <= args.secure_port <= 65535:
        raise UserInputError(f"--secure-port {args.secure_port}: must be between 0 and 65535")
    if args.secure_port == 0:
        return None
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise UserInputError("--tls-cert-file and --tls-private-key-file go together")
    for flag in (
        "tls_cert_file",
        "tls_private_key_file",
        "client_ca_file",
        "authentication_kubeconfig",
        "authorization_kubeconfig",
    ):
        path = getattr(args, flag)
        if path and not os.path.isfile(path):
            raise UserInputError("no such file", source=path, obj="--" + flag.replace("_", "-"))
    # The flags' destinations are the options' field names.
    return ServingOptions(**{f.name: getattr(args, f.name) for f in fields(ServingOptions)})


def _review_client(kubeconfig: str | None, default: KubeClient) -> KubeClient:
    if not kubeconfig:
        return default
    return KubeClient(load_configuration(kubeconfig), REVIEW_CONNECTION)


def secure_server(
    options: ServingOptions,
    registry: CollectorRegistry,
    client: KubeClient,
    *,
    live_checks: dict[str, Check] | None = None,
    ready_checks: dict[str, Check] | None = None,
    configz: Callable[[], dict[str, Any]] | None = None,
    profiling: bool = False,
) -> HealthServer:
    """The HTTPS server of ``options``. Token reviews and access reviews go through
    ``client`` (the scheduler's own) unless an authentication / authorization kubeconfig
    is given. Raises ``UserInputError`` for unreadable certificates, ``BackendError``
    when the client CA lookup fails and is not tolerated, ``OSError`` when the port is
    taken."""
    authn_client = _review_client(options.authentication_kubeconfig, client)
    authz_client = _review_client(options.authorization_kubeconfig, client)
    client_ca = None
    if options.client_ca_file:
        with open(options.client_ca_file, encoding="utf-8") as f:
            client_ca = f.read()
    elif not options.authentication_skip_lookup:
        client_ca = lookup_client_ca(authn_client, options.authentication_tolerate_lookup_failure)
    try:
        tls = serving_context(
            bind_address=options.bind_address,
            cert_file=options.tls_cert_file,
            key_file=options.tls_private_key_file,
            cert_dir=options.cert_dir,
            client_ca=client_ca,
        )
    except (OSError, ValueError) as err:
        source = options.tls_cert_file or options.cert_dir or options.client_ca_file or "TLS"
        raise UserInputError(f"cannot load the serving certificate: {err}", source=source) from err
    return HealthServer(
        registry,
        address=options.bind_address,
        port=options.secure_port,
        live_checks=live_checks,
        ready_checks=ready_checks,
        tls=tls,
        authenticator=Authenticator(
            authn_client, cache_ttl=options.authentication_token_webhook_cache_ttl
        ),
        authorizer=Authorizer(
            authz_client,
            always_allow_paths=options.authorization_always_allow_paths,
            authorized_ttl=options.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl=options.authorization_webhook_cache_unauthorized_ttl,
        ),
        configz=configz,
        profiling=profiling,
    )
