"""The ``kubesched`` command: argument parsing and dispatch to the sub-commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kubesched import __sdk_version__, __version__
from kubesched.cli import (
    bench_cmd,
    capacity_cmd,
    compare_cmd,
    config_cmd,
    dev_cluster_cmd,
    new_plugin_cmd,
    plugins_cmd,
    run_cmd,
    simulate_cmd,
)
from kubesched.errors import KubeschedError

COMMANDS = (
    plugins_cmd,
    config_cmd,
    simulate_cmd,
    capacity_cmd,
    run_cmd,
    bench_cmd,
    compare_cmd,
    dev_cluster_cmd,
    new_plugin_cmd,
)
"""Sub-command modules; each has ``register(subparsers)`` setting ``func`` on its parser."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = argparse.ArgumentParser(
        prog="kubesched",
        description="The Kubernetes scheduler as a Python plugin framework, with a simulator.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"kubesched {__version__} (plugin SDK {__sdk_version__})",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (errors print without a traceback)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KubeschedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        # Ctrl-C: one line, no traceback, the shell's 128 + SIGINT.
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
