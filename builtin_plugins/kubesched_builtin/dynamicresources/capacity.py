"""How much of an extended resource backed by DRA a node has, for the resource scorers.

Upstream's NodeResourcesFit and NodeResourcesBalancedAllocation (DRAExtendedResource)
score an extended resource that a node's ``allocatable`` lacks but a DeviceClass backs
by the node's devices: those of the node's slices (or, with ``perDeviceNodeSelection``,
the devices meant for it) that match the class's CEL selectors are its allocatable, and
those of them any claim holds are its requested.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import Node, extended_resource_classes

from .allocator import _slice_matches_node, claim_devices
from .cel import CELCache, CELError, DeviceEnv

__all__ = ["ExtendedResourceCapacity"]


class ExtendedResourceCapacity:
    """``calculateDRAExtendedResourceAllocatableRequest``, callable per node and resource
    with the cluster as the ``lister`` has it now."""

    def __init__(self, lister: Any) -> None:
        self.lister = lister
        self.cel_cache = CELCache()

    def __call__(self, node: Node, resource: str) -> tuple[int, int]:
        """``(devices, allocated)`` of the class backing ``resource`` on ``node``; (0, 0)
        when no class backs it."""
        classes = self.lister.list_objects("DeviceClass")
        class_name = extended_resource_classes(classes).get(resource)
        device_class = next((c for c in classes if c.name == class_name), None)
        if device_class is None:
            return 0, 0
        claims = self.lister.list_objects("ResourceClaim")
        taken = {dev for claim in claims for dev, _, _ in claim_devices(claim)}
        matchers: dict[int, Any] = {}
        devices = allocated = 0
        for sl in self.lister.list_objects("ResourceSlice"):
            spec = sl.spec
            if spec.per_device_node_selection:
                candidates = [d for d in spec.devices if _slice_matches_node(d, node, matchers)]
            elif _slice_matches_node(spec, node, matchers):
                candidates = list(spec.devices)
            else:
                continue
            for device in candidates:
                try:
                    matches = self._matches(device_class, spec.driver, device)
                except _CompileError:
                    return 0, 0  # upstream gives up on the resource
                if matches:
                    devices += 1
                    allocated += (spec.driver, spec.pool.name, device.name) in taken
        return devices, allocated

    def _matches(self, device_class: Any, driver: str, device: Any) -> bool:
        """``deviceMatchesClass``: every CEL selector of the class is true (a runtime
        error counts as no match; a selector that does not compile raises)."""
        env = DeviceEnv(driver, device)
        for selector in device_class.spec.selectors:
            if selector.cel is None:
                continue
            compiled = self.cel_cache.get_or_compile(selector.cel.expression)
            if compiled.error is not None:
                raise _CompileError(compiled.error)
            try:
                if not compiled.device_matches(env):
                    return False
            except CELError:
                return False
        return True


class _CompileError(Exception):
    """A selector of the class does not compile."""
