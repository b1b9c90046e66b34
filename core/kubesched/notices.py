"""Notices: one-line remarks on input that a run accepts but changes or passes over.

A real control plane quietly defaults and admits what a user sends it (a Namespace gains
its ``kubernetes.io/metadata.name`` label, a Node its kubelet labels); a simulation that
does the same must say so, or its answer cannot be trusted. A notice never aborts
anything: the loaders, admission and controllers call :func:`notice`, and whoever runs
them (``kubesched simulate``) collects the notices with :func:`collecting_notices`,
shows each as one line on stderr and keeps them for the JSON report.

Collection follows the calling context (a :class:`contextvars.ContextVar`): code running
outside any collection, e.g. in a library user's own program, logs its notices instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Notice", "collecting_notices", "notice"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    """What was noticed (``message``), about which object (``obj``, e.g. ``Node n1``) in
    which file (``source``); either may be unknown."""

    message: str
    source: str | None = None
    obj: str | None = None

    def __str__(self) -> str:
        return ": ".join(p for p in (self.source, self.obj, self.message) if p)


_current: ContextVar[tuple[list[Notice], Callable[[Notice], None] | None] | None] = ContextVar(
    "kubesched_notices", default=None
)


def notice(message: str, *, source: str | None = None, obj: str | None = None) -> None:
    """Record a notice in the current collection (and show it, if the collection does);
    outside any collection, log it as a warning."""
    n = Notice(message, source, obj)
    current = _current.get()
    if current is None:
        log.warning("%s", n)
        return
    notices, show = current
    notices.append(n)
    if show is not None:
        show(n)


@contextmanager
def collecting_notices(show: Callable[[Notice], None] | None = None) -> Iterator[list[Notice]]:
    """Collect the notices made inside the ``with`` block into the list it yields;
    ``show`` (e.g. a print to stderr) sees each as it is made."""
    notices: list[Notice] = []
    token = _current.set((notices, show))
    try:
        yield notices
    finally:
        _current.reset(token)
