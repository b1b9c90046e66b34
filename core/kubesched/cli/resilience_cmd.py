"""``kubesched resilience``: every node, every zone or random sets of nodes failing in turn,
and which workloads and PodDisruptionBudgets survive each."""

from __future__ import annotations

import argparse
import os
import sys

from rich.table import Table
from rich.text import Text

from kubesched.api import load_manifests
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import add_output_argument, positive_duration, positive_int
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.notices import collecting_notices
from kubesched.resilience import (
    DEFAULT_WINDOW,
    ResilienceReport,
    every_node,
    every_zone,
    random_failures,
    resilience,
)
from kubesched.resilience.report import SCHEMA_VERSION, FailureOutcome

MAX_FAILURE_ROWS = 30
"""Failures in the text report's table (worst first; -o json has them all)."""
MAX_DETAILED = 10
"""Failures whose workloads and budgets the text report lists."""
MAX_LINES = 12
"""Workload and budget lines per failure in the text report."""


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``resilience`` command."""
    parser = subparsers.add_parser(
        "resilience",
        help="fail every node, every zone or random sets of nodes in turn: which workloads "
        "keep their replicas and which PodDisruptionBudgets hold",
        description="Schedule the cluster in CLUSTER..., then, for each failure of the set, "
        "make its nodes unreachable and play the next --for of virtual time on a copy of the "
        "settled cluster: the node lifecycle controller taints them, the taint eviction "
        "controller evicts their pods after their tolerationSeconds, the controllers "
        "replace them and the scheduler places them. Reports, worst failure first, the "
        "workloads that did not get their replicas back, the PodDisruptionBudgets that went "
        "below desiredHealthy and the pods left pending.",
    )
    parser.add_argument("cluster", metavar="CLUSTER", nargs="*", help="cluster manifests")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--nodes", action="store_true", help="fail every node, one at a time (the default)"
    )
    which.add_argument(
        "--zones",
        action="store_true",
        help="fail every topology.kubernetes.io/zone, all its nodes at once",
    )
    which.add_argument(
        "--random", type=positive_int, metavar="N", help="N failures of --size random nodes each"
    )
    parser.add_argument(
        "--size",
        type=positive_int,
        default=1,
        metavar="K",
        help="with --random: nodes failing together (default: 1)",
    )
    parser.add_argument(
        "--for",
        dest="window",
        type=positive_duration,
        default=DEFAULT_WINDOW,
        metavar="DURATION",
        help="virtual time each failure is played for (default: 10m)",
    )
    add_config_argument(parser)
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="tie-breaking seed, and --random's draws (default: 0)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help=f"processes playing failures (default: all cores, here {os.cpu_count()})",
    )
    parser.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="play the failures on the Dask distributed scheduler at HOST:PORT",
    )
    add_output_argument(parser, SCHEMA_VERSION)
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    live_cluster.add_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.size != 1 and args.random is None:
        raise UserInputError("--size goes with --random")
    registry = _registry()
    with collecting_notices() as notices:
        effective = load_config_argument(args.config, registry, args.feature_gates)[1]
        objects = [*live_cluster.objects(args), *load_manifests(args.cluster)]
        source = " ".join(args.cluster) or "--from-cluster"
        if not objects:
            if not args.cluster and not args.from_cluster:
                raise UserInputError("no cluster: give CLUSTER manifests or --from-cluster")
            raise UserInputError("no Kubernetes objects found", source=source)
        if args.zones:
            failures = lambda nodes: every_zone(nodes, source)  # noqa: E731
        elif args.random is not None:
            failures = lambda nodes: random_failures(  # noqa: E731
                nodes, args.random, args.size, args.seed, source
            )
        else:
            failures = every_node
        report = output.under_progress_bar(
            not args.no_progress and sys.stderr.isatty(),
            "Playing failures",
            "failures",
            lambda progress: resilience(
                objects,
                failures,
                config=effective,
                registry=registry,
                seed=args.seed,
                window=args.window,
                workers=args.workers,
                address=args.address,
                progress=progress,
            ),
        )
    report.notices = [str(n) for n in dict.fromkeys(notices)]
    output.print_notices(report.notices)
    output.print_report(report, args.output, render)
    return 0


def render(report: ResilienceReport, console: object) -> None:
    """The report for a person: the failures worst first, then what the worst did."""
    print_ = console.print  # type: ignore[attr-defined]
    s = report.summary
    print_(
        f"{s.failures} failure(s) of {s.nodes} node(s), each played for {s.window_seconds:g}s: "
        f"{s.harmless} harmless, {s.failures - s.harmless} with losses.",
        markup=False,
    )
    if s.pods_pending_before:
        print_(f"{s.pods_pending_before} pod(s) were pending before any failure.", markup=False)
    table = Table(
        "failure",
        "workloads lost",
        "replicas lost",
        "PDBs violated",
        "pending",
        "evicted",
        title="Failures, worst first",
        title_justify="left",
    )
    for f in report.failures[:MAX_FAILURE_ROWS]:
        table.add_row(
            Text(f.failure),
            str(f.workloads_lost),
            str(f.replicas_lost),
            str(f.budgets_violated),
            str(f.pods_pending),
            str(f.pods_evicted),
        )
    rest = len(report.failures) - MAX_FAILURE_ROWS
    if rest > 0:
        table.add_row(f"(+{rest} more, none worse)", "", "", "", "", "")
    print_(table)
    for f in report.failures[:MAX_DETAILED]:
        if f.harmless() and not f.workloads:
            continue
        print_(f"\n{f.failure} ({', '.join(f.nodes)}):", markup=False)
        lines = _detail_lines(f)
        for line in lines[:MAX_LINES]:
            print_(line, markup=False, soft_wrap=True)
        if len(lines) > MAX_LINES:
            print_(f"  (+{len(lines) - MAX_LINES} more: -o json lists them)", markup=False)
        if f.daemon_pods_down:
            print_(f"  {f.daemon_pods_down} DaemonSet pod(s) down with their nodes", markup=False)


def _detail_lines(f: FailureOutcome) -> list[str]:
    """One line per workload and per budget the failure touched: the workloads lost and
    the budgets violated first."""
    lost, violated, kept, held = [], [], [], []
    for w in f.workloads:
        line = (
            f"  {'kept' if w.kept else 'LOST'} {w.kind} {w.name}: {w.before} → lowest "
            f"{w.lowest} → {w.after} of {w.desired}; evicted {w.evicted}, replaced {w.replaced}"
        )
        if w.pending:
            line += f", {w.pending} pending: {w.pending_reason}"
        (kept if w.kept else lost).append(line)
    for b in f.budgets:
        end = " (still at the end)" if b.violated_at_end else ""
        line = (
            f"  {'VIOLATED' if b.violated else 'held'} PDB {b.name}: healthy {b.before} → "
            f"lowest {b.lowest} → {b.after}, desired {b.desired_healthy}{end}"
        )
        (violated if b.violated else held).append(line)
    return lost + violated + kept + held
