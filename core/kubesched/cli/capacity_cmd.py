"""``kubesched capacity``: how many more of a pod fit, and how many new nodes a workload needs."""

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
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import positive_int
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
    """Add the ``capacity`` command and its ``fit`` and ``nodes`` questions."""
    parser = subparsers.add_parser(
        "capacity",
        help="capacity planning: how many more of a pod fit, how many new nodes a workload needs",
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


def _common(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument(
        "--allow-preemption",
        action="store_true",
        help="let the pods preempt lower-priority pods (off: no PostFilter runs)",
    )
    parser.add_argument("--seed", type=int, default=0, help="tie-breaking seed (default: 0)")
    parser.add_argument(
        "--output",
        "-o",
        choices=("text", "json", "yaml"),
        default="text",
        help="text for a person; json or yaml for a program (schema kubesched.io/capacity/v1)",
    )
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
    progress, stop = output.progress_bar(not args.no_progress and sys.stderr.isatty(), *what)
    with collecting_notices() as notices:
        try:
            report = ask(progress)
        finally:
            stop()
    # Every plan simulated builds its cluster afresh and would repeat the same notices.
    for n in dict.fromkeys(notices):
        print(f"notice: {n}", file=sys.stderr)
    if args.output != "text":
        output.write_data(report.to_dict(), args.output)
    else:
        render(report, output.console())
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
