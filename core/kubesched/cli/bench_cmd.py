"""``kubesched bench``: scheduler_perf-like workloads on the embedded cluster, measured."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from kubesched.bench import (
    BREAKDOWN_PHASES,
    WORKLOADS,
    BenchError,
    BenchResult,
    environment,
    run_workload,
)
from kubesched.bench.kube import SCHEDULERS, run_on_api_server
from kubesched.cli.arguments import output_file, positive_int, positive_number
from kubesched.cli.config_option import (
    add_feature_gates_argument,
    feature_gates_argument,
    load_config_file,
)
from kubesched.errors import KubeschedError
from kubesched.framework.registry import PluginRegistry, default_registry


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry.
    return default_registry()


def _percentage(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be within 0..100, not {value}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` command."""
    lines = "\n".join(
        f"  {spec.name:<20} {spec.summary} (upstream {spec.upstream})"
        for spec in WORKLOADS.values()
    )
    parser = subparsers.add_parser(
        "bench",
        help="measure scheduling throughput and latency on scheduler_perf-like workloads",
        description="Build a workload on the embedded cluster (deterministically from --seed), "
        "schedule it and report pods/s, the p50/p99 latency of a scheduling attempt and the "
        "peak memory; medians over --repeat runs. Workloads:\n" + lines,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "workloads",
        metavar="WORKLOAD",
        nargs="*",
        default=["basic"],
        help="workloads to run, or 'all' (default: basic)",
    )
    parser.add_argument("--nodes", type=positive_int, default=500, help="nodes (default: 500)")
    parser.add_argument(
        "--pods", type=positive_int, default=1000, help="measured pods (default: 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    parser.add_argument(
        "--repeat", type=positive_int, default=1, help="runs per workload; medians reported"
    )
    parser.add_argument(
        "--percentage-of-nodes-to-score",
        type=_percentage,
        default=None,
        metavar="PCT",
        help="percentageOfNodesToScore (default: upstream's adaptive value; 100 scores all)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="time the phases (queue, snapshot, filter, score, bind…) with wrappers",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="also make one cProfile'd run per workload and write its stats to FILE "
        "(FILE-WORKLOAD.EXT with several workloads)",
    )
    parser.add_argument(
        "--no-isolate",
        dest="isolate",
        action="store_false",
        help="run in this process instead of a fresh process per run "
        "(peak memory then exact for the first run only)",
    )
    parser.add_argument(
        "--output", "-o", choices=("text", "json"), default="text", help="output format"
    )
    parser.add_argument(
        "--save", metavar="FILE", type=output_file, help="also write the JSON report to FILE"
    )
    parser.add_argument(
        "--extenders",
        metavar="FILE",
        help="a KubeSchedulerConfiguration whose scheduler extenders every embedded run calls "
        "(its profiles are not used: each workload has its own)",
    )
    api = parser.add_argument_group(
        "against an API server",
        "create the workload's objects in a real (scratch, node-less) API server and measure "
        "the scheduler that binds them there, from the first binding to the last",
    )
    api.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig of that API server")
    api.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default="kubesched",
        help="kubesched: start `kubesched run` (with --config); external: a scheduler "
        "already serving default-scheduler pods there, e.g. the real kube-scheduler",
    )
    api.add_argument(
        "--external-command",
        metavar="CMD",
        help="with external: the scheduler's command line, started once every pod is pending "
        "(as kubesched is) and stopped at the end; without it the external scheduler must "
        "already run, and the pods are created while it does",
    )
    api.add_argument("--config", metavar="FILE", help="kubesched run's configuration")
    add_feature_gates_argument(parser)
    api.add_argument(
        "--timeout",
        type=positive_number,
        default=1800.0,
        metavar="S",
        help="give up after S seconds",
    )
    parser.set_defaults(func=_bench)


def _workload_names(requested: list[str]) -> list[str]:
    names: list[str] = []
    for name in requested:
        if name == "all":
            names.extend(n for n in WORKLOADS if n not in names)
        elif name not in WORKLOADS:
            raise BenchError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)}, all)")
        elif name not in names:
            names.append(name)
    return names


def _profile_path(base: str, workload: str, several: bool) -> str:
    if not several:
        return base
    path = Path(base)
    return str(path.with_name(f"{path.stem}-{workload}{path.suffix}"))


