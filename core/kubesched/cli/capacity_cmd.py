"""``kubesched capacity``: how many more of a pod fit, how many new nodes a workload needs,
and which nodes can be removed."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.table import Table

from kubesched.api import load_manifests
from kubesched.capacity import (
    CapacityFitReport,
    CapacityNodesReport,
    capacity_fit,
    pod_template,
)
from kubesched.capacity.nodes import COST_ANNOTATION, DEFAULT_MAX_NODES, capacity_nodes, node_shapes
from kubesched.capacity.remove import (
    DEFAULT_GPU_UTILIZATION_THRESHOLD,
    DEFAULT_UTILIZATION_THRESHOLD,
    SAFE_TO_EVICT,
    SCALE_DOWN_DISABLED,
    DrainOptions,
    capacity_remove,
)
from kubesched.capacity.report import CapacityRemoveReport
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import add_output_argument, positive_int
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.config import EffectiveConfiguration
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.notices import collecting_notices

MAX_NODE_ROWS = 20
"""Nodes listed in the text answer of ``capacity fit`` (the rest are counted)."""


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``capacity`` command and its ``fit``, ``nodes`` and ``remove`` questions."""
    parser = subparsers.add_parser(
        "capacity",
        help="capacity planning: how many more of a pod fit, how many new nodes a workload "
        "needs, which nodes can be removed",
        description="Answer capacity questions by simulation with the profile's real plugins.",
    )
    questions = parser.add_subparsers(dest="question", metavar="QUESTION", required=True)

    fit = questions.add_parser(
        "fit",
        help="how many more copies of a pod the cluster takes",
        description="Schedule copies of the pod (or of the workload's pod template) in "
        "POD_OR_WORKLOAD one after another on the cluster in CLUSTER... until one cannot be "
        "placed (or --max are), and report how many fit, where, and the FailedScheduling "
        "reason that stopped it. Preemption is off unless --allow-preemption.",
    )
    fit.add_argument("template", metavar="POD_OR_WORKLOAD", help="a Pod or workload manifest")
    fit.add_argument("cluster", metavar="CLUSTER", nargs="*", help="cluster manifests")
    fit.add_argument("--max", type=positive_int, metavar="N", help="stop after N copies")
    _common(fit)
    fit.set_defaults(func=_fit)

    nodes = questions.add_parser(
        "nodes",
        help="the fewest new nodes a workload needs to schedule completely",
        description="Schedule WORKLOAD on the cluster in CLUSTER..., then find the smallest "
        "number (lowest cost) of new nodes, copies of the --node-template Nodes, with which "
        "every pod of the workload schedules, and how close that is to the resource-sum "
        f"lower bound. A template's cost is its annotation {COST_ANNOTATION} (default 1).",
    )
    nodes.add_argument("workload", metavar="WORKLOAD", help="workload manifests (file or folder)")
    nodes.add_argument("cluster", metavar="CLUSTER", nargs="*", help="cluster manifests")
    nodes.add_argument(
        "--node-template",
        metavar="NODE.yaml",
        action="append",
        required=True,
        help="a Node manifest (or several) to copy as new nodes (repeatable)",
    )
    nodes.add_argument(
        "--max-nodes",
        type=positive_int,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help=f"the most new nodes a plan may add (default: {DEFAULT_MAX_NODES})",
    )
    _common(nodes)
    nodes.set_defaults(func=_nodes)

    remove = questions.add_parser(
        "remove",
        help="which nodes can be removed, each checked by draining it in simulation",
        description="Schedule the cluster in CLUSTER..., then try removing its "
        "under-utilised nodes one at a time, as cluster-autoscaler's scale-down does: "
        "empty nodes first, then the least utilised. A node is tried when its utilisation "
        "(the larger of cpu and memory requests over allocatable; GPUs on a GPU node) is "
        "below the threshold, no pod on it blocks a drain (no controller, kube-system "
        f"without a PodDisruptionBudget, local storage, {SAFE_TO_EVICT}=false, a "
        "PodDisruptionBudget out of disruptions) and it is not annotated "
        f"{SCALE_DOWN_DISABLED}=true; it is removed when the profile places every pod "
        "it ran elsewhere. Prints the removable nodes, where their pods go, why each "
        f"other node stays, and the cost saved (annotation {COST_ANNOTATION}, default 1).",
    )
    remove.add_argument("cluster", metavar="CLUSTER", nargs="*", help="cluster manifests")
    remove.add_argument(
        "--scale-down-utilization-threshold",
        type=_fraction,
        default=DEFAULT_UTILIZATION_THRESHOLD,
        metavar="F",
        help="a node whose utilisation is at least F stays "
        f"(default: {DEFAULT_UTILIZATION_THRESHOLD}, as cluster-autoscaler)",
    )
    remove.add_argument(
        "--scale-down-gpu-utilization-threshold",
        type=_fraction,
        default=DEFAULT_GPU_UTILIZATION_THRESHOLD,
        metavar="F",
        help=f"the same for GPU nodes (default: {DEFAULT_GPU_UTILIZATION_THRESHOLD})",
    )
    remove.add_argument(
        "--skip-nodes-with-local-storage",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep nodes with pods using emptyDir or hostPath volumes (default: on)",
    )
    remove.add_argument(
        "--skip-nodes-with-system-pods",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep nodes with kube-system pods without a PodDisruptionBudget (default: on)",
    )
    remove.add_argument(
        "--ignore-daemonsets-utilization",
        action="store_true",
        help="leave DaemonSet pods out of the utilisation",
    )
    remove.add_argument(
        "--ignore-mirror-pods-utilization",
        action="store_true",
        help="leave mirror (static) pods out of the utilisation",
    )
    remove.add_argument(
        "--max-removals", type=positive_int, metavar="N", help="stop after removing N nodes"
    )
    _common(remove, preemption=False)
    remove.set_defaults(func=_remove)


