"""DynamicResources: allocate the devices of a pod's ResourceClaims (DRA, structured parameters).

Follows upstream's ``pkg/scheduler/framework/plugins/dynamicresources`` (v1.36):
PreEnqueue waits until every claim exists; PreFilter resolves the claims (a
template's claim through ``status.resourceClaimStatuses``), checks that allocated
claims can still be reserved and that device classes exist, and prepares the
allocator; Filter runs it for each node (allocated claims only check their node
selector); Score prefers nodes where earlier ``firstAvailable`` alternatives fit;
PostFilter deallocates a claim the pod alone holds on nodes it can no longer use;
Reserve keeps the chosen allocations in flight so that no other pod gets the same
devices; PreBind writes the allocation and adds the pod to ``reservedFor``, then, for
devices with binding conditions (DRADeviceBindingConditions), waits until the driver
reports them all True; a failure condition or ``bindingTimeout`` fails the binding, and
the pod's next attempt deallocates the claim (Filter finds it unavailable, PostFilter
frees it). Extended resources that a DeviceClass backs (DRAExtendedResource) are
allocated in a claim of the scheduler's own on nodes that do not offer them (see
``extended``); that claim is deleted when the binding fails (Unreserve) and, when an
earlier attempt left it behind, by PostFilter.
Pods without claims or such resources skip everything (PreFilter returns Skip).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from pydantic import Field, ValidationInfo, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    ConflictError,
    CycleState,
    EventResource,
    FeatureGates,
    NodeInfo,
    PluginArgs,
    QueueingHint,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
    invalid,
    raise_args_errors,
)
from kubesched.api import (
    RESOURCE_CLAIM_FINALIZER,
    NodeSelectorTermsMatcher,
    Pod,
    PodClaimError,
    PodExtendedResourceClaimStatus,
    ResourceClaim,
    ResourceClaimConsumerReference,
    extended_resource_classes,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_name,
)
from kubesched.api.validation.field import go_quote
from kubesched.config.duration import Duration
from kubesched_builtin.names import DYNAMIC_RESOURCES

from .allocator import (
    FIRST_AVAILABLE_MAX_SIZE,
    AllocationError,
    AllocationTimeout,
    Allocator,
    Features,
    NodeOutcome,
    gather_pools,
)
from .cel import CELCache
from .extended import (
    SPECIAL_CLAIM_NAME,
    extended_requests,
    find_extended_resource_claim,
    requests_and_mappings,
    requests_extended_resources,
    special_claim,
)
from .manager import DRAManager

NAME = DYNAMIC_RESOURCES

ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_TIMEOUT = "timed out trying to allocate devices"
ERR_EXTENDED_STALE = "cannot schedule extended resource claim"
ERR_CANNOT_FIT_RESOURCE = "cannot fit resource"
MSG_NO_CLAIMS = "no new claims to deallocate"
MSG_DEALLOCATED = "deallocation of ResourceClaim completed"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
ERR_STATE_NOT_FOUND = "not found"
"""PostFilter's error when PreFilter left no state (upstream's ``ErrNotFound``)."""
MSG_DELETED = "deletion of ResourceClaim completed"
ERR_BINDING_TIMEOUT = "device binding timeout"
ERR_CANCELED = "context canceled"
"""The wait for binding conditions cut short by the scheduler's shutdown (Go's words for
the cancelled context of upstream's poll)."""
REASON_BINDING_PENDING = "BindingConditionsPending"
BINDING_CHECK_PERIOD = 5.0
"""Seconds between PreBind's checks of the binding conditions (upstream polls every 5s)."""


ERR_CLAIMS_NOT_SIGNABLE = "pods with dra resource claims are not signable"
"""Why a pod with claims cannot be signed (opportunistic batching), in upstream's words."""


