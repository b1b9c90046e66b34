"""``kubesched deschedule``: what a DeschedulerPolicy would evict, and where the pods go."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table
from rich.text import Text

from kubesched.api import load_manifests
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import add_output_argument, output_file
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.deschedule import DescheduleReport, load_policy, run_deschedule
from kubesched.deschedule.html import render_html
from kubesched.deschedule.report import summary, tables, utilization_lines
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
    add_output_argument(parser, "kubesched.io/deschedule/v1")
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
        report, run = run_deschedule(
            cluster,
            policy,
            config=effective,
            registry=registry,
            seed=args.seed,
            source=args.policy,
            reference=reference,
        )
    report.notices = [str(n) for n in dict.fromkeys(notices)]
    output.print_notices(report.notices)
    if args.report:
        page = render_html(report, run, f"kubesched deschedule {args.policy}", cluster)
        try:
            Path(args.report).write_text(page)
        except OSError as err:
            raise UserInputError(
                f"cannot write the report: {err.strerror}", source=args.report
            ) from None
    output.print_report(report, args.output, render)
    return 0


def render(report: DescheduleReport, console: object) -> None:
    """The report for a person: evictions with their outcome, goals, node utilisation."""
    print_ = console.print  # type: ignore[attr-defined]
    print_(summary(report))
    for n, (title, columns, rows) in enumerate(tables(report)):
        if rows or n > 0:
            table = Table(*columns, title=title, title_justify="left")
            for row in rows:
                table.add_row(*(Text(cell) for cell in row))  # plain text, never markup
            print_(table)
        if n == 1:
            # Right under the strategies' goals, the thresholds those of utilisation use.
            for line in utilization_lines(report):
                print_(line, soft_wrap=True, markup=False)
