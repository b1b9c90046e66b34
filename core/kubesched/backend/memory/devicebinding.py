"""The embedded cluster's stand-in for DRA drivers that report devices' binding conditions.

A device with ``bindingConditions`` (a fabric-attached GPU, say) is usable only once
its driver sets those conditions True in the claim's ``status.devices``; the scheduler
waits for that in PreBind. The embedded cluster has no drivers, so a ResourceSlice says
how its driver answers, with the annotation ``kubesched.io/binding-conditions``:

- ``"True"``: as soon as a claim is allocated one of the slice's devices, each of the
  device's binding conditions is set True (reason ``Bound``);
- ``"Failed"``: each of the device's binding failure conditions is set True (reason
  ``BindingFailed``), so the scheduler gives the devices up and tries others;
- either followed by ``@`` and a duration (``"True@30s"``, ``"Failed@2m"``): the same,
  that long after the allocation (its ``allocationTimestamp``);
- no annotation: nobody answers, and the binding times out (another value too, with a
  notice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api import ResourceClaim
from kubesched.api.resource import AllocatedDeviceStatus
from kubesched.backend.memory.naming import EPOCH, timestamp
from kubesched.backend.protocol import EventType, WatchEvent
from kubesched.config.duration import parse_duration
from kubesched.notices import notice

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = [
    "BINDING_CONDITIONS_ANNOTATION",
    "DeviceBindingDrivers",
    "DriverAnswer",
    "answer_binding",
    "parse_answer",
    "slice_answers",
]

BINDING_CONDITIONS_ANNOTATION = "kubesched.io/binding-conditions"
_ANSWERS = {
    "True": ("binding_conditions", "Bound"),
    "Failed": ("binding_failure_conditions", "BindingFailed"),
}


@dataclass(frozen=True)
class DriverAnswer:
    """How a pool's driver answers: ``outcome`` ``"True"`` (the binding conditions) or
    ``"Failed"`` (the failure conditions), ``delay`` seconds after the allocation."""

    outcome: str
    delay: float = 0.0


def parse_answer(text: str) -> DriverAnswer:
    """The annotation's value as a :class:`DriverAnswer`: ``True`` or ``Failed``,
    optionally ``@`` and a duration (``True@30s``); ``ValueError`` saying what is wrong."""
    outcome, at, delay = text.partition("@")
    if outcome not in _ANSWERS:
        raise ValueError(f'"{outcome}" is neither "True" nor "Failed"')
    if not at:
        return DriverAnswer(outcome)
    seconds = parse_duration(delay)
    if seconds < 0:
        raise ValueError(f'the delay "{delay}" is negative')
    return DriverAnswer(outcome, seconds)


def slice_answers(slices: list[Any]) -> dict[tuple[str, str], DriverAnswer]:
    """How each annotated pool's driver answers, by (driver, pool); a slice whose
    annotation does not parse is left out (see :func:`parse_answer`)."""
    out = {}
    for sl in slices:
        text = sl.metadata.annotations.get(BINDING_CONDITIONS_ANNOTATION)
        if text is None:
            continue
        try:
            out[(sl.spec.driver, sl.spec.pool.name)] = parse_answer(text)
        except ValueError:
            continue
    return out


def answer_binding(
    claim: ResourceClaim,
    answers: dict[tuple[str, str], DriverAnswer],
    now: str,
    source: str,
    elapsed: float | None = None,
) -> bool:
    """Set, in ``claim`` (changed in place), the conditions its allocated devices' drivers
    answer with (``answers``: see :func:`slice_answers`; ``now``: the conditions'
    ``lastTransitionTime``; ``source``: who says so, in their message). ``elapsed``: the
    seconds since the allocation, when only the answers due by then are given (None:
    every answer). False when there was nothing to change."""
    alloc = claim.status.allocation
    if alloc is None:
        return False
    changed = False
    for result in alloc.devices.results:
        answer = answers.get((result.driver, result.pool))
        if not result.binding_conditions or answer is None:
            continue
        if elapsed is not None and answer.delay > elapsed:
            continue
        field, reason = _ANSWERS[answer.outcome]
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
    """Sets the binding conditions of allocated devices as the slices' annotation says,
    at once or, for an answer with a delay, when the cluster's clock reaches it."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._timers: set[tuple[str, str, float]] = set()
        """(claim uid, allocationTimestamp, due time) of each answer already timed."""
        self._noticed: set[tuple[str, str]] = set()

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """React to one change of the cluster (called for every watch event)."""
        if kind != "ResourceClaim" or event.type == EventType.DELETED:
            return
        self._answer(event.object)  # type: ignore[arg-type]

    def _answers(self) -> dict[tuple[str, str], DriverAnswer]:
        """:func:`slice_answers`, with a notice (once per slice and value) for an
        annotation that does not parse."""
        for sl in self.cluster.objects("ResourceSlice"):
            text = sl.metadata.annotations.get(BINDING_CONDITIONS_ANNOTATION)
            if text is None or (sl.metadata.name, text) in self._noticed:
                continue
            try:
                parse_answer(text)
            except ValueError as err:
                self._noticed.add((sl.metadata.name, text))
                notice(
                    f"annotation {BINDING_CONDITIONS_ANNOTATION}: {err}: its driver never "
                    'answers (use "True" or "Failed", optionally with a delay: "True@30s")',
                    obj=f"ResourceSlice {sl.metadata.name}",
                )
        return slice_answers(self.cluster.objects("ResourceSlice"))

    def _answer(self, claim: ResourceClaim) -> None:
        """Write the answers due now; time the later ones."""
        alloc = claim.status.allocation
        if alloc is None or not any(r.binding_conditions for r in alloc.devices.results):
            return
        answers = self._answers()
        if not answers:
            return
        now = self.cluster.now()
        allocated = (
            (alloc.allocation_timestamp - EPOCH).total_seconds()
            if alloc.allocation_timestamp is not None
            else now
        )
        new: ResourceClaim = claim.model_copy(deep=True)
        stamp = timestamp(now).strftime("%Y-%m-%dT%H:%M:%SZ")
        if answer_binding(new, answers, stamp, "the embedded cluster", now - allocated):
            self.cluster.update(new)
            return  # the update's own event times the answers still to come
        uid = claim.metadata.uid or ""
        since = str(alloc.allocation_timestamp)
        for result in alloc.devices.results:
            answer = answers.get((result.driver, result.pool))
            if answer is None or not result.binding_conditions:
                continue
            due = allocated + answer.delay
            if due <= now or (uid, since, due) in self._timers:
                continue
            self._timers.add((uid, since, due))
            self.cluster.call_at(
                due, lambda ns=claim.namespace, name=claim.name: self._answer_later(ns, name)
            )

    def _answer_later(self, namespace: str, name: str) -> None:
        claim = self.cluster.try_get("ResourceClaim", namespace, name)
        if claim is not None:
            self._answer(claim)  # type: ignore[arg-type]
