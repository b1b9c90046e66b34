"""``kubesched run``: schedule a real cluster through the Kubernetes API until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import os
import signal

from kubesched import logsafe
from kubesched.backend.kube import KubeClient, KubeCluster
from kubesched.backend.kube.client import load_configuration_and_source
from kubesched.backend.protocol import BackendError
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.errors import KubeschedError, UserInputError
from kubesched.framework.registry import default_registry
from kubesched.metrics import Metrics
from kubesched.runner import SchedulerRunner, ServerOptions

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="schedule the pods of a real cluster through its API server",
        description="Watch the cluster's pods and nodes, schedule the pods whose "
        "spec.schedulerName is one of the configuration's profiles, and bind them through "
        "the API. With leaderElection.leaderElect (the default) only the replica holding "
        "the Lease schedules. Stops cleanly on SIGTERM or SIGINT.",
    )
    add_config_argument(parser)
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig of the cluster (default: clientConnection.kubeconfig, then "
        "in-cluster, then $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "--bind-address",
        default="127.0.0.1",
        metavar="ADDR",
        help="address of the /metrics, /healthz, /livez, /readyz server (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=10259,
        metavar="N",
        help="port of that server; 0 picks a free one, -1 disables it (default: 10259)",
    )
    parser.add_argument("--tls-cert-file", metavar="FILE", help="serve HTTPS with this cert")
    parser.add_argument("--tls-private-key-file", metavar="FILE", help="the cert's private key")
    parser.add_argument("--identity", help="leader-election identity (default: hostname_uuid)")
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="logging level (default: info)",
    )
    parser.set_defaults(func=_run)


def _check_args(args: argparse.Namespace) -> None:
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        raise UserInputError("no such file", source=args.kubeconfig, obj="--kubeconfig")
    if not -1 <= args.port <= 65535:
        raise UserInputError(f"--port {args.port}: must be between 0 and 65535 (or -1: off)")
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise UserInputError("--tls-cert-file and --tls-private-key-file go together")
    for path in (args.tls_cert_file, args.tls_private_key_file):
        if path and not os.path.isfile(path):
            raise UserInputError("no such file", source=path, obj="TLS")


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
    )
    logsafe.install()
    _check_args(args)
    registry = default_registry()
    config, effective = load_config_argument(args.config, registry)
    connection = config.client_connection
    metrics = Metrics()
    kubeconfig = args.kubeconfig or connection.kubeconfig or None
    configuration, credentials = load_configuration_and_source(kubeconfig)
    client = KubeClient(configuration, connection, metrics.registry, credentials=credentials)
    cluster = KubeCluster(client)
    runner = None
    try:
        server = None
        if args.port >= 0:
            server = ServerOptions(
                args.bind_address, args.port, args.tls_cert_file, args.tls_private_key_file
            )
        try:
            # Builds the profiles: the cluster learns which kinds their plugins need.
            runner = SchedulerRunner(
                effective,
                registry,
                cluster,
                metrics=metrics,
                identity=args.identity,
                server=server,
            )
        except OSError as err:
            raise KubeschedError(
                f"cannot serve on {args.bind_address}:{args.port}: {err.strerror or err}"
            ) from err
    except BaseException:
        if runner is not None and runner.server is not None:
            runner.server.stop()
        cluster.close()
        raise
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: runner.stop())
    try:
        return runner.run()
    except BackendError as err:
        raise KubeschedError(str(err)) from err
