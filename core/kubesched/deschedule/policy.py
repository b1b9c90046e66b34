"""The descheduler's ``DeschedulerPolicy`` (``descheduler/v1alpha2``): profiles, plugins, args."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from kubesched.errors import FieldProblem, UserInputError, problems_from_validation_error
from kubesched.notices import notice

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
DEFAULT_EVICTOR = "DefaultEvictor"
"""The evictor a profile gets when it names none (as the descheduler defaults it)."""


class _Model(BaseModel):
    # A misspelt key in a policy is an error pointing at it, not silently ignored.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


class PluginSet(_Model):
    """The plugins of one extension point: ``enabled`` run in order; ``disabled`` removes
    defaulted ones (the DefaultEvictor)."""

    enabled: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)


class Plugins(_Model):
    """A profile's plugins per extension point, as the descheduler names them."""

    pre_sort: PluginSet = Field(default_factory=PluginSet)
    sort: PluginSet = Field(default_factory=PluginSet)
    deschedule: PluginSet = Field(default_factory=PluginSet)
    balance: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    pre_eviction_filter: PluginSet = Field(default_factory=PluginSet)


class PluginConfig(_Model):
    """One plugin's args (validated by the plugin's own ``Args`` model)."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Profile(_Model):
    """A descheduler profile: its plugins and their args."""

    name: str
    plugin_config: list[PluginConfig] = Field(default_factory=list)
    plugins: Plugins = Field(default_factory=Plugins)

    def args_of(self, plugin: str) -> tuple[int | None, dict[str, Any]]:
        """The index in ``pluginConfig`` and the args of ``plugin`` (none: ``{}``)."""
        for i, pc in enumerate(self.plugin_config):
            if pc.name == plugin:
                return i, pc.args
        return None, {}

    def evictors(self) -> list[str]:
        """The Filter / PreEvictionFilter plugins: DefaultEvictor unless disabled, then the
        enabled ones (each once)."""
        names: list[str] = []
        for point in (self.plugins.filter, self.plugins.pre_eviction_filter):
            if DEFAULT_EVICTOR not in point.disabled and "*" not in point.disabled:
                names.append(DEFAULT_EVICTOR)
            names.extend(point.enabled)
        return list(dict.fromkeys(names))


class DeschedulerPolicy(_Model):
    """``descheduler/v1alpha2`` ``DeschedulerPolicy``: profiles run one after another, each
    its Deschedule plugins then its Balance plugins; the ``maxNoOfPodsToEvict*`` limits
    hold across all of them (unset: no limit)."""

    api_version: str = Field(API_VERSION)
    kind: str = Field(KIND)
    profiles: list[Profile] = Field(default_factory=list)
    node_selector: str | None = None
    max_no_of_pods_to_evict_per_node: int | None = Field(None, ge=0)
    max_no_of_pods_to_evict_per_namespace: int | None = Field(None, ge=0)
    max_no_of_pods_to_evict_total: int | None = Field(None, ge=0)


def load_policy(path: str) -> DeschedulerPolicy:
    """Read and validate a policy file; errors name the file, the profile and the field."""
    p = Path(path)
    if not p.is_file():
        raise UserInputError("no such file", source=path)
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserInputError(f"not valid YAML{where}", source=path) from None
    return parse_policy(data, source=path)


def parse_policy(data: Any, *, source: str = "<policy>") -> DeschedulerPolicy:
    """Validate already-parsed policy data (see :func:`load_policy`)."""
    if not isinstance(data, dict):
        raise UserInputError(f"not a {KIND}: expected a mapping", source=source)
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise UserInputError(
            f"expected apiVersion {API_VERSION} and kind {KIND}, got "
            f"{data.get('apiVersion')!r} and {data.get('kind')!r}",
            source=source,
        )
    # v1alpha1's top-level switch moved into DefaultEvictor's args: say where it goes.
    if "evictLocalStoragePods" in data:
        raise UserInputError(
            "invalid policy",
            source=source,
            obj=KIND,
            problems=[
                FieldProblem(
                    "evictLocalStoragePods",
                    "not supported in v1alpha2: set it in DefaultEvictor's args",
                )
            ],
        )
    try:
        policy = DeschedulerPolicy.model_validate(data)
    except ValidationError as err:
        raise UserInputError(
            "invalid policy", source=source, obj=KIND, problems=problems_from_validation_error(err)
        ) from None
    problems: list[FieldProblem] = []
    seen: set[str] = set()
    for i, prof in enumerate(policy.profiles):
        if prof.name in seen:
            problems.append(FieldProblem(f"profiles[{i}].name", f'Duplicate value: "{prof.name}"'))
        seen.add(prof.name)
        names = [pc.name for pc in prof.plugin_config]
        for j, name in enumerate(names):
            if name in names[:j]:
                problems.append(
                    FieldProblem(
                        f"profiles[{i}].pluginConfig[{j}].name", f'Duplicate value: "{name}"'
                    )
                )
    if problems:
        raise UserInputError("invalid policy", source=source, obj=KIND, problems=problems)
    for i, prof in enumerate(policy.profiles):
        for point in ("preSort", "sort"):
            if getattr(prof.plugins, to_snake(point)).enabled:
                notice(
                    f"plugins.{point} is not modelled: pods are evicted in each strategy's "
                    "own order",
                    source=source,
                    obj=f'profiles[{i}] "{prof.name}"',
                )
    return policy
