"""The contract of a controller a plugin package adds to the embedded cluster.

A kind a package registers (``kubesched.kinds``) may need the controller that keeps its
status on a real cluster: the AppGroup controller writes an AppGroup's topology order,
which TopologicalSort reads. The package registers the controller's class under the
entry-point group ``kubesched.controllers``; ``kubesched simulate`` (the embedded cluster)
runs it beside the built-in controllers. On a real cluster (``kubesched run``) the
controller's own deployment does this work, and kubesched runs none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from kubesched.api import KubeObject
from kubesched.backend.memory.extensions import CONTROLLER_ENTRY_POINT_GROUP
from kubesched.framework.listers import ObjectLister

__all__ = ["CONTROLLER_ENTRY_POINT_GROUP", "ClusterController", "ControllerCluster"]


class ControllerCluster(ObjectLister, Protocol):
    """What a :class:`ClusterController` receives: the cluster's objects (every
    ``ObjectLister`` method), its time, and writes."""

    def now(self) -> float:
        """The cluster's current time, in seconds (virtual in a simulation)."""
        ...

    def now_timestamp(self) -> datetime:
        """The current time as the cluster writes timestamps (``creationTimestamp``)."""
        ...

    def update(self, obj: KubeObject) -> KubeObject:
        """Write ``obj`` (a changed copy of an object read from the cluster, status
        included) and return it as stored; ``kubesched.ConflictError`` when the object
        changed since it was read, ``kubesched.NotFoundError`` when it is gone. The write
        is delivered to watchers (and to the controllers) after the current change."""
        ...

    def update_status(self, obj: KubeObject) -> KubeObject:
        """Write only ``obj.status`` (a status subresource: other changes are ignored)
        and return the stored object; cheaper than :meth:`update` (no deep copy, no
        validation), so ``obj.status`` must not be changed afterwards: build it with
        ``model_copy(update=...)``. Errors as :meth:`update`."""
        ...


class ClusterController(Protocol):
    """A controller of the embedded cluster, registered as
    ``[project.entry-points."kubesched.controllers"] Name = "pkg.module:Class"``.

    The cluster builds one instance per cluster, ``Class(cluster)`` with a
    :class:`ControllerCluster`, then calls it synchronously, in the order the cluster's
    objects change. Objects handed to it are the stored ones: copy
    (``model_copy(deep=True)``) before changing one. An exception is logged and the
    cluster goes on, as kube-controller-manager's ``HandleError`` does.
    """

    name: str
    """The controller's name (in logs)."""
    kinds: tuple[str, ...]
    """The kinds whose changes :meth:`on_change` receives (``("AppGroup", "Pod")``)."""

    def on_change(self, kind: str, obj: KubeObject, old: KubeObject | None, deleted: bool) -> None:
        """``obj`` of ``kind`` was added, modified (``old`` is its previous version) or,
        when ``deleted``, deleted."""
        ...

    def resync_all(self) -> None:
        """Reconcile every object: called after a batch of objects was loaded (a
        manifest set, a captured cluster), during which :meth:`on_change` was not
        called."""
        ...
