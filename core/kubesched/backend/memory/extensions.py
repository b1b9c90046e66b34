"""Controllers that plugin packages add to the embedded cluster (``kubesched.controllers``).

A package that registers a kind (``kubesched.kinds``) often needs the controller that
keeps that kind's status on a real cluster (the AppGroup controller computes an
AppGroup's topology order). It registers the controller's class under the entry-point
group :data:`CONTROLLER_ENTRY_POINT_GROUP`; the embedded cluster builds one per cluster
with the cluster as its only argument, hands it the changes of the kinds it names in
``kinds`` and asks it to ``resync_all`` after a batch of objects is loaded. The contract
a controller meets is documented by ``kubesched.ClusterController``.
"""

from __future__ import annotations

import logging
import threading
from importlib.metadata import entry_points
from typing import Any

from kubesched.backend.protocol import EventType, WatchEvent

__all__ = ["CONTROLLER_ENTRY_POINT_GROUP", "ExtensionControllers", "controller_classes"]

log = logging.getLogger(__name__)

CONTROLLER_ENTRY_POINT_GROUP = "kubesched.controllers"
"""Entry-point group of the embedded cluster's extra controllers:
``AppGroupController = "pkg.module:AppGroupController"``."""

_classes: list[type] | None = None
_classes_lock = threading.Lock()


def controller_classes() -> list[type]:
    """The controller classes of the ``kubesched.controllers`` entry points, by name,
    loaded once per process; a broken entry point is logged and skipped rather than
    breaking every embedded cluster."""
    global _classes
    with _classes_lock:
        if _classes is None:
            loaded = []
            for ep in sorted(
                entry_points(group=CONTROLLER_ENTRY_POINT_GROUP), key=lambda e: e.name
            ):
                try:
                    cls = ep.load()
                    missing = [
                        a for a in ("kinds", "on_change", "resync_all") if not hasattr(cls, a)
                    ]
                    if not isinstance(cls, type) or missing:
                        raise TypeError(f"{ep.value} is not a controller class (lacks {missing})")
                    loaded.append(cls)
                except Exception as err:  # one bad package must not break the cluster
                    log.warning(
                        "ignoring controller %r from entry point %s: %s", ep.name, ep.value, err
                    )
            _classes = loaded
        return list(_classes)


class ExtensionControllers:
    """The extra controllers of one embedded cluster, fed its watch events."""

    def __init__(self, cluster: Any) -> None:
        self.controllers = [cls(cluster) for cls in controller_classes()]
        self._by_kind: dict[str, list[Any]] = {}
        for controller in self.controllers:
            for kind in controller.kinds:
                self._by_kind.setdefault(kind, []).append(controller)

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Hand the change to the controllers that watch ``kind``."""
        for controller in self._by_kind.get(kind, ()):
            try:
                controller.on_change(kind, event.object, event.old, event.type == EventType.DELETED)
            except Exception:
                # A controller's bug is logged as kube-controller-manager's
                # HandleError does; the cluster and the other controllers go on.
                log.exception("controller %s failed on a %s change", _name(controller), kind)

    def resync_all(self) -> None:
        """Let every controller reconcile everything (after a batch load)."""
        for controller in self.controllers:
            try:
                controller.resync_all()
            except Exception:
                log.exception("controller %s failed to resync", _name(controller))


def _name(controller: Any) -> str:
    return getattr(controller, "name", type(controller).__name__)