def report(results: list[BenchResult], *, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report: environment, options and one entry per workload."""
    return {
        "environment": environment(),
        "options": options or {},
        "results": [r.to_dict() for r in results],
    }


def _bench(args: argparse.Namespace) -> int:
    if args.kubeconfig:
        return _bench_api_server(args)
    for flag in ("config", "external_command"):
        if getattr(args, flag):
            raise BenchError(f"--{flag.replace('_', '-')} goes with --kubeconfig")
    registry = _registry()
    gates = feature_gates_argument(args.feature_gates)
    names = _workload_names(args.workloads)
    missing = [
        (name, p) for name in names for p in WORKLOADS[name].required_plugins if p not in registry
    ]
    if missing:
        name, plugin = missing[0]
        raise BenchError(
            f"workload {name!r} needs the plugin {plugin}, which is not installed "
            "(see `kubesched plugins`)"
        )
    extenders = None
    if args.extenders:
        config = load_config_file(args.extenders, registry, gates, option="--extenders")
        extenders = [e.model_dump(mode="json", by_alias=True) for e in config.extenders]
    text = args.output == "text"
    if text:
        env = environment()
        pct = args.percentage_of_nodes_to_score
        pct = "adaptive" if pct is None else pct
        print(
            f"kubesched {env['kubesched_version']} · Python {env['python_version']} · "
            f"{env['cpu_count']} CPUs · seed {args.seed} · repeat {args.repeat} · "
            f"percentageOfNodesToScore {pct}",
            flush=True,
        )
    results = []
    for name in names:
        if text:
            print(
                f"running {name} ({args.nodes} nodes × {args.pods} pods)…",
                file=sys.stderr,
                flush=True,
            )
        profile = _profile_path(args.profile, name, len(names) > 1) if args.profile else None
        results.append(
            run_workload(
                name,
                args.nodes,
                args.pods,
                seed=args.seed,
                repeat=args.repeat,
                percentage_of_nodes_to_score=args.percentage_of_nodes_to_score,
                breakdown=args.breakdown,
                profile_path=profile,
                isolate=args.isolate,
                registry=registry,
                feature_gates=gates,
                extenders=extenders,
            )
        )
    options = {
        "workloads": names,
        "nodes": args.nodes,
        "pods": args.pods,
        "seed": args.seed,
        "repeat": args.repeat,
        "percentage_of_nodes_to_score": args.percentage_of_nodes_to_score,
        "breakdown": args.breakdown,
        "isolate": args.isolate,
        "extenders": [e["urlPrefix"] for e in extenders or ()],
    }
    data = report(results, options=options)
    if args.save:
        _save(args.save, data)
    if text:
        print(render_text(results), end="")
        for r in results:
            if r.profile:
                print(f"profile of {r.workload}: {r.profile} (python -m pstats {r.profile})")
    else:
        print(json.dumps(data, indent=2))
    return 0


def _save(path: str, data: dict[str, Any]) -> None:
    """``--save``: the JSON report written to ``path`` (its folder was checked up front)."""
    try:
        Path(path).write_text(json.dumps(data, indent=2) + "\n")
    except OSError as err:
        raise KubeschedError(f"cannot write {path}: {err.strerror or err}") from None


def _bench_api_server(args: argparse.Namespace) -> int:
    """``bench --kubeconfig``: each workload created in the API server and scheduled there."""
    for flag, default in (
        ("repeat", 1),
        ("breakdown", False),
        ("profile", None),
        ("percentage_of_nodes_to_score", None),
        # With an API server the extenders are those of --config.
        ("extenders", None),
    ):
        if getattr(args, flag) != default:
            raise BenchError(f"--{flag.replace('_', '-')} does not apply with --kubeconfig")
    if args.external_command and args.scheduler != "external":
        raise BenchError("--external-command goes with --scheduler external")
    for path in (args.kubeconfig, args.config):
        if path and not Path(path).is_file():
            raise KubeschedError(f"{path}: no such file")
    gates = feature_gates_argument(args.feature_gates).to_option()
    results = []
    for name in _workload_names(args.workloads):
        print(
            f"running {name} ({args.nodes} nodes × {args.pods} pods) through {args.scheduler}…",
            file=sys.stderr,
            flush=True,
        )
        results.append(
            run_on_api_server(
                name,
                args.nodes,
                args.pods,
                kubeconfig=args.kubeconfig,
                scheduler=args.scheduler,
                seed=args.seed,
                config=Path(args.config) if args.config else None,
                external_command=shlex.split(args.external_command)
                if args.external_command
                else None,
                timeout=args.timeout,
                feature_gates=gates,
            )
        )
    data = {"environment": environment(), "results": [r.to_dict() for r in results]}
    if args.save:
        _save(args.save, data)
    if args.output == "json":
        print(json.dumps(data, indent=2))
        return 0
    headers = ["WORKLOAD", "SCHEDULER", "NODES", "PODS", "BOUND", "PODS/S", "FROM",
               "P50 MS", "P99 MS"]  # fmt: skip
    rows = [
        [
            r.workload,
            r.scheduler,
            str(r.nodes),
            str(r.pods),
            str(r.bound),
            "-" if r.pods_per_second is None else f"{r.pods_per_second:.1f}",
            r.measured_from,
            "-" if r.p50_ms is None else f"{r.p50_ms:.2f}",
            "-" if r.p99_ms is None else f"{r.p99_ms:.2f}",
        ]
        for r in results
    ]
    print(_table(headers, rows, left=2), end="")
    return 0


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in pairs).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)]) + "\n"


def render_text(results: list[BenchResult]) -> str:
    """The results as a table (and, when measured, the breakdown as a second one)."""
    if not results:
        return ""
    headers = [
        "WORKLOAD", "NODES", "PODS", "SCHEDULED", "PENDING", "PODS/S",
        "P50 MS", "P99 MS", "PEAK MB", "SETUP S", "SCHEDULE S",
    ]  # fmt: skip
    rows = [
        [
            r.workload,
            str(r.nodes),
            str(r.pods),
            str(r.scheduled),
            str(r.pending),
            f"{r.pods_per_second:.1f}",
            f"{r.p50_ms:.2f}",
            f"{r.p99_ms:.2f}",
            f"{r.peak_memory_mb:.1f}",
            f"{r.setup_s:.2f}",
            f"{r.schedule_s:.2f}",
        ]
        for r in results
    ]
    out = _table(headers, rows)
    with_breakdown = [r for r in results if r.breakdown]
    if with_breakdown:
        phases = [
            p for p in BREAKDOWN_PHASES if any(r.breakdown.get(p, 0.0) > 0 for r in with_breakdown)
        ]
        rows = []
        for r in with_breakdown:
            total = sum(r.breakdown.values()) or 1.0
            rows.append(
                [r.workload, f"{total:.2f}"]
                + [f"{100 * r.breakdown[p] / total:.1f}%" for p in phases]
            )
        out += "\nbreakdown of the scheduling time (share of exclusive wall time per phase):\n"
        out += _table(["WORKLOAD", "TOTAL S", *(p.upper() for p in phases)], rows)
    return out
