"""Fixtures of the configuration tests: a registry of toy plugins, a config file writer."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from kubesched.framework.registry import PluginRegistry

from .toy_plugins import toy_registry

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.fixture
def registry() -> PluginRegistry:
    """The upstream-named toys and the custom toys."""
    return toy_registry()


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a config file; the v1 header is prepended unless ``header=False``."""

    def write(body: str, name: str = "config.yaml", header: bool = True) -> Path:
        path = tmp_path / name
        path.write_text((HEADER if header else "") + textwrap.dedent(body), encoding="utf-8")
        return path

    return write
