"""The ``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1) as pydantic models."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
)
from pydantic.alias_generators import to_camel

from kubesched.config.duration import Duration

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
"""The only configuration version kubesched reads, as kube-scheduler v1.36 (which no
longer serves ``v1beta3``)."""
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
"""The scheduler name of the single default profile (``spec.schedulerName`` of a pod)."""

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


class ConfigModel(BaseModel):
    """Base of the configuration models: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


class Plugin(ConfigModel):
    """A plugin named in a ``PluginSet``; ``weight`` only matters at Score (and multiPoint)."""

    name: str = Field(description="The plugin's name, as registered (e.g. NodeResourcesFit).")
    weight: int | None = Field(
        default=None,
        ge=_INT32_MIN,
        le=_INT32_MAX,
        description="Score weight; unset or 0 means 1. Ignored outside Score and multiPoint.",
    )


class PluginSet(ConfigModel):
    """The plugins enabled and disabled at one extension point (or at ``multiPoint``).

    ``disabled`` may name ``"*"`` to disable every default plugin of the extension point.
    """

    enabled: tuple[Plugin, ...] = Field(default=(), description="Plugins to run, in order.")
    disabled: tuple[Plugin, ...] = Field(
        default=(), description='Default plugins not to run ("*" for all of them).'
    )

    @field_validator("enabled", "disabled", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    def is_empty(self) -> bool:
        """True when the set neither enables nor disables anything."""
        return not self.enabled and not self.disabled


class Plugins(ConfigModel):
    """A profile's plugins: one ``PluginSet`` per extension point, and ``multiPoint``.

    A plugin enabled at ``multiPoint`` runs at every extension point it implements
    (unless disabled there); the specific sets override or extend that.
    """

    multi_point: PluginSet = PluginSet()
    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    placement_generate: PluginSet = PluginSet()
    placement_score: PluginSet = PluginSet()

    @field_validator("*", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return PluginSet() if value is None else value

    def plugin_set(self, config_key: str) -> PluginSet:
        """The set under the YAML key ``config_key`` (``"multiPoint"``, ``"preFilter"``, ...)."""
        return getattr(self, PLUGIN_SET_FIELDS[config_key])


PLUGIN_SET_FIELDS: dict[str, str] = {
    field.alias or name: name for name, field in Plugins.model_fields.items()
}
"""YAML key of each plugin set (``multiPoint`` and every extension point) → Python field."""


class PluginConfig(ConfigModel):
    """The ``args`` of one plugin in a profile, validated by the plugin's ``Args`` model."""

    name: str = Field(description="The plugin the args are for.")
    args: dict[str, Any] = Field(
        default_factory=dict, description="The plugin's args (its Args model, as a mapping)."
    )

    @field_validator("args", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


class KubeSchedulerProfile(ConfigModel):
    """A scheduling profile: the plugins (and their args) for one ``schedulerName``."""

    scheduler_name: str | None = Field(
        default=None,
        description="Pods with this spec.schedulerName use the profile. Defaults to "
        '"default-scheduler" only when there is a single profile.',
    )
    percentage_of_nodes_to_score: int | None = Field(
        default=None,
        description="Overrides the global percentageOfNodesToScore for this profile; 0..100.",
    )
    plugins: Plugins | None = Field(
        default=None, description="Changes to the default plugins (merged with them)."
    )
    plugin_config: tuple[PluginConfig, ...] = Field(
        default=(), description="Args of plugins, one entry per plugin."
    )

    @field_validator("plugin_config", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    def plugin_args(self, name: str) -> dict[str, Any] | None:
        """The ``args`` given for plugin ``name`` in ``pluginConfig`` (first entry), or None."""
        for pc in self.plugin_config:
            if pc.name == name:
                return pc.args
        return None


class LeaderElectionConfiguration(ConfigModel):
    """Lease-based leader election between scheduler replicas (see docs/configuration.md)."""

    leader_elect: bool = Field(
        default=True, description="Elect a leader before scheduling; only the leader schedules."
    )
    lease_duration: Duration = Field(
        default=15.0,
        description="How long standbys wait, after the last renewal they observed, before "
        "taking over the lease. Must be greater than renewDeadline.",
    )
    renew_deadline: Duration = Field(
        default=10.0,
        description="How long the leader keeps retrying to renew before it stops leading. "
        "Must be greater than retryPeriod x 1.2.",
    )
    retry_period: Duration = Field(
        default=2.0, description="The interval between attempts to acquire or renew the lease."
    )
    resource_lock: str = Field(
        default="leases", description='The lock object type; only "leases" is supported.'
    )
    resource_name: str = Field(default="kube-scheduler", description="The lock object's name.")
    resource_namespace: str = Field(
        default="kube-system", description="The lock object's namespace."
    )


class ClientConnectionConfiguration(ConfigModel):
    """How to talk to the API server (used by the ``kube`` cluster backend)."""

    kubeconfig: str = Field(default="", description="Path to a kubeconfig; empty: in-cluster.")
    accept_content_types: str = Field(default="", description="The Accept header (upstream).")
    content_type: str = Field(
        default="application/vnd.kubernetes.protobuf",
        description="Content type of requests (upstream; kubesched's client sends JSON).",
    )
    qps: float = Field(default=50.0, description="Queries per second to the API server.")
    burst: int = Field(default=100, description="Extra queries allowed in a burst; >= 0.")

    @field_validator("qps", "burst", mode="before")
    @classmethod
    def _zero_means_default(cls, value: Any, info: ValidationInfo) -> Any:
        # Upstream's defaulting treats 0 as "unset" for both.
        if value in (0, 0.0, None) and not isinstance(value, bool):
            return 50.0 if info.field_name == "qps" else 100
        return value


def _decode_base64(value: Any) -> Any:
    # Go's encoding/json reads a []byte field from a base64 string (standard alphabet).
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as err:
            raise ValueError(f"illegal base64 data: {err}") from None
    return value


Base64Bytes = Annotated[
    bytes,
    BeforeValidator(_decode_base64),
    PlainSerializer(lambda b: base64.b64encode(b).decode(), return_type=str),
]
"""A ``[]byte`` field of the configuration: base64 in YAML, bytes in Python."""


class ExtenderTLSConfig(ConfigModel):
    """TLS to an extender: client certificate, CA, server name (client-go's TLS fields)."""

    insecure: bool = Field(default=False, description="Skip verifying the server's certificate.")
    server_name: str = Field(
        default="", description="The name to verify the server's certificate against (SNI)."
    )
    cert_file: str = Field(default="", description="Client certificate file (PEM).")
    key_file: str = Field(default="", description="Client key file (PEM).")
    ca_file: str = Field(default="", description="CA bundle to verify the server with (PEM).")
    cert_data: Base64Bytes = Field(
        default=b"", description="Client certificate (PEM, base64); takes precedence over certFile."
    )
    key_data: Base64Bytes = Field(
        default=b"", description="Client key (PEM, base64); takes precedence over keyFile."
    )
    ca_data: Base64Bytes = Field(
        default=b"", description="CA bundle (PEM, base64); takes precedence over caFile."
    )


class ExtenderManagedResource(ConfigModel):
    """An extended resource an extender manages."""

    name: str = Field(description="The extended resource's name (e.g. example.com/gpu).")
    ignored_by_scheduler: bool = Field(
        default=False, description="NodeResourcesFit does not check this resource."
    )


DEFAULT_EXTENDER_TIMEOUT = 5.0
"""kube-scheduler's timeout of an extender call when ``httpTimeout`` is unset or 0."""


class Extender(ConfigModel):
    """A scheduler extender: a webhook (or, with ``python://``, an in-process object)
    called at Filter, Prioritize, preemption and Bind (see docs/configuration.md)."""

    url_prefix: str = Field(
        default="",
        description="The extender's URL; a verb is appended (urlPrefix/filterVerb). "
        "python://NAME selects the in-process extender NAME (entry point group "
        "kubesched.extenders).",
    )
    filter_verb: str = Field(default="", description="Verb of the Filter call; empty: none.")
    preempt_verb: str = Field(default="", description="Verb of the preemption call; empty: none.")
    prioritize_verb: str = Field(
        default="", description="Verb of the Prioritize call; empty: none."
    )
    weight: int = Field(
        default=0,
        description="Multiplies the extender's 0-10 scores (scaled to 0-100); > 0 when "
        "prioritizeVerb is set.",
    )
    bind_verb: str = Field(
        default="", description="Verb of the Bind call; the extender then binds the pods."
    )
    enable_https: bool = Field(
        default=False,
        alias="enableHTTPS",
        description="Use TLS; without a CA the server's certificate is not verified.",
    )
    tls_config: ExtenderTLSConfig | None = Field(default=None, description="TLS settings.")
    http_timeout: Duration = Field(
        default=DEFAULT_EXTENDER_TIMEOUT,
        description="Timeout of each call; unset or 0: 5s.",
    )
    node_cache_capable: bool = Field(
        default=False, description="Send node names only (the extender caches the nodes)."
    )
    managed_resources: tuple[ExtenderManagedResource, ...] = Field(
        default=(),
        description="Extended resources the extender manages; when set, only pods that "
        "request one of them are sent to it.",
    )
    ignorable: bool = Field(
        default=False, description="Scheduling goes on without the extender when it fails."
    )

    @field_validator("managed_resources", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("http_timeout")
    @classmethod
    def _zero_means_default(cls, value: float) -> float:
        # As kube-scheduler, which sets the default timeout on a zero duration.
        return value or DEFAULT_EXTENDER_TIMEOUT


def ignored_extended_resources(extenders: tuple[Extender, ...]) -> tuple[str, ...]:
    """The managed resources with ``ignoredByScheduler``: NodeResourcesFit leaves them to
    their extender (upstream replaces the plugin's ``ignoredResources`` with these)."""
    return tuple(r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler)


class KubeSchedulerConfiguration(ConfigModel):
    """The scheduler's configuration file (``apiVersion: kubescheduler.config.k8s.io/v1``).

    Range checks run in :func:`kubesched.config.validate_configuration` (as upstream's
    ``ValidateKubeSchedulerConfiguration``), so that every problem of a file is
    reported at once with its field path.
    """

    api_version: str = Field(default=API_VERSION, description=f'Must be "{API_VERSION}".')
    kind: str = Field(default=KIND, description=f'Must be "{KIND}".')
    parallelism: int = Field(
        default=16, description="Parallelism of the scheduling algorithm; > 0."
    )
    leader_election: LeaderElectionConfiguration = LeaderElectionConfiguration()
    client_connection: ClientConnectionConfiguration = ClientConnectionConfiguration()
    healthz_bind_address: str | None = Field(
        default=None, description="Deprecated upstream; accepted and ignored."
    )
    metrics_bind_address: str | None = Field(
        default=None, description="Deprecated upstream; accepted and ignored."
    )
    enable_profiling: bool = Field(default=True, description="Serve profiling endpoints.")
    enable_contention_profiling: bool | None = Field(
        default=None, description="Defaults to enableProfiling."
    )
    percentage_of_nodes_to_score: int | None = Field(
        default=None,
        description="Percentage of nodes to find feasible before scoring; 0..100; unset or 0: "
        "adaptive (50% at 100 nodes down to 5% at 5000+).",
    )
    pod_initial_backoff_seconds: int = Field(
        default=1, description="Initial backoff of an unschedulable pod, in seconds; > 0."
    )
    pod_max_backoff_seconds: int = Field(
        default=10, description="Maximum backoff, in seconds; >= podInitialBackoffSeconds."
    )
    delay_cache_until_active: bool = Field(
        default=False, description="Fill the cache only once this replica is the leader."
    )
    profiles: tuple[KubeSchedulerProfile, ...] = Field(
        default=(), description='Scheduling profiles; default: one "default-scheduler".'
    )
    extenders: tuple[Extender, ...] = Field(
        default=(), description="Scheduler extenders, called in order after the plugins."
    )

    @field_validator("profiles", "extenders", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("api_version")
    @classmethod
    def _check_api_version(cls, value: str) -> str:
        if value != API_VERSION:
            raise ValueError(not_registered(KIND, value))
        return value

    @field_validator("kind")
    @classmethod
    def _check_kind(cls, value: str) -> str:
        if value != KIND:
            raise ValueError(not_registered(value, API_VERSION))
        return value


def not_registered(kind: str, version: str) -> str:
    """kube-scheduler's words for a file of another kind or version than
    ``KubeSchedulerConfiguration`` ``v1``, with what kubesched reads instead."""
    message = f'no kind "{kind}" is registered for version "{version}"'
    if version.startswith(f"{API_GROUP}/") and version != API_VERSION:
        # v1beta3, the last beta, was removed in Kubernetes 1.29; its fields are v1's.
        message += f' (kube-scheduler v1.36 reads only "{API_VERSION}")'
    return message
