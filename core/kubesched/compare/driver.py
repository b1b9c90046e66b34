"""One comparison end to end: prepare the plan, let the real scheduler decide, replay."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from kubesched.api import KubeObject
from kubesched.backend.kube import KubeClient, load_configuration
from kubesched.compare.prepare import prepare
from kubesched.compare.real import ScratchServer
from kubesched.compare.replay import replay
from kubesched.compare.report import ComparisonReport
from kubesched.config import EffectiveConfiguration, default_configuration, effective_configuration
from kubesched.config.types import ClientConnectionConfiguration
from kubesched.framework.registry import PluginRegistry, default_registry

DEFAULT_PREFIX = "compare-"
"""Scratch namespaces are named this, a run id, ``-`` and the manifest's namespace."""
_UNTHROTTLED = ClientConnectionConfiguration(qps=5000, burst=5000)


def compare(
    objects: Iterable[KubeObject],
    *,
    kubeconfig: str | None,
    config: EffectiveConfiguration | None = None,
    registry: PluginRegistry | None = None,
    prefix: str = DEFAULT_PREFIX,
    allow_foreign_nodes: bool = False,
    timeout: float = 30.0,
    config_source: str = "<defaults>",
) -> ComparisonReport:
    """Schedule ``objects`` with the real scheduler serving the API server of
    ``kubeconfig`` and with kubesched (``config``), and judge each pod.

    Everything compare creates in the server is removed before this returns.
    """
    registry = registry or default_registry()
    if config is None:
        config = effective_configuration(default_configuration(registry), registry)
    # A run id keeps the namespaces of two runs (or a run that could not clean up) apart.
    run_prefix = f"{prefix}{secrets.token_hex(2)}-"
    plan = prepare(objects, run_prefix)
    client = KubeClient(load_configuration(kubeconfig), _UNTHROTTLED)
    server = ScratchServer(client, allow_foreign_nodes=allow_foreign_nodes, timeout=timeout)
    try:
        real = server.run(plan)
    finally:
        server.clean()
        client.close()
    pods = replay(real, config, registry, run_prefix)
    return ComparisonReport.of(client.host, config_source, pods)
