"""The structured-parameters allocator (``k8s.io/dynamic-resource-allocation/structured``).

For one node, it picks concrete devices for every request of the claims a pod still
needs allocated: the node's pools (newest generation of each driver's pool, from slices
for the node, for a node selector matching it, or for all nodes), devices of the
request's class whose class and request CEL selectors are true, not allocated to
another claim (admin access excepted) and not taken by an earlier request of the same
pod, ``count`` of them or ``All``, the first satisfiable ``firstAvailable`` alternative,
and ``matchAttribute`` / ``distinctAttribute`` constraints. Like upstream it searches
depth first in a fixed order (pools by driver and name, devices in slice order) and
backtracks, so the result is the first fit in that order.

The v1.36 features follow their gates (:class:`Features`): consumable capacity (a device
that allows multiple allocations is shared by claims, each consuming part of its
capacity under the capacity's request policy), device taints (a NoSchedule or NoExecute
taint keeps the device from requests that do not tolerate it), binding conditions (off:
devices with binding conditions are passed over) and partitionable devices (off: devices
that consume counters are passed over).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import (
    AllocationResult,
    Device,
    DeviceClass,
    DeviceRequestAllocationResult,
    Node,
    NodeSelector,
    NodeSelectorTermsMatcher,
    Quantity,
    ResourceClaim,
    ResourceSlice,
    toleration_tolerates_taint,
)
from kubesched.api.resource import (
    CapacityRequestPolicy,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceCapacity,
)

from .cel import CELCache, CELError, DeviceEnv

__all__ = [
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DeviceID",
    "Features",
    "NodeOutcome",
    "Pool",
    "claim_devices",
    "gather_pools",
]

DeviceID = tuple[str, str, str]
"""``(driver, pool, device)``: a device's identity across the cluster."""

FIRST_AVAILABLE_MAX_SIZE = 8
"""``FirstAvailableDeviceRequestMaxSize``: alternatives of one request (scores use it)."""


TAINT_EFFECTS_PREVENTING_ALLOCATION = ("NoSchedule", "NoExecute")
"""Device taint effects that keep a device from requests not tolerating them (``None``
and unknown effects do not)."""


@dataclass(frozen=True)
class Features:
    """Which gated allocator features are on (``structured.Features``)."""

    consumable_capacity: bool = True
    device_taints: bool = True
    binding_conditions: bool = True
    partitionable_devices: bool = True


class AllocationError(Exception):
    """Something is wrong with a claim or class (a CEL error): the attempt fails."""


class AllocationTimeout(Exception):
    """The search ran past ``filterTimeout``."""


@dataclass
class Pool:
    """One driver's pool as a node sees it: its devices, newest generation only."""

    driver: str
    name: str
    slices: list[tuple[ResourceSlice, list[Device]]] = field(default_factory=list)
    """Each slice with its devices usable on the node (all of them, unless the slice
    selects nodes per device)."""
    incomplete: bool = False
    counters: dict[tuple[str, str], int] = field(default_factory=dict)
    """``(counter set, counter)`` -> the amount the pool's ``sharedCounters`` offer (nanos)."""
    consumes: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    """Device name -> what allocating it takes from the counter sets (partitionable
    devices), for every device of the pool."""


def claim_devices(claim: ResourceClaim) -> Iterable[tuple[DeviceID, bool, dict[str, int] | None]]:
    """The devices an allocated claim holds: each with its admin-access flag and, for a
    share of a device that allows multiple allocations (``shareID`` set), the capacity
    it consumes (name -> nano-units; None for a device held whole)."""
    alloc = claim.status.allocation
    if alloc is None:
        return ()
    return (
        (
            (r.driver, r.pool, r.device),
            bool(r.admin_access),
            None
            if r.share_id is None
            else {name: q.nanos for name, q in r.consumed_capacity.items()},
        )
        for r in alloc.devices.results
    )


def _slice_matches_node(spec: Any, node: Node, matchers: dict[int, Any]) -> bool:
    if spec.node_name:
        return spec.node_name == node.name
    if spec.all_nodes:
        return True
    if spec.node_selector is not None:
        m = matchers.get(id(spec.node_selector))
        if m is None:
            m = matchers[id(spec.node_selector)] = NodeSelectorTermsMatcher(
                spec.node_selector.node_selector_terms
            )
        return m.matches_node(node)
    return False


