"""Plugin discovery: the ``kubesched.plugins`` entry points, checked against the hookspecs."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import importlib_metadata
import pluggy
from pydantic import BaseModel

from kubesched.framework import hookspecs
from kubesched.framework.args import PluginArgs
from kubesched.framework.plugin import PROJECT_NAME, extension_points_of
from kubesched.framework.sdk import sdk_incompatibility

ENTRY_POINT_GROUP = "kubesched.plugins"
"""The entry-point group in which every plugin, built-in or not, is registered."""


@dataclass(frozen=True)
class PluginEntry:
    """An installed plugin: its class and where it came from."""

    name: str
    plugin_class: type
    args_model: type[PluginArgs] | None
    extension_points: tuple[str, ...]
    hooks: tuple[str, ...]
    distribution: str | None = None
    version: str | None = None
    entry_point: str | None = None
    sdk_version: str | None = None
    """The plugin SDK version the plugin declares it was built for (its ``sdk_version``)."""
    sdk_warning: str | None = None
    """Why that SDK version is not compatible with this kubesched's, or None."""


@dataclass(frozen=True)
class PluginLoadError:
    """A plugin that could not be loaded, and why."""

    name: str
    distribution: str | None
    reason: str

    def __str__(self) -> str:
        origin = f" (from {self.distribution})" if self.distribution else ""
        return f"plugin {self.name!r}{origin}: {self.reason}"


class PluginValidationFailure(Exception):
    """A plugin class that does not satisfy the plugin contract."""


def new_plugin_manager() -> pluggy.PluginManager:
    """A pluggy manager that knows kubesched's hookspecs."""
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def hooks_of(plugin_class: type) -> tuple[str, ...]:
    """The hook names a plugin class implements."""
    marker = f"{PROJECT_NAME}_impl"
    return tuple(
        name
        for name, attr in inspect.getmembers(plugin_class)
        if not name.startswith("__") and hasattr(attr, marker)
    )


def validate_plugin_class(plugin_class: object, name: str | None = None) -> PluginEntry:
    """Check ``plugin_class`` against the plugin contract and describe it.

    The contract: a class with a ``name`` (equal to ``name`` when given), an optional
    ``Args`` that is a ``PluginArgs`` model, a constructor accepting ``(args, handle)``,
    at least one hook implementation, and every hookimpl matching a hookspec by name
    and parameters (checked by pluggy). Raises ``PluginValidationFailure`` saying what
    is wrong. A plugin built for an incompatible SDK (its ``sdk_version``) still loads,
    with ``sdk_warning`` saying why it may not work.
    """
    if not inspect.isclass(plugin_class):
        raise PluginValidationFailure(f"{plugin_class!r} is not a class")
    plugin_name = getattr(plugin_class, "name", None)
    if not isinstance(plugin_name, str) or not plugin_name:
        raise PluginValidationFailure(f"class {plugin_class.__qualname__} has no 'name'")
    if name is not None and plugin_name != name:
        raise PluginValidationFailure(
            f"entry point is named {name!r} but the class's name is {plugin_name!r}"
        )
    args_model = getattr(plugin_class, "Args", None)
    if args_model is not None and not (
        inspect.isclass(args_model) and issubclass(args_model, BaseModel)
    ):
        raise PluginValidationFailure("'Args' must be a pydantic model (subclass PluginArgs)")
    try:
        inspect.signature(plugin_class).bind(None, None)
    except TypeError as err:
        raise PluginValidationFailure(f"constructor must accept (args, handle): {err}") from None
    hooks = hooks_of(plugin_class)
    if not hooks:
        raise PluginValidationFailure("implements no extension point (no @hookimpl method)")
    problem = _hookimpl_problem(
        plugin_class, plugin_name, tuple(getattr(plugin_class, hook) for hook in hooks)
    )
    if problem is not None:
        raise PluginValidationFailure(problem)
    declared = getattr(plugin_class, "sdk_version", None)
    return PluginEntry(
        name=plugin_name,
        plugin_class=plugin_class,
        args_model=args_model,
        extension_points=extension_points_of(plugin_class),
        hooks=hooks,
        sdk_version=None if declared is None else str(declared),
        sdk_warning=sdk_incompatibility(declared),
    )


@functools.lru_cache(maxsize=1024)
def _hookimpl_problem(plugin_class: type, plugin_name: str, impls: tuple[Any, ...]) -> str | None:
    """pluggy's verdict on the hook implementations ``impls`` of ``plugin_class``: None when
    each matches its hookspec, else what is wrong.

    Cached, because a check needs a fresh plugin manager (tens of milliseconds) and tests
    build frameworks from the same classes thousands of times; the hook functions are part
    of the key, so that a class whose hooks were replaced is checked again.
    """
    pm = new_plugin_manager()
    try:
        # Registered as an instance made without __init__, so that pluggy sees bound
        # methods and leaves ``self`` out of the parameters it checks.
        pm.register(object.__new__(plugin_class), name=plugin_name)
        pm.check_pending()
    except pluggy.PluginValidationError as err:
        return str(err)
    return None


class PluginRegistry:
    """The plugins a profile can use, by name, and those that failed to load."""

    def __init__(
        self, entries: Iterable[PluginEntry] = (), errors: Iterable[PluginLoadError] = ()
    ) -> None:
        self._entries: dict[str, PluginEntry] = {}
        self.errors: list[PluginLoadError] = list(errors)
        for entry in entries:
            self.add(entry)

    def add(self, entry: PluginEntry) -> None:
        """Register ``entry``; a second plugin of the same name is a load error."""
        existing = self._entries.get(entry.name)
        if existing is not None:
            self.errors.append(
                PluginLoadError(
                    entry.name,
                    entry.distribution,
                    f"a plugin of this name is already registered by {existing.distribution}",
                )
            )
            return
        self._entries[entry.name] = entry

    def add_class(self, plugin_class: type) -> PluginEntry:
        """Validate and register a plugin class directly (tests, notebooks)."""
        entry = validate_plugin_class(plugin_class)
        self.add(entry)
        return entry

    def get(self, name: str) -> PluginEntry | None:
        """The plugin named ``name``, or ``None``."""
        return self._entries.get(name)

    def names(self) -> list[str]:
        """The registered plugin names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[PluginEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def discover(cls, group: str = ENTRY_POINT_GROUP) -> PluginRegistry:
        """Load every plugin of the entry-point ``group``.

        A plugin that fails to import or to validate is recorded in ``errors`` with
        its name, distribution and reason; the others load regardless.
        """
        registry = cls()
        for ep in importlib_metadata.entry_points(group=group):
            dist = ep.dist.name if ep.dist is not None else None
            version = ep.dist.version if ep.dist is not None else None
            try:
                plugin_class = ep.load()
            except Exception as err:
                registry.errors.append(
                    PluginLoadError(ep.name, dist, f"cannot import {ep.value}: {err!r}")
                )
                continue
            try:
                entry = validate_plugin_class(plugin_class, ep.name)
            except PluginValidationFailure as err:
                registry.errors.append(PluginLoadError(ep.name, dist, str(err)))
                continue
            registry.add(
                dataclasses.replace(entry, distribution=dist, version=version, entry_point=ep.value)
            )
        return registry


_default_registry: PluginRegistry | None = None


def default_registry() -> PluginRegistry:
    """The registry of installed plugins, discovered once per process."""
    global _default_registry
    if _default_registry is None:
        _default_registry = PluginRegistry.discover()
    return _default_registry
