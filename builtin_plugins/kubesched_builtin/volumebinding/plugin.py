"""VolumeBinding: claims bindable or provisionable on the node (PreFilter, Filter, PreScore,
Score, Reserve/Unreserve, PreBind), as upstream ``plugins/volumebinding``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, model_validator

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    FeatureGates,
    NodeBatch,
    NodeInfo,
    PluginArgs,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    go_round,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import (
    ANN_MIGRATED_PLUGINS,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kubesched.api.volumeutil import pod_uses_claim
from kubesched_builtin import signers
from kubesched_builtin.names import VOLUME_BINDING
from kubesched_builtin.noderesources.fit import UtilizationShapePoint, shape_errors
from kubesched_builtin.noderesources.requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    broken_linear_function,
)

from .binder import PodVolumeClaims, PodVolumes, VolumeBinder, VolumeBindingError

NAME = VOLUME_BINDING

ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
"""PreFilter reason (UnschedulableAndUnresolvable): a claim of an Immediate class (or
pre-bound to a PV) is not bound yet; the PV controller has to bind it first."""

DEFAULT_BIND_TIMEOUT_SECONDS = 600
DEFAULT_SHAPE = (
    UtilizationShapePoint(utilization=0, score=10),
    UtilizationShapePoint(utilization=100, score=0),
)
"""``shape``'s default while StorageCapacityScoring is on: the most free capacity wins."""


class VolumeBindingArgs(PluginArgs):
    """``VolumeBindingArgs``."""

    bind_timeout_seconds: int = Field(
        default=DEFAULT_BIND_TIMEOUT_SECONDS,
        description=(
            "How long PreBind waits for the PV controller to bind the pod's claims, in "
            "seconds; 0 fails at once when they are not bound. Default 600."
        ),
    )
    shape: tuple[UtilizationShapePoint, ...] | None = Field(
        default=None,
        description=(
            "StorageCapacityScoring (alpha in v1.36, off by default): the score (0..10) by "
            "storage utilization (0..100 percent) of the node's classes. Setting it enables "
            "the Score. Default: [{0, 10}, {100, 0}] (prefer nodes with the most free "
            "capacity) with the gate on, else unset (Score skipped)."
        ),
    )

    @classmethod
    def gated_defaults(cls, gates: FeatureGates) -> dict[str, Any]:
        return {"shape": DEFAULT_SHAPE} if gates.enabled("StorageCapacityScoring") else {}

    @model_validator(mode="after")
    def _validate(self) -> VolumeBindingArgs:
        errors = []
        if self.bind_timeout_seconds < 0:
            errors.append(
                invalid(
                    ("bindTimeoutSeconds",),
                    self.bind_timeout_seconds,
                    "invalid BindTimeoutSeconds, should not be a negative value",
                )
            )
        if self.shape is not None:
            errors += shape_errors(self.shape, ("shape",))
        raise_args_errors("VolumeBindingArgs", errors)
        return self


@dataclass
class _State:
    """Upstream's ``stateData``: the pod's claims and each feasible node's decisions."""

    claims: PodVolumeClaims | None = None
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False


STATE_KEY: StateKey[_State] = StateKey(NAME)


def _volume_limit(cap: CSIStorageCapacity) -> int | None:
    q = cap.maximum_volume_size or cap.capacity
    return q.value() if q is not None else None