class DynamicResourcesArgs(PluginArgs):
    """``DynamicResourcesArgs`` (kubescheduler.config.k8s.io/v1), with upstream's defaults."""

    filter_timeout: Duration = Field(
        default=10.0,
        description=(
            "How long Filter may search for devices on one node before the attempt ends "
            "with an error (0s: no limit)."
        ),
    )
    binding_timeout: Duration = Field(
        default=600.0,
        description=(
            "How long PreBind waits for the binding conditions of allocated devices "
            "(DRADeviceBindingConditions), counted from the claim's allocationTimestamp."
        ),
    )

    # Upstream's filterTimeout has no omitempty: --write-config-to shows it as null while
    # DRASchedulerFilterTimeout is off (and leaves bindingTimeout out).
    null_when_gated_off = frozenset({"filter_timeout"})

    @classmethod
    def fields_gated_off(cls, gates: FeatureGates) -> dict[str, str]:
        # Upstream's reasons, the first misspelling its gate's name.
        off = {}
        if not gates.enabled("DRASchedulerFilterTimeout"):
            off["filter_timeout"] = "DRASchedulingFilterTimeout feature gate is disabled"
        if not _binding_conditions_enabled(gates.enabled):
            off["binding_timeout"] = (
                "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is "
                "disabled"
            )
        return off

    @model_validator(mode="after")
    def _validate(self, info: ValidationInfo) -> DynamicResourcesArgs:
        # ValidateDynamicResourcesArgs: unlike the REST API, it refuses a field whose
        # feature gate is off (set, even to its default) rather than ignore it.
        errors = self.gate_errors(info)
        refused = {e.loc[0] for e in errors}
        if "filterTimeout" not in refused and self.filter_timeout < 0:
            errors.append(
                invalid(("filterTimeout",), self.filter_timeout, "must be zero or positive")
            )
        if "bindingTimeout" not in refused and self.binding_timeout < 1:
            errors.append(
                invalid(("bindingTimeout",), self.binding_timeout, "must be at least 1 second")
            )
        raise_args_errors("DynamicResourcesArgs", errors)
        return self


@dataclass
class _ClaimInfo:
    claim: ResourceClaim
    pod_claim_name: str
    available_on: NodeSelectorTermsMatcher | None = None
    allocation: Any = None


