"""The Handle a plugin receives: what it may read and do beyond its hooks' arguments.

Upstream's ``framework.Handle``. The runtime's ``Framework`` is the Handle of every
plugin of its profile; plugins and their tests rely only on the members below (typed
as protocols, so a test may pass any object with the same members).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.api import KubeObject, Pod
from kubesched.backend.protocol import PodCondition
from kubesched.framework.listers import ObjectLister

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.pod_groups import PodGroupIndex
    from kubesched.framework.runtime.waiting_pods import WaitingPod
    from kubesched.framework.status import Status
    from kubesched.framework.types import NodeInfo, PodInfo

__all__ = [
    "ClusterClient",
    "EventRecorder",
    "Handle",
    "PodNominator",
    "SnapshotLister",
]


class SnapshotLister(Protocol):
    """``handle.snapshot``: the cycle's snapshot of the nodes and their pods."""

    def list(self) -> Sequence[NodeInfo]:
        """Every node's NodeInfo, in the snapshot's order."""
        ...

    def get(self, node_name: str) -> NodeInfo | None:
        """The NodeInfo of ``node_name``, or None."""
        ...

    def pods_grouped(
        self, name: str, group_of: Callable[[PodInfo], Hashable | None]
    ) -> PodGroupIndex:
        """The snapshot's pods grouped by ``group_of`` under the plugin's ``name``, kept
        current from the changed nodes (SDK 1.5): ``groups`` maps each key to a group
        with a ``sample`` pod, its ``count`` and its ``nodes`` (count per node name)."""
        ...


class ClusterClient(Protocol):
    """``handle.client``: the writes a plugin may make to the cluster.

    Failures raise ``kubesched.NotFoundError`` (the object is gone) or
    ``kubesched.ConflictError``.
    """

    def bind(self, pod: Pod, node_name: str) -> None:
        """Bind ``pod`` to ``node_name``."""
        ...

    def update_pod_status(
        self,
        pod: Pod,
        *,
        condition: PodCondition | None = None,
        nominated_node_name: str | None = None,
        clear_nominated_node_name: bool = False,
    ) -> None:
        """Set a condition and/or the nominated node on ``pod``'s status."""
        ...

    def delete_pod(self, pod: Pod, grace_period_seconds: float | None = None) -> None:
        """Delete ``pod`` (with its termination grace period unless overridden)."""
        ...

    def get(self, kind: str, namespace: str | None, name: str) -> KubeObject:
        """The object as the cluster has it now (re-read after a conflict)."""
        ...

    def create(self, obj: KubeObject) -> KubeObject:
        """Create ``obj`` (``metadata.generateName`` gives it a name) and return it as
        stored. Name ``"Kind/create"`` in the plugin's ``writes``."""
        ...

    def update(self, obj: KubeObject) -> KubeObject:
        """Write ``obj`` (a changed copy of an object read at its ``resourceVersion``):
        ``ConflictError`` when the object changed since. Name the kind in the plugin's
        ``writes`` (``"Kind"``, or ``"Kind/status"`` for a status change) so that
        ``kubesched run`` checks the permission at start."""
        ...


class EventRecorder(Protocol):
    """``handle.event_recorder``: Kubernetes Events about objects."""

    def eventf(
        self, obj: Any, related: Any, event_type: str, reason: str, action: str, message: str
    ) -> None:
        """Record an Event on ``obj`` (``related`` is the other object involved)."""
        ...


class PodNominator(Protocol):
    """``handle.nominator``: the pods nominated to nodes by preemption."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to ``node_name``."""
        ...

    def nominated_pods_by_node(self) -> dict[str, list[PodInfo]]:
        """Every node's nominated pods, by node name (SDK 1.5): one call for a plugin
        that reads them all (CapacityScheduling counts them against quotas)."""
        ...

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        """Forget ``pod``'s nomination."""
        ...


class Handle(Protocol):
    """What every plugin's constructor receives as ``handle``.

    ``client``, ``lister``, ``event_recorder``, ``nominator`` and ``metrics`` are None
    where the embedder has none (a unit test's framework); ``snapshot`` is set for each
    cycle. ``metrics`` holds the scheduler's prometheus metrics (upstream's names).
    """

    profile_name: str
    snapshot: SnapshotLister
    client: ClusterClient | None
    lister: ObjectLister | None
    event_recorder: EventRecorder | None
    nominator: PodNominator | None
    metrics: Any
    clock: Any
    rng: random.Random
    parallelism: int

    def feature_enabled(self, name: str) -> bool:
        """Whether the feature gate ``name`` (a kube-scheduler v1.36 gate, e.g.
        ``"NodeDeclaredFeatures"``) is on, as ``--feature-gates`` set it; an unknown name
        is a ``KeyError``. Gates do not change while the scheduler runs: a plugin may read
        them once, in its constructor."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod waiting at Permit with this uid, or None."""
        ...

    def pause(self, seconds: float) -> bool:
        """Pause the calling binding cycle (PreBind, Bind, PostBind) for ``seconds`` of
        the scheduler's clock, as a plugin polling the cluster does between looks; other
        pods are scheduled meanwhile (in ``simulate`` the pause spends virtual time).
        False when the scheduler is shutting down: the plugin should give up at once."""
        ...

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        """Every pod waiting at Permit."""
        ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the waiting pod ``uid``; False when no such pod waits."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> Status:
        """The profile's Filter plugins on ``node_info``, with the higher-priority pods
        nominated to it counted (preemption's what-if)."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_info: PodInfo, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """Tell the PreFilter plugins' state that ``pod_info_to_add`` now runs on the node."""
        ...

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_info: PodInfo,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        """Tell the PreFilter plugins' state that ``pod_info_to_remove`` left the node."""
        ...