def _fraction(text: str) -> float:
    """A number from 0 to 1 (a utilisation threshold)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _common(parser: argparse.ArgumentParser, *, preemption: bool = True) -> None:
    add_config_argument(parser)
    if preemption:
        parser.add_argument(
            "--allow-preemption",
            action="store_true",
            help="let the pods preempt lower-priority pods (off: no PostFilter runs)",
        )
    parser.add_argument("--seed", type=int, default=0, help="tie-breaking seed (default: 0)")
    add_output_argument(parser, "kubesched.io/capacity/v1")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    live_cluster.add_arguments(parser)


def _configuration(args: argparse.Namespace, registry: PluginRegistry) -> EffectiveConfiguration:
    return load_config_argument(args.config, registry, args.feature_gates)[1]


def _answer(
    args: argparse.Namespace,
    what: tuple[str, str],
    ask: Callable[[Callable[[int, int | None], None] | None], Any],
    render: Callable[[Any, Any], None],
) -> int:
    """Compute ``ask(progress)`` under a progress bar on stderr (``what``: its label and
    unit), then print the report as ``--output`` says."""
    with collecting_notices() as notices:
        report = output.under_progress_bar(not args.no_progress and sys.stderr.isatty(), *what, ask)
    # Every plan simulated builds its cluster afresh and would repeat the same notices.
    output.print_notices(dict.fromkeys(notices))
    output.print_report(report, args.output, render)
    return 0


def _fit(args: argparse.Namespace) -> int:
    registry = _registry()
    effective = _configuration(args, registry)
    template, extra = pod_template(load_manifests([args.template]), args.template)
    cluster = [*live_cluster.objects(args), *load_manifests(args.cluster), *extra]
    return _answer(
        args,
        ("placing copies", "placed"),
        lambda progress: capacity_fit(
            cluster,
            template,
            config=effective,
            registry=registry,
            max_copies=args.max,
            allow_preemption=args.allow_preemption,
            seed=args.seed,
            progress=progress,
            source=args.template,
        ),
        render_fit,
    )


def _nodes(args: argparse.Namespace) -> int:
    registry = _registry()
    effective = _configuration(args, registry)
    shapes = node_shapes(load_manifests(args.node_template), ", ".join(args.node_template))
    workload = load_manifests([args.workload])
    if not workload:
        raise UserInputError("no Kubernetes objects found", source=args.workload)
    cluster = [*live_cluster.objects(args), *load_manifests(args.cluster)]
    return _answer(
        args,
        ("simulating plans", "simulations"),
        lambda progress: capacity_nodes(
            cluster,
            workload,
            shapes,
            config=effective,
            registry=registry,
            allow_preemption=args.allow_preemption,
            max_nodes=args.max_nodes,
            seed=args.seed,
            progress=None if progress is None else (lambda n: progress(n, None)),
        ),
        render_nodes,
    )


def _remove(args: argparse.Namespace) -> int:
    registry = _registry()
    effective = _configuration(args, registry)
    cluster = [*live_cluster.objects(args), *load_manifests(args.cluster)]
    options = DrainOptions(
        utilization_threshold=args.scale_down_utilization_threshold,
        gpu_utilization_threshold=args.scale_down_gpu_utilization_threshold,
        skip_nodes_with_local_storage=args.skip_nodes_with_local_storage,
        skip_nodes_with_system_pods=args.skip_nodes_with_system_pods,
        ignore_daemonsets_utilization=args.ignore_daemonsets_utilization,
        ignore_mirror_pods_utilization=args.ignore_mirror_pods_utilization,
    )
    return _answer(
        args,
        ("draining nodes", "nodes"),
        lambda progress: capacity_remove(
            cluster,
            config=effective,
            registry=registry,
            options=options,
            max_removals=args.max_removals,
            seed=args.seed,
            progress=progress,
            source=", ".join(args.cluster) or "the cluster",
        ),
        render_remove,
    )


def render_fit(report: CapacityFitReport, console: object) -> None:
    """The answer of ``capacity fit`` for a person."""
    print_ = console.print  # type: ignore[attr-defined]
    more = "" if report.preemption else ", preemption off"
    print_(
        f"{report.count} more {report.template} fit on {report.cluster_nodes} nodes "
        f'(profile "{report.profile}"{more}).'
    )
    if report.stop.reason == "max":
        print_("Stopped at --max; more may fit.")
    else:
        print_(f"Stopped: {report.stop.message}")
        for r in report.stop.reasons:
            print_(f"  {r.nodes:>6} node(s): {r.reason} ({r.plugin or '-'})")
    if report.cluster_pending:
        print_(f"The cluster's own pods still pending before the copies: {report.cluster_pending}")
    if report.zones:
        zones = Table("zone", "copies", title="Per zone", title_justify="left")
        for z in report.zones:
            zones.add_row(z.zone or "(none)", str(z.count))
        print_(zones)
        table = Table("node", "zone", "copies", title="Per node", title_justify="left")
        for n in report.nodes[:MAX_NODE_ROWS]:
            table.add_row(n.node, n.zone or "(none)", str(n.count))
        rest = len(report.nodes) - MAX_NODE_ROWS
        if rest > 0:
            table.add_row(f"(+{rest} more nodes)", "", "")
        print_(table)
    if report.victims:
        victims = Table(
            "preempted pod",
            "node",
            "priority",
            title="Preempted to make room",
            title_justify="left",
        )
        for v in report.victims:
            victims.add_row(v.pod, v.node, str(v.priority))
        print_(victims)


def render_nodes(report: CapacityNodesReport, console: object) -> None:
    """The answer of ``capacity nodes`` for a person."""
    print_ = console.print  # type: ignore[attr-defined]
    print_(
        f"Workload: {report.workload_pods} pods; {report.pending_without_new_nodes} pending "
        "on the cluster as it is."
    )
    plan = report.plan
    if plan is None:
        print_("No plan within --max-nodes places every pod. Still pending:")
        for p in report.unplaceable:
            print_(f"  {p.pod}: {p.message}")
        return
    if plan.total_nodes == 0:
        print_("No new node is needed.")
        return
    shapes = ", ".join(f"{n} × {name}" for name, n in plan.nodes.items())
    print_(f"Add {plan.total_nodes} node(s): {shapes} (cost {plan.cost:g}).")
    verdict = (
        "optimal: it meets the lower bound"
        if report.optimal
        else "may not be optimal: the lower bound ignores every constraint but resources"
    )
    print_(
        f"Lower bound: {report.lower_bound_nodes} node(s), cost {report.lower_bound_cost:g} "
        f"({verdict})."
    )
    groups: dict[tuple[str, int], int] = Counter()
    for node, n in plan.pods_per_new_node.items():
        groups[(node.rsplit("-", 1)[0], n)] += 1
    table = Table(
        "shape", "new nodes", "workload pods each", title="Placement", title_justify="left"
    )
    for (shape, pods), nodes in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        table.add_row(shape, str(nodes), str(pods))
    print_(table)
    for alt in report.alternatives:
        alt_shapes = ", ".join(f"{n} × {name}" for name, n in alt.nodes.items())
        print_(f"Alternative: {alt_shapes} (cost {alt.cost:g})")
    print_(f"{report.simulations} simulations, {report.wall_time:.1f} s.")


def render_remove(report: CapacityRemoveReport, console: object) -> None:
    """The answer of ``capacity remove`` for a person."""
    print_ = console.print  # type: ignore[attr-defined]
    n = len(report.removable)
    print_(
        f"{n} of {report.nodes} node(s) can be removed, saving cost {report.cost_saved:g} "
        f"of {report.cost:g}; {report.pods_moved} pod(s) move."
    )
    if report.removable:
        table = Table(
            "#",
            "node",
            "zone",
            "utilisation",
            "pods moved to",
            title="Removable, in the order tried",
            title_justify="left",
        )
        for i, r in enumerate(report.removable, 1):
            moved = ", ".join(f"{pod} → {node}" for pod, node in r.moved.items())
            if not moved:
                moved = "empty" + (
                    f" ({r.dropped_pods} pod(s) go with it)" if r.dropped_pods else ""
                )
            table.add_row(
                str(i), r.name, r.zone, f"{r.utilization:.0%} {r.utilization_resource}", moved
            )
        print_(table)
    if report.kept:
        table = Table(
            "node", "zone", "utilisation", "stays because", title="Kept", title_justify="left"
        )
        for k in report.kept:
            util = "?" if k.utilization is None else f"{k.utilization:.0%} {k.utilization_resource}"
            table.add_row(k.name, k.zone, util, f"{k.reason}: {k.message}")
        print_(table)
    print_(f"{report.simulations} drain simulations, {report.wall_time:.1f} s.")