def gather_pools(
    slices: Iterable[ResourceSlice], node: Node, matchers: dict[int, Any] | None = None
) -> list[Pool]:
    """``GatherPools``: the pools usable on ``node``, sorted by driver and pool name.

    Only slices of a pool's newest generation count; a pool with fewer slices of that
    generation than ``resourceSliceCount`` is incomplete (``All`` cannot use it).
    Devices with their own node fields (``perDeviceNodeSelection``) are filtered one
    by one.
    """
    matchers = {} if matchers is None else matchers
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        by_pool.setdefault((s.spec.driver, s.spec.pool.name), []).append(s)
    pools: list[Pool] = []
    for (driver, name), members in sorted(by_pool.items()):
        gen = max(s.spec.pool.generation for s in members)
        current = sorted(
            (s for s in members if s.spec.pool.generation == gen), key=lambda s: s.name
        )
        pool = Pool(
            driver, name, incomplete=len(current) < current[0].spec.pool.resource_slice_count
        )
        for s in current:
            for cs in s.spec.shared_counters:
                for cname, counter in cs.counters.items():
                    pool.counters[(cs.name, cname)] = counter.value.nanos
            for d in s.spec.devices:
                if d.consumes_counters:
                    pool.consumes[d.name] = [
                        (c.counter_set, cname, counter.value.nanos)
                        for c in d.consumes_counters
                        for cname, counter in c.counters.items()
                    ]
            if s.spec.per_device_node_selection:
                devices = [d for d in s.spec.devices if _slice_matches_node(d, node, matchers)]
                if devices:
                    pool.slices.append((s, devices))
            elif s.spec.devices and _slice_matches_node(s.spec, node, matchers):
                pool.slices.append((s, s.spec.devices))
        if pool.slices:
            pools.append(pool)
    return pools


@dataclass(frozen=True)
class _Option:
    """One way to satisfy a request: ``exactly``, or one ``firstAvailable`` alternative."""

    result_name: str
    request_name: str
    index: int
    class_name: str
    selectors: tuple[str, ...]
    all_mode: bool
    count: int
    admin_access: bool
    # (Not part of the key: the candidates of an option depend on its class and selectors.)
    tolerations: tuple[Any, ...] = field(default=(), compare=False)
    capacity: Mapping[str, Quantity] | None = field(default=None, compare=False)


@dataclass
class _Request:
    claim_index: int
    name: str
    options: list[_Option]


@dataclass
class NodeOutcome:
    """What the allocator found on one node: the devices of each request, or why not.

    The allocation results (objects) are built by :meth:`allocations` only for the node
    that is chosen: building them for every feasible node was the plugin's main cost.
    """

    node_name: str
    picked: list[list[tuple[Any, DeviceID, ResourceSlice, Device]]] | None
    """Per request of the allocator: (option, device ID, slice, device) chosen; None: no fit."""
    reasons: list[str] = field(default_factory=list)
    """Per request, why it could not be satisfied here."""
    chosen_options: list[list[int]] = field(default_factory=list)
    """Per claim, the ``firstAvailable`` index chosen for each such request (scoring)."""
    allocator: Any = None

    @property
    def fits(self) -> bool:
        """Whether every claim could be allocated on the node."""
        return self.picked is not None

    def allocations(self) -> list[AllocationResult]:
        """One ``AllocationResult`` per claim to allocate, in the allocator's order."""
        return self.allocator.results(self)


