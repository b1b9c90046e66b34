"""Writing a configuration back out: the mapping and YAML that ``kubesched config`` prints."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.config.types import KubeSchedulerConfiguration


def _prune_plugins(plugins: dict[str, Any]) -> dict[str, Any]:
    # Upstream prints `{}` for untouched plugin sets; leaving them out reads better
    # and loads back to the same configuration.
    pruned: dict[str, Any] = {}
    for key, plugin_set in plugins.items():
        kept = {k: v for k, v in plugin_set.items() if v}
        if kept:
            pruned[key] = kept
    return pruned


def config_to_dict(config: KubeSchedulerConfiguration) -> dict[str, Any]:
    """The configuration as the mapping a file holds (camelCase, durations as "15s").

    Unset optional fields and empty plugin sets are left out; the result loads back to
    an equal configuration.
    """
    data = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    for profile in data.get("profiles", []):
        if "plugins" in profile:
            profile["plugins"] = _prune_plugins(profile["plugins"])
    if not data.get("extenders"):
        data.pop("extenders", None)
    return data


def config_to_yaml(config: KubeSchedulerConfiguration) -> str:
    """The configuration as YAML, keys in the models' order."""
    return yaml.safe_dump(
        config_to_dict(config), sort_keys=False, default_flow_style=False, allow_unicode=True
    )
