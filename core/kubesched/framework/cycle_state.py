"""Per-scheduling-cycle storage that plugins share between their extension points."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T")


class StateKey(Generic[T]):
    """A typed key into ``CycleState``: ``PRE_FILTER_KEY = StateKey[MyState]("MyPlugin/pre")``.

    Keys compare by identity, so two plugins cannot collide by choosing the same text.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class StateData:
    """Base for values stored in ``CycleState`` that must be copied by ``clone()``.

    Preemption's what-if runs filters on a clone of the cycle state after adding or
    removing pods (``pre_filter_add_pod`` / ``pre_filter_remove_pod``), so a plugin
    whose stored state those hooks mutate overrides ``clone`` to copy it. Values that
    are not ``StateData`` are shared by the clone as they are (treat them as immutable).
    """

    def clone(self) -> StateData:
        """A copy that can be changed without affecting this one (default: ``self``)."""
        return self


class PodsToActivate(StateData):
    """Pods a plugin wants moved to the active queue at the end of this pod's scheduling
    (and binding) cycle, by ``namespace/name`` (upstream ``framework.PodsToActivate``).

    Every cycle state starts with an empty one under :data:`PODS_TO_ACTIVATE_KEY`; a
    plugin adds pods to ``pods`` (e.g. Coscheduling activates a waiting pod's siblings),
    and the scheduler activates them once the scheduling cycle succeeded, and again
    after a successful binding. Shared by clones, as upstream's.
    """

    __slots__ = ("pods",)

    def __init__(self) -> None:
        self.pods: dict[str, Any] = {}


class CycleState:
    """What the plugins of one scheduling cycle write and read.

    Created empty for each pod's scheduling attempt, read and written only by that
    cycle's plugins (and its binding cycle), then discarded. Besides the typed store,
    it carries the sets of plugins whose Filter/Score were skipped by PreFilter/PreScore
    returning ``SKIP``, those whose PreBind is skipped by PreBindPreFlight returning
    ``SKIP``, and whether plugin metrics are recorded for this cycle.
    """

    __slots__ = (
        "_data",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[StateKey[Any], Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def write(self, key: StateKey[T], value: T) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        self._data[key] = value

    def read(self, key: StateKey[T]) -> T:
        """The value under ``key``; ``KeyError`` naming the key if nothing was written."""
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key.name!r} not found in cycle state") from None

    def get(self, key: StateKey[T], default: T | None = None) -> T | None:
        """The value under ``key``, or ``default``."""
        return self._data.get(key, default)

    def delete(self, key: StateKey[Any]) -> None:
        """Remove ``key`` if present."""
        self._data.pop(key, None)

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        """A copy for a what-if: ``StateData`` values are cloned, others shared."""
        copy = CycleState()
        copy._data = {
            k: (v.clone() if isinstance(v, StateData) else v) for k, v in self._data.items()
        }
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        copy.record_plugin_metrics = self.record_plugin_metrics
        return copy


PODS_TO_ACTIVATE_KEY: StateKey[PodsToActivate] = StateKey("kubernetes.io/pods-to-activate")
"""Where a cycle's :class:`PodsToActivate` lives (upstream ``PodsToActivateKey``)."""
