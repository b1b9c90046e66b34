"""``--from-cluster``: the commands that simulate on a copy of a live cluster read it here."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import yaml

from kubesched.api import KubeObject
from kubesched.cli.arguments import output_file
from kubesched.cli.output import YamlDumper
from kubesched.errors import UserInputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--from-cluster``, ``--kubeconfig`` and ``--save-snapshot``."""
    parser.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from a copy of the live cluster (read-only: nothing is written to it)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig of that cluster (default: in-cluster, then $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "--save-snapshot",
        metavar="FILE",
        type=output_file,
        help="with --from-cluster, also write what was read as manifests to FILE "
        "(a later run can take FILE instead of the cluster)",
    )


def objects(args: argparse.Namespace) -> list[KubeObject]:
    """The live cluster's objects when ``--from-cluster`` is given (saved to
    ``--save-snapshot`` if asked), else none. Errors are one line: no kubeconfig, an
    unreachable server, a kind the credentials may not list."""
    if not args.from_cluster:
        for flag in ("kubeconfig", "save_snapshot"):
            if getattr(args, flag):
                raise UserInputError(f"--{flag.replace('_', '-')} goes with --from-cluster")
        return []
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        raise UserInputError("no such file", source=args.kubeconfig, obj="--kubeconfig")
    # The client library is imported only for a live cluster.
    from kubesched.backend.kube import KubeClient, load_configuration
    from kubesched.backend.kube.snapshot import read_cluster

    client = KubeClient(load_configuration(args.kubeconfig))
    try:
        snapshot = read_cluster(client)
    finally:
        client.close()
    if args.save_snapshot:
        try:
            with Path(args.save_snapshot).open("w") as out:
                out.write(f"# A snapshot of {client.host}, read by kubesched --from-cluster.\n")
                yaml.dump_all(snapshot.manifests, out, Dumper=YamlDumper, sort_keys=False)
        except OSError as err:
            raise UserInputError(
                f"cannot write the snapshot: {err.strerror}", source=args.save_snapshot
            ) from None
    return snapshot.objects