def _options(claim_index: int, claim: ResourceClaim, features: Features) -> list[_Request]:
    out = []
    for req in claim.spec.devices.requests:
        if req.exactly is not None:
            bodies = [(req.name, -1, req.exactly, bool(req.exactly.admin_access))]
        else:
            bodies = [
                (f"{req.name}/{sub.name}", i, sub, False)
                for i, sub in enumerate(req.first_available)
            ]
        opts = []
        for result_name, index, body, admin in bodies:
            if body.capacity is not None and not features.consumable_capacity:
                what = "request" if index < 0 else "subrequest"
                raise AllocationError(
                    f"claim {claim.key}, {what} {body.name if index >= 0 else req.name}: has "
                    "capacity requests, but the DRAConsumableCapacity feature is disabled"
                )
            opts.append(
                _Option(
                    result_name,
                    req.name,
                    index,
                    body.device_class_name,
                    tuple(s.cel.expression for s in body.selectors if s.cel is not None),
                    body.allocation_mode == "All",
                    body.count or 0,
                    admin,
                    tuple(body.tolerations),
                    body.capacity.requests if body.capacity is not None else None,
                )
            )
        out.append(_Request(claim_index, req.name, opts))
    return out


def _taint_prevents_allocation(device: Device, opt: _Option) -> bool:
    """``taintPreventsAllocation``: an untolerated NoSchedule or NoExecute taint."""
    return any(
        taint.effect in TAINT_EFFECTS_PREVENTING_ALLOCATION
        and not any(toleration_tolerates_taint(t, taint) for t in opt.tolerations)  # type: ignore[arg-type]
        for taint in device.taints
    )


