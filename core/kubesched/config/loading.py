"""Reading a configuration file: YAML or JSON, then defaulting, then validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kubesched.config.defaults import default_configuration, set_defaults
from kubesched.config.types import API_VERSION, KIND, KubeSchedulerConfiguration, not_registered
from kubesched.config.validation import validate_configuration, validation_error_problems
from kubesched.errors import FieldProblem, UserInputError
from kubesched.features import FeatureGates
from kubesched.framework.registry import PluginRegistry, default_registry

OBJECT = "KubeSchedulerConfiguration"


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects a key given twice in one mapping.

    PyYAML keeps the last value silently; Kubernetes' strict decoding rejects
    duplicate fields, and a silently ignored key is the worse bug.
    """


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, str) and key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f'found duplicate key "{key}"',
                mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_error_message(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    text = f"{context}: {problem}" if context else str(problem)
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {text}"
    return f"invalid YAML: {text}"


def parse_config_text(text: str, source: str = "<string>") -> dict[str, Any]:
    """Parse YAML (or JSON) text holding one configuration into a mapping."""
    try:
        documents = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]
    except yaml.YAMLError as err:
        raise UserInputError(_yaml_error_message(err), source=source) from None
    if not documents:
        raise UserInputError(f"empty file: expected a {KIND}", source=source)
    if len(documents) > 1:
        raise UserInputError(
            f"{len(documents)} YAML documents: expected a single {KIND}", source=source
        )
    data = documents[0]
    if not isinstance(data, dict):
        raise UserInputError(
            f"expected a mapping ({KIND}), got {type(data).__name__}", source=source
        )
    return data


def config_from_dict(
    data: dict[str, Any],
    registry: PluginRegistry | None = None,
    *,
    source: str | None = None,
    gates: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """Build, default and validate a configuration from its mapping (a parsed file);
    ``gates`` pick the default plugins as upstream's feature gates do.

    Raises ``UserInputError`` listing every problem with its field path.
    """
    registry = default_registry() if registry is None else registry
    problems = _type_problems(data)
    if problems:
        # As kube-scheduler's decoder: a file of another kind or version is not read.
        raise UserInputError("invalid configuration", source=source, obj=OBJECT, problems=problems)
    try:
        config = KubeSchedulerConfiguration.model_validate(data, context={"from_file": True})
    except ValidationError as err:
        problems += validation_error_problems(err, (), KubeSchedulerConfiguration)
        raise UserInputError(
            "invalid configuration", source=source, obj=OBJECT, problems=problems
        ) from None
    if problems:
        raise UserInputError("invalid configuration", source=source, obj=OBJECT, problems=problems)
    config = set_defaults(config, registry, gates)
    problems = validate_configuration(config, registry, gates)
    if problems:
        raise UserInputError("invalid configuration", source=source, obj=OBJECT, problems=problems)
    return config


def _type_problems(data: dict[str, Any]) -> list[FieldProblem]:
    """The file's ``apiVersion`` and ``kind``, in kube-scheduler's words when they are
    missing or not ``KubeSchedulerConfiguration`` ``v1``."""
    version, kind = data.get("apiVersion"), data.get("kind")
    problems = []
    if version is None:
        problems.append(
            FieldProblem(
                "apiVersion", f"Object 'apiVersion' is missing (must be \"{API_VERSION}\")"
            )
        )
    if kind is None:
        problems.append(FieldProblem("kind", f"Object 'Kind' is missing (must be \"{KIND}\")"))
    if problems:
        return problems
    if version != API_VERSION:
        return [FieldProblem("apiVersion", not_registered(str(kind), str(version)))]
    if kind != KIND:
        return [FieldProblem("kind", not_registered(str(kind), str(version)))]
    return []


def load_config(
    path: str | Path | None,
    registry: PluginRegistry | None = None,
    gates: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """Read, default and validate a ``KubeSchedulerConfiguration`` file (YAML or JSON).

    ``path`` None gives upstream's default configuration. ``registry`` (default: the
    installed plugins) supplies each plugin's ``Args`` model, to validate the
    ``pluginConfig`` args and to add default args for enabled plugins. Whether the
    enabled plugins are installed and fit their extension points is checked by
    :func:`kubesched.config.effective_configuration`. ``gates`` (default: every feature
    gate at its default) pick the default plugins.

    Raises ``UserInputError`` naming the file, the object and each field path.
    """
    registry = default_registry() if registry is None else registry
    if path is None:
        return default_configuration(registry, gates)
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserInputError("no such file", source=source) from None
    except IsADirectoryError:
        raise UserInputError("is a directory, not a configuration file", source=source) from None
    except (OSError, UnicodeDecodeError) as err:
        raise UserInputError(f"cannot read: {err}", source=source) from None
    return config_from_dict(parse_config_text(text, source), registry, source=source, gates=gates)
