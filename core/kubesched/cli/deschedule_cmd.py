"""``kubesched deschedule``: what a DeschedulerPolicy would evict, and where the pods go."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from kubesched.api import load_manifests
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import output_file
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.deschedule import DescheduleReport, deschedule, load_policy
from kubesched.deschedule.html import render_html
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.notices import collecting_notices


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``deschedule`` command."""
    parser = subparsers.add_parser(
        "deschedule",
        help="what a descheduler policy would evict, and where the evicted pods would go",
        description="Schedule the cluster in CLUSTER..., run the DeschedulerPolicy in POLICY "
        "(descheduler/v1alpha2: each profile's Deschedule, then Balance plugins), evicting "
        "through the Eviction API (PodDisruptionBudgets honoured), let the controllers "
        "recreate the pods and the scheduler place them, and report each eviction with "
        "where its pod went, and each strategy with whether its goal was met.",
    )
    parser.add_argument("policy", metavar="POLICY", help="a DeschedulerPolicy file")
    parser.add_argument("cluster", metavar="CLUSTER", nargs="*", help="cluster manifests")
    add_config_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="tie-breaking seed (default: 0)")
    parser.add_argument(
        "--output",
        "-o",
        choices=("text", "json", "yaml"),
        default="text",
        help="text for a person; json or yaml for a program (schema kubesched.io/deschedule/v1)",
    )
    parser.add_argument(
        "--report",
        metavar="FILE.html",
        type=output_file,
        help="also write the report as a self-contained HTML page to FILE.html",
    )
    live_cluster.add_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    registry = _registry()
    with collecting_notices() as notices:
        # The policy first: a mistake in it is found before a live cluster is read.
        policy = load_policy(args.policy)
        effective = load_config_argument(args.config, registry, args.feature_gates)[1]
        # A live cluster's pods carry real timestamps: their ages count from when it is read.
        reference = datetime.now(UTC) if args.from_cluster else None
        cluster = [*live_cluster.objects(args), *load_manifests(args.cluster)]
        if not cluster:
            raise UserInputError("no cluster: give CLUSTER manifests or --from-cluster")
        report = deschedule(
            cluster,
            policy,
            config=effective,
            registry=registry,
            seed=args.seed,
            source=args.policy,
            reference=reference,
        )
    report.notices = [str(n) for n in dict.fromkeys(notices)]
    for n in report.notices:
        print(f"notice: {n}", file=sys.stderr)
    if args.report:
        page = render_html(report, f"kubesched deschedule {args.policy}")
        try:
            Path(args.report).write_text(page)
        except OSError as err:
            raise UserInputError(
                f"cannot write the report: {err.strerror}", source=args.report
            ) from None
    if args.output != "text":
        output.write_data(report.to_dict(), args.output)
    else:
        render(report, output.console())
    return 0


def render(report: DescheduleReport, console: object) -> None:
    """The report for a person: evictions with their outcome, goals, node utilisation."""
    print_ = console.print  # type: ignore[attr-defined]
    evicted = sum(1 for e in report.evictions if e.evicted)
    print_(
        f"{evicted} pod(s) evicted, {len(report.evictions) - evicted} refused; "
        f"pods bound {report.pods.bound_before} → {report.pods.bound_after}, "
        f"pending {report.pods.pending_before} → {report.pods.pending_after}."
    )
    if report.evictions:
        table = Table(
            "pod", "node", "strategy", "reason", "went to", title="Evictions", title_justify="left"
        )
        for e in report.evictions:
            went = e.replacement_node or e.outcome
            table.add_row(e.pod, e.node, e.strategy, e.reason, went)
        print_(table)
    goals = Table(
        "profile",
        "strategy",
        "evicted",
        "refused",
        "wanted before",
        "wanted after",
        "goal met",
        title="Strategies (evictions each wants on the placement before and after)",
        title_justify="left",
    )
    for s in report.strategies:
        goals.add_row(
            s.profile,
            s.strategy,
            str(s.evictions),
            str(s.refused),
            str(s.violations_before),
            str(s.violations_after),
            "yes" if s.goal_met else "no",
        )
    print_(goals)
    for s in report.strategies:
        if s.utilization is not None:
            print_(f"{s.strategy}: {s.utilization.describe()}", soft_wrap=True, markup=False)
    nodes = Table(
        "node",
        "cpu %",
        "memory %",
        "pods %",
        title="Node utilisation (requests), before → after",
        title_justify="left",
    )
    for n in report.nodes:
        nodes.add_row(
            n.node,
            *(f"{n.before.get(r, 0):g} → {n.after.get(r, 0):g}" for r in ("cpu", "memory", "pods")),
        )
    print_(nodes)
