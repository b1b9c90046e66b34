"""DefaultEvictor: which pods the descheduler may evict (its Filter and PreEvictionFilter)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from kubesched.api import LabelSelector, Pod, compile_label_selector
from kubesched.config.duration import format_duration, parse_duration
from kubesched.deschedule import DeschedulerHandle

from .common import StrategyArgs

NAME = "DefaultEvictor"
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
"""A pod with this annotation is evictable whatever the other checks say."""
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""``system-cluster-critical`` and above: never evicted unless ``evictSystemCriticalPods``."""
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SOURCE_ANNOTATION = "kubernetes.io/config.source"

ERR_NO_OWNER = "pod does not have any ownerRefs"
ERR_DAEMONSET = (
    "pod is related to daemonset and descheduler is not configured with evictDaemonSetPods"
)
ERR_MIRROR = "pod is a mirror pod"
ERR_STATIC = "pod is a static pod"
ERR_TERMINATING = "pod is terminating"
ERR_CRITICAL = "pod has system critical priority"
ERR_PRIORITY = "pod has higher priority than specified priority class threshold"
ERR_LOCAL_STORAGE = (
    "pod has local storage and descheduler is not configured with evictLocalStoragePods"
)
ERR_PVC = "pod has a PVC and descheduler is configured to ignore PVC pods"
ERR_LABELS = "pod labels do not match the labelSelector filter in the policy parameter"
ERR_MIN_REPLICAS = "owner has %d replicas which is less than minReplicas of %d"
ERR_MIN_AGE = "pod age is not older than MinPodAge: %s seconds"
ERR_NO_FIT = "pod does not fit on any other node"
ERR_NO_PDB = "no PodDisruptionBudget found for pod"
ERR_RESOURCE_CLAIMS = "pod has ResourceClaims and PodsWithResourceClaims protection is enabled"


class PriorityThreshold(StrategyArgs):
    """A priority at or above which pods are kept: ``value``, or a PriorityClass ``name``."""

    value: int | None = None
    name: str = ""


DEFAULT_PROTECTIONS = (
    "PodsWithLocalStorage",
    "DaemonSetPods",
    "SystemCriticalPods",
    "FailedBarePods",
)
"""``podProtections.defaultDisabled``: protections on unless disabled."""
EXTRA_PROTECTIONS = ("PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims")
"""``podProtections.extraEnabled``: protections off unless enabled."""
# The deprecated switches each protection replaces, and the value that lifts it (a default
# protection) or turns it on (an extra one).
_SWITCH = {
    "PodsWithLocalStorage": "evict_local_storage_pods",
    "DaemonSetPods": "evict_daemon_set_pods",
    "SystemCriticalPods": "evict_system_critical_pods",
    "FailedBarePods": "evict_failed_bare_pods",
    "PodsWithPVC": "ignore_pvc_pods",
    "PodsWithoutPDB": "ignore_pods_without_pdb",
}


class PodProtections(StrategyArgs):
    """``podProtections``: default protections to lift, extra ones to add."""

    default_disabled: list[str] = Field(default_factory=list)
    extra_enabled: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known(self) -> PodProtections:
        for where, names, valid in (
            ("ExtraEnabled", self.extra_enabled, EXTRA_PROTECTIONS),
            ("DefaultDisabled", self.default_disabled, DEFAULT_PROTECTIONS),
        ):
            for name in names:
                if name not in valid:
                    raise ValueError(
                        f'invalid pod protection policy in {where}: "{name}". '
                        f"Valid options are: [{' '.join(valid)}]"
                    )
        return self


class Args(StrategyArgs):
    """DefaultEvictor's args, with the descheduler's defaults. The boolean switches are
    the descheduler's deprecated form of ``podProtections``; either may be used, not
    both."""

    node_selector: str = ""
    evict_local_storage_pods: bool = Field(False, description="evict pods with emptyDir/hostPath")
    evict_daemon_set_pods: bool = Field(False, description="evict DaemonSet pods")
    evict_system_critical_pods: bool = Field(
        False, description="evict pods of system-critical priority (ignores priorityThreshold)"
    )
    ignore_pvc_pods: bool = Field(False, description="keep pods that mount a PVC")
    evict_failed_bare_pods: bool = Field(False, description="evict Failed pods without owner")
    label_selector: LabelSelector | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = Field(False, description="evict only pods that fit another node")
    min_replicas: int = Field(
        0, ge=0, description="keep pods whose owner has fewer pods than this (counted from 2)"
    )
    min_pod_age: str | None = Field(None, description="keep pods younger than this (Go duration)")
    ignore_pods_without_pdb: bool = Field(
        False, description="keep pods no PodDisruptionBudget selects"
    )
    pod_protections: PodProtections | None = None
    # podProtections' PodsWithResourceClaims, which no deprecated switch has.
    _protect_claims: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _protections(self) -> Args:
        p = self.pod_protections
        if p is None or not (p.default_disabled or p.extra_enabled):
            return self
        if any(getattr(self, switch) for switch in _SWITCH.values()):
            raise ValueError(
                "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
                "PodProtections.DefaultDisabled"
            )
        for name in [*p.default_disabled, *p.extra_enabled]:
            if name in _SWITCH:
                setattr(self, _SWITCH[name], True)
        self._protect_claims = "PodsWithResourceClaims" in p.extra_enabled
        return self

    @field_validator("priority_threshold")
    @classmethod
    def _one_threshold(cls, v: PriorityThreshold | None) -> PriorityThreshold | None:
        if v is not None and v.value is not None and v.name:
            raise ValueError(
                "priority threshold misconfigured, only one of value or name can be set"
            )
        return v

    @field_validator("min_pod_age")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None:
            parse_duration(v)
        return v


