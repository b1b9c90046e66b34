"""``kubesched dev-cluster``: a local control plane (etcd, kube-apiserver, optionally the real
kube-controller-manager and kube-scheduler) to try ``run``, ``compare`` and ``simulate
--from-cluster`` on, until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from kubesched.api import KubeObject, load_manifests
from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.backend.protocol import BackendError, ConflictError
from kubesched.bench.workloads import node_manifest
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.errors import KubeschedError, UserInputError
from kubesched.testing.envtest import (
    ADMIN_TOKEN,
    ASSETS_ENV,
    ControlPlane,
    EnvtestError,
    assets_dir,
    create_object,
    create_objects,
)

DEFAULT_KUBECONFIG = "dev-cluster.kubeconfig"
CONTEXT = "kubesched-dev-cluster"
"""The cluster, user and context name of the kubeconfig written; a file whose current
context has this name is one a dev cluster wrote, and may be written over."""
CONTROLLERS = ("*", "-serviceaccount-token-controller", "-node-lifecycle-controller")
"""Every controller but two that need a kubelet: no kubelet heartbeats, so the node
lifecycle controller would taint every node unreachable after about 40 s; the token
controller has no use without pods that run."""
FIRST = {"Namespace": 0, "CustomResourceDefinition": 0, "Pod": 2}
"""Creation order of the loaded kinds (others 1): namespaces and CRDs before what lives in
them, pods last (after the PriorityClasses, RuntimeClasses and claims they name)."""
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
"""Metadata the API server assigns, which a saved snapshot carries and a create refuses."""
WATCH_SECONDS = 1.0
"""How often the started processes are checked while the cluster runs."""
_UNTHROTTLED = ClientConnectionConfiguration(qps=5000, burst=5000)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``dev-cluster`` command."""
    parser = subparsers.add_parser(
        "dev-cluster",
        help="run a local Kubernetes control plane to try run, compare and --from-cluster on",
        description="Start etcd and kube-apiserver (the binaries of KUBEBUILDER_ASSETS) on "
        "127.0.0.1, optionally the real kube-controller-manager and kube-scheduler, write a "
        "kubeconfig, load manifests and fake nodes, print how to use it, and run until "
        "Ctrl-C or SIGTERM: then every process started stops, the data is removed, and the "
        "exit status is 0.",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        default=DEFAULT_KUBECONFIG,
        help=f"where to write the admin kubeconfig (default: ./{DEFAULT_KUBECONFIG}); an "
        "existing file is written over only if a dev cluster wrote it; removed at the end",
    )
    parser.add_argument(
        "-f",
        "--filename",
        metavar="PATH",
        action="append",
        default=[],
        help="create the objects of this manifest file or directory (repeatable)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=0,
        metavar="N",
        help="create N nodes (4 cpu, 32Gi, 110 pods, three zones: those of kubesched bench)",
    )
    parser.add_argument(
        "--with-controller-manager",
        action="store_true",
        help="also run kube-controller-manager, so that Deployments, Jobs... make pods",
    )
    parser.add_argument(
        "--with-scheduler",
        action="store_true",
        help="also run the real kube-scheduler (what kubesched compare compares with)",
    )
    parser.set_defaults(func=_dev_cluster)


