"""The ``kubesched`` command: argument parsing and dispatch to the sub-commands."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from kubesched import __sdk_version__, __version__
from kubesched.cli import (
    bench_cmd,
    capacity_cmd,
    compare_cmd,
    config_cmd,
    deschedule_cmd,
    dev_cluster_cmd,
    new_plugin_cmd,
    plugins_cmd,
    resilience_cmd,
    run_cmd,
    simulate_cmd,
)
from kubesched.cli.errors import Terminated, debugging, report_failure, terminate_raises

COMMANDS = (
    plugins_cmd,
    config_cmd,
    simulate_cmd,
    capacity_cmd,
    deschedule_cmd,
    resilience_cmd,
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
    debug_help = (
        "show the traceback of a failure (and of a plugin's exception); "
        "KUBESCHED_DEBUG=1 does the same"
    )
    parser.add_argument("--debug", action="store_true", help=debug_help)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    # Also after the command (``kubesched simulate --debug``), where it is easy to add
    # to a command line; SUPPRESS keeps the global flag's value when it is not there.
    for sub in subparsers.choices.values():
        _add_debug(sub, debug_help)
    return parser


def _add_debug(parser: argparse.ArgumentParser, help: str) -> None:
    """``--debug`` on ``parser`` and on its own sub-commands (``config validate``)."""
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_debug(sub, help)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status. Every failure is one line on stderr
    (``kubesched.cli.errors``); ``--debug`` adds the traceback."""
    try:
        with terminate_raises():
            args = build_parser().parse_args(argv)
            with debugging(args.debug):
                return _run(args)
    except (Exception, KeyboardInterrupt, Terminated) as err:
        return report_failure(err, "kubesched")


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        with contextlib.suppress(OSError, ValueError):  # stdout without a file descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Exception, KeyboardInterrupt, Terminated) as err:
        return report_failure(err, args.command)


if __name__ == "__main__":
    sys.exit(main())
