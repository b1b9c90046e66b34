"""The ``--config FILE`` option of simulate, capacity, compare and run, and its loading."""

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
from kubesched.framework.registry import PluginRegistry


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE``: a KubeSchedulerConfiguration, upstream's when absent."""
    parser.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream's)"
    )


def load_config_argument(
    path: str | None, registry: PluginRegistry
) -> tuple[KubeSchedulerConfiguration, EffectiveConfiguration]:
    """The configuration of ``--config`` (upstream's without one), validated against the
    plugins of ``registry``, and what each of its profiles runs. A missing file is a
    one-line user error naming the option."""
    if path is not None and not Path(path).is_file():
        raise UserInputError("no such file", source=path, obj="--config")
    config = load_config(path, registry)
    return config, effective_configuration(config, registry, source=path or "<defaults>")
