"""``kubesched config``: validate a configuration, print the defaults or the effective profiles."""

from __future__ import annotations

import argparse
import json
from typing import Any

import yaml

from kubesched.cli.config_option import add_feature_gates_argument, feature_gates_argument
from kubesched.config import (
    EffectiveConfiguration,
    config_to_yaml,
    default_configuration,
    effective_configuration,
    effective_to_dict,
    load_config,
)
from kubesched.framework.plugin import EXTENSION_POINTS
from kubesched.framework.registry import PluginRegistry, default_registry


def _registry() -> PluginRegistry:
    # One indirection so that tests can substitute a registry of toy plugins.
    return default_registry()


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``config`` command and its ``validate``, ``defaults``, ``effective`` sub-commands."""
    parser = subparsers.add_parser(
        "config",
        help="validate a KubeSchedulerConfiguration, print the defaults or the effective profiles",
        description="Work with KubeSchedulerConfiguration files "
        "(apiVersion: kubescheduler.config.k8s.io/v1).",
    )
    commands = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)

    validate = commands.add_parser(
        "validate",
        help="check a configuration file against upstream's rules and the installed plugins",
        description="Load FILE, apply upstream's defaults, validate it and build every profile "
        "with the installed plugins, as kube-scheduler does at start-up.",
    )
    validate.add_argument(
        "file", metavar="FILE", help="a KubeSchedulerConfiguration (YAML or JSON)"
    )
    add_feature_gates_argument(validate)
    validate.set_defaults(func=_validate)

    defaults = commands.add_parser(
        "defaults",
        help="print upstream's default configuration as YAML",
        description="Print the default KubeSchedulerConfiguration: upstream's defaults, with the "
        "default args of the installed plugins.",
    )
    add_feature_gates_argument(defaults)
    defaults.set_defaults(func=_defaults)

    effective = commands.add_parser(
        "effective",
        help="print, per profile, the plugins of each extension point and their args",
        description="Resolve FILE (default: the default configuration) into what each profile "
        "runs: multiPoint expanded, defaults merged, args defaulted. Needs the plugins installed.",
    )
    effective.add_argument(
        "file", metavar="FILE", nargs="?", help="a KubeSchedulerConfiguration (default: defaults)"
    )
    effective.add_argument(
        "--output",
        "-o",
        choices=("text", "yaml", "json"),
        default="text",
        help="output format (default: text)",
    )
    add_feature_gates_argument(effective)
    effective.set_defaults(func=_effective)


def _load_effective(path: str | None, feature_gates: list[str]) -> EffectiveConfiguration:
    registry = _registry()
    gates = feature_gates_argument(feature_gates)
    config = load_config(path, registry, gates)
    return effective_configuration(config, registry, source=path or "<defaults>", gates=gates)


def _validate(args: argparse.Namespace) -> int:
    effective = _load_effective(args.file, args.feature_gates)
    count = len(effective.profiles)
    print(f"{args.file}: valid ({count} profile{'' if count == 1 else 's'})")
    return 0


def _defaults(args: argparse.Namespace) -> int:
    gates = feature_gates_argument(args.feature_gates)
    print(config_to_yaml(default_configuration(_registry(), gates)), end="")
    return 0


def _effective(args: argparse.Namespace) -> int:
    effective = _load_effective(args.file, args.feature_gates)
    data = effective_to_dict(effective)
    if args.output == "json":
        print(json.dumps(data, indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), end="")
    else:
        print(render_text(data), end="")
    return 0


def render_text(data: dict[str, Any]) -> str:
    """The effective configuration (``effective_to_dict``'s shape) as readable tables."""
    lines: list[str] = []
    for profile in data["profiles"]:
        if lines:
            lines.append("")
        percentage = profile["percentageOfNodesToScore"]
        shown = "adaptive" if not percentage else f"{percentage}%"
        lines.append(f'Profile "{profile["schedulerName"]}" (percentageOfNodesToScore: {shown})')
        rows = [("EXTENSION POINT", "PLUGIN", "WEIGHT")]
        for ep in EXTENSION_POINTS:
            entries = profile["plugins"][ep.name]
            if not entries:
                rows.append((ep.name, "-", ""))
            for i, entry in enumerate(entries):
                weight = str(entry["weight"]) if "weight" in entry else ""
                rows.append((ep.name if i == 0 else "", entry["name"], weight))
        widths = [max(len(row[c]) for row in rows) for c in range(2)]
        for row in rows:
            lines.append(f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}".rstrip())
        with_args = {k: v for k, v in profile["pluginArgs"].items() if v is not None}
        lines.append("  Plugin args:" if with_args else "  Plugin args: none")
        for name, args in with_args.items():
            lines.append(f"    {name}:")
            body = yaml.safe_dump(args, sort_keys=False, default_flow_style=False).rstrip()
            lines.extend(f"      {line}" for line in body.splitlines())
    return "\n".join(lines) + "\n"