def _dev_cluster(args: argparse.Namespace) -> int:
    if args.nodes < 0:
        raise UserInputError(f"must be 0 or more, not {args.nodes}", obj="--nodes")
    kubeconfig = Path(args.kubeconfig)
    _check_kubeconfig_path(kubeconfig)
    # Read (and check) the manifests before anything starts.
    objects = load_manifests(args.filename) if args.filename else []
    assets = assets_dir()
    if assets is None:
        raise KubeschedError(
            f"no etcd and kube-apiserver found: set {ASSETS_ENV} to the folder holding them "
            '(for example: export KUBEBUILDER_ASSETS="$(setup-envtest use 1.36.x -p path)")'
        )
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        # While starting, unwind at once (ControlPlane.start stops what it started);
        # once running, end the wait below.
        if not running.is_set():
            raise KeyboardInterrupt
        stop.set()

    running = threading.Event()
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    cp = ControlPlane(assets, openapi_front=True)
    written = False
    try:
        print("starting etcd and kube-apiserver...", file=sys.stderr, flush=True)
        cp.start()
        if args.with_controller_manager:
            cp.start_controller_manager(CONTROLLERS, leader_elect=True)
        if args.with_scheduler:
            cp.start_scheduler()
        _fill(cp, objects, args.nodes)
        cp.write_kubeconfig(kubeconfig, ADMIN_TOKEN, name=CONTEXT)
        written = True
        print(_usage(args, kubeconfig, cp), flush=True)
        running.set()
        while not stop.wait(WATCH_SECONDS):
            ended = cp.exited()
            if ended is not None:
                # Its log goes with the temporary directory: say what it said last.
                raise KubeschedError(f"{ended} exited: {_last_line(cp, ended)}")
    except KeyboardInterrupt:
        pass  # stopped while starting: as normal an end as once running
    except EnvtestError as err:
        raise KubeschedError(f"dev cluster: {err}") from err
    finally:
        print("stopping the dev cluster...", file=sys.stderr, flush=True)
        cp.stop()
        if written:
            kubeconfig.unlink(missing_ok=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _last_line(cp: ControlPlane, name: str) -> str:
    """The last line process ``name`` logged."""
    assert cp.dir is not None
    lines = (cp.dir / f"{name}.log").read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(nothing logged)"


def _check_kubeconfig_path(path: Path) -> None:
    """Refuse to write over a kubeconfig a dev cluster did not write (such as
    ``~/.kube/config``) or into a folder that does not exist."""
    if not path.parent.is_dir():
        raise UserInputError("its folder does not exist", source=str(path), obj="--kubeconfig")
    if not path.exists():
        return
    try:
        current = json.loads(path.read_text()).get("current-context")
    except (OSError, ValueError, AttributeError):
        current = None
    if current != CONTEXT:
        raise UserInputError(
            "exists and was not written by a dev cluster; choose another --kubeconfig",
            source=str(path),
            obj="--kubeconfig",
        )


def _fill(cp: ControlPlane, objects: list[KubeObject], nodes: int) -> None:
    """Create ``nodes`` nodes, the namespaces ``objects`` use that do not exist, then
    ``objects`` in dependency order."""
    client = KubeClient(load_configuration(str(cp.kubeconfig)), _UNTHROTTLED)
    try:
        if nodes:
            create_objects(client, [node_manifest(i) for i in range(nodes)])
        manifests = sorted((_creatable(o) for o in objects), key=lambda m: FIRST.get(m["kind"], 1))
        declared = {m["metadata"]["name"] for m in manifests if m["kind"] == "Namespace"}
        used = {o.metadata.namespace for o in objects if o.metadata.namespace} - declared
        for namespace in sorted(used):
            namespace_manifest = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": namespace},
            }
            with contextlib.suppress(ConflictError):  # default, kube-system... exist already
                create_object(client, namespace_manifest)
        for manifest in manifests:
            try:
                create_object(client, manifest)
            except (BackendError, KeyError) as err:
                meta = manifest["metadata"]
                name = (
                    f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
                )
                raise UserInputError(
                    f"the API server refused it: {err}", obj=f"{manifest['kind']} {name}"
                ) from err
    finally:
        client.close()


def _creatable(obj: KubeObject) -> dict[str, Any]:
    """``obj`` as a manifest to create: without what the API server assigns."""
    manifest = obj.to_dict()
    for key in SERVER_FIELDS:
        manifest["metadata"].pop(key, None)
    return manifest


def _usage(args: argparse.Namespace, kubeconfig: Path, cp: ControlPlane) -> str:
    """What the dev cluster runs and the commands that use it."""
    kc = str(kubeconfig)
    running = ["etcd", "kube-apiserver"]
    if args.with_controller_manager:
        running.append("kube-controller-manager")
    if args.with_scheduler:
        running.append("kube-scheduler")
    # compare refuses a cluster with nodes it did not make, unless told otherwise.
    foreign = " --allow-foreign-nodes" if args.nodes or args.filename else ""
    lines = [
        f"dev cluster ready at {cp.url} ({', '.join(running)})",
        f"kubeconfig: {kc}",
        "",
        f"  kubectl --kubeconfig {kc} get nodes",
        f"  kubesched run --kubeconfig {kc}",
        f"  kubesched simulate --from-cluster --kubeconfig {kc}",
    ]
    if args.with_scheduler:
        # Both would serve pods of schedulerName default-scheduler.
        lines[-2] += "  # with a --config whose profile has another schedulerName"
    if args.with_scheduler and not args.with_controller_manager:
        manifests = "examples/quickstart" if Path("examples/quickstart").is_dir() else "PATH..."
        lines.append(f"  kubesched compare --kubeconfig {kc}{foreign} {manifests}")
    else:
        lines.append(
            "  (kubesched compare needs a dev cluster started with --with-scheduler and "
            "without --with-controller-manager)"
        )
    lines += ["", f"Ctrl-C stops it (pid {os.getpid()}) and removes its data and {kc}."]
    return "\n".join(lines)
