"""The ``--config FILE`` and ``--feature-gates`` options of simulate, capacity, compare, run
and bench, and their loading."""

from __future__ import annotations

import argparse
from pathlib import Path

from kubesched.config import (
    EffectiveConfiguration,
    KubeSchedulerConfiguration,
    effective_configuration,
    load_config,
)
from kubesched.errors import UserInputError
from kubesched.features import FeatureGates, parse_feature_gates
from kubesched.framework.registry import PluginRegistry


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE``: a KubeSchedulerConfiguration, upstream's when absent; and
    ``--feature-gates``."""
    parser.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream's)"
    )
    add_feature_gates_argument(parser)


def add_feature_gates_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--feature-gates A=true,B=false`` (repeatable), kube-scheduler's option."""
    parser.add_argument(
        "--feature-gates",
        metavar="GATES",
        action="append",
        default=[],
        help="kube-scheduler v1.36's feature gates, e.g. NodeDeclaredFeatures=false "
        "(comma-separated NAME=true|false; repeatable; see docs/configuration.md)",
    )


def feature_gates_argument(values: list[str] | None) -> FeatureGates:
    """The gates of ``--feature-gates`` (every gate at its default without one), checked
    as kube-scheduler checks them."""
    return parse_feature_gates(values or ())


def load_config_file(
    path: str | None,
    registry: PluginRegistry,
    gates: FeatureGates | None = None,
    option: str = "--config",
) -> KubeSchedulerConfiguration:
    """The KubeSchedulerConfiguration file named by ``option`` (upstream's defaults when
    ``path`` is None), validated; a missing file is a one-line user error naming it."""
    if path is not None and not Path(path).is_file():
        raise UserInputError("no such file", source=path, obj=option)
    return load_config(path, registry, gates)


def load_config_argument(
    path: str | None, registry: PluginRegistry, feature_gates: list[str] | None = None
) -> tuple[KubeSchedulerConfiguration, EffectiveConfiguration]:
    """The configuration of ``--config`` (upstream's without one) under the gates of
    ``--feature-gates``, validated against the plugins of ``registry``, and what each of
    its profiles runs. A missing file is a one-line user error naming the option."""
    gates = feature_gates_argument(feature_gates)
    config = load_config_file(path, registry, gates)
    source = path or "<defaults>"
    return config, effective_configuration(config, registry, source=source, gates=gates)
