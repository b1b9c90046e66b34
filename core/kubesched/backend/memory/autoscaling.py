"""The HorizontalPodAutoscaler controller, as it acts on a cluster without a metrics API."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kubesched.api.rest import resource_name
from kubesched.backend.memory.naming import timestamp
from kubesched.backend.protocol import EventType, RecordedEvent, WatchEvent

if TYPE_CHECKING:
    from kubesched.backend.memory.store import MemoryCluster

__all__ = ["HPA_KIND", "HPA_SYNC_PERIOD", "SCALE_TARGET_KINDS", "HorizontalPodAutoscalerController"]

HPA_KIND = "HorizontalPodAutoscaler"
HPA_SYNC_PERIOD = 15.0
"""``--horizontal-pod-autoscaler-sync-period``: an HPA is reconciled this long after it is
created, then every period."""
SCALE_TARGET_KINDS: dict[str, str] = {
    "Deployment": "apps",
    "ReplicaSet": "apps",
    "StatefulSet": "apps",
    "ReplicationController": "",
}
"""The kinds whose scale subresource the embedded cluster serves, with their API group."""

_CONTROLLER = "horizontal-pod-autoscaler"


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


class HorizontalPodAutoscalerController:
    """``pkg/controller/podautoscaler`` (``reconcileAutoscaler``) without metrics.

    The embedded cluster serves no metrics API, so only the bounds act, as they do on a
    real cluster without a metrics server: at each sync (15 s after the HPA is created,
    then every 15 s while its target's replica count changes), a target whose
    ``spec.replicas`` is 0 (with ``minReplicas`` not 0) has scaling disabled
    (``ScalingActive=False``, ``ScalingDisabled``); one above ``maxReplicas`` is scaled
    down to it and one below ``minReplicas`` (default 1) up to it (event
    ``SuccessfulRescale``, ``AbleToScale=True``, ``SucceededRescale``); one in between
    stays as it is, since no metric gives a replica count (``ScalingActive=False``). A
    missing target gives ``AbleToScale=False``, ``FailedGetScale``.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self._due: set[tuple[str, float]] = set()  # (HPA key, sync time) already set
        self._created: dict[str, float] = {}  # HPA uid -> when the controller first saw it

    def on_event(self, kind: str, event: WatchEvent) -> None:
        """Plan a sync of an HPA that was created or changed, or whose target changed."""
        obj = event.object
        if kind == HPA_KIND:
            if event.type is not EventType.DELETED and (
                event.old is None or _spec(event.old) != _spec(obj)
            ):
                self._plan(obj)
            return
        if kind not in SCALE_TARGET_KINDS or event.type is EventType.DELETED:
            return
        old = event.old
        if old is not None and old.spec.replicas == obj.spec.replicas:  # type: ignore[attr-defined]
            return
        for hpa in self.cluster.iter_objects(HPA_KIND, obj.metadata.namespace):
            ref = _spec(hpa).get("scaleTargetRef") or {}
            if ref.get("kind") == kind and ref.get("name") == obj.name:
                self._plan(hpa)

    def resync_all(self) -> None:
        """Plan a sync of every HPA (after a batch load)."""
        for hpa in self.cluster.objects(HPA_KIND):
            self._plan(hpa)

    def _plan(self, hpa: Any) -> None:
        """The HPA's next sync: on its 15 s cadence from its creation, never at once."""
        now = self.cluster.now()
        start = self._created.setdefault(hpa.metadata.uid or hpa.key, now)
        due = start + HPA_SYNC_PERIOD * max(1, math.ceil((now - start) / HPA_SYNC_PERIOD - 1e-9))
        key = (hpa.key, due)
        if key in self._due:
            return
        self._due.add(key)
        namespace, name, uid = hpa.metadata.namespace, hpa.name, hpa.metadata.uid

        def sync() -> None:
            self._due.discard(key)
            cur = self.cluster.try_get(HPA_KIND, namespace, name)
            if cur is not None and cur.metadata.uid == uid:
                self._reconcile(cur)

        self.cluster.call_at(due, sync, progress=True)

    # -- reconcile ---------------------------------------------------------------------

    def _reconcile(self, hpa: Any) -> None:
        spec = _spec(hpa)
        ref = spec.get("scaleTargetRef") or {}
        kind, name = ref.get("kind", ""), ref.get("name", "")
        group = _group(ref.get("apiVersion", ""))
        target = None
        if kind in SCALE_TARGET_KINDS and SCALE_TARGET_KINDS[kind] == group:
            target = self.cluster.try_get(kind, hpa.metadata.namespace, name)
        if target is None:
            if kind in SCALE_TARGET_KINDS:
                qualified = resource_name(kind)  # already group-qualified (deployments.apps)
            else:
                qualified = f"{kind.lower()}s.{group}" if group else f"{kind.lower()}s"
            message = f'{qualified} "{name}" not found'
            self._event(hpa, "Warning", "FailedGetScale", message)
            self._write_status(
                hpa,
                None,
                None,
                [
                    (
                        "AbleToScale",
                        "False",
                        "FailedGetScale",
                        "the HPA controller was unable to get the target's current scale: "
                        + message,
                    )
                ],
            )
            return
        current: int = target.spec.replicas  # type: ignore[attr-defined]
        minimum = spec.get("minReplicas")
        minimum = 1 if minimum is None else int(minimum)
        maximum = int(spec.get("maxReplicas") or 0)
        if current == 0 and minimum != 0:
            self._write_status(
                hpa,
                current,
                0,
                [
                    (
                        "AbleToScale",
                        "True",
                        "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale",
                    ),
                    (
                        "ScalingActive",
                        "False",
                        "ScalingDisabled",
                        "scaling is disabled since the replica count of the target is zero",
                    ),
                ],
            )
            return
        if current > maximum:
            desired, reason = maximum, "Current number of replicas above Spec.MaxReplicas"
        elif current < minimum:
            desired, reason = minimum, "Current number of replicas below Spec.MinReplicas"
        else:
            # Within bounds only the metrics could change the count, and none are served.
            self._write_status(
                hpa,
                current,
                current,
                [
                    (
                        "AbleToScale",
                        "True",
                        "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale",
                    ),
                    (
                        "ScalingActive",
                        "False",
                        _metric_failure(spec),
                        "the HPA was unable to compute the replica count: the embedded cluster "
                        "serves no metrics API",
                    ),
                ],
            )
            return
        scaled = target.model_copy(deep=True)
        scaled.spec.replicas = desired  # type: ignore[attr-defined]
        scaled.metadata.resource_version = None
        self.cluster.update(scaled)
        self._event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        self._write_status(
            hpa,
            current,
            desired,
            [
                (
                    "AbleToScale",
                    "True",
                    "SucceededRescale",
                    f"the HPA controller was able to update the target scale to {desired}",
                )
            ],
            scaled_at=self.cluster.now(),
        )

    def _event(self, hpa: Any, type_: str, reason: str, message: str) -> None:
        self.cluster.record_event(
            RecordedEvent(
                involved_kind=HPA_KIND,
                involved_namespace=hpa.metadata.namespace or "default",
                involved_name=hpa.name,
                type=type_,
                reason=reason,
                message=message,
                reporting_controller=_CONTROLLER,
            )
        )

    def _write_status(
        self,
        hpa: Any,
        current: int | None,
        desired: int | None,
        conditions: list[tuple[str, str, str, str]],
        scaled_at: float | None = None,
    ) -> None:
        """Write the status fields of the HPA's API version (v1 has no conditions)."""
        data = hpa.to_dict()
        status: dict[str, Any] = dict(data.get("status") or {})
        if current is not None:
            status["currentReplicas"] = current
        if desired is not None:
            status["desiredReplicas"] = desired
        if scaled_at is not None:
            status["lastScaleTime"] = timestamp(scaled_at)
        if hpa.api_version != "autoscaling/v1":
            now = timestamp(self.cluster.now())
            old = {c.get("type"): c for c in status.get("conditions") or []}
            for type_, value, reason, message in conditions:
                before = old.get(type_)
                since = (
                    before.get("lastTransitionTime")
                    if before and before.get("status") == value
                    else now
                )
                old[type_] = {
                    "type": type_,
                    "status": value,
                    "lastTransitionTime": since,
                    "reason": reason,
                    "message": message,
                }
            status["conditions"] = list(old.values())
        if status == (data.get("status") or {}):
            return
        data["status"] = status
        new = type(hpa).model_validate(data)
        new.metadata.resource_version = hpa.metadata.resource_version
        self.cluster._write(new, hpa)


_METRIC_FAILURES = {
    "Resource": "FailedGetResourceMetric",
    "ContainerResource": "FailedGetContainerResourceMetric",
    "Pods": "FailedGetPodsMetric",
    "Object": "FailedGetObjectMetric",
    "External": "FailedGetExternalMetric",
}


def _metric_failure(spec: dict[str, Any]) -> str:
    """The ``ScalingActive=False`` reason upstream gives when the first metric cannot be
    read (an HPA without metrics targets CPU, a Resource metric)."""
    metrics = spec.get("metrics") or []
    kind = metrics[0].get("type", "Resource") if metrics else "Resource"
    return _METRIC_FAILURES.get(kind, "FailedGetResourceMetric")


def _spec(hpa: Any) -> dict[str, Any]:
    return dict(hpa.to_dict().get("spec") or {})
