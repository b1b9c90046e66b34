"""The ``kubesched`` command: argument parsing and dispatch to the sub-commands."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from kubesched import __version__
from kubesched.cli.errors import Terminated, debugging, report_failure, terminate_raises

COMMANDS = {
    "plugins": "plugins_cmd",
    "config": "config_cmd",
    "simulate": "simulate_cmd",
    "capacity": "capacity_cmd",
    "deschedule": "deschedule_cmd",
    "resilience": "resilience_cmd",
    "run": "run_cmd",
    "bench": "bench_cmd",
    "compare": "compare_cmd",
    "dev-cluster": "dev_cluster_cmd",
    "new-plugin": "new_plugin_cmd",
}
"""Sub-command → its module in ``kubesched.cli``, whose ``register(subparsers)`` sets
``func`` on its parser. A command line imports only its command's module (each imports
what its command needs: the simulator, the Kubernetes client...)."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the sub-command that ``argv`` names, or of every sub-command
    when it names none (``kubesched --help``, a missing or mistyped command) or is None."""
    parser = argparse.ArgumentParser(
        prog="kubesched",
        description="The Kubernetes scheduler as a Python plugin framework, with a simulator.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
    debug_help = (
        "show the traceback of a failure (and of a plugin's exception); "
        "KUBESCHED_DEBUG=1 does the same"
    )
    parser.add_argument("--debug", action="store_true", help=debug_help)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules(argv):
        module.register(subparsers)
    # Also after the command (``kubesched simulate --debug``), where it is easy to add
    # to a command line; SUPPRESS keeps the global flag's value when it is not there.
    for sub in subparsers.choices.values():
        _add_debug(sub, debug_help)
    return parser


def _command_modules(argv: Sequence[str] | None) -> list[ModuleType]:
    """The command modules to register: the one of the command named by the first word of
    ``argv`` that is not an option (the global options take no value), else all of them."""
    words = [arg for arg in argv or () if not arg.startswith("-")][:1]
    if not words and argv and "--version" in argv:
        return []  # it prints the version before anything else is parsed
    names = [word for word in words if word in COMMANDS] or list(COMMANDS)
    return [importlib.import_module(f"kubesched.cli.{COMMANDS[name]}") for name in names]


class _Version(argparse.Action):
    """``--version``: the package's and the plugin SDK's versions (the SDK's version is
    read only when asked for: it lives beside the framework)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from kubesched.framework.sdk import SDK_VERSION

        sys.stdout.write(f"kubesched {__version__} (plugin SDK {SDK_VERSION})\n")
        parser.exit()


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
            if argv is None:
                argv = sys.argv[1:]
            args = build_parser(argv).parse_args(argv)
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
