"""``kubesched plugins``: the installed plugins, their extension points and where they come from."""

from __future__ import annotations

import argparse
import json
import sys

from kubesched.framework.registry import PluginRegistry, default_registry


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plugins`` sub-command."""
    parser = subparsers.add_parser(
        "plugins",
        help="list the installed scheduler plugins",
        description="List every plugin registered under the 'kubesched.plugins' entry points: "
        "its extension points, its args model and the distribution that provides it. "
        "Plugins that failed to load are listed with the reason; plugins built for an "
        "incompatible plugin SDK (their sdk_version) are warned about.",
    )
    parser.add_argument(
        "--output", "-o", choices=("text", "json"), default="text", help="output format"
    )
    parser.set_defaults(func=run)


def describe(registry: PluginRegistry) -> dict:
    """The registry as plain data (the JSON output)."""
    return {
        "plugins": [
            {
                "name": e.name,
                "extensionPoints": list(e.extension_points),
                "args": e.args_model.__name__ if e.args_model else None,
                "distribution": e.distribution,
                "version": e.version,
                "entryPoint": e.entry_point,
                "sdkVersion": e.sdk_version,
                "sdkWarning": e.sdk_warning,
            }
            for e in registry
        ],
        "errors": [
            {"name": err.name, "distribution": err.distribution, "reason": err.reason}
            for err in registry.errors
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Print the installed plugins; exit 1 if any plugin failed to load.

    A plugin built for an incompatible plugin SDK loads (it may well work) but is
    warned about on stderr, whatever the output format.
    """
    registry = default_registry()
    data = describe(registry)
    if args.output == "json":
        print(json.dumps(data, indent=2))
    else:
        print(format_table(data["plugins"]))
        for err in registry.errors:
            print(f"failed to load {err}")
    for entry in registry:
        if entry.sdk_warning:
            origin = f" (from {entry.distribution})" if entry.distribution else ""
            print(f"warning: plugin {entry.name!r}{origin}: {entry.sdk_warning}", file=sys.stderr)
    return 1 if registry.errors else 0


def format_table(plugins: list[dict]) -> str:
    """A plain-text table of plugins, one row each."""
    headers = ("NAME", "EXTENSION POINTS", "ARGS", "DISTRIBUTION")
    rows = [
        (
            p["name"],
            ", ".join(p["extensionPoints"]),
            p["args"] or "-",
            f"{p['distribution'] or '?'} {p['version'] or ''}".strip(),
        )
        for p in plugins
    ]
    if not rows:
        return "no plugins installed (entry-point group 'kubesched.plugins' is empty)"
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]
    return "\n".join(lines)
