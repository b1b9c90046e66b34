"""What the commands share to print: a delayed progress bar on stderr, a console, json/yaml."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import pydantic_core
import yaml


class YamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's safe dumper when PyYAML has it (much faster on large reports), writing
    plain YAML: an object met twice (a shared list or mapping) is written out again, never
    as an anchor and alias (``&id001`` / ``*id001``), which many readers of a report
    would not expect."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


PROGRESS_AFTER_SECONDS = 0.5
"""A progress bar appears only when a run lasts longer than this."""


def progress_bar(
    enabled: bool, label: str, unit: str
) -> tuple[Callable[[int, int | None], None] | None, Callable[[], None]]:
    """A ``progress(done, total)`` callback drawing a rich bar on stderr (after a short
    delay, so quick runs print nothing; ``total`` None for an open-ended count), and a
    function that removes it."""
    if not enabled:
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.perf_counter()
    state: dict[str, Any] = {}

    def update(done: int, total: int | None) -> None:
        if "bar" not in state:
            if time.perf_counter() - started < PROGRESS_AFTER_SECONDS:
                return
            bar = Progress(
                TextColumn(label),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(unit),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task(label, total=total)
        state["bar"].update(state["task"], completed=done, total=total)

    def stop() -> None:
        if "bar" in state:
            state["bar"].stop()

    return update, stop


def under_progress_bar(
    enabled: bool,
    label: str,
    unit: str,
    compute: Callable[[Callable[[int, int | None], None] | None], Any],
) -> Any:
    """``compute(progress)`` with a :func:`progress_bar` on stderr, removed afterwards."""
    progress, stop = progress_bar(enabled, label, unit)
    try:
        return compute(progress)
    finally:
        stop()


def print_notices(notices: Iterable[object]) -> None:
    """One ``notice:`` line on stderr per notice."""
    for n in notices:
        print(f"notice: {n}", file=sys.stderr)


def print_report(report: Any, output: str, render: Callable[[Any, Any], None]) -> None:
    """A command's report as ``--output`` says: ``render(report, console)`` for text, its
    ``to_dict()`` as json or yaml otherwise."""
    if output != "text":
        write_data(report.to_dict(), output)
    else:
        render(report, console())


def console() -> Any:
    """A rich console on stdout: colours on a terminal; plain and 120 columns (or
    ``$COLUMNS``) wide otherwise, so tables stay unwrapped in files."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(
        file=sys.stdout,
        no_color=True,
        highlight=False,
        width=int(os.environ.get("COLUMNS", "120")),
        emoji=False,
    )


def write_data(data: Any, output: str) -> None:
    """Write plain data (or a pydantic model dumped by alias) as ``json`` or ``yaml``."""
    if output == "json":
        # pydantic-core's encoder: the stdlib's is pure Python once indent is set, and a
        # full report of a large run is hundreds of megabytes.
        encoded = pydantic_core.to_json(data, indent=2, by_alias=True) + b"\n"
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:  # stdout replaced by a text stream (tests, notebooks)
            sys.stdout.write(encoded.decode())
        else:
            sys.stdout.flush()
            buffer.write(encoded)
            sys.stdout.flush()
    else:
        yaml.dump(data, sys.stdout, Dumper=YamlDumper, sort_keys=False)
