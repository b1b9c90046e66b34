"""``kubesched compare``: the same manifests through kubesched and a real scheduler, pod by pod."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubesched.api import load_manifests
from kubesched.cli import output
from kubesched.cli.arguments import add_output_argument
from kubesched.cli.config_option import add_feature_gates_argument, load_config_argument
from kubesched.cli.simulate_cmd import _registry
from kubesched.compare import DEFAULT_PREFIX, ComparisonReport, compare
from kubesched.errors import UserInputError

_STYLES = {"agree": "green", "tie": "cyan", "differ": "bold red", "undecided": "yellow"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``compare`` command."""
    parser = subparsers.add_parser(
        "compare",
        help="schedule manifests with kubesched and with a real scheduler, report differences",
        description="Create PATH... (Nodes, Pods, workloads, ...) in a scratch API server whose "
        "real scheduler (kube-scheduler) places the pods one at a time, replay each pod in "
        "kubesched's embedded cluster with the earlier pods where the real scheduler put them, "
        "and report per pod whether the placements (or FailedScheduling messages) agree, are a "
        "tie between equally scored nodes, or differ. Everything created is removed at the end.",
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", help="manifest file or directory")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="kubesched's KubeSchedulerConfiguration (default: upstream's)",
    )
    add_feature_gates_argument(parser)
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        required=True,
        help="kubeconfig of the scratch API server (a real scheduler must serve its pods)",
    )
    parser.add_argument(
        "--allow-foreign-nodes",
        action="store_true",
        help="run even though the server has nodes compare did not create (pods may go there)",
    )
    parser.add_argument(
        "--namespace-prefix",
        default=DEFAULT_PREFIX,
        metavar="PREFIX",
        help="scratch namespaces are PREFIX + a run id + '-' + the manifests' namespace "
        f"(default: {DEFAULT_PREFIX})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the real scheduler to see the nodes, and for its decision "
        "on one pod (default: 30)",
    )
    add_output_argument(parser)
    parser.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    registry = _registry()
    if args.kubeconfig is not None and not Path(args.kubeconfig).is_file():
        raise UserInputError("no such file", source=args.kubeconfig, obj="--kubeconfig")
    config = load_config_argument(args.config, registry, args.feature_gates)[1]
    objects = load_manifests(args.paths)
    if not objects:
        raise UserInputError("no Kubernetes objects found", source=" ".join(args.paths))
    report = compare(
        objects,
        kubeconfig=args.kubeconfig,
        config=config,
        registry=registry,
        prefix=args.namespace_prefix,
        allow_foreign_nodes=args.allow_foreign_nodes,
        timeout=args.timeout,
        config_source=args.config or "<defaults>",
    )
    if args.output in ("json", "yaml"):
        output.write_data(report.model_dump(by_alias=True, mode="json"), args.output)
    else:
        render(report)
    return 0


def render(report: ComparisonReport) -> None:
    """The report as a table, then the details of every difference."""
    from rich.table import Table

    console = output.console()
    table = Table(title=f"kubesched ({report.config}) vs the scheduler of {report.server}")
    for column in ("pod", "verdict", "real", "kubesched", "note"):
        table.add_column(column)
    for p in report.pods:
        real = p.real_node or ("unschedulable" if p.real_message else "-")
        mine = p.kubesched_node or ("unschedulable" if p.kubesched_message else "-")
        note = p.note or (f"tied: {', '.join(p.tied_nodes)}" if p.verdict == "tie" else "")
        table.add_row(p.pod, f"[{_STYLES[p.verdict]}]{p.verdict}[/]", real, mine, note)
    console.print(table)
    console.print(", ".join(f"{n} {v}" for v, n in report.counts.items()))
    for p in report.pods:
        if p.verdict != "differ":
            continue
        console.print(f"\n[bold]{p.pod}[/]: {p.note}")
        for who, msg in (("real", p.real_message), ("kubesched", p.kubesched_message)):
            if msg:
                console.print(f"  {who}: {msg}", markup=False)
        for s in p.scores:
            parts = ", ".join(f"{k} {v}" for k, v in s.plugins.items() if v)
            console.print(f"  kubesched's score of {s.node}: {s.total} ({parts})", markup=False)
        for who, victims in (("real", p.real_victims), ("kubesched", p.kubesched_victims)):
            if victims:
                console.print(f"  {who} preempted: {', '.join(victims)}", markup=False)
