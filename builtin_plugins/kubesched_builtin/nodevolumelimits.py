"""NodeVolumeLimits: the CSI attach limit of each driver on the node (PreFilter, Filter), as
upstream ``plugins/nodevolumelimits`` (``CSILimits``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from kubesched import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    PodInfo,
    QueueingHint,
    StateKey,
    Status,
    hookimpl,
)
from kubesched.api import (
    ANN_MIGRATED_PLUGINS,
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    Volume,
)
from kubesched.api.volumeutil import ephemeral_claim_name, ephemeral_volume_is_for_pod
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_VOLUME_LIMITS

NAME = NODE_VOLUME_LIMITS

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
"""Filter reason (Unschedulable): attaching the pod's new volumes would exceed a driver's
``allocatable.count`` in the node's CSINode."""

ERR_REASON_DRIVER_NOT_INSTALLED = "{driver} CSI driver is not installed on the node"
"""Filter reason (Unschedulable), with the VolumeLimitScaling gate on: a driver of the pod's
new volumes asks (``preventPodSchedulingIfMissing`` in its CSIDriver) that pods needing it
stay off nodes whose CSINode does not list it."""

VOLUME_LIMIT_SCALING_GATE = "VolumeLimitScaling"

AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
CINDER_PLUGIN = "kubernetes.io/cinder"

_PLACED_CACHE_MAX = 200_000

STATE_KEY: StateKey[dict[Any, Any]] = StateKey("PreFilter" + NAME)
"""Per cycle: the new pod's volumes by the node's migrated-plugins annotation, and the
CSINodes by name (under ``_CSI_NODES``)."""
_CSI_NODES = object()

IN_TREE_TO_CSI = {
    AWS_EBS_PLUGIN: "ebs.csi.aws.com",
    GCE_PD_PLUGIN: "pd.csi.storage.gke.io",
    AZURE_DISK_PLUGIN: "disk.csi.azure.com",
    CINDER_PLUGIN: "cinder.csi.openstack.org",
}
"""The in-tree block-volume plugins whose migration to CSI is GA (always on), and the CSI
driver each one's volumes are counted under (``csi-translation-lib``)."""


def _migrated_on_node(csi_node: CSINode | None, plugin: str) -> bool:
    """``isCSIMigrationOn``: the node handles ``plugin``'s volumes through CSI (its
    CSINode lists it in the migrated-plugins annotation)."""
    if plugin not in IN_TREE_TO_CSI or csi_node is None:
        return False
    names = csi_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "")
    return plugin in {n.strip() for n in names.split(",") if n.strip()}


def _gce_handle(pd_name: str, zone: str | None) -> str:
    # csi-translation-lib: regional disks (zones joined by "__") live under "regions".
    if zone and "__" in zone:
        region = zone.split("__")[0].rsplit("-", 1)[0]
        return f"projects/UNSPECIFIED/regions/{region}/disks/{pd_name}"
    return f"projects/UNSPECIFIED/zones/{zone or 'UNSPECIFIED'}/disks/{pd_name}"


def _in_tree_source(source: Any, zone: str | None = None) -> tuple[str, str] | None:
    """``(in-tree plugin, translated CSI volume handle)`` of an in-tree volume source
    holder (a pod volume or a PV spec), or None."""
    if source.aws_elastic_block_store is not None:
        # "aws://us-east-1a/vol-123" translates to the bare volume id.
        return AWS_EBS_PLUGIN, source.aws_elastic_block_store.volume_id.rsplit("/", 1)[-1]
    if source.gce_persistent_disk is not None:
        return GCE_PD_PLUGIN, _gce_handle(source.gce_persistent_disk.pd_name, zone)
    if source.azure_disk is not None:
        return AZURE_DISK_PLUGIN, source.azure_disk.disk_uri
    if source.cinder is not None:
        return CINDER_PLUGIN, source.cinder.volume_id
    return None


