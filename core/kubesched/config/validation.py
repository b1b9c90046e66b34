"""Validation of a defaulted configuration, rule for rule as upstream's, with field paths."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from kubesched.api.resources import is_extended_resource_name
from kubesched.api.validation.syntax import is_qualified_name
from kubesched.config.duration import format_duration
from kubesched.config.types import (
    API_VERSION,
    PLUGIN_SET_FIELDS,
    Extender,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
)
from kubesched.errors import (
    ErrorType,
    FieldProblem,
    format_loc,
    problems_from_validation_error,
    show_value,
)
from kubesched.features import FeatureGates
from kubesched.framework.args import ARGS_FEATURE_GATES
from kubesched.framework.registry import PluginRegistry

JITTER_FACTOR = 1.2
"""client-go's leader election jitter: renewDeadline must exceed retryPeriod times this."""

INVALID_PLUGINS: tuple[str, ...] = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
"""Plugins that upstream's v1 configuration rejects (removed in-tree volume limits)."""


def invalid(path: str, value: Any, message: str) -> FieldProblem:
    """A Kubernetes-style ``Invalid value`` problem: ``path: Invalid value: 101: message``."""
    return FieldProblem(path, f"Invalid value: {show_value(value)}: {message}")


def required(path: str) -> FieldProblem:
    """A Kubernetes-style ``Required value`` problem."""
    return FieldProblem(path, "Required value", ErrorType.REQUIRED)


def duplicate(path: str, value: Any, detail: str = "") -> FieldProblem:
    """A Kubernetes-style ``Duplicate value`` problem."""
    return FieldProblem(path, f"Duplicate value: {show_value(value)}{detail}", ErrorType.DUPLICATE)


def installed_plugins_text(registry: PluginRegistry) -> str:
    """``installed plugins: A, B`` (or none), and the plugins that failed to load."""
    names = registry.names()
    text = "installed plugins: " + (", ".join(names) if names else "none")
    if registry.errors:
        text += "; plugins that failed to load: " + "; ".join(str(e) for e in registry.errors)
    return text


def unknown_plugin_message(name: str, registry: PluginRegistry) -> str:
    """Why plugin ``name`` cannot be used: not installed, a close match, what is installed."""
    message = f'plugin "{name}" is not installed'
    close = difflib.get_close_matches(name, registry.names(), n=1)
    if close:
        message += f' (did you mean "{close[0]}"?)'
    return f"{message}; {installed_plugins_text(registry)}"


def _leader_election_problems(config: KubeSchedulerConfiguration) -> list[FieldProblem]:
    le = config.leader_election
    problems: list[FieldProblem] = []
    if not le.leader_elect:
        return problems
    # component-base's ValidateLeaderElectionConfiguration ...
    for field, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            problems.append(
                invalid(
                    f"leaderElection.{field}", format_duration(value), "must be greater than zero"
                )
            )
    if le.lease_duration <= le.renew_deadline:
        problems.append(
            invalid(
                "leaderElection.leaseDuration",
                format_duration(le.lease_duration),
                f"must be greater than renewDeadline ({format_duration(le.renew_deadline)})",
            )
        )
    # ... and client-go's NewLeaderElector, which kube-scheduler only reaches at start-up
    # (client-go's leaderelection); checking it here reports it with the others.
    if le.renew_deadline <= JITTER_FACTOR * le.retry_period:
        problems.append(
            invalid(
                "leaderElection.renewDeadline",
                format_duration(le.renew_deadline),
                f"must be greater than retryPeriod*JitterFactor "
                f"({format_duration(le.retry_period)}*{JITTER_FACTOR})",
            )
        )
    for field, value in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not value:
            problems.append(required(f"leaderElection.{field}"))
    # kube-scheduler accepts only Lease locks since endpoints/configmaps locks were
    # removed from client-go (older kube-scheduler versions accepted them).
    if le.resource_lock and le.resource_lock != "leases":
        problems.append(
            invalid(
                "leaderElection.resourceLock",
                le.resource_lock,
                'resourceLock value must be "leases"',
            )
        )
    return problems


def _percentage_problem(path: str, value: int | None) -> list[FieldProblem]:
    if value is not None and not 0 <= value <= 100:
        return [invalid(path, value, "not in valid range [0-100]")]
    return []


