"""Values plugins return besides a Status: PreFilter and PostFilter results, node scores,
and a pod group's placements."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.framework.status import Status

if TYPE_CHECKING:
    from kubesched.api import Pod
    from kubesched.framework.types import NodeInfo

MAX_NODE_SCORE = 100
"""The highest score a node can have after NormalizeScore (upstream ``MaxNodeScore``)."""
MIN_NODE_SCORE = 0
"""The lowest score a node can have after NormalizeScore (upstream ``MinNodeScore``)."""


@dataclass(frozen=True)
class PreFilterResult:
    """A PreFilter plugin's narrowing of the nodes to evaluate.

    ``node_names`` ``None`` means all nodes; a set means only those nodes (the
    NodeAffinity plugin returns the names a ``metadata.name`` field selector allows).
    """

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        """True when this result does not narrow the nodes."""
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """The intersection of two results (``None`` and all-nodes are neutral)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) decided.

    ``nominated_node_name``: the node the pod is nominated to, once the victims the
    plugin chose are gone; ``""`` clears the pod's nomination; ``None`` leaves it as it
    is (upstream's ``ModeNoop``). ``status``: ``None`` for success; a rejection means
    the plugin could not help, and its nomination change still applies (upstream returns
    a result and a status together). ``details``: the plugin's explanation of its
    decision (e.g. the preemption candidates and victims), shown by
    ``simulate --explain``.
    """

    nominated_node_name: str | None = None
    status: Status | None = None
    details: Any = field(default=None, compare=False)


class LazyNames:
    """A ``names`` attribute (stored in ``_names``) given either as the list of node
    names or as a function returning it, called on first read: building 500 names per
    pod costs more than most plugins when only one name (the host's) is read."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        names = obj._names
        if callable(names):
            names = obj._names = names()
        return names

    def __set__(self, obj: Any, names: list[str]) -> None:
        obj._names = names


class NodeScores:
    """One plugin's scores of the feasible nodes, as NormalizeScore receives them.

    ``names[i]`` is a node's name and ``values[i]`` its score (numpy int64, changed in
    place by normalisation). ``names`` may be given as a function returning the list:
    the framework does so, and the list is built only if a plugin reads it.
    """

    __slots__ = ("_names", "values")

    def __init__(
        self, names: list[str] | Callable[[], list[str]], values: np.ndarray | Iterable[int]
    ) -> None:
        self._names = names
        self.values = np.asarray(values, dtype=np.int64)

    names = LazyNames()
    """The nodes' names, in the order of ``values``."""

    def __len__(self) -> int:
        return len(self.values)

    def as_dict(self) -> dict[str, int]:
        """The scores by node name."""
        return dict(zip(self.names, self.values.tolist(), strict=True))

    def __repr__(self) -> str:
        return f"NodeScores({self.as_dict()!r})"


def default_normalize_score(max_priority: int, reverse: bool, scores: NodeScores) -> None:
    """Rescale ``scores`` in place to ``0..max_priority`` as upstream's
    ``helper.DefaultNormalizeScore`` does.

    Each score becomes ``max_priority * score // highest`` (integer division), and
    with ``reverse`` ``max_priority - that``. When the highest score is 0, every score
    becomes ``max_priority`` if ``reverse`` and stays 0 otherwise.
    """
    values = scores.values
    if len(values) == 0:
        return
    highest = int(values.max())
    if highest == 0:
        if reverse:
            values[:] = max_priority
        return
    np.floor_divide(values * max_priority, highest, out=values)
    if reverse:
        np.subtract(max_priority, values, out=values)


@dataclass(frozen=True)
class Placement:
    """Nodes a pod group's cycle may place the whole group on (PlacementGenerate's answer):
    ``name`` (a topology domain's value, for instance) and ``nodes``, the NodeInfos."""

    name: str
    nodes: tuple[NodeInfo, ...]


@dataclass(frozen=True)
class PodGroupAssignments:
    """A placement on which the group's trial succeeded, with ``assignments``: each placed
    pod and the node it found there (what PlacementScore plugins score)."""

    placement: Placement
    assignments: tuple[tuple[Pod, str], ...]