class NodeVolumeLimits:
    """Counts the unique CSI volumes a node would have attached with the pod — its
    claims' PVs (or, for unbound claims, a volume of the class's driver), and in-tree
    volumes of plugins migrated to CSI on the node — against each driver's
    ``allocatable.count`` in the node's CSINode. A volume used by several pods counts
    once; a node or driver without a limit does not restrict."""

    name = NAME
    reads = ("CSINode", "CSIDriver", "PersistentVolume", "PersistentVolumeClaim", "StorageClass")
    skips_pods_without = {"PreFilter": ("volumes",)}
    """PreFilter answers Skip for a pod without volumes: the framework skips the call."""

    def __init__(self, args: Any, handle: Any) -> None:
        self._handle = handle
        self._check_drivers = handle.feature_enabled(VOLUME_LIMIT_SCALING_GATE)
        # As upstream: unbound claims get a handle no real volume has, so a claim bound
        # during the cycle is not mistaken for the same volume twice.
        self._random_prefix = uuid.uuid4().hex
        # The volumes of pods already on nodes, by (pod uid, node's migrated plugins):
        # every Filter call walks every pod of the node, and a placed pod's volumes do
        # not change (its claims were bound before it was). Only fully resolved answers
        # (every claim backed by a PV) are kept.
        self._placed: dict[tuple[str, str], dict[str, str]] = {}
        self._limits_of: dict[int, tuple[CSINode, dict[str, int]]] = {}

    def _get(self, kind: str, namespace: str | None, name: str) -> Any:
        lister = getattr(self._handle, "lister", None)
        return lister.get_object(kind, namespace, name) if lister is not None else None

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Only the pod's volumes decide."""
        return [signers.volumes(pod)]

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        for v in pod.spec.volumes:
            if (
                v.persistent_volume_claim is not None
                or v.ephemeral is not None
                or _in_tree_source(v) is not None
            ):
                state.write(STATE_KEY, {})
                return None
        return Status.skip()

    def _new_volumes(
        self, state: CycleState, pod: Pod, csi_node: CSINode | None
    ) -> dict[str, str] | Status:
        """The pod's volumes as a node with ``csi_node`` sees them; computed once per
        cycle per set of migrated plugins (the only node-dependent input)."""
        memo = state.get(STATE_KEY)
        migrated = csi_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "") if csi_node else ""
        if memo is not None and migrated in memo:
            return memo[migrated]
        out: dict[str, str] = {}
        status = self._attachable_volumes(pod, csi_node, True, out)
        result = status if isinstance(status, Status) else out
        if memo is not None:
            memo[migrated] = result
        return result

    def _driver_info_from_class(
        self, csi_node: CSINode | None, pvc: PersistentVolumeClaim
    ) -> tuple[str, str] | None:
        class_name = pvc.class_name
        if not class_name:
            return None
        sc: StorageClass | None = self._get("StorageClass", None, class_name)
        if sc is None:
            return None
        handle = f"{self._random_prefix}-{pvc.namespace}/{pvc.name}"
        if sc.provisioner in IN_TREE_TO_CSI:
            if not _migrated_on_node(csi_node, sc.provisioner):
                return None
            return IN_TREE_TO_CSI[sc.provisioner], handle
        return sc.provisioner, handle

    def _driver_info(
        self, csi_node: CSINode | None, pvc: PersistentVolumeClaim
    ) -> tuple[str, str] | None:
        """``getCSIDriverInfo``: the driver and volume handle of the claim's volume."""
        if not pvc.spec.volume_name:
            return self._driver_info_from_class(csi_node, pvc)
        pv: PersistentVolume | None = self._get("PersistentVolume", None, pvc.spec.volume_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, pvc)
        if pv.spec.csi is not None:
            return pv.spec.csi.driver, pv.spec.csi.volume_handle
        zone = pv.metadata.labels.get("topology.kubernetes.io/zone") or pv.metadata.labels.get(
            "failure-domain.beta.kubernetes.io/zone"
        )
        in_tree = _in_tree_source(pv.spec, zone)
        if in_tree is None or not _migrated_on_node(csi_node, in_tree[0]):
            return None
        return IN_TREE_TO_CSI[in_tree[0]], in_tree[1]

    def _placed_volumes(self, pod: Pod, csi_node: CSINode | None) -> dict[str, str] | Status:
        migrated = csi_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "") if csi_node else ""
        key = (pod.metadata.uid or pod.key, migrated)
        hit = self._placed.get(key)
        if hit is not None:
            return hit
        out: dict[str, str] = {}
        resolved = self._attachable_volumes(pod, csi_node, False, out)
        if isinstance(resolved, Status):
            return resolved
        if resolved:
            if len(self._placed) >= _PLACED_CACHE_MAX:
                self._placed.clear()
            self._placed[key] = out
        return out

    def _attachable_volumes(
        self, pod: Pod, csi_node: CSINode | None, new_pod: bool, out: dict[str, str]
    ) -> Status | bool:
        """``filterAttachableVolumes``: add ``driver/handle -> driver`` for each volume;
        True when every claim resolved to its PersistentVolume."""
        resolved = True
        for v in pod.spec.volumes:
            name, ephemeral = self._claim_name(pod, v)
            if name is None:
                in_tree = _in_tree_source(v)
                if in_tree is not None and _migrated_on_node(csi_node, in_tree[0]):
                    driver = IN_TREE_TO_CSI[in_tree[0]]
                    out[f"{driver}/{in_tree[1]}"] = driver
                continue
            if not name:
                return Status(Code.ERROR, "PersistentVolumeClaim had no name")
            pvc: PersistentVolumeClaim | None = self._get(
                "PersistentVolumeClaim", pod.namespace, name
            )
            if pvc is None:
                if new_pod:
                    # The pod cannot run without its claim.
                    return Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f"looking up PVC {pod.namespace}/{name}: "
                        f'persistentvolumeclaim "{name}" not found',
                    )
                resolved = False
                continue
            if ephemeral:
                err = ephemeral_volume_is_for_pod(pod, pvc)
                if err is not None:
                    return Status(Code.ERROR, err)
            if not pvc.spec.volume_name:
                resolved = False
            info = self._driver_info(csi_node, pvc)
            if info is None or not info[0] or not info[1]:
                continue
            driver, handle = info
            out[f"{driver}/{handle}"] = driver
        return resolved

    @staticmethod
    def _claim_name(pod: Pod, v: Volume) -> tuple[str | None, bool]:
        if v.persistent_volume_claim is not None:
            return v.persistent_volume_claim.claim_name, False
        if v.ephemeral is not None:
            return ephemeral_claim_name(pod, v), True
        return None, False

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.spec.volumes or node_info.node is None:
            return None
        csi_node: CSINode | None = self._get("CSINode", None, node_info.name)
        return self._check_node(state, pod, node_info, csi_node)

    @hookimpl
    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeBatch
    ) -> Sequence[Status | None]:
        """Filter for a batch, with the CSINodes listed once instead of looked up per node."""
        infos = nodes.infos
        if not pod.spec.volumes:
            return [None] * len(infos)
        memo = state.get(STATE_KEY)
        csi_nodes = memo.get(_CSI_NODES) if memo is not None else None
        if csi_nodes is None:
            lister = getattr(self._handle, "lister", None)
            objects = lister.list_objects("CSINode") if lister is not None else ()
            csi_nodes = {n.metadata.name: n for n in objects}
            if memo is not None:
                memo[_CSI_NODES] = csi_nodes
        return [
            None if ni.node is None else self._check_node(state, pod, ni, csi_nodes.get(ni.name))  # type: ignore[arg-type]
            for ni in infos
        ]

    def _check_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, csi_node: CSINode | None
    ) -> Status | None:
        computed = self._new_volumes(state, pod, csi_node)
        if isinstance(computed, Status):
            return computed
        if not computed:
            return None
        if self._check_drivers:
            # checkCSIDriverOnNode, before the limits: a node without them still needs the
            # drivers. Sorted, where upstream's map order picks any missing driver.
            for driver in sorted(set(computed.values())):
                if not self._driver_on_node(driver, csi_node):
                    reason = ERR_REASON_DRIVER_NOT_INSTALLED.format(driver=driver)
                    return Status(Code.UNSCHEDULABLE, reason)
        limits = self._limits(csi_node)
        if not any(driver in limits for driver in computed.values()):
            return None  # only drivers with a limit can reject the node
        new_volumes = dict(computed)
        attached: dict[str, str] = {}
        for existing in node_info.pods:
            if not existing.pod.spec.volumes:
                continue
            volumes = self._placed_volumes(existing.pod, csi_node)
            if isinstance(volumes, Status):
                return volumes
            attached.update(volumes)
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # a volume shared with a running pod counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _driver_on_node(self, driver: str, csi_node: CSINode | None) -> bool:
        """Whether ``driver`` may serve the pod on the node: it does not ask to be present
        (no CSIDriver, or no ``preventPodSchedulingIfMissing``), or the node's CSINode
        lists it (a node without CSINode lists none)."""
        found: CSIDriver | None = self._get("CSIDriver", None, driver)
        if found is None or not found.spec.prevent_pod_scheduling_if_missing:
            return True
        return csi_node is not None and any(d.name == driver for d in csi_node.spec.drivers)

    def _limits(self, csi_node: CSINode | None) -> dict[str, int]:
        """Each driver's ``allocatable.count`` in ``csi_node`` (none without a CSINode)."""
        if csi_node is None:
            return {}
        # By object: a changed CSINode is a new object in the lister.
        hit = self._limits_of.get(id(csi_node))
        if hit is not None and hit[0] is csi_node:
            return hit[1]
        limits = {
            d.name: d.allocatable.count
            for d in csi_node.spec.drivers
            if d.allocatable is not None and d.allocatable.count is not None
        }
        if len(self._limits_of) >= _PLACED_CACHE_MAX:
            self._limits_of.clear()
        self._limits_of[id(csi_node)] = (csi_node, limits)
        return limits

    # -- events --------------------------------------------------------------------------

    def is_schedulable_after_csi_node_updated(
        self, pod: Pod, old: CSINode | None, new: CSINode
    ) -> QueueingHint:
        """Queue when a driver's limit grew or went away, or the migrated plugins changed."""
        if old is None:
            return QueueingHint.QUEUE
        if old.metadata.annotations.get(ANN_MIGRATED_PLUGINS) != new.metadata.annotations.get(
            ANN_MIGRATED_PLUGINS
        ):
            return QueueingHint.QUEUE

        def limits(n: CSINode) -> dict[str, int | None]:
            return {
                d.name: d.allocatable.count if d.allocatable is not None else None
                for d in n.spec.drivers
            }

        before, after = limits(old), limits(new)
        for driver, limit in before.items():
            if limit is None:
                continue
            new_limit = after.get(driver)
            if new_limit is None or new_limit > limit:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        """Queue when a bound pod with claim-backed or in-tree volumes went away."""
        deleted = old if old is not None else new
        if deleted is None or not deleted.spec.node_name:
            return QueueingHint.SKIP
        for v in deleted.spec.volumes:
            if (
                v.persistent_volume_claim is not None
                or v.ephemeral is not None
                or _in_tree_source(v) is not None
            ):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @hookimpl
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)
            ),
        ]