def _invalid_plugin_problems(path: str, profile: KubeSchedulerProfile) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    if profile.plugins is not None:
        for key, field in PLUGIN_SET_FIELDS.items():
            for i, plugin in enumerate(getattr(profile.plugins, field).enabled):
                if plugin.name in INVALID_PLUGINS:
                    problems.append(
                        _invalid_plugin(f"{path}.plugins.{key}.enabled[{i}]", plugin.name)
                    )
    for i, pc in enumerate(profile.plugin_config):
        if pc.name in INVALID_PLUGINS:
            problems.append(_invalid_plugin(f"{path}.pluginConfig[{i}]", pc.name))
    return problems


def _invalid_plugin(path: str, name: str) -> FieldProblem:
    return invalid(
        path,
        name,
        f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version '
        f'"{API_VERSION}")',
    )


def plugin_args_problems(
    loc: Sequence[str | int],
    name: str,
    args: dict[str, Any],
    registry: PluginRegistry,
    gates: FeatureGates | None = None,
) -> list[FieldProblem]:
    """Problems of one ``pluginConfig`` entry's args against the plugin's ``Args`` model.

    ``loc`` locates the entry (``("profiles", 0, "pluginConfig", 1)``). A plugin that is
    not installed is reported by name; one without an ``Args`` model accepts no args.
    """
    path = format_loc(loc)
    entry = registry.get(name)
    if entry is None:
        return [FieldProblem(f"{path}.name", unknown_plugin_message(name, registry))]
    if entry.args_model is None:
        extra = sorted(k for k in args if k not in ("kind", "apiVersion"))
        if extra:
            return [
                FieldProblem(
                    f"{path}.args", f'plugin "{name}" takes no args (got {", ".join(extra)})'
                )
            ]
        return []
    try:
        context = None if gates is None else {ARGS_FEATURE_GATES: gates}
        entry.args_model.model_validate(args, context=context)
    except ValidationError as err:
        return validation_error_problems(err, [*loc, "args"], entry.args_model)
    return []


def _known_keys(model: type[BaseModel]) -> set[str]:
    """Every field key (alias) of ``model`` and of the models nested in it."""
    keys: set[str] = set()
    seen: set[type] = set()

    def visit(m: type[BaseModel]) -> None:
        if m in seen:
            return
        seen.add(m)
        for name, field in m.model_fields.items():
            keys.add(field.alias or name)
            for sub in _models_in(field.annotation):
                visit(sub)

    visit(model)
    return keys


