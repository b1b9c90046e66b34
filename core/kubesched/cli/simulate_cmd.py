"""``kubesched simulate``: schedule manifests on the embedded cluster and explain the result."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubesched.api import MANIFEST_SUFFIXES, KubeObject, load_manifests
from kubesched.api.validation import validating_with
from kubesched.backend.memory.store import DEFAULT_MAX_PODS, SYSTEM_NAMESPACES
from kubesched.cli import live_cluster, output
from kubesched.cli.arguments import (
    add_output_argument,
    output_file,
    positive_int,
    positive_int_or_all,
)
from kubesched.cli.config_option import add_config_argument, load_config_argument
from kubesched.cli.output import progress_bar, write_data
from kubesched.config import EffectiveConfiguration
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.notices import Notice, collecting_notices
from kubesched.simulate.driver import DETAIL_FULL, DETAIL_SUMMARY, Simulation
from kubesched.simulate.html import StoryCollector, write_html_report
from kubesched.simulate.invariants import InvariantViolation
from kubesched.simulate.render import MAX_POD_ROWS, SORT_KEYS, render_explain, render_summary
from kubesched.simulate.report import (
    SimulationReport,
    build_report,
    build_report_data,
    parse_pod_key,
)
from kubesched.simulate.timeline import TimelineRunner, load_timeline


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` command."""
    parser = subparsers.add_parser(
        "simulate",
        help="schedule Kubernetes manifests on an embedded cluster and explain every decision",
        description="Load PATH... (files or directories of Kubernetes YAML/JSON: Nodes, "
        "Namespaces, PriorityClasses, Pods, Deployments, ...; '-' for stdin), schedule every "
        "pod on an in-memory cluster in virtual time, and report where each pod went and why. "
        "Pending pods are a result: the exit status is 0 when the run completes.",
    )
    parser.add_argument(
        "paths",
        metavar="PATH",
        nargs="*",
        help="manifest file or directory (at least one, unless --from-cluster)",
    )
    add_config_argument(parser)
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the tie-breaking random choices (default: 0)"
    )
    add_output_argument(parser, "kubesched.io/simulation/v1")
    parser.add_argument(
        "--explain",
        metavar="NS/POD",
        action="append",
        default=[],
        help="explain this pod's decision (repeatable). With json/yaml, only these pods keep "
        "their per-node filters, scores and attempt history",
    )
    parser.add_argument(
        "--all-attempts",
        action="store_true",
        help="with --explain, list every attempt; by default consecutive attempts with the "
        "same verdict share one row",
    )
    parser.add_argument(
        "--sort-by",
        choices=SORT_KEYS,
        default=SORT_KEYS[0],
        help=f"order of the text output's pod list (default: {SORT_KEYS[0]})",
    )
    parser.add_argument(
        "--pod-rows",
        type=positive_int_or_all,
        default=MAX_POD_ROWS,
        metavar="N|all",
        help=f"pods the text output lists before counting the rest per result (default: "
        f"{MAX_POD_ROWS}; all: every pod)",
    )
    parser.add_argument(
        "--metrics",
        metavar="FILE",
        type=output_file,
        help="write the scheduler's metrics in Prometheus text format to FILE at the end",
    )
    parser.add_argument(
        "--detail",
        choices=(DETAIL_FULL, DETAIL_SUMMARY),
        default=DETAIL_FULL,
        help="full: keep per-node filter statuses and scores of every attempt (default); "
        "summary: only outcomes and messages (faster, less memory on large runs)",
    )
    parser.add_argument(
        "--events", action="store_true", help="include every Kubernetes Event in json/yaml"
    )
    parser.add_argument(
        "--reproducible",
        action="store_true",
        help="leave the wall time out of json/yaml (null), so that the same inputs and --seed "
        "give byte-identical output",
    )
    parser.add_argument(
        "--check-invariants",
        action="store_true",
        help="check, at every binding and at the end, that no node is over-committed, no pod "
        "is bound twice or lost, every hard constraint holds and the cache is consistent; "
        "a summary goes to stderr, and any violation makes the exit status 1",
    )
    parser.add_argument(
        "--timeline",
        metavar="FILE",
        help="play a Timeline (kubesched.io/v1alpha1) of timed steps: node failures, taints, "
        "drains, usage, scaling; the report gains the evictions and a time axis",
    )
    parser.add_argument(
        "--strict-namespaces",
        action="store_true",
        help="refuse, as kube-apiserver does, an object whose namespace no Namespace manifest "
        "defines (default, kube-system, kube-public and kube-node-lease always exist); "
        "without it such a namespace is created, with a notice",
    )
    parser.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    parser.add_argument(
        "--max-pods",
        type=positive_int,
        default=DEFAULT_MAX_PODS,
        metavar="N",
        help="refuse, before the run, input whose workloads (replicas, Job parallelism or "
        "completions, DaemonSets: one pod per node) and pods add up to more than N pods "
        f"(default: {DEFAULT_MAX_PODS:,})",
    )
    live_cluster.add_arguments(parser)
    parser.add_argument(
        "--report",
        metavar="FILE.html",
        type=output_file,
        help="also write a self-contained HTML report (cluster map, pending reasons, pod "
        "table, each pod's filter verdicts and scores, timeline) to FILE.html; it opens "
        "offline in a browser",
    )
    parser.set_defaults(func=_simulate)


