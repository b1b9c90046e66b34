"""Kubernetes Events about pods (Scheduled, FailedScheduling, Preempted), via the backend."""

from __future__ import annotations

import logging
from typing import Any

from kubesched.backend.protocol import RecordedEvent

log = logging.getLogger(__name__)

MAX_EVENT_MESSAGE = 1024
"""Upstream truncates event messages to 1024 characters (``truncateMessage``)."""


def truncate_message(message: str, limit: int = MAX_EVENT_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters with upstream's "..." suffix."""
    if len(message) <= limit:
        return message
    suffix = " ..."
    return message[: limit - len(suffix)] + suffix


class EventRecorder:
    """Records Events through a backend's ``record_event``; failures are logged, never raised
    (an event that cannot be written must not fail scheduling)."""

    def __init__(
        self, backend: Any, clock: Any, reporting_controller: str = "default-scheduler"
    ) -> None:
        self.backend = backend
        self.clock = clock
        self.reporting_controller = reporting_controller

    def eventf(
        self,
        obj: Any,
        related: Any,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None:
        """Record an Event about ``obj`` (a Pod or other object): upstream's ``Eventf``."""
        meta = obj.metadata
        event = RecordedEvent(
            involved_kind=getattr(obj, "kind", None) or type(obj).__name__,
            involved_namespace=meta.namespace or "",
            involved_name=meta.name or "",
            type=event_type,
            reason=reason,
            message=truncate_message(message),
            action=action,
            reporting_controller=self.reporting_controller,
            timestamp=self.clock.now(),
            related=(
                f"{related.metadata.namespace}/{related.metadata.name}"
                if related is not None
                else None
            ),
        )
        try:
            self.backend.record_event(event)
        except Exception:  # an event is best-effort, as upstream's broadcaster
            log.exception("could not record event %s for %s", reason, meta.name)
