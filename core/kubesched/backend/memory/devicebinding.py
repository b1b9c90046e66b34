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

__all__ = [
    "BINDING_CONDITIONS_ANNOTATION",
    "DeviceBindingDrivers",
    "answer_binding",
    "slice_answers",
]

BINDING_CONDITIONS_ANNOTATION = "kubesched.io/binding-conditions"
_ANSWERS = {
    "True": ("binding_conditions", "Bound"),
    "Failed": ("binding_failure_conditions", "BindingFailed"),
}


def slice_answers(slices: list[Any]) -> dict[tuple[str, str], str]:
    """How each annotated pool's driver answers, by (driver, pool)."""
    out = {}
    for sl in slices:
        answer = sl.metadata.annotations.get(BINDING_CONDITIONS_ANNOTATION)
        if answer is not None:
            out[(sl.spec.driver, sl.spec.pool.name)] = answer
    return out


def answer_binding(
    claim: ResourceClaim, answers: dict[tuple[str, str], str], now: str, source: str
) -> bool:
    """Set, in ``claim`` (changed in place), the conditions its allocated devices' drivers
    answer with (``answers``: see :func:`slice_answers`; ``now``: the conditions'
    ``lastTransitionTime``; ``source``: who says so, in their message). False when there
    was nothing to change."""
    alloc = claim.status.allocation
    if alloc is None:
        return False
    changed = False
    for result in alloc.devices.results:
        answer = _ANSWERS.get(answers.get((result.driver, result.pool), ""))
        if not result.binding_conditions or answer is None:
            continue
        field, reason = answer
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
        have = {c.get("type") for c in status.conditions}
        for kind in getattr(result, field):
            if kind in have:
                continue
            status.conditions.append(
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason,
                    "message": f"set by {source} ({BINDING_CONDITIONS_ANNOTATION})",
                    "lastTransitionTime": now,
                }
            )
            changed = True
    return changed


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
        answers = slice_answers(self.cluster.objects("ResourceSlice"))
        if not answers:
            return
        new: ResourceClaim = claim.model_copy(deep=True)
        now = timestamp(self.cluster.now()).strftime("%Y-%m-%dT%H:%M:%SZ")
        if answer_binding(new, answers, now, "the embedded cluster"):
            self.cluster.update(new)
