"""``kubesched run``: schedule a real cluster through the Kubernetes API until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import os
import signal

from kubesched import logsafe
from kubesched.backend.kube import KubeClient, KubeCluster
from kubesched.backend.kube.client import load_configuration_and_source
from kubesched.backend.kube.writer import WriterProcess
from kubesched.backend.protocol import BackendError
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.cli.errors import EXIT_INTERRUPTED
from kubesched.errors import KubeschedError, UserInputError
from kubesched.framework.registry import default_registry
from kubesched.metrics import Metrics
from kubesched.runner import SchedulerRunner
from kubesched.serving.options import add_serving_arguments, serving_options

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
    add_serving_arguments(parser)
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


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
    )
    logsafe.install()
    _check_args(args)
    serving = serving_options(args)
    registry = default_registry()
    config, effective = load_config_argument(args.config, registry, args.feature_gates)
    connection = config.client_connection
    metrics = Metrics()
    kubeconfig = args.kubeconfig or connection.kubeconfig or None
    configuration, credentials = load_configuration_and_source(kubeconfig)
    client = KubeClient(configuration, connection, metrics.registry, credentials=credentials)
    cluster = KubeCluster(client)
    runner = None
    try:
        # Builds the profiles: the cluster learns which kinds their plugins need.
        runner = SchedulerRunner(
            effective,
            registry,
            cluster,
            metrics=metrics,
            identity=args.identity,
            server=serving,
            # Bindings, status patches and Events go out from a process of their own:
            # their HTTP work then runs beside the scheduling loop (docs/architecture.md).
            writer=WriterProcess(kubeconfig, connection, observe=client.observe),
        )
        # The API server is not asked here: run() waits for it, with /readyz false
        # meanwhile, as kube-scheduler does.
        try:
            runner.listen()
        except OSError as err:
            raise KubeschedError(
                f"cannot serve on {args.bind_address}:{args.secure_port}: {err.strerror or err}"
            ) from err
    except BaseException:
        if runner is not None and runner.server is not None:
            runner.server.stop()
        cluster.close()
        raise
    received: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        received.append(signum)
        runner.stop()

    # Either signal stops the scheduler gracefully (the lease released, the server
    # stopped); Ctrl-C still ends with the shell's status for it, as everywhere else.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    try:
        code = runner.run()
        return EXIT_INTERRUPTED if signal.SIGINT in received else code
    except BackendError as err:
        raise KubeschedError(str(err)) from err
