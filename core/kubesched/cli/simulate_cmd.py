"""``kubesched simulate``: schedule manifests on the embedded cluster and explain the result."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic_core
import yaml

from kubesched.api import load_manifests
from kubesched.config import effective_configuration, load_config
from kubesched.errors import UserInputError
from kubesched.framework.registry import PluginRegistry, default_registry
from kubesched.simulate.driver import DETAIL_FULL, DETAIL_SUMMARY, Simulation
from kubesched.simulate.invariants import InvariantViolation
from kubesched.simulate.render import render_explain, render_summary
from kubesched.simulate.report import (
    SimulationReport,
    build_report,
    build_report_data,
    parse_pod_key,
)

_YamlDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

PROGRESS_AFTER_SECONDS = 0.5
"""The progress bar appears only when a run lasts longer than this."""


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
    parser.add_argument("paths", metavar="PATH", nargs="+", help="manifest file or directory")
    parser.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream's)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the tie-breaking random choices (default: 0)"
    )
    parser.add_argument(
        "--output",
        "-o",
        choices=("text", "json", "yaml"),
        default="text",
        help="text for a person; json or yaml for a program (schema kubesched.io/simulation/v1)",
    )
    parser.add_argument(
        "--explain",
        metavar="NS/POD",
        action="append",
        default=[],
        help="explain this pod's decision (repeatable). With json/yaml, only these pods keep "
        "their per-node filters, scores and attempt history",
    )
    parser.add_argument(
        "--metrics",
        metavar="FILE",
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
    parser.add_argument("--no-progress", action="store_true", help="never show the progress bar")
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
    parser.set_defaults(func=_simulate)


def _progress_bar(enabled: bool) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A ``progress(done, total)`` callback drawing a rich bar on stderr (after a short
    delay, so quick runs print nothing), and a function that removes it."""
    if not enabled:
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.perf_counter()
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            if time.perf_counter() - started < PROGRESS_AFTER_SECONDS:
                return
            bar = Progress(
                TextColumn("scheduling"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("pods placed"),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task("simulate", total=total)
        state["bar"].update(state["task"], completed=done, total=total)

    def stop() -> None:
        if "bar" in state:
            state["bar"].stop()

    return update, stop


def _console() -> Any:
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    # Not a terminal: no colours, and a width that keeps tables unwrapped in files.
    return Console(
        file=sys.stdout,
        no_color=True,
        highlight=False,
        width=int(os.environ.get("COLUMNS", "120")),
        emoji=False,
    )


def _simulate(args: argparse.Namespace) -> int:
    explain = [parse_pod_key(k) for k in args.explain]
    registry = _registry()
    if args.config is not None and not Path(args.config).is_file():
        raise UserInputError("no such file", source=args.config, obj="--config")
    config = load_config(args.config, registry)
    effective = effective_configuration(config, registry, source=args.config or "<defaults>")
    objects = load_manifests(args.paths)
    if not objects:
        raise UserInputError("no Kubernetes objects found", source=" ".join(args.paths))

    show_progress = not args.no_progress and sys.stderr.isatty()
    progress, stop_progress = _progress_bar(show_progress)
    try:
        run = Simulation(
            objects,
            config=effective,
            registry=registry,
            seed=args.seed,
            detail=args.detail,
            progress=progress,
            check_invariants=args.check_invariants,
        ).run()
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

    if args.output == "json":
        # pydantic-core's encoder: the stdlib's is pure Python once indent is set, and a
        # full report of a large run is hundreds of megabytes.
        data = pydantic_core.to_json(report, indent=2) + b"\n"
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:  # stdout replaced by a text stream (tests, notebooks)
            sys.stdout.write(data.decode())
        else:
            sys.stdout.flush()
            buffer.write(data)
            sys.stdout.flush()
    elif args.output == "yaml":
        yaml.dump(report, sys.stdout, Dumper=_YamlDumper, sort_keys=False)
    else:
        assert isinstance(report, SimulationReport)
        console = _console()
        if explain:
            for i, key in enumerate(explain):
                if i:
                    console.print()
                render_explain(report, key, console)
        else:
            render_summary(report, console)
    if run.invariants is not None:
        print(run.invariants.summary(), file=sys.stderr)
        if run.invariants.violations:
            raise InvariantViolation(run.invariants.violations)
    return 0