def _models_in(annotation: Any) -> Iterable[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _models_in(arg)


def validation_error_problems(
    err: ValidationError, prefix: Sequence[str | int], model: type[BaseModel] | None = None
) -> list[FieldProblem]:
    """Field problems of a pydantic error, with unknown keys named (and a close match)."""
    problems = problems_from_validation_error(err, prefix)
    known = _known_keys(model) if model is not None else set()
    for problem, detail in zip(problems, err.errors(include_url=False), strict=True):
        if detail["type"] == "extra_forbidden" and detail["loc"]:
            key = str(detail["loc"][-1])
            message = f'unknown field "{key}"'
            close = difflib.get_close_matches(key, sorted(known), n=1)
            if close:
                message += f' (did you mean "{close[0]}"?)'
            problem.message = message
    return problems


def _common_queue_sort_problems(profiles: Sequence[KubeSchedulerProfile]) -> list[FieldProblem]:
    # upstream's validateCommonQueueSort, on the merged plugin sets.
    problems: list[FieldProblem] = []
    first = profiles[0]
    canon = first.plugins.queue_sort if first.plugins is not None else None
    queue_sort_name = canon.enabled[0].name if canon is not None and canon.enabled else ""
    if canon is not None and len(canon.enabled) > 1:
        problems.append(
            invalid(
                "profiles[0].plugins.queueSort.enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    canon_args = first.plugin_args(queue_sort_name) if queue_sort_name else None
    for i, profile in enumerate(profiles[1:], start=1):
        current = profile.plugins.queue_sort if profile.plugins is not None else None
        if _queue_sort_key(canon) != _queue_sort_key(current):
            problems.append(
                FieldProblem(
                    f"profiles[{i}].plugins.queueSort",
                    "must be the same for all profiles",
                )
            )
        for j, pc in enumerate(profile.plugin_config):
            if queue_sort_name and pc.name == queue_sort_name and pc.args != (canon_args or {}):
                problems.append(
                    FieldProblem(
                        f"profiles[{i}].pluginConfig[{j}].args",
                        "queueSort must be the same for all profiles",
                    )
                )
    return problems


def _queue_sort_key(plugin_set: Any) -> Any:
    if plugin_set is None:
        return ((), ())
    return (plugin_set.enabled, plugin_set.disabled)


def validate_configuration(
    config: KubeSchedulerConfiguration,
    registry: PluginRegistry | None = None,
    gates: FeatureGates | None = None,
) -> list[FieldProblem]:
    """Every problem of a defaulted configuration (empty list: valid).

    Upstream's ``ValidateKubeSchedulerConfiguration`` and the leader election checks
    of component-base and client-go. With a ``registry``, each ``pluginConfig`` entry is
    also checked against its plugin's ``Args`` model (the plugin must be installed).
    Whether the plugins fit their extension points is checked by
    :func:`kubesched.config.effective_configuration`.
    """
    problems: list[FieldProblem] = []
    if config.client_connection.burst < 0:
        problems.append(
            invalid(
                "clientConnection.burst", config.client_connection.burst, "must be non-negative"
            )
        )
    problems += _leader_election_problems(config)
    if config.parallelism <= 0:
        problems.append(
            invalid(
                "parallelism", config.parallelism, "should be an integer value greater than zero"
            )
        )

    if not config.profiles:
        problems.append(required("profiles"))
    else:
        seen_names: dict[str, int] = {}
        for i, profile in enumerate(config.profiles):
            path = f"profiles[{i}]"
            if not profile.scheduler_name:
                problems.append(required(f"{path}.schedulerName"))
            problems += _percentage_problem(
                f"{path}.percentageOfNodesToScore", profile.percentage_of_nodes_to_score
            )
            problems += _invalid_plugin_problems(path, profile)
            seen_config: set[str] = set()
            for j, pc in enumerate(profile.plugin_config):
                pc_path = f"{path}.pluginConfig[{j}]"
                if pc.name in seen_config:
                    problems.append(duplicate(pc_path, pc.name))
                seen_config.add(pc.name)
                if registry is not None and pc.name not in INVALID_PLUGINS:
                    problems += plugin_args_problems(
                        ("profiles", i, "pluginConfig", j), pc.name, pc.args, registry, gates
                    )
            if profile.scheduler_name:
                if profile.scheduler_name in seen_names:
                    problems.append(
                        duplicate(
                            f"{path}.schedulerName",
                            profile.scheduler_name,
                            f" (also profiles[{seen_names[profile.scheduler_name]}].schedulerName)",
                        )
                    )
                else:
                    seen_names[profile.scheduler_name] = i
        problems += _common_queue_sort_problems(config.profiles)

    problems += _percentage_problem("percentageOfNodesToScore", config.percentage_of_nodes_to_score)
    if config.pod_initial_backoff_seconds <= 0:
        problems.append(
            invalid(
                "podInitialBackoffSeconds",
                config.pod_initial_backoff_seconds,
                "must be greater than 0",
            )
        )
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        problems.append(
            invalid(
                "podMaxBackoffSeconds",
                config.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    problems += extender_problems(config.extenders)
    return problems


def extender_problems(extenders: Sequence[Extender]) -> list[FieldProblem]:
    """Upstream's ``validateExtenders``: a positive weight for a prioritizer, valid and
    distinct managed resource names, at most one binder; and (kubesched) that each
    ``python://`` extender is installed."""
    # Imported here: the extenders read the configuration's types, whose package
    # imports this module.
    from kubesched.extenders.extender import ENTRY_POINT_GROUP, in_process_name, in_process_names

    problems: list[FieldProblem] = []
    binders = 0
    managed: set[str] = set()
    installed: list[str] | None = None
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            problems.append(
                invalid(f"{path}.weight", ext.weight, "must have a positive weight applied to it")
            )
        if ext.bind_verb:
            binders += 1
        for j, resource in enumerate(ext.managed_resources):
            name_path = f"{path}.managedResources[{j}].name"
            errors = is_qualified_name(resource.name)
            problems += [invalid(name_path, resource.name, e) for e in errors]
            if not errors and not is_extended_resource_name(resource.name):
                problems.append(
                    invalid(name_path, resource.name, "is an invalid extended resource name")
                )
            if resource.name in managed:
                problems.append(
                    invalid(name_path, resource.name, "duplicate extender managed resource name")
                )
            managed.add(resource.name)
        name = in_process_name(ext.url_prefix)
        if name is not None:
            installed = in_process_names() if installed is None else installed
            if name not in installed:
                problems.append(
                    invalid(
                        f"{path}.urlPrefix",
                        ext.url_prefix,
                        f'in-process extender "{name}" is not installed (entry point group '
                        f"{ENTRY_POINT_GROUP}); installed: {', '.join(installed) or 'none'}",
                    )
                )
    if binders > 1:
        problems.append(
            invalid(
                "extenders",
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return problems