def _manifest_files(paths: list[str]) -> list[str]:
    """The files ``load_manifests`` reads for ``paths``, in its order (``-`` stays)."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if p != "-" and path.is_dir():
            out.extend(
                str(f)
                for f in sorted(path.rglob("*"))
                if f.is_file() and f.suffix in MANIFEST_SUFFIXES
            )
        else:
            out.append(p)
    return out


def _check_namespaces(objects: list[tuple[str, KubeObject]]) -> None:
    """NamespaceLifecycle: refuse the first object (with its file) whose namespace is
    neither defined among ``objects`` nor one every cluster has."""
    defined = set(SYSTEM_NAMESPACES) | {o.name for _, o in objects if o.kind == "Namespace"}
    for source, o in objects:
        if type(o).namespaced and o.namespace not in defined:
            raise UserInputError(
                f'namespaces "{o.namespace}" not found (--strict-namespaces: define the '
                "Namespace, or leave the flag out to have it created)",
                source=source,
                obj=f"{o.kind} {o.key}",
            )


def _show_notice(n: Notice) -> None:
    print(f"notice: {n}", file=sys.stderr)


def _simulate(args: argparse.Namespace) -> int:
    # Loading, admission and the controllers may each notice what they accept but
    # change or pass over: one line on stderr each, and all of them in the report.
    with collecting_notices(_show_notice) as notices:
        return _simulate_collecting(args, notices)


def _simulate_collecting(args: argparse.Namespace, notices: list[Notice]) -> int:
    explain = [parse_pod_key(k) for k in args.explain]
    registry = _registry()
    effective = load_config_argument(args.config, registry, args.feature_gates)[1]
    # The manifests are validated as the API server of the gates given validates them.
    with validating_with(effective.feature_gates):
        return _simulate_validated(args, notices, registry, effective, explain)


def _simulate_validated(
    args: argparse.Namespace,
    notices: list[Notice],
    registry: PluginRegistry,
    effective: EffectiveConfiguration,
    explain: list[str],
) -> int:
    if not args.paths and not args.from_cluster:
        raise UserInputError("give manifests (PATH...), --from-cluster, or both")
    captured = list(live_cluster.objects(args))
    if args.strict_namespaces:
        loaded = [(f, o) for f in _manifest_files(args.paths) for o in load_manifests([f])]
        _check_namespaces([*(("--from-cluster", o) for o in captured), *loaded])
        objects = [*captured, *(o for _, o in loaded)]
        sources = ["--from-cluster"] * len(captured) + [f for f, _ in loaded]
    else:
        sources = ["--from-cluster"] * len(captured)
        objects = [*captured, *load_manifests(args.paths, sources=sources)]
    if not objects:
        raise UserInputError(
            "no Kubernetes objects found", source=" ".join(args.paths) or "--from-cluster"
        )
    timeline = None
    if args.timeline is not None:
        timeline = TimelineRunner(*load_timeline(args.timeline))

    show_progress = not args.no_progress and sys.stderr.isatty()
    progress, stop_progress = progress_bar(show_progress, "scheduling", "pods placed")
    try:
        sim = Simulation(
            objects,
            config=effective,
            registry=registry,
            seed=args.seed,
            detail=args.detail,
            progress=progress,
            timeline=timeline,
            check_invariants=args.check_invariants,
            max_pods=args.max_pods,
            sources=sources,
        )
        # With --detail summary the records keep no verdicts or scores: the page's
        # stories are condensed as the attempts finish instead.
        stories = StoryCollector(sim) if args.report and args.detail != DETAIL_FULL else None
        run = sim.run()
    finally:
        stop_progress()

    text = args.output == "text"
    build = build_report if text else build_report_data
    report = build(
        run,
        # The text views need details only for the pods explained; json/yaml for every
        # pod unless --explain narrows them.
        explain=explain if (text or explain) else None,
        detail=args.detail,
        objects=objects,
        include_events=args.events,
        notices=notices,
    )
    if args.reproducible and isinstance(report, dict):
        report["wallTimeSeconds"] = None
    if args.metrics:
        try:
            Path(args.metrics).write_bytes(run.metrics.expose())
        except OSError as err:
            raise UserInputError(
                f"cannot write metrics: {err.strerror}", source=args.metrics
            ) from None

    if args.report:
        # --explain names pods whose verdicts and scores the page must keep.
        write_html_report(
            run,
            args.report,
            objects=objects,
            explain=explain,
            stories=stories,
            # The text views' report has every pod; the page needs no more of it.
            report=report if isinstance(report, SimulationReport) else None,
        )

    if args.output in ("json", "yaml"):
        write_data(report, args.output)
    else:
        assert isinstance(report, SimulationReport)
        console = output.console()
        if explain:
            for i, key in enumerate(explain):
                if i:
                    console.print()
                render_explain(report, key, console, all_attempts=args.all_attempts)
        else:
            render_summary(report, console, max_pod_rows=args.pod_rows, sort_by=args.sort_by)
    if run.invariants is not None:
        print(run.invariants.summary(), file=sys.stderr)
        if run.invariants.violations:
            raise InvariantViolation(run.invariants.violations)
    return 0
