"""Scheduler configuration: ``KubeSchedulerConfiguration`` models, defaults, validation, loading."""

from kubesched.config.defaults import (
    DEFAULT_MULTI_POINT_PLUGINS,
    OMITTED_DEFAULT_PLUGINS,
    default_configuration,
    default_plugin_args,
    default_plugins,
    merge_plugin_set,
    merge_plugins,
    set_defaults,
)
from kubesched.config.duration import Duration, format_duration, parse_duration
from kubesched.config.effective import (
    EffectiveConfiguration,
    EffectiveProfile,
    EnabledPlugin,
    effective_configuration,
    effective_to_dict,
)
from kubesched.config.loading import config_from_dict, load_config, parse_config_text
from kubesched.config.serialize import config_to_dict, config_to_yaml
from kubesched.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    ClientConnectionConfiguration,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from kubesched.config.validation import validate_configuration
from kubesched.framework.registry import PluginRegistry, default_registry

__all__ = [
    "API_VERSION",
    "DEFAULT_MULTI_POINT_PLUGINS",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "OMITTED_DEFAULT_PLUGINS",
    "ClientConnectionConfiguration",
    "Duration",
    "EffectiveConfiguration",
    "EffectiveProfile",
    "EnabledPlugin",
    "KubeSchedulerConfiguration",
    "KubeSchedulerProfile",
    "LeaderElectionConfiguration",
    "Plugin",
    "PluginConfig",
    "PluginRegistry",
    "PluginSet",
    "Plugins",
    "config_from_dict",
    "config_to_dict",
    "config_to_yaml",
    "default_configuration",
    "default_plugin_args",
    "default_plugins",
    "default_registry",
    "effective_configuration",
    "effective_to_dict",
    "format_duration",
    "load_config",
    "merge_plugin_set",
    "merge_plugins",
    "parse_config_text",
    "parse_duration",
    "set_defaults",
    "validate_configuration",
]
