"""The embedded cluster's stand-in for DRA drivers that report devices' binding conditions.

A device with ``bindingConditions`` (a fabric-attached GPU, say) is usable only once
its driver sets those conditions True in the claim's ``status.devices``; the scheduler
waits for that in PreBind. The embedded cluster has no drivers, so a ResourceSlice says
how its driver answers, with the annotation ``kubesched.io/binding-conditions``:

- ``"True"``: as soon as a claim is allocated one of the slice's devices, each of the
  device's binding conditions is set True (reason ``Bound``);
- ``"Failed"``: each of the device's binding failure conditions is set True (reason
  ``BindingFailed``), so the scheduler gives the devices up and tries others;
- anything else, or no annotation: nobody answers, and the binding times out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api import ResourceClaim
from kubesched.api.resource import AllocatedDeviceStatus
from kubesched.backend.memory.naming import timestamp
from kubesched.backend.protocol import EventType, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["BINDING_CONDITIONS_ANNOTATION", "DeviceBindingDrivers"]

BINDING_CONDITIONS_ANNOTATION = "kubesched.io/binding-conditions"
_ANSWERS = {
    "True": ("binding_conditions", "Bound"),
    "Failed": ("binding_failure_conditions", "BindingFailed"),
}


class DeviceBindingDrivers:
    """Sets the binding conditions of allocated devices as the slices' annotation says."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster (called for every watch event)."""
        if kind != "ResourceClaim" or event.type == EventType.DELETED:
            return
        claim: ResourceClaim = event.object  # type: ignore[assignment]
        alloc = claim.status.allocation
        if alloc is None or not any(r.binding_conditions for r in alloc.devices.results):
            return
        answers = self._answers()
        if not answers:
            return
        new: ResourceClaim = claim.model_copy(deep=True)
        changed = False
        for result in alloc.devices.results:
            answer = answers.get((result.driver, result.pool))
            if not result.binding_conditions or answer not in _ANSWERS:
                continue
            field, reason = _ANSWERS[answer]
            changed |= self._set(new, result, getattr(result, field), reason)
        if changed:
            self.cluster.update(new)

    def _answers(self) -> dict[tuple[str, str], str]:
        """How each annotated pool's driver answers, by (driver, pool)."""
        out = {}
        for sl in self.cluster.objects("ResourceSlice"):
            answer = sl.metadata.annotations.get(BINDING_CONDITIONS_ANNOTATION)
            if answer is not None:
                out[(sl.spec.driver, sl.spec.pool.name)] = answer  # type: ignore[attr-defined]
        return out

    def _set(self, claim: ResourceClaim, result: Any, kinds: list[str], reason: str) -> bool:
        """Set the conditions ``kinds`` True in the device's status; False when they
        already are (nothing to write)."""
        key = (result.driver, result.pool, result.device)
        status = next(
            (d for d in claim.status.devices if (d.driver, d.pool, d.device) == key), None
        )
        if status is None:
            status = AllocatedDeviceStatus(
                driver=result.driver, pool=result.pool, device=result.device
            )
            status.share_id = result.share_id
            claim.status.devices.append(status)
        have = {c.get("type") for c in status.conditions if c.get("status") == "True"}
        missing = [k for k in kinds if k not in have]
        if not missing:
            return False
        now = timestamp(self.cluster.now()).strftime("%Y-%m-%dT%H:%M:%SZ")
        status.conditions = [c for c in status.conditions if c.get("type") not in missing]
        for kind in missing:
            status.conditions.append(
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason,
                    "message": f"set by the embedded cluster ({BINDING_CONDITIONS_ANNOTATION})",
                    "lastTransitionTime": now,
                }
            )
        return True