@dataclass
class _State:
    claims: list[_ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    allocator_error: str | None = None
    """Why the pending claims cannot be allocated anywhere (Filter fails with it)."""
    node_outcomes: dict[str, NodeOutcome] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    shape: Any = None
    """The pending claims' specs and the class and slice versions: with the node and the
    versions of its pools, the key of the plugin's per-node outcome cache (None: off)."""
    pool_versions: dict[tuple[str, str], int] = field(default_factory=dict)
    extended: _ClaimInfo | None = None
    """The claim for the pod's extended resources backed by DRA (DRAExtendedResource)."""
    extended_resources: dict[str, int] = field(default_factory=dict)
    backed: dict[str, str] = field(default_factory=dict)
    """Extended resource name -> the DeviceClass backing it."""
    node_extended: dict[str, tuple[ResourceClaim, list[dict[str, str]], Allocator]] = field(
        default_factory=dict
    )
    """Per node where DRA serves extended resources: the claim with that node's requests,
    the containers' mappings to them, and the allocator of the pod's claims with it."""
    extended_allocators: dict[Any, Allocator] = field(default_factory=dict)
    user_claims: list[ResourceClaim] = field(default_factory=list)
    extended_mappings: list[dict[str, str]] = field(default_factory=list)
    """Reserve's node: the containers' mappings to the extended-resource claim's requests."""

    def to_allocate(self) -> list[_ClaimInfo]:
        return [c for c in self.claims if c.claim.status.allocation is None]

    def to_allocate_on(self, node_name: str) -> list[_ClaimInfo]:
        """The claims to allocate on ``node_name``, the allocator's order: the pod's, then
        the extended-resource claim if the node serves extended resources through DRA
        (which Reserve then takes as the claim and mappings of that node)."""
        pending = self.to_allocate()
        extended = self.node_extended.get(node_name)
        if extended is not None and self.extended is not None:
            self.extended.claim, self.extended_mappings = extended[0], extended[1]
            pending.append(self.extended)
        return pending

    def to_bind(self) -> list[_ClaimInfo]:
        """The claims PreBind writes: the pod's, and the extended-resource claim when
        Reserve allocated it."""
        if self.extended is not None and self.extended.allocation is not None:
            return [*self.claims, self.extended]
        return self.claims


STATE_KEY: StateKey[_State] = StateKey(NAME)

_CONFLICT_RETRIES = 5
"""Attempts of a claim write that conflicts (client-go's ``retry.DefaultRetry``: 5 steps)."""

_MATCH_CACHE_LIMIT = 1_000_000
_OUTCOME_CACHE_LIMIT = 200_000


class DynamicResources:
    """Allocates DRA devices during scheduling (PreEnqueue, PreFilter, Filter, PostFilter,
    Score, Reserve, PreBind)."""

    name = NAME
    Args = DynamicResourcesArgs
    reads = ("ResourceClaim", "ResourceSlice", "DeviceClass")
    writes = ("ResourceClaim", "ResourceClaim/status", "ResourceClaim/create", "Pod/status")

    def __init__(self, args: DynamicResourcesArgs | None, handle: Any) -> None:
        args = args or DynamicResourcesArgs()
        self.handle = handle
        # Without DRASchedulerFilterTimeout, Filter searches for as long as it takes.
        self.filter_timeout = (
            args.filter_timeout if handle.feature_enabled("DRASchedulerFilterTimeout") else 0.0
        )
        self.extended_resources = handle.feature_enabled("DRAExtendedResource")
        # Upstream's DeviceBindingAndStatus: the conditions live in the device status.
        self.binding_conditions = _binding_conditions_enabled(handle.feature_enabled)
        self.binding_timeout = args.binding_timeout
        self.features = Features(
            consumable_capacity=handle.feature_enabled("DRAConsumableCapacity"),
            device_taints=handle.feature_enabled("DRADeviceTaints"),
            binding_conditions=self.binding_conditions,
            partitionable_devices=handle.feature_enabled("DRAPartitionableDevices"),
        )
        # DeviceTaintRules taint devices as if their drivers had (upstream's tracker).
        self.taint_rules = handle.feature_enabled("DRADeviceTaintRules")
        if self.taint_rules:
            self.reads = (*self.reads, "DeviceTaintRule")
        self.manager = DRAManager(handle, taint_rules=self.taint_rules)
        self.cel_cache = CELCache()
        self._match_cache: dict[Any, Any] = {}
        self._envs: dict[Any, Any] = {}
        self._pools: dict[tuple[str, str | None], Any] = {}
        self._pools_version = -1
        self._outcomes: dict[Any, Any] = {}

    # -- claims of a pod ----------------------------------------------------------------
    def _pod_claims(self, pod: Pod) -> list[tuple[str, ResourceClaim]]:
        """``foreachPodResourceClaim``; raises PodClaimError when one is not usable yet."""
        out = []
        for pc in pod.spec.resource_claims:
            name, check_owner = pod_claim_name(pod, pc)
            if name is None:
                continue
            ns = pod.metadata.namespace or "default"
            claim = self.manager.claim(ns, name)
            if claim is None:
                raise PodClaimError(f'could not find ResourceClaim "{ns}/{name}"')
            if claim.metadata.deletion_timestamp is not None:
                raise PodClaimError(f'resourceclaim "{claim.name}" is being deleted')
            if check_owner:
                is_for_pod(pod, claim)
            out.append((pc.name, claim))
        return out

    # -- events -------------------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod) -> Status | None:
        """Whether a pod's claims can be met on a node depends on what other pods were
        allocated, so a pod with claims cannot be signed (as upstream, for now)."""
        if pod.spec.resource_claims:
            return Status(Code.UNSCHEDULABLE, ERR_CLAIMS_NOT_SIGNABLE)
        return None

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        events = [
            # A resource might depend on node labels for topology filtering.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            # Allocation is tracked in ResourceClaims.
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            # The resourceclaim controller names a generated claim in the pod's status.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
            ),
        ]
        if self.taint_rules:
            # A rule's taint comes and goes with the rule: upstream sees that as a change
            # of the ResourceSlices of the devices it selects.
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(
                        EventResource.DEVICE_TAINT_RULE,
                        ActionType.ADD | ActionType.UPDATE | ActionType.DELETE,
                    )
                )
            )
        return events

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: ResourceClaim | None, new: ResourceClaim
    ) -> QueueingHint:
        """Queue when a claim of the pod appeared or its status changed, or when any
        claim was deallocated (its devices are free again)."""
        try:
            uses = any(c.metadata.uid == new.metadata.uid for _, c in self._pod_claims(pod))
        except PodClaimError:
            return QueueingHint.SKIP
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.QUEUE
        if not uses:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if old.status == new.status else QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
        """Queue the pod itself once all its claims exist."""
        if new is None or pod.metadata.uid != new.metadata.uid:
            return QueueingHint.SKIP
        try:
            self._pod_claims(new)
        except PodClaimError:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # -- queueing and PreFilter ---------------------------------------------------------
    @hookimpl
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.spec.resource_claims:
            return None
        try:
            self._pod_claims(pod)
        except PodClaimError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        return None

    def _pre_filter_extended(self, s: _State, pod: Pod) -> None:
        """``preFilterExtendedResources``: the claim for the pod's extended resources
        backed by DRA, the one of an earlier attempt or a new one in memory."""
        if not self.extended_resources or not requests_extended_resources(pod):
            return
        backed = extended_resource_classes(self.manager.device_classes())
        wanted = extended_requests(pod, backed)
        if not wanted:
            return
        s.backed, s.extended_resources = backed, wanted
        claim = find_extended_resource_claim(pod, self.manager.claims())
        s.extended = _ClaimInfo(claim if claim is not None else special_claim(pod), "")

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> Status | None:
        s = _State()
        state.write(STATE_KEY, s)
        self._pre_filter_extended(s, pod)
        if not pod.spec.resource_claims and s.extended is None:
            return Status.skip()
        try:
            claims = self._pod_claims(pod)
        except PodClaimError as err:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        if not claims and s.extended is None:
            return Status.skip()
        for pc_name, claim in claims:
            info = _ClaimInfo(claim, pc_name)
            alloc = claim.status.allocation
            # (v1.36 puts no limit on sharing an allocated claim: a claim reserved by
            # others is used as well, and only the API server refuses a 257th consumer.)
            if alloc is not None:
                if alloc.node_selector is not None:
                    info.available_on = NodeSelectorTermsMatcher(
                        alloc.node_selector.node_selector_terms
                    )
            else:
                if self.manager.has_pending_allocation(claim.metadata.uid or ""):
                    return Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f"resource claim {claim.key} is in the process of being allocated",
                    )
                status = self._check_classes(claim)
                if status is not None:
                    return status
            s.claims.append(info)
        pending = s.to_allocate()
        s.user_claims = [c.claim for c in pending]
        if pending or s.extended is not None:
            if len(self._match_cache) > _MATCH_CACHE_LIMIT:
                # Verdicts of replaced slices and classes are never looked up again.
                self._match_cache.clear()
                self._envs.clear()
            if self.manager.watching and s.extended is None:
                # What a node's outcome depends on besides the node and its pools'
                # allocations (see filter); a copy of the pool versions, so the cache
                # key and the allocated devices below are of the same moment.
                s.shape = (
                    self.manager.classes_version,
                    self.manager.slices_version,
                    tuple(c.claim.spec.model_dump_json() for c in pending),
                )
                s.pool_versions = dict(self.manager.pool_versions)
            try:
                s.allocator = self._allocator(s.user_claims)
            except AllocationError as err:
                s.allocator_error = str(err)
        return None

    def _allocator(self, claims: list[ResourceClaim]) -> Allocator:
        allocated, consumed = self.manager.allocated_state()
        return Allocator(
            claims,
            allocated,
            self.manager.device_class,
            self.cel_cache,
            self._match_cache,
            self._envs,
            self.filter_timeout,
            consumed=consumed,
            features=self.features,
        )

    def _check_classes(self, claim: ResourceClaim) -> Status | None:
        for req in claim.spec.devices.requests:
            pairs = (
                [(req.name, req.exactly.device_class_name)]
                if req.exactly is not None
                else [(f"{req.name}/{s.name}", s.device_class_name) for s in req.first_available]
            )
            for name, class_name in pairs:
                if self.manager.device_class(class_name) is None:
                    return Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        f"request {name}: device class {class_name} does not exist",
                    )
        return None

    # -- Filter -------------------------------------------------------------------------
    def _node_pools(self, node: Any) -> Any:
        version = self.manager.slices_version
        if version != self._pools_version or not self.manager.watching:
            self._pools.clear()
            self._pools_version = version
            self._by_node, self._shared = _index_slices(self.manager.slices())
        key = (node.name, node.metadata.resource_version)
        pools = self._pools.get(key)
        if pools is None:
            pools = self._pools[key] = gather_pools(
                self._by_node.get(node.name, []) + self._shared, node
            )
        return pools

    def _allocate(self, s: _State, node: Any, allocator: Allocator) -> NodeOutcome:
        """The allocator's outcome on ``node``, reused across pods when nothing it depends
        on changed: the same claim specs, classes and slices, the same node, and no
        device of the node's pools allocated or released since."""
        pools = self._node_pools(node)
        if s.shape is None:
            return allocator.allocate(node, pools)
        versions = s.pool_versions
        key = (
            s.shape,
            node.name,
            node.metadata.resource_version,
            tuple(versions.get((p.driver, p.name), 0) for p in pools),
        )
        cached = self._outcomes.get(key)
        if cached is not None:
            picked, reasons, chosen = cached
            return NodeOutcome(node.name, picked, reasons, chosen, allocator=allocator)
        outcome = allocator.allocate(node, pools)
        if len(self._outcomes) > _OUTCOME_CACHE_LIMIT:
            self._outcomes.clear()
        self._outcomes[key] = (outcome.picked, outcome.reasons, outcome.chosen_options)
        return outcome

    def _filter_extended(self, s: _State, pod: Pod, node_info: NodeInfo) -> Status | None:
        """``filterExtendedResources``: which of the pod's extended resources the node
        must serve through DRA; the node's own claim for them (``s.node_extended``), and
        the allocator of the pod's claims together with it."""
        assert s.extended is not None
        node = node_info.node
        if s.extended.claim.spec.devices.requests:
            # Made in an earlier attempt: upstream waits for PostFilter to remove it.
            return Status(Code.UNSCHEDULABLE, ERR_EXTENDED_STALE)
        offered = node_info.allocatable.scalar_resources
        needed = {}
        for name, amount in s.extended_resources.items():
            if offered.get(name, 0) == 0:
                needed[name] = amount
        if not needed or s.extended.claim.status.allocation is not None:
            return None
        requests, mappings = requests_and_mappings(pod, needed, s.backed)
        claim = s.extended.claim.model_copy(deep=True)
        claim.spec.devices = claim.spec.devices.model_validate({"requests": requests})
        key = tuple(sorted(needed.items()))
        if key not in s.extended_allocators:
            s.extended_allocators[key] = self._allocator([*s.user_claims, claim])
        s.node_extended[node.name] = (claim, mappings, s.extended_allocators[key])
        return None

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.read(STATE_KEY)
        if not s.claims and s.extended is None:
            return None
        node = node_info.node
        allocator = s.allocator
        if s.extended is not None:
            status = self._filter_extended(s, pod, node_info)
            if status is not None:
                return status
            extended = s.node_extended.get(node.name)
            if extended is not None:
                allocator = extended[2]
            elif not s.user_claims:
                allocator = None
        unavailable = [i for i, c in enumerate(s.claims) if not self._available(c, node)]
        if s.allocator_error is not None:
            return Status(Code.ERROR, s.allocator_error)
        if allocator is not None:
            try:
                outcome = self._allocate(s, node, allocator)
            except AllocationTimeout:
                return Status(Code.ERROR, f"node {node.name}: {ERR_TIMEOUT}")
            except AllocationError as err:
                return Status(Code.ERROR, str(err))
            s.node_outcomes[node.name] = outcome
            if not outcome.fits:
                status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_CANNOT_ALLOCATE)
                status.details = tuple(outcome.reasons)
                return status
        if unavailable:
            s.unavailable.update(unavailable)
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_AVAILABLE)
        return None

    def _available(self, info: _ClaimInfo, node: Any) -> bool:
        """Whether an allocated claim can serve the pod on ``node``: its node selector
        matches, and its devices' binding neither failed nor timed out (a claim that
        cannot is deallocated by PostFilter, so that other devices can be tried)."""
        if info.available_on is not None and not info.available_on.matches_node(node):
            return False
        claim = info.claim
        if claim.status.allocation is None or not self.binding_conditions:
            return True
        try:
            ready = binding_ready(claim)
        except BindingError:
            return False
        return ready or not self._timed_out(claim)

    def _now(self) -> datetime:
        """The date now as the scheduler's clock has it (virtual time in ``simulate``)."""
        wall = getattr(getattr(self.handle, "clock", None), "wall", None)
        return wall() if wall is not None else datetime.now(UTC)

    def _timed_out(self, claim: ResourceClaim) -> bool:
        """``isClaimTimeout``: the claim has devices with binding conditions and was
        allocated longer than ``bindingTimeout`` ago."""
        alloc = claim.status.allocation
        if alloc is None or alloc.allocation_timestamp is None:
            return False
        if not any(r.binding_conditions for r in alloc.devices.results):
            return False
        deadline = alloc.allocation_timestamp + timedelta(seconds=self.binding_timeout)
        return deadline < self._now()

    # -- PostFilter ---------------------------------------------------------------------
    @hookimpl
    def post_filter(self, state: CycleState, pod: Pod) -> Status:
        s = state.get(STATE_KEY)
        if s is None:
            # This PreFilter never ran (an earlier one rejected the pod): upstream's read
            # of the cycle state fails, and that error ends PostFilter with its words.
            return Status(Code.ERROR, ERR_STATE_NOT_FOUND)
        if not s.claims and s.extended is None:
            return Status(Code.UNSCHEDULABLE, MSG_NO_CLAIMS)
        for index in sorted(s.unavailable):
            claim = s.claims[index].claim
            reserved = claim.status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.metadata.uid):
                fresh = claim.model_copy(deep=True)
                fresh.status.reserved_for = []
                fresh.status.allocation = None
                fresh.status.devices = []
                try:
                    self.handle.client.update(fresh)
                except Exception as err:  # the API refused: the attempt ends with its error
                    return Status(Code.ERROR, str(err))
                return Status(Code.UNSCHEDULABLE, MSG_DEALLOCATED)
        if s.extended is not None and s.extended.claim.name != SPECIAL_CLAIM_NAME:
            # The claim for extended resources an earlier attempt made stands in the way
            # (Filter refuses every node while it exists): delete it.
            try:
                self._delete_claim(s.extended.claim)
            except Exception as err:  # the API refused: the attempt ends with its error
                return Status(Code.ERROR, str(err))
            return Status(Code.UNSCHEDULABLE, MSG_DELETED)
        return Status(Code.UNSCHEDULABLE, MSG_STILL_NOT_SCHEDULABLE)

    def _delete_claim(self, claim: ResourceClaim) -> None:
        """``deleteClaim``: drop the delete-protection finalizer, then delete the claim."""

        def drop_finalizer(fresh: Any) -> bool:
            fresh.metadata.finalizers = [
                f for f in fresh.metadata.finalizers or () if f != RESOURCE_CLAIM_FINALIZER
            ]
            return True

        try:
            self._update_on_conflict("ResourceClaim", claim, drop_finalizer)
        except Exception as err:
            raise RuntimeError(
                f"update resourceclaim {claim.namespace}/{claim.name}: {err}"
            ) from err
        self.handle.client.delete("ResourceClaim", claim.namespace, claim.name)

    # -- Score --------------------------------------------------------------------------
    def _score(self, s: _State, node_name: str) -> int:
        outcome = s.node_outcomes.get(node_name)
        if outcome is None or not outcome.fits:
            return 0
        return sum(
            FIRST_AVAILABLE_MAX_SIZE - i for chosen in outcome.chosen_options for i in chosen
        )

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        s = state.get(STATE_KEY)
        return 0 if s is None or not s.claims else self._score(s, node_info.node.name)

    @hookimpl
    def score_nodes(self, state: CycleState, nodes: Any) -> Any:
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            # Pods without claims: no per-node work at all.
            return np.zeros(len(nodes), dtype=np.int64)
        return np.fromiter(
            (self._score(s, name) for name in nodes.names), dtype=np.int64, count=len(nodes)
        )

    @hookimpl
    def normalize_score(self, scores: Any) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- Reserve, PreBind ---------------------------------------------------------------
    @hookimpl
    def reserve(self, state: CycleState, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if s is None or (not s.claims and s.extended is None):
            return None
        pending = s.to_allocate_on(node_name)
        if not pending:
            return None
        outcome = s.node_outcomes.get(node_name)
        if outcome is None or not outcome.fits:
            return Status(Code.ERROR, "claim allocation not found for node")
        allocations = outcome.allocations()
        if len(allocations) != len(pending):
            return Status(
                Code.ERROR,
                f"internal error, have {len(allocations)} allocations, "
                f"{len(pending)} claims to allocate, want {len(pending)} claims",
            )
        for info, allocation in zip(pending, allocations, strict=True):
            info.allocation = allocation
            assumed = info.claim.model_copy(deep=True)
            assumed.status.allocation = allocation
            self.manager.set_in_flight(info.claim.metadata.uid or "", assumed)
        return None

    @hookimpl
    def unreserve(self, state: CycleState, pod: Pod) -> None:
        s = state.get(STATE_KEY)
        if s is None:
            return
        for info in s.claims:
            self.manager.drop_in_flight(info.claim.metadata.uid or "")
            claim = self.manager.claim(info.claim.namespace, info.claim.name)
            if claim is not None and is_reserved_for_pod(pod, claim):
                # A failure is retried with the pod's next attempt, as upstream.
                with contextlib.suppress(Exception):
                    self._unreserve_claim(claim, pod)
        if s.extended is not None:
            # The scheduler's own claim for extended resources: once written, it goes,
            # so that no orphaned claim holds devices; the next attempt makes a new one.
            self.manager.drop_in_flight(s.extended.claim.metadata.uid or "")
            if s.extended.claim.name != SPECIAL_CLAIM_NAME:
                with contextlib.suppress(Exception):
                    self._delete_claim(s.extended.claim)

    def _unreserve_claim(self, claim: ResourceClaim, pod: Pod) -> None:
        """Take the pod out of the claim's ``reservedFor``. Upstream patches the entry away
        (strategic merge, no resourceVersion); here the list is written with the version
        it was read at, and re-read on a conflict, so no concurrent entry is lost."""
        uid = pod.metadata.uid

        def unreserve(fresh: Any) -> bool:
            if not is_reserved_for_pod(pod, fresh):
                return False
            fresh.status.reserved_for = [r for r in fresh.status.reserved_for if r.uid != uid]
            return True

        self._update_on_conflict("ResourceClaim", claim, unreserve)

    def _update_on_conflict(self, kind: str, obj: Any, change: Callable[[Any], bool]) -> None:
        """Write ``change`` (made on a copy of ``obj``; False: nothing to write) with the
        version it was read at, re-reading the object after a conflict (client-go's
        ``RetryOnConflict``: 5 attempts)."""
        for attempt in range(_CONFLICT_RETRIES):
            if attempt:
                obj = self.handle.client.get(kind, obj.namespace, obj.name)
            fresh = obj.model_copy(deep=True)
            if not change(fresh):
                return
            try:
                self.handle.client.update(fresh)
                return
            except ConflictError:
                if attempt == _CONFLICT_RETRIES - 1:
                    raise

    @hookimpl
    def pre_bind_pre_flight(self, state: CycleState) -> Status | None:
        s = state.get(STATE_KEY)
        if s is None or (not s.claims and s.extended is None):
            return Status.skip()
        return None

    @hookimpl
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if s is None or (not s.claims and s.extended is None):
            return Status.skip()
        for info in s.to_bind():
            if is_reserved_for_pod(pod, info.claim):
                continue
            created = None
            try:
                if info.claim.name == SPECIAL_CLAIM_NAME:
                    # Unreserve deletes it from now on, should anything below fail.
                    created = info.claim = self._create_extended_claim(info)
                info.claim = self._bind_claim(info, pod, created)
                if info is s.extended:
                    self._set_extended_status(pod, info.claim.name, s.extended_mappings)
            except Exception as err:  # the API refused: the binding fails, Unreserve runs
                return Status(Code.ERROR, str(err))
            finally:
                if info.allocation is not None:
                    self.manager.drop_in_flight(info.claim.metadata.uid or "")
        if self.binding_conditions and any(_has_binding_conditions(i.claim) for i in s.to_bind()):
            return self._wait_for_binding(s, pod, node_name)
        return None

    def _wait_for_binding(self, s: _State, pod: Pod, node_name: str) -> Status | None:
        """Wait until every allocated device with binding conditions has them all True
        (checked at once, then every 5 seconds, for at most ``bindingTimeout`` of the
        scheduler's clock: virtual time in ``simulate``, where other pods are scheduled
        meanwhile). A scheduler shutting down ends the wait at once."""
        recorder = self.handle.event_recorder
        if recorder is not None:
            recorder.eventf(
                pod,
                None,
                "Normal",
                REASON_BINDING_PENDING,
                "Scheduling",
                f"waiting for binding conditions for device on node {node_name}",
            )
        clock = getattr(self.handle, "clock", None)
        now = clock.now if clock is not None else time.monotonic
        deadline = now() + self.binding_timeout
        while True:
            try:
                if self._pod_ready_for_binding(s):
                    return None
            except BindingError as err:
                return Status(Code.ERROR, str(err))
            if not self.handle.pause(max(0.0, min(BINDING_CHECK_PERIOD, deadline - now()))):
                return Status(Code.ERROR, ERR_CANCELED)
            # Upstream's poll ends at its deadline without another look.
            if now() >= deadline:
                return Status(Code.ERROR, ERR_BINDING_TIMEOUT)

    def _pod_ready_for_binding(self, s: _State) -> bool:
        """``isPodReadyForBinding``: every claim's devices are bound (claims as the
        informer has them now); raises when a binding failed or timed out."""
        for info in s.to_bind():
            claim = self.manager.claim(info.claim.namespace, info.claim.name) or info.claim
            info.claim = claim
            if not binding_ready(claim):
                if self._timed_out(claim):
                    raise BindingError(f"claim {claim.name} binding timeout")
                return False
        return True

    def _create_extended_claim(self, info: _ClaimInfo) -> ResourceClaim:
        """Create the claim for the pod's extended resources (the API server names it);
        it leaves the in-flight allocations under its temporary uid."""
        fresh = info.claim.model_copy(deep=True)
        self.manager.drop_in_flight(fresh.metadata.uid or "")
        fresh.metadata.name = ""
        fresh.metadata.uid = None
        fresh.status = type(fresh.status)()
        try:
            return self.handle.client.create(fresh)
        except Exception as err:
            raise RuntimeError(
                f"create claim for extended resources {fresh.namespace}/: {err}"
            ) from err

    def _set_extended_status(self, pod: Pod, claim_name: str, mappings: list[Any]) -> None:
        """``patchPodExtendedResourceClaimStatus``: tell the pod which claim and which of
        its requests serve its containers' extended resources."""
        if not mappings:
            raise RuntimeError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        status = PodExtendedResourceClaimStatus.model_validate(
            {"requestMappings": mappings, "resourceClaimName": claim_name}
        )

        def set_status(fresh: Any) -> bool:
            fresh.status.extended_resource_claim_status = status
            return True

        try:
            current = self.handle.client.get("Pod", pod.namespace, pod.name)
            self._update_on_conflict("Pod", current, set_status)
        except Exception as err:
            raise RuntimeError(
                f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {err}"
            ) from err

    def _bind_claim(
        self, info: _ClaimInfo, pod: Pod, created: ResourceClaim | None = None
    ) -> ResourceClaim:
        """``bindClaim``: store the allocation Reserve chose (with the claim's
        delete-protection finalizer) and add the pod to ``reservedFor``, re-reading the
        claim after a conflict (client-go's ``RetryOnConflict``). ``created``: the claim
        PreBind just created (the watch may not have brought it yet)."""
        current = created or self.manager.claim(info.claim.namespace, info.claim.name)
        if current is None or (created is None and current.metadata.uid != info.claim.metadata.uid):
            raise RuntimeError(f"claim {info.claim.key} got deleted in the meantime")
        for attempt in range(_CONFLICT_RETRIES):
            if attempt:
                current = self.handle.client.get("ResourceClaim", current.namespace, current.name)
            if current.metadata.deletion_timestamp is not None:
                raise RuntimeError(f"claim {current.key} got deleted in the meantime")
            fresh = current.model_copy(deep=True)
            if info.allocation is not None:
                if current.status.allocation is not None:
                    raise RuntimeError(
                        f"claim {current.key} got allocated elsewhere in the meantime"
                    )
                finalizers = fresh.metadata.finalizers or []
                if RESOURCE_CLAIM_FINALIZER not in finalizers:
                    fresh.metadata.finalizers = [*finalizers, RESOURCE_CLAIM_FINALIZER]
                fresh.status.allocation = info.allocation
            fresh.status.reserved_for.append(
                ResourceClaimConsumerReference(
                    resource="pods", name=pod.name, uid=pod.metadata.uid or ""
                )
            )
            alloc = fresh.status.allocation
            if self.binding_conditions and alloc is not None and alloc.allocation_timestamp is None:
                # The binding timeout counts from here.
                alloc.allocation_timestamp = self._now()
            try:
                written = self.handle.client.update(fresh)
            except ConflictError:
                if attempt == _CONFLICT_RETRIES - 1:
                    raise
                continue
            except Exception as err:
                what = (
                    "allocation and reservation" if info.allocation is not None else "reservation"
                )
                raise RuntimeError(f"add {what} to claim {current.key}: {err}") from err
            if info.allocation is not None:
                self.manager.assume_written(written)
            return written
        raise AssertionError("unreachable")  # the last conflict is raised above


def _binding_conditions_enabled(enabled: Callable[[str], bool]) -> bool:
    """Whether binding conditions are on: they need both of their gates, as upstream."""
    return enabled("DRADeviceBindingConditions") and enabled("DRAResourceClaimDeviceStatus")


class BindingError(Exception):
    """The binding of a claim's devices failed (a failure condition is True) or timed
    out (the text is upstream's)."""


def _has_binding_conditions(claim: ResourceClaim) -> bool:
    alloc = claim.status.allocation
    return alloc is not None and any(r.binding_conditions for r in alloc.devices.results)


def _condition(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def binding_ready(claim: ResourceClaim) -> bool:
    """``isClaimReadyForBinding``: whether every allocated device with binding conditions
    has them all True in the claim's ``status.devices`` (True without any); raises
    ``BindingError`` when one of its binding failure conditions is True."""
    alloc = claim.status.allocation
    if alloc is None:
        return False
    for result in alloc.devices.results:
        if not result.binding_conditions:
            continue
        status = next(
            (
                d
                for d in claim.status.devices
                if (d.driver, d.pool, d.device) == (result.driver, result.pool, result.device)
            ),
            None,
        )
        if status is None:
            return False
        for kind in result.binding_failure_conditions:
            cond = _condition(status.conditions, kind)
            if cond is not None and cond.get("status") == "True":
                raise BindingError(
                    f"claim {claim.name} binding failed: reason={cond.get('reason', '')}, "
                    f"message={go_quote(cond.get('message', ''))}"
                )
        for kind in result.binding_conditions:
            cond = _condition(status.conditions, kind)
            if cond is None or cond.get("status") != "True":
                return False
    return True


def _index_slices(slices: list[Any]) -> tuple[dict[str, list[Any]], list[Any]]:
    """Node-local slices by node name, and the others (selectors, all nodes)."""
    by_node: dict[str, list[Any]] = {}
    shared = []
    for sl in slices:
        if sl.spec.node_name:
            by_node.setdefault(sl.spec.node_name, []).append(sl)
        else:
            shared.append(sl)
    return by_node, shared
