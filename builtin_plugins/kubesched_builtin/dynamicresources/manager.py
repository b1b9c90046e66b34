"""What the DynamicResources plugin knows of the cluster: claims, slices, classes, devices in use.

Upstream's scheduler keeps a shared DRA manager fed by informers (claims in an assume
cache, an index of allocated devices, in-flight allocations). Here the plugin watches
ResourceClaims, ResourceSlices and DeviceClasses through the Handle's cluster client
(``list`` + ``watch``), so the set of allocated devices is kept up to date event by
event instead of being rebuilt from every claim in every scheduling cycle. Without a
client that can watch (a bare framework in tests), every read goes to the lister.

With DRADeviceTaintRules it watches DeviceTaintRules too and hands out the slices with
the rules' taints added to the devices they select, as upstream's ResourceSlice tracker
does for the scheduler.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from kubesched.api import DeviceClass, ResourceClaim, ResourceSlice, with_rule_taints

from .allocator import DeviceID, claim_devices

__all__ = ["DRAManager"]

CLAIM, SLICE, CLASS, RULE = "ResourceClaim", "ResourceSlice", "DeviceClass", "DeviceTaintRule"


class DRAManager:
    """Claims, slices and classes, the devices allocated to claims, and allocations that
    Reserve made but PreBind has not written yet (in flight)."""

    def __init__(self, handle: Any, *, taint_rules: bool = False) -> None:
        self._handle = handle
        self._connected = False
        self._watching = False
        self._kinds = (CLAIM, SLICE, CLASS, RULE) if taint_rules else (CLAIM, SLICE, CLASS)
        """What is watched: DeviceTaintRules only with DRADeviceTaintRules (a cluster
        whose API server does not serve them would refuse the list)."""
        self._objects: dict[str, dict[str, Any]] = {kind: {} for kind in self._kinds}
        self._tainted: tuple[int, list[ResourceSlice]] = (-1, [])
        """The slices with the rules' taints, and the ``slices_version`` they are of."""
        self._allocated: Counter[DeviceID] = Counter()
        self._consumed: dict[DeviceID, Counter[str]] = {}
        """Shares of devices allowing multiple allocations: what they take of each
        capacity (nano-units), summed over the claims holding one."""
        self._shares: Counter[DeviceID] = Counter()
        self._in_flight: dict[str, ResourceClaim] = {}
        # Events arrive on the backend's watch thread (a real cluster) while the
        # scheduling and binding threads read.
        self._lock = threading.RLock()
        self.slices_version = 0
        """Bumped on every ResourceSlice change (cached pools are rebuilt)."""
        self.classes_version = 0
        """Bumped on every DeviceClass change."""
        self.pool_versions: Counter[tuple[str, str]] = Counter()
        """Per ``(driver, pool)``: bumped whenever a device of the pool is allocated or
        released (in the cluster or in flight), so per-node results can be cached."""

    @property
    def watching(self) -> bool:
        """Whether the versions above follow the cluster (a client that can watch)."""
        self._connect()
        return self._watching

    # -- feeding ------------------------------------------------------------------------
    def _connect(self) -> None:
        if self._connected:
            return
        self._connected = True
        client = getattr(self._handle, "client", None)
        if client is None or not hasattr(client, "watch"):
            return
        for kind in self._kinds:
            objects, rv = client.list(kind)
            for obj in objects:
                self._apply(kind, None, obj)
            client.watch(kind, rv, lambda ev, kind=kind: self._on_event(kind, ev))
        self._watching = True

    def _on_event(self, kind: str, ev: Any) -> None:
        obj = ev.object
        with self._lock:
            stored = self._objects[kind].get(obj.key)
            if ev.type == "DELETED":
                self._apply(kind, stored, None, key=obj.key)
            elif stored is None or not stored.newer_than(obj):
                # (A claim PreBind wrote is kept until the watch brings that version.)
                self._apply(kind, stored, obj)

    def assume_written(self, claim: ResourceClaim) -> None:
        """``AssumeClaimAfterAPICall``: hold ``claim`` as the API answered a write of it
        until the watch brings that version, so that the devices it allocated count as
        taken from now on, not only once the informer caught up."""
        self._connect()
        if not self._watching:
            return
        with self._lock:
            stored = self._objects[CLAIM].get(claim.key)
            if stored is None or claim.newer_than(stored):
                self._apply(CLAIM, stored, claim)

    def _apply(self, kind: str, old: Any, new: Any, key: str | None = None) -> None:
        key = key if key is not None else new.key
        if new is None:
            self._objects[kind].pop(key, None)
        else:
            self._objects[kind][key] = new
        if kind in (SLICE, RULE):
            self.slices_version += 1
        elif kind == CLASS:
            self.classes_version += 1
        elif kind == CLAIM:
            for obj, sign in ((old, -1), (new, 1)):
                if obj is None:
                    continue
                for dev, admin, share in claim_devices(obj):
                    self.pool_versions[dev[:2]] += 1
                    if share is not None:
                        self._count_share(dev, share, sign)
                    elif not admin:
                        self._allocated[dev] += sign
                        if self._allocated[dev] <= 0:
                            del self._allocated[dev]
            # The written allocation is now in the cluster: it is no longer in flight.
            if new is not None and new.status.allocation is not None:
                self.drop_in_flight(new.metadata.uid or "")

    def _count_share(self, dev: DeviceID, share: dict[str, int], sign: int) -> None:
        consumed = self._consumed.setdefault(dev, Counter())
        for name, amount in share.items():
            consumed[name] += sign * amount
        self._shares[dev] += sign
        if self._shares[dev] <= 0:
            del self._shares[dev]
            del self._consumed[dev]

    # -- reading ------------------------------------------------------------------------
    def _list(self, kind: str) -> list[Any]:
        self._connect()
        if self._watching:
            with self._lock:
                return list(self._objects[kind].values())
        lister = getattr(self._handle, "lister", None)
        return lister.list_objects(kind) if lister is not None else []

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The ResourceClaim ``namespace/name``, or None."""
        self._connect()
        if self._watching:
            return self._objects[CLAIM].get(f"{namespace}/{name}")
        lister = getattr(self._handle, "lister", None)
        return lister.get_object(CLAIM, namespace, name) if lister is not None else None

    def claims(self) -> list[ResourceClaim]:
        """Every ResourceClaim."""
        return self._list(CLAIM)

    def device_classes(self) -> list[DeviceClass]:
        """Every DeviceClass."""
        return self._list(CLASS)

    def device_class(self, name: str) -> DeviceClass | None:
        """The DeviceClass ``name``, or None."""
        self._connect()
        if self._watching:
            return self._objects[CLASS].get(name)
        lister = getattr(self._handle, "lister", None)
        return lister.get_object(CLASS, None, name) if lister is not None else None

    def slices(self) -> list[ResourceSlice]:
        """Every ResourceSlice, with the DeviceTaintRules' taints when they are read."""
        if RULE not in self._kinds:
            return self._list(SLICE)
        # Under the lock: the slices, the rules and the version they are of go together.
        with self._lock:
            version, tainted = self._tainted
            if version == self.slices_version and self._watching:
                return tainted
            version = self.slices_version
            tainted = with_rule_taints(self._list(SLICE), self._list(RULE))
            self._tainted = (version, tainted)
        return tainted

    def allocated_devices(self) -> set[DeviceID]:
        """Devices held whole by allocated claims (admin access excepted) or by
        allocations in flight: ``ListAllAllocatedDevices``."""
        return self.allocated_state()[0]

    def allocated_state(self) -> tuple[set[DeviceID], dict[DeviceID, dict[str, int]]]:
        """``GatherAllocatedState``: the devices held whole, and per shared device (one
        allowing multiple allocations) what its shares take of each capacity, counting
        allocated claims and allocations in flight."""
        self._connect()
        if self._watching:
            with self._lock:
                devices = set(self._allocated)
                consumed = {dev: dict(c) for dev, c in self._consumed.items()}
            claims: list[ResourceClaim] = []
        else:
            devices, consumed = set(), {}
            claims = self._list(CLAIM)
        with self._lock:
            claims += self._in_flight.values()
        for claim in claims:
            for dev, admin, share in claim_devices(claim):
                if share is not None:
                    held = consumed.setdefault(dev, {})
                    for name, amount in share.items():
                        held[name] = held.get(name, 0) + amount
                elif not admin:
                    devices.add(dev)
        return devices, consumed

    def has_pending_allocation(self, uid: str) -> bool:
        """``ClaimHasPendingAllocation``: Reserve allocated it, PreBind has not written it."""
        return uid in self._in_flight

    def set_in_flight(self, uid: str, claim: ResourceClaim) -> None:
        """``SignalClaimPendingAllocation``: ``claim`` (with the allocation Reserve chose)
        holds its devices until the allocation is written or dropped."""
        with self._lock:
            self._in_flight[uid] = claim
            self._bump_pools(claim)

    def drop_in_flight(self, uid: str) -> None:
        """``RemoveClaimPendingAllocation`` (no-op when nothing is in flight)."""
        with self._lock:
            claim = self._in_flight.pop(uid, None)
            if claim is not None:
                self._bump_pools(claim)

    def _bump_pools(self, claim: ResourceClaim) -> None:
        for dev, _, _ in claim_devices(claim):
            self.pool_versions[dev[:2]] += 1