def _consumed(requested: Quantity | None, cap: DeviceCapacity) -> Quantity:
    """``calculateConsumedCapacity``: what a request takes of one capacity of a device.

    Nothing requested: the policy's default, else the whole capacity. Requested: as is,
    or rounded up to the valid range's minimum and then to ``min + n * step`` (in whole
    units, as upstream's ``Value()`` arithmetic), or to the first valid value at least
    as large (a request above them all stays as is, and violates the policy).
    """
    policy = cap.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return cap.value
    if policy is None:
        return requested
    rng = policy.valid_range
    if rng is not None and rng.min is not None:
        if requested < rng.min:
            return rng.min
        if rng.step is None:
            return requested
        step, low = rng.step.value(), rng.min.value()
        n = -((low - requested.value()) // step)  # ceil((requested - min) / step)
        return _whole_quantity(low + step * n, rng.step)
    if policy.valid_values:
        return next((v for v in policy.valid_values if requested <= v), requested)
    return requested


def _whole_quantity(value: int, like: Quantity) -> Quantity:
    """``resource.NewQuantity(value, like.Format)``: a binary ``like`` keeps a binary
    spelling (``2Gi``), a decimal one a decimal spelling (``2k``)."""
    if str(like)[-1:] == "i" and value % 1024 == 0:
        return Quantity(f"{value // 1024}Ki")
    return Quantity(str(value))


def _violates_policy(consumed: Quantity, policy: CapacityRequestPolicy | None) -> bool:
    """``violatesPolicy``: above the range's maximum, off its steps, or not a valid value
    (the policy's default is always allowed)."""
    if policy is None or (policy.default is not None and consumed == policy.default):
        return False
    rng = policy.valid_range
    if rng is not None:
        if rng.max is not None and consumed > rng.max:
            return True
        if rng.step is not None:
            low = rng.min.value() if rng.min is not None else 0
            # Go's remainder: only whether it is zero matters, so the sign does not.
            return abs(consumed.value() - low) % rng.step.value() != 0
        return False
    if policy.valid_values:
        return all(consumed != v for v in policy.valid_values)
    return False


class Allocator:
    """Allocates the devices of a pod's pending claims, node by node (one per cycle).

    ``allocated`` are the devices other claims hold whole (in the cluster or in flight),
    ``consumed`` what the shares of devices allowing multiple allocations take of their
    capacities (device -> name -> nano-units); ``classes`` finds a DeviceClass by name.
    Selector results are cached per device across cycles in ``match_cache`` (keyed by
    expression and device identity), so a cluster's devices are evaluated once per
    distinct selector. Raises :class:`AllocationError` for a claim that asks for a
    feature that is off.
    """

    def __init__(
        self,
        claims: list[ResourceClaim],
        allocated: Mapping[DeviceID, Any] | set[DeviceID],
        classes: Callable[[str], DeviceClass | None],
        cel_cache: CELCache,
        match_cache: dict[tuple[str, Any], bool | str],
        envs: dict[Any, DeviceEnv],
        timeout: float = 0.0,
        consumed: Mapping[DeviceID, Mapping[str, int]] | None = None,
        features: Features | None = None,
    ) -> None:
        self.claims = claims
        self.allocated = allocated
        self.consumed = consumed or {}
        self.features = features or Features()
        self.classes = classes
        self.cel_cache = cel_cache
        self.match_cache = match_cache
        self.envs = envs
        self.timeout = timeout
        self.requests = [r for i, c in enumerate(claims) for r in _options(i, c, self.features)]
        self._class_of: dict[str, Any] = {}

    # -- device matching ----------------------------------------------------------------
    def _selector_matches(
        self, expr: str, owner: str, index: int, s: ResourceSlice, d: Device
    ) -> bool:
        key = (s.name, s.metadata.uid, s.metadata.resource_version, d.name)
        cached = self.match_cache.get((expr, key))
        if cached is None:
            compiled = self.cel_cache.get_or_compile(expr)
            if compiled.error is not None:
                raise AllocationError(
                    f"{owner}: selector #{index}: CEL compile error: {compiled.error}"
                )
            env = self.envs.get(key)
            if env is None:
                env = self.envs[key] = DeviceEnv(s.spec.driver, d)
            try:
                cached = compiled.device_matches(env)
            except CELError as err:
                cached = f"{owner}: selector #{index}: CEL runtime error: {err}"
            self.match_cache[(expr, key)] = cached
        if isinstance(cached, str):
            raise AllocationError(cached)
        return cached

    def _slice_candidates(
        self,
        opt: _Option,
        claim: ResourceClaim,
        pool: Pool,
        s: ResourceSlice,
        devices: list[Device],
    ) -> list[tuple[DeviceID, ResourceSlice, Device]]:
        """The devices of one slice that the option's class and selectors accept.

        Cached per slice version, class version and selectors (not per node or pod): a
        node's devices are looked up once, not evaluated again, in every cycle.
        """
        cls = self._class_of.get(opt.class_name, False)
        if cls is False:
            cls = self._class_of[opt.class_name] = self.classes(opt.class_name)
        if cls is None:
            return []
        key = (
            cls.name,
            cls.metadata.uid,
            cls.metadata.resource_version,
            opt.selectors,
            # a claim's selector error names the claim
            claim.key if opt.selectors else None,
            s.name,
            s.metadata.uid,
            s.metadata.resource_version,
            # per-device node selection gives each node its own subset
            tuple(d.name for d in devices) if s.spec.per_device_node_selection else None,
        )
        found = self.match_cache.get(key)
        if found is None:
            try:
                found = [
                    ((pool.driver, pool.name, d.name), s, d)
                    for d in devices
                    if self._evaluate(opt, claim, cls, s, d)
                ]
            except AllocationError as err:
                found = str(err)
            self.match_cache[key] = found
        if isinstance(found, str):
            raise AllocationError(found)
        if found and found[0][1] is not s:
            # Found in another copy of this slice version: the scheduler's view with
            # other DeviceTaintRules' taints. The selectors' verdicts hold, the devices
            # (their taints) are this copy's.
            current = {d.name: d for d in devices}
            found = [(dev, s, current[dev[2]]) for dev, _, _ in found]
            self.match_cache[key] = found
        return found

    def _evaluate(
        self, opt: _Option, claim: ResourceClaim, cls: DeviceClass, s: ResourceSlice, d: Device
    ) -> bool:
        for i, sel in enumerate(cls.spec.selectors):
            if sel.cel is not None and not self._selector_matches(
                sel.cel.expression, f"class {cls.name}", i, s, d
            ):
                return False
        for i, expr in enumerate(opt.selectors):
            if not self._selector_matches(expr, f"claim {claim.key}", i, s, d):
                return False
        return True

    # -- the search ---------------------------------------------------------------------
    def _shared(self, d: Device) -> bool:
        """Whether ``d`` is shared by its allocations (consumable capacity)."""
        return self.features.consumable_capacity and bool(d.allow_multiple_allocations)

    def _capacity_fits(
        self, dev: DeviceID, d: Device, opt: _Option, allocating: Mapping[DeviceID, Any]
    ) -> bool:
        """``CmpRequestOverCapacity``: the device has every capacity the option asks for,
        what the option would consume respects each capacity's request policy, and fits
        beside what other claims (``consumed``) and this attempt (``allocating``) take."""
        requests = opt.capacity or {}
        if any(name not in d.capacity for name in requests):
            return False
        held = self.consumed.get(dev, {})
        taking = allocating.get(dev, {})
        for name, cap in d.capacity.items():
            amount = _consumed(requests.get(name), cap)
            if _violates_policy(amount, cap.request_policy):
                return False
            if held.get(name, 0) + taking.get(name, 0) + amount.nanos > cap.value.nanos:
                return False
        return True

    def allocate(self, node: Node, pools: list[Pool]) -> NodeOutcome:
        """Allocate every pending claim on ``node`` from ``pools``, or say why not.

        Raises :class:`AllocationError` (a CEL error) and :class:`AllocationTimeout`.
        """
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        features = self.features
        candidates: dict[_Option, list[tuple[DeviceID, ResourceSlice, Device]]] = {}
        incomplete: dict[_Option, str] = {}
        for req in self.requests:
            claim = self.claims[req.claim_index]
            for opt in req.options:
                found = []
                for pool in pools:
                    for s, devices in pool.slices:
                        matching = self._slice_candidates(opt, claim, pool, s, devices)
                        if matching:
                            found.extend(matching)
                            if opt.all_mode and pool.incomplete:
                                incomplete[opt] = pool.name
                if not features.binding_conditions:
                    # Devices with binding conditions need the feature (isSelectable).
                    found = [c for c in found if not c[2].binding_conditions]
                candidates[opt] = found

        used: set[DeviceID] = set()
        allocating: dict[DeviceID, dict[str, int]] = {}
        picked: list[list[tuple[_Option, DeviceID, ResourceSlice, Device]]] = [
            [] for _ in self.requests
        ]
        reasons: dict[str, str] = {}
        remaining, consumption = self._counters(pools)

        def free(dev: DeviceID, d: Device, opt: _Option) -> bool:
            shared = self._shared(d)
            if opt.admin_access:
                if dev in used:
                    return False
            elif dev in used or dev in self.allocated:
                return False
            if d.consumes_counters and not features.partitionable_devices:
                return False
            if features.device_taints and d.taints and _taint_prevents_allocation(d, opt):
                return False
            if features.consumable_capacity and not self._capacity_fits(dev, d, opt, allocating):
                return False
            if opt.admin_access or (shared and (dev in self.consumed or dev in allocating)):
                # A share of a device whose counters its first share already took.
                return True
            # A partition of a device: its counters must still have room.
            return all(remaining.get(key, 0) >= amount for key, amount in consumption.get(dev, ()))

        def take(dev: DeviceID, d: Device, opt: _Option) -> Callable[[], None]:
            """Mark ``dev`` as taken by ``opt``; returns what undoes it."""
            counters = (
                not opt.admin_access
                and dev in consumption
                and not (self._shared(d) and (dev in self.consumed or dev in allocating))
            )
            if counters:
                for key, amount in consumption[dev]:
                    remaining[key] = remaining.get(key, 0) - amount
            if self._shared(d):
                share = {
                    name: _consumed((opt.capacity or {}).get(name), cap).nanos
                    for name, cap in d.capacity.items()
                }
                taking = allocating.setdefault(dev, {})
                for name, amount in share.items():
                    taking[name] = taking.get(name, 0) + amount
            else:
                used.add(dev)

            def undo() -> None:
                if counters:
                    for key, amount in consumption[dev]:
                        remaining[key] += amount
                if self._shared(d):
                    taking = allocating[dev]
                    for name, amount in share.items():
                        taking[name] -= amount
                    if len(picked_shares(dev)) == 0:
                        del allocating[dev]
                else:
                    used.discard(dev)

            return undo

        def picked_shares(dev: DeviceID) -> list[Any]:
            return [e for entries in picked for e in entries if e[1] == dev]

        def constraints_ok(claim_index: int, opt: _Option, dev_attr: Device, driver: str) -> bool:
            claim = self.claims[claim_index]
            for c in claim.spec.devices.constraints:
                if (
                    c.requests
                    and opt.request_name not in c.requests
                    and opt.result_name not in c.requests
                ):
                    continue
                attr = c.match_attribute or c.distinct_attribute or ""
                value = _attribute(dev_attr, driver, attr)
                if value is None:
                    return False
                others = [
                    _attribute(d, dev[0], attr)
                    for i, r in enumerate(self.requests)
                    if r.claim_index == claim_index
                    for o, dev, _, d in picked[i]
                    if not c.requests or o.request_name in c.requests or o.result_name in c.requests
                ]
                if c.match_attribute and any(v != value for v in others):
                    return False
                if c.distinct_attribute and value in others:
                    return False
            return True

        def check_deadline() -> None:
            if deadline is not None and time.monotonic() > deadline:
                raise AllocationTimeout

        def place(ri: int) -> bool:
            if ri == len(self.requests):
                return True
            req = self.requests[ri]
            for opt in req.options:
                check_deadline()
                devs = candidates[opt]
                if opt.all_mode:
                    if opt in incomplete:
                        raise AllocationError(
                            f"claim {self.claims[req.claim_index].key}, request {opt.result_name}: "
                            f"asks for all devices, but resource pool {incomplete[opt]} is "
                            "currently being updated"
                        )
                    if features.consumable_capacity:
                        # "All" are the devices with room for the request before any of
                        # this attempt's allocations (validateDeviceRequest).
                        devs = [c for c in devs if self._capacity_fits(c[0], c[2], opt, {})]
                    if not devs or not all(free(dev, d, opt) for dev, _, d in devs):
                        reasons.setdefault(req.name, _why(opt, devs, free))
                        continue
                    undo: list[Callable[[], None]] = []
                    ok = True
                    for dev, s, d in devs:
                        if not free(dev, d, opt) or not constraints_ok(
                            req.claim_index, opt, d, dev[0]
                        ):
                            ok = False
                            break
                        undo.append(take(dev, d, opt))
                        picked[ri].append((opt, dev, s, d))
                    if ok and place(ri + 1):
                        return True
                    picked[ri].clear()
                    for step in reversed(undo):
                        step()
                    reasons.setdefault(req.name, _why(opt, devs, free))
                    continue
                if pick(ri, opt, devs, 0, opt.count):
                    return True
                reasons.setdefault(req.name, _why(opt, devs, free))
            return False

        def pick(ri: int, opt: _Option, devs: list, start: int, need: int) -> bool:
            if need == 0:
                return place(ri + 1)
            req = self.requests[ri]
            for k in range(start, len(devs)):
                if len(devs) - k < need:
                    return False
                dev, s, d = devs[k]
                if not free(dev, d, opt) or not constraints_ok(req.claim_index, opt, d, dev[0]):
                    continue
                check_deadline()
                undo = take(dev, d, opt)
                picked[ri].append((opt, dev, s, d))
                if pick(ri, opt, devs, k + 1, need - 1):
                    return True
                picked[ri].pop()
                undo()
            return False

        if not place(0):
            reasons_text = [f"request {n}: {r}" for n, r in reasons.items()]
            return NodeOutcome(node.name, None, reasons_text, allocator=self)
        chosen: list[list[int]] = [[] for _ in self.claims]
        for ri, entries in enumerate(picked):
            if entries and entries[0][0].index >= 0:
                chosen[self.requests[ri].claim_index].append(entries[0][0].index)
        return NodeOutcome(node.name, picked, chosen_options=chosen, allocator=self)

    def _counters(
        self, pools: list[Pool]
    ) -> tuple[dict[tuple[str, str, str, str], int], dict[DeviceID, list[Any]]]:
        """What the pools' shared counters have left after the allocated devices (held
        whole or shared), and what each device of those pools would take (partitionable
        devices)."""
        remaining: dict[tuple[str, str, str, str], int] = {}
        consumption: dict[DeviceID, list[Any]] = {}
        for pool in pools:
            if not pool.consumes:
                continue
            for (cset, cname), total in pool.counters.items():
                remaining[(pool.driver, pool.name, cset, cname)] = total
            for name, takes in pool.consumes.items():
                dev = (pool.driver, pool.name, name)
                consumption[dev] = [((pool.driver, pool.name, c, n), a) for c, n, a in takes]
                if dev in self.allocated or dev in self.consumed:
                    for key, amount in consumption[dev]:
                        remaining[key] = remaining.get(key, 0) - amount
        return remaining, consumption

    def results(self, outcome: NodeOutcome) -> list[AllocationResult]:
        """The allocation results of a fitting ``outcome`` (see :meth:`NodeOutcome.allocations`).

        A share of a device that allows multiple allocations gets a new ``shareID`` and
        the capacity it consumes, every capacity of the device named."""
        assert outcome.picked is not None
        per_claim: list[list[DeviceRequestAllocationResult]] = [[] for _ in self.claims]
        node_local = [False] * len(self.claims)
        bindings = self.features.binding_conditions
        for ri, entries in enumerate(outcome.picked):
            claim_index = self.requests[ri].claim_index
            for opt, dev, s, d in entries:
                if (
                    s.spec.node_name
                    or s.spec.per_device_node_selection
                    or (bindings and d.binds_to_node)
                ):
                    node_local[claim_index] = True
                result = DeviceRequestAllocationResult(
                    request=opt.result_name,
                    driver=dev[0],
                    pool=dev[1],
                    device=dev[2],
                    admin_access=True if opt.admin_access else None,
                    tolerations=list(opt.tolerations),
                )
                if self._shared(d):
                    result.share_id = str(uuid.uuid4())
                    result.consumed_capacity = {
                        name: _consumed((opt.capacity or {}).get(name), cap)
                        for name, cap in d.capacity.items()
                    }
                if bindings:
                    result.binding_conditions = list(d.binding_conditions)
                    result.binding_failure_conditions = list(d.binding_failure_conditions)
                per_claim[claim_index].append(result)
        allocations = []
        for i, results in enumerate(per_claim):
            alloc = AllocationResult(
                devices=DeviceAllocationResult(
                    results=results, config=_configs(self.claims[i], results, self.classes)
                )
            )
            if node_local[i]:
                alloc.node_selector = _node_name_selector(outcome.node_name)
            allocations.append(alloc)
        return allocations


def _attribute(device: Device, driver: str, name: str) -> Any:
    domain, _, ident = name.rpartition("/")
    attr = device.attributes.get(name)
    if attr is None and domain == driver:
        attr = device.attributes.get(ident)
    return None if attr is None else attr.value


def _why(opt: _Option, devs: list, free: Callable[[DeviceID, Device, _Option], bool]) -> str:
    available = sum(1 for dev, _, d in devs if free(dev, d, opt))
    want = "all" if opt.all_mode else str(opt.count)
    return f"{len(devs)} device(s) of class {opt.class_name} match, {available} free, {want} wanted"


def _configs(
    claim: ResourceClaim,
    results: list[DeviceRequestAllocationResult],
    classes: Callable[[str], DeviceClass | None],
) -> list[Any]:
    """The allocation's config: the classes' first, then the claim's (upstream's order)."""
    out = []
    seen: set[str] = set()
    for r in claim.spec.devices.requests:
        names = (
            [r.exactly.device_class_name]
            if r.exactly
            else [s.device_class_name for s in r.first_available]
        )
        for name in names:
            cls = classes(name)
            if cls is None or name in seen:
                continue
            seen.add(name)
            for cfg in cls.spec.config:
                out.append(DeviceAllocationConfiguration(source="FromClass", opaque=cfg.opaque))
    used_requests = {res.request for res in results}
    for cfg in claim.spec.devices.config:
        if cfg.requests and not any(
            r in used_requests or any(u.startswith(r + "/") for u in used_requests)
            for r in cfg.requests
        ):
            continue
        out.append(
            DeviceAllocationConfiguration(
                source="FromClaim", requests=cfg.requests, opaque=cfg.opaque
            )
        )
    return out


def _node_name_selector(node_name: str) -> NodeSelector:
    return NodeSelector.model_validate(
        {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
            ]
        }
    )
