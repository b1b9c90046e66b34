"""The result of running a plugin: a status code, reasons and the plugin that produced it."""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from itertools import repeat
from operator import is_not

import numpy as np


class Code(IntEnum):
    """What a plugin's result means to the framework and to the queue.

    Values and meanings follow kube-scheduler's ``framework.Code``.
    """

    SUCCESS = 0
    """The plugin ran and is satisfied. A ``None`` return means the same."""

    ERROR = 1
    """Something went wrong inside the plugin or the system, not in the pod or the node.
    The scheduling attempt ends; the pod goes to the backoff queue and is retried
    after its backoff expires, whatever cluster events happen."""

    UNSCHEDULABLE = 2
    """The pod does not fit the node now, but could after the cluster changes or after
    preemption removes pods. Filter: the node is rejected, and is a candidate for
    preemption. When every node is rejected the pod goes to the unschedulable pods
    until an event registered by a rejecting plugin moves it (or the flush does)."""

    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    """Like ``UNSCHEDULABLE``, but preempting pods on the node would not help (a node
    selector does not match, a taint is not tolerated). The node is not a preemption
    candidate. At PreFilter it rejects the pod for every node."""

    WAIT = 4
    """Only from Permit: the pod waits (up to the plugin's timeout) until a plugin
    allows or rejects it through the Handle's waiting pods. Any other extension point
    returning ``WAIT`` is an error."""

    SKIP = 5
    """PreFilter/PreScore: this plugin's Filter/Score is not needed for this pod and is
    skipped for this cycle. Bind: this plugin does not bind this pod; the next Bind
    plugin is asked. PreBind and PreEnqueue: the same as success. At any other extension
    point it is an error (upstream treats an unexpected code so)."""

    PENDING = 6
    """The pod waits for something outside the scheduler (a PreEnqueue gate, an external
    component). An event the rejecting plugin registered moves it without backoff;
    otherwise only the periodic flush of long-unschedulable pods retries it."""

    @property
    def display(self) -> str:
        """Upstream's spelling of the code (``UnschedulableAndUnresolvable``)."""
        return _DISPLAY[self]


_DISPLAY = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """A plugin's verdict: a ``Code``, human-readable reasons and the plugin's name.

    ``Status(Code.UNSCHEDULABLE, "Insufficient cpu")``. A plugin may return ``None``
    instead of a success status; the framework fills in ``plugin`` for statuses a
    plugin returns. ``timeout`` is the wait, in seconds, of a Permit ``WAIT``.
    ``error`` keeps the exception behind an ``ERROR`` status. ``details`` explain a
    rejection further for ``simulate --explain`` (DynamicResources: per device request,
    why no device fit); unlike the reasons they are not counted in the diagnosis.
    """

    __slots__ = ("code", "details", "error", "plugin", "reasons", "timeout")

    def __init__(
        self,
        code: Code = Code.SUCCESS,
        *reasons: str,
        plugin: str | None = None,
        timeout: float | None = None,
        error: BaseException | None = None,
    ) -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin
        self.timeout = timeout
        self.error = error
        self.details: tuple[str, ...] = ()

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def success(cls) -> Status:
        """A success status."""
        return cls(Code.SUCCESS)

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        """``UNSCHEDULABLE`` with the given reasons."""
        return cls(Code.UNSCHEDULABLE, *reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        """``UNSCHEDULABLE_AND_UNRESOLVABLE`` with the given reasons."""
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)

    @classmethod
    def skip(cls) -> Status:
        """``SKIP``: this plugin does not apply to the pod in this cycle."""
        return cls(Code.SKIP)

    @classmethod
    def wait(cls, timeout: float, *reasons: str) -> Status:
        """``WAIT`` for at most ``timeout`` seconds (Permit only)."""
        return cls(Code.WAIT, *reasons, timeout=timeout)

    @classmethod
    def from_error(cls, error: BaseException, plugin: str | None = None) -> Status:
        """``ERROR`` carrying ``error``; its reason is the exception's text."""
        text = str(error) or type(error).__name__
        return cls(Code.ERROR, text, plugin=plugin, error=error)

    # -- predicates -------------------------------------------------------------------
    def is_success(self) -> bool:
        """True for ``SUCCESS``."""
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        """True for ``SKIP``."""
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        """True for ``WAIT``."""
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """True for the codes that mean "does not fit": ``UNSCHEDULABLE``,
        ``UNSCHEDULABLE_AND_UNRESOLVABLE`` and ``PENDING``."""
        return self.code in _REJECTED

    def message(self) -> str:
        """The reasons joined with ", " (upstream's ``Status.Message``)."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """Set the producing plugin if none is set yet, and return ``self``."""
        if self.plugin is None:
            self.plugin = plugin
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.code, self.reasons, self.plugin) == (other.code, other.reasons, other.plugin)

    def __hash__(self) -> int:
        return hash((self.code, tuple(self.reasons), self.plugin))

    def __repr__(self) -> str:
        parts = [self.code.display, *map(repr, self.reasons)]
        if self.plugin:
            parts.append(f"plugin={self.plugin!r}")
        if self.timeout is not None:
            parts.append(f"timeout={self.timeout}")
        return f"Status({', '.join(parts)})"


_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


def not_none_mask(values: Sequence[object]) -> np.ndarray:
    """Which entries of a verdict sequence are not ``None``, as a bool array.

    Nearly all ``None`` (nodes that pass): numpy's elementwise ``!= None``, which is C
    for ``None`` entries. Otherwise identity tests in C, since ``!= None`` calls
    ``Status.__eq__`` (Python) once per failing node: from about one failing node in
    ten, that costs more than the identity tests over every node.
    """
    arr = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
    n = len(arr)
    step = max(1, n // _SAMPLE)
    sample = arr[::step].tolist()
    # Counted by identity: ``list.count(None)`` would call ``Status.__eq__`` per Status.
    failing = sum(map(is_not, sample, repeat(None)))
    if failing * 10 <= len(sample):
        return np.asarray(arr != None, dtype=bool)  # noqa: E711 (elementwise, by numpy)
    return np.fromiter(map(is_not, arr.tolist(), repeat(None)), dtype=bool, count=n)


_SAMPLE = 32
"""Entries :func:`not_none_mask` looks at to choose its method."""