class DefaultEvictor:
    """The descheduler's default evictor: refuses bare, DaemonSet, mirror/static,
    terminating, system-critical, local-storage (and optionally PVC) pods, pods outside
    its label selector, of owners under ``minReplicas``, younger than ``minPodAge``, and
    (``nodeFit``) pods that fit no other node."""

    name = NAME
    Args = Args

    def __init__(self, args: Args, handle: DeschedulerHandle) -> None:
        self.args = args
        self.handle = handle
        threshold = SYSTEM_CRITICAL_PRIORITY
        pt = args.priority_threshold
        if pt is not None and pt.value is not None:
            threshold = pt.value
        elif pt is not None and pt.name:
            pc: Any = handle.cluster.try_get("PriorityClass", None, pt.name)
            if pc is None:
                raise ValueError(f'priorityClass "{pt.name}" not found')
            threshold = pc.value
        self.threshold = threshold
        self.selector = compile_label_selector(args.label_selector) if args.label_selector else None
        self.min_age = parse_duration(args.min_pod_age) if args.min_pod_age else None

    def filter(self, pod: Pod) -> str | None:
        """Why ``pod`` must not be evicted, or None."""
        a = self.args
        if EVICT_ANNOTATION in pod.metadata.annotations:
            return None
        if pod.metadata.deletion_timestamp is not None:
            return ERR_TERMINATING
        owners = pod.metadata.owner_references
        if not owners and not (a.evict_failed_bare_pods and pod.status.phase == "Failed"):
            return ERR_NO_OWNER
        if any(o.kind == "DaemonSet" for o in owners) and not a.evict_daemon_set_pods:
            return ERR_DAEMONSET
        if MIRROR_ANNOTATION in pod.metadata.annotations:
            return ERR_MIRROR
        if pod.metadata.annotations.get(SOURCE_ANNOTATION, "api") != "api":
            return ERR_STATIC
        priority = pod.spec.priority or 0
        if not a.evict_system_critical_pods:
            if priority >= SYSTEM_CRITICAL_PRIORITY:
                return ERR_CRITICAL
            if priority >= self.threshold:
                return ERR_PRIORITY
        if not a.evict_local_storage_pods and any(
            v.source("emptyDir") is not None or v.source("hostPath") is not None
            for v in pod.spec.volumes
        ):
            return ERR_LOCAL_STORAGE
        if a.ignore_pvc_pods and any(v.persistent_volume_claim for v in pod.spec.volumes):
            return ERR_PVC
        if a._protect_claims and pod.spec.resource_claims:
            return ERR_RESOURCE_CLAIMS
        if self.selector is not None and not self.selector.matches(pod.metadata.labels):
            return ERR_LABELS
        # As the descheduler: the owner's "replicas" are the pods that name it as an
        # owner (its informer index), and a pod with several owners is not checked.
        if a.min_replicas > 1 and len(owners) == 1:
            owner = owners[0].uid
            replicas = sum(
                1
                for p in self.handle.cluster.pods(pod.namespace)
                if any(o.uid == owner for o in p.metadata.owner_references)
            )
            if replicas < a.min_replicas:
                return ERR_MIN_REPLICAS % (replicas, a.min_replicas)
        if self.min_age is not None:
            # The descheduler times this from status.startTime (not creation): a pod the
            # kubelet has not started yet is too young whatever its age.
            started = self.handle.age_of(pod.status.start_time)
            if started is None or started < self.min_age:
                return ERR_MIN_AGE % format_duration(self.min_age)
        if a.ignore_pods_without_pdb and not self._covered_by_pdb(pod):
            return ERR_NO_PDB
        return None

    def _covered_by_pdb(self, pod: Pod) -> bool:
        # As the descheduler's IsPodCoveredByPDB: a budget with an empty selector covers
        # no pod.
        for pdb in self.handle.cluster.list_pod_disruption_budgets(pod.namespace):
            sel = pdb.spec.selector
            if sel is None or not (sel.match_labels or sel.match_expressions):
                continue
            if compile_label_selector(sel).matches(pod.metadata.labels):
                return True
        return False

    def pre_eviction_filter(self, pod: Pod) -> str | None:
        """With ``nodeFit``: refuse a pod that no other node would take."""
        if self.args.node_fit and not self.handle.fits_other_node(pod, self.handle.nodes()):
            return ERR_NO_FIT
        return None