class VolumeBinding:
    """Binds a pod's PersistentVolumeClaims as part of scheduling it.

    PreFilter skips pods without claims and rejects those with unbound claims of an
    Immediate class; Filter keeps the nodes from which every bound claim's PV is
    reachable and every WaitForFirstConsumer claim can get a matching PV or be
    provisioned (allowed topologies, storage capacity); Reserve assumes the chosen PVs
    and provisioning nodes; PreBind writes them and waits for the PV controller;
    Unreserve forgets the assumptions.
    """

    name = NAME
    Args = VolumeBindingArgs
    reads = (
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
    )
    writes = ("PersistentVolume", "PersistentVolumeClaim")

    def __init__(self, args: VolumeBindingArgs | None, handle: Any) -> None:
        self.args = args if args is not None else VolumeBindingArgs()
        self._handle = handle
        self.binder = VolumeBinder(handle, self.args.bind_timeout_seconds)
        self._score: Callable[[int], int] | None = None
        if self.args.shape is not None:
            scale = 100 // MAX_CUSTOM_PRIORITY_SCORE
            shape = [(p.utilization, p.score * scale) for p in self.args.shape]
            self._score = broken_linear_function(shape)
        # PreScore answers Skip for every pod without a scoring shape, and for a pod
        # without volumes (no claim to score): the framework then skips the call.
        # (PreFilter cannot declare: its Skip writes the state Reserve and PreBind read.)
        self.skips_pods_without = {"PreScore": ("volumes",) if self._score is not None else ()}

    # -- PreFilter / Filter --------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only the pod's volumes decide."""
        return [signers.volumes(pod)]

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        try:
            has_claims = self.binder.check_pod_claims(pod)
        except VolumeBindingError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        if not has_claims:
            state.write(STATE_KEY, _State())
            return Status.skip()
        claims = self.binder.get_pod_volume_claims(pod)
        if claims.immediate:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims=claims))
        # Every node is filtered, also for bound local volumes pinned to some nodes: the
        # v1.36.2 kube-scheduler no longer narrows the nodes to theirs in PreFilter, so
        # the other nodes get Filter's reason, not "didn't satisfy plugin(s)".
        return None

    def _state(self, state: CycleState) -> _State:
        s = state.get(STATE_KEY)
        if s is None:
            raise VolumeBindingError(f"reading {NAME!r} from cycle state: not found")
        return s

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        s = self._state(state)
        node = node_info.node
        if s.claims is None or node is None:
            return None
        try:
            volumes, reasons = self.binder.find_pod_volumes(s.claims, node)
        except VolumeBindingError as err:
            return Status(Code.ERROR, str(err))
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        s.by_node[node.name] = volumes
        if volumes.static_bindings:
            s.has_static_bindings = True
        return None

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> Sequence[Status | None]:
        """Filter for a batch: one verdict per group of nodes alike in the decisive labels
        (the same as ``filter`` node by node, with one Status shared per group)."""
        s = self._state(state)
        infos = nodes.infos
        if s.claims is None:
            return [None] * len(infos)
        claims = s.claims
        statuses: dict[tuple[str, ...], Status] = {}
        out: list[Status | None] = []
        # The decisive labels, read from the table's columns instead of node by node.
        keys: list[tuple[str | None, ...] | None] = [None] * len(infos)
        if claims.decisive_labels is not None:
            table, rows = nodes.table, nodes.rows
            names = nodes.names if claims.decided_by_name else [None] * len(infos)
            columns = [table.label_column(k)[rows].tolist() for k in claims.decisive_labels]
            keys = list(zip(names, *columns, strict=True))
        for info, key in zip(infos, keys, strict=True):
            node = info.node
            if node is None:
                out.append(None)
                continue
            try:
                volumes, reasons = self.binder.find_pod_volumes(claims, node, key)
            except VolumeBindingError as err:
                out.append(Status(Code.ERROR, str(err)))
                continue
            if reasons:
                status = statuses.get(tuple(reasons))
                if status is None:
                    status = statuses[tuple(reasons)] = Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons
                    )
                out.append(status)
                continue
            s.by_node[node.name] = volumes
            if volumes.static_bindings:
                s.has_static_bindings = True
            out.append(None)
        return out

    # -- PreScore / Score ----------------------------------------------------------------

    @hookimpl
    def pre_score(self, state: CycleState) -> Status | None:
        if self._score is None:
            return Status.skip()
        s = state.get(STATE_KEY)
        if s is None or s.claims is None:
            return Status.skip()
        return None

    def _class_resources(self, volumes: PodVolumes) -> dict[str, list[int]]:
        """``classResourceMap``: [requested, capacity] per class, from the static
        bindings if any, else from the provisions whose capacity segment is known."""
        out: dict[str, list[int]] = {}
        if volumes.static_bindings:
            for pvc, pv in volumes.static_bindings:
                r = out.setdefault(pv.spec.storage_class_name, [0, 0])
                r[0] += pvc.spec.storage_request()
                r[1] += pv.spec.storage_capacity()
            return out
        for prov in volumes.dynamic_provisions:
            if prov.capacity is None or prov.capacity.capacity is None:
                continue
            r = out.setdefault(prov.pvc.class_name, [0, 0])
            r[1] = prov.capacity.capacity.value()
            r[0] += prov.pvc.spec.storage_request()
        return out

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        f = self._score
        s = self._state(state)
        volumes = s.by_node.get(node_info.name)
        if f is None or volumes is None:
            return 0
        resources = self._class_resources(volumes)
        if not resources:
            return 0
        total = 0
        for requested, capacity in resources.values():
            if capacity == 0 or requested > capacity:
                total += f(MAX_UTILIZATION)
            else:
                total += f(requested * MAX_UTILIZATION // capacity)
        return go_round(total / len(resources))

    # -- Reserve / Unreserve / PreBind ---------------------------------------------------

    @hookimpl
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = self._state(state)
        volumes = s.by_node.get(node_name)
        if volumes is None:
            s.all_bound = True
            return None
        s.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, node_name: str) -> None:
        s = state.get(STATE_KEY)
        volumes = s.by_node.get(node_name) if s is not None else None
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    @hookimpl
    def pre_bind_pre_flight(self, state: CycleState, node_name: str) -> Status | None:
        s = self._state(state)
        if s.all_bound:
            return Status.skip()
        if node_name not in s.by_node:
            return Status(Code.ERROR, f'no pod volumes found for node "{node_name}"')
        return None

    @hookimpl
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = self._state(state)
        if s.all_bound:
            return None
        volumes = s.by_node.get(node_name)
        if volumes is None:
            return Status(Code.ERROR, f'no pod volumes found for node "{node_name}"')
        try:
            self.binder.bind_pod_volumes(pod, node_name, volumes)
        except Exception as err:
            return Status.from_error(err)
        return None

    # -- events --------------------------------------------------------------------------

    def is_schedulable_after_pvc_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim
    ) -> QueueingHint:
        """Queue when the changed claim is one of the pod's."""
        return QueueingHint.QUEUE if pod_uses_claim(pod, new) else QueueingHint.SKIP

    def is_schedulable_after_storage_class_change(
        self, pod: Pod, old: StorageClass | None, new: StorageClass
    ) -> QueueingHint:
        """Queue on a new class, or on a change of a class's allowedTopologies."""
        if old is None or old.allowed_topologies != new.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csi_node_change(
        self, pod: Pod, old: CSINode | None, new: CSINode
    ) -> QueueingHint:
        """Queue on a new CSINode, or a change of its migrated-plugins annotation."""
        if old is None:
            return QueueingHint.QUEUE
        before = old.metadata.annotations.get(ANN_MIGRATED_PLUGINS)
        after = new.metadata.annotations.get(ANN_MIGRATED_PLUGINS)
        return QueueingHint.QUEUE if before != after else QueueingHint.SKIP

    def is_schedulable_after_capacity_change(
        self, pod: Pod, old: CSIStorageCapacity | None, new: CSIStorageCapacity
    ) -> QueueingHint:
        """Queue on new capacity, or when a segment's volume limit grew."""
        if old is None:
            return QueueingHint.QUEUE
        before, after = _volume_limit(old), _volume_limit(new)
        if after is not None and (before is None or after > before):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csi_driver_change(
        self, pod: Pod, old: CSIDriver | None, new: CSIDriver
    ) -> QueueingHint:
        """Queue when capacity tracking got disabled for a driver of the pod's inline
        CSI volumes (upstream's check, kept as it is)."""
        if old is None:
            return QueueingHint.SKIP
        for vol in pod.spec.volumes:
            if vol.csi is None or vol.csi.driver != new.name:
                continue
            if old.spec.storage_capacity and not new.spec.storage_capacity:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @hookimpl
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_update),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_update),
                self.is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE),
                self.is_schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add_update),
                self.is_schedulable_after_capacity_change,
            ),
        ]
