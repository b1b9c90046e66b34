"""The PodTopologySpread plugin: spread pods evenly over topology domains (upstream's)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from kubesched.api import Node, Pod, TopologySpreadConstraint
from kubesched.api.validation import is_qualified_name
from kubesched.framework.args import PluginArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kubesched.framework.plugin import hookimpl
from kubesched.framework.results import NodeScores
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeBatch, NodeInfo, PodInfo
from kubesched_builtin.names import POD_TOPOLOGY_SPREAD

from . import filtering, scoring
from .common import (
    DO_NOT_SCHEDULE,
    HONOR,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    SCHEDULE_ANYWAY,
    Constraint,
    PodCounter,
    default_selector,
    filter_topology_spread_constraints,
    node_labels_match_spread_constraints,
    table_for,
)
from .filtering import ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH

NAME = POD_TOPOLOGY_SPREAD

MATCH_LABEL_KEYS_GATE = "MatchLabelKeysInPodTopologySpread"
"""The gate of ``matchLabelKeys`` (beta, on by default in v1.36)."""
SELECTOR_MERGE_GATE = "MatchLabelKeysInPodTopologySpreadSelectorMerge"
"""With it on (beta, on by default in v1.36) the API server merges ``matchLabelKeys`` into
``labelSelector`` at pod creation and the plugin reads the selector as it is."""

SYSTEM_DEFAULTING = "System"
"""``defaultingType: System``: the built-in default constraints apply."""
LIST_DEFAULTING = "List"
"""``defaultingType: List``: ``defaultConstraints`` apply (none when empty)."""

SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(
        max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
    TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)
"""Upstream's ``systemDefaultConstraints``."""

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LIST_DEFAULTING",
    "NAME",
    "SYSTEM_DEFAULTING",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]


class DefaultConstraint(TopologySpreadConstraint):
    """A cluster-level default constraint: a ``v1.TopologySpreadConstraint`` without
    ``labelSelector`` (validated), its selector deduced per pod. Unset fields are zero
    values, as when upstream decodes them, so validation reports them."""

    model_config = ConfigDict(**{**TopologySpreadConstraint.model_config, "extra": "forbid"})

    max_skew: int = Field(0, description="Maximum permitted skew; must be > 0.")
    topology_key: str = Field("", description="Node label key defining the domains.")
    when_unsatisfiable: str = Field("", description="DoNotSchedule or ScheduleAnyway.")


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


ERR_NOT_SIGNABLE = "pods with topology constraints are not signable"
ERR_DEFAULTS_NOT_SIGNABLE = "pods with default topology constraints are not signable"
"""Why a pod cannot be signed (opportunistic batching), in upstream's words."""


class PodTopologySpreadArgs(PluginArgs):
    """``PodTopologySpreadArgs``: cluster-level default constraints.

    ``defaultingType`` defaults to ``System`` (the built-in hostname/zone constraints,
    then ``defaultConstraints`` must be empty); ``List`` uses ``defaultConstraints``.
    """

    default_constraints: list[DefaultConstraint] = Field(
        default_factory=list,
        description=(
            "Constraints for pods without their own, with the selector of the Services, "
            "ReplicationControllers, ReplicaSets and StatefulSets selecting the pod. "
            "Used with defaultingType List; must not set labelSelector."
        ),
    )
    defaulting_type: str = Field(
        SYSTEM_DEFAULTING,
        description="System (built-in default constraints) or List (defaultConstraints).",
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_for_unset(cls, data: Any) -> Any:
        # SetDefaults_PodTopologySpreadArgs: an empty defaultingType is System (a null
        # one is unset for every args model, see kubesched.ArgsModel).
        if isinstance(data, dict):
            data = {
                k: v
                for k, v in data.items()
                if not (k in ("defaultingType", "defaulting_type") and v == "")
            }
        return data

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        # upstream ValidatePodTopologySpreadArgs, messages as field.Error renders them.
        errs: list[str] = []
        dt = self.defaulting_type
        if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errs.append(
                f"defaultingType: Unsupported value: {_show(dt)}: supported values: "
                f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"'
            )
        elif dt == SYSTEM_DEFAULTING and self.default_constraints:
            errs.append(
                f"defaultingType: Invalid value: {_show(dt)}: "
                "when .defaultConstraints are not empty"
            )
        for i, c in enumerate(self.default_constraints):
            p = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errs.append(
                    f"{p}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)"
                )
            if not c.topology_key:
                errs.append(f"{p}.topologyKey: Required value: can not be empty")
            else:
                errs.extend(
                    f"{p}.topologyKey: Invalid value: {_show(c.topology_key)}: {m}"
                    for m in is_qualified_name(c.topology_key)
                )
            if not c.when_unsatisfiable:
                errs.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
            elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errs.append(
                    f"{p}.whenUnsatisfiable: Unsupported value: {_show(c.when_unsatisfiable)}: "
                    f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
                )
            if c.label_selector is not None:
                errs.append(
                    f"{p}.labelSelector: Forbidden: constraint must not define a selector, "
                    "as they deduced for each pod"
                )
            for other in self.default_constraints[:i]:
                if (other.topology_key, other.when_unsatisfiable) == (
                    c.topology_key,
                    c.when_unsatisfiable,
                ):
                    errs.append(
                        f'{p}: Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"'
                    )
                    break
        if errs:
            # utilerrors.Aggregate: one message alone, several as "[a, b]".
            raise ValueError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
        return self


class PodTopologySpread:
    """Filters nodes that would break a pod's DoNotSchedule topology spread constraints
    and prefers nodes in domains with fewer matching pods for ScheduleAnyway ones.

    Pods without constraints get the default constraints (``defaultingType: System``:
    hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway) with a selector built
    from the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting
    them, and none when nothing selects them.
    """

    name = NAME
    Args = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Any) -> None:
        args = args if args is not None else PodTopologySpreadArgs()
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[TopologySpreadConstraint, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(args.default_constraints)
        )
        self.counter = PodCounter()
        # kube-apiserver v1.36 merges matchLabelKeys into labelSelector when it creates the
        # pod (MatchLabelKeysInPodTopologySpreadSelectorMerge); the scheduler merges them
        # itself only when that gate is off and matchLabelKeys are on.
        self.merge_match_label_keys = handle.feature_enabled(
            MATCH_LABEL_KEYS_GATE
        ) and not handle.feature_enabled(SELECTOR_MERGE_GATE)

    # -- constraints ------------------------------------------------------------------
    def _constraints(self, pod: Pod, action: str) -> list[Constraint]:
        labels = pod.metadata.labels or {}
        if pod.spec.topology_spread_constraints:
            return filter_topology_spread_constraints(
                pod.spec.topology_spread_constraints,
                labels,
                action,
                merge_match_label_keys=self.merge_match_label_keys,
            )
        return self.build_default_constraints(pod, action)

    def build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The default constraints of ``action`` with the pod's default selector, or none
        when no Service/RC/RS/StatefulSet selects the pod (``buildDefaultConstraints``)."""
        constraints = filter_topology_spread_constraints(
            self.default_constraints, pod.metadata.labels or {}, action
        )
        if not constraints:
            return []
        selector = default_selector(pod, getattr(self.handle, "lister", None))
        if selector.matches_everything:
            return []
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in constraints
        ]

    def get_constraints(self, pod: Pod) -> list[Constraint]:
        """The pod's DoNotSchedule constraints, or the default ones (``getConstraints``)."""
        return self._constraints(pod, DO_NOT_SCHEDULE)

    def get_soft_constraints(self, pod: Pod) -> list[Constraint]:
        """The pod's ScheduleAnyway constraints, or the default ones."""
        return self._constraints(pod, SCHEDULE_ANYWAY)

    # -- PreFilter / Filter -----------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod) -> Status | None:
        """Spreading depends on where the other pods are, not only on the pod and the node:
        a pod with constraints, its own or the profile's defaults, cannot be signed."""
        if pod.spec.topology_spread_constraints:
            return Status(Code.UNSCHEDULABLE, ERR_NOT_SIGNABLE)
        if self.default_constraints:
            return Status(Code.UNSCHEDULABLE, ERR_DEFAULTS_NOT_SIGNABLE)
        return None

    @hookimpl
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """Count matching pods per domain for the DoNotSchedule constraints; ``SKIP``
        when the pod has none."""
        try:
            constraints = self.get_constraints(pod_info.pod)
            if not constraints:
                return Status.skip()
            table = table_for(self.handle, nodes)
            s = filtering.cal_pre_filter_state(self, pod_info, constraints, table)
        except ValueError as err:
            return Status.from_error(ValueError(f"get constraints from pod: {err}"))
        state.write(filtering.PRE_FILTER_STATE_KEY, s)
        return None

    @hookimpl
    def pre_filter_add_pod(
        self, state: CycleState, pod_info: PodInfo, pod_info_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Count ``pod_info_to_add`` as running on ``node_info``."""
        s = filtering.get_pre_filter_state(state)
        filtering.update_with_pod(s, pod_info_to_add, pod_info, node_info, 1)
        return None

    @hookimpl
    def pre_filter_remove_pod(
        self,
        state: CycleState,
        pod_info: PodInfo,
        pod_info_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status | None:
        """Stop counting ``pod_info_to_remove`` on ``node_info``."""
        s = filtering.get_pre_filter_state(state)
        filtering.update_with_pod(s, pod_info_to_remove, pod_info, node_info, -1)
        return None

    @hookimpl
    def filter(self, state: CycleState, node_info: NodeInfo) -> Status | None:
        """Reject the node if it lacks a topology key, or if the pod there would make a
        domain exceed ``maxSkew`` above the global minimum."""
        return filtering.filter_node(filtering.get_pre_filter_state(state), node_info)

    @hookimpl
    def filter_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        """``filter`` for a batch of nodes, vectorised over their label columns; on a
        what-if batch of node copies, with each copy's own counts."""
        view = nodes.copies.get(NAME) if nodes.copies else None
        return filtering.filter_batch(filtering.get_pre_filter_state(state), nodes, view)

    def pre_filter_copies(
        self,
        state: CycleState,
        pod_info: PodInfo,
        table: Any,
        rows: Sequence[int],
        pods: Sequence[Sequence[PodInfo]],
    ) -> filtering.CopyCounts | None:
        """The PreFilter counts of copies of the nodes at ``rows`` as numpy columns, the
        copy of ``rows[j]`` with ``pods[j]`` removed first (see
        :class:`~kubesched.framework.preemption_batch.NodeCopies`); ``None`` when a copy
        would count in a domain PreFilter did not see."""
        try:
            return filtering.CopyCounts(
                filtering.get_pre_filter_state(state), pod_info, table, rows, pods
            )
        except LookupError:
            return None

    # -- PreScore / Score / NormalizeScore ----------------------------------------------
    @hookimpl
    def pre_score(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        """Count matching pods per domain of the feasible nodes over all nodes for the
        ScheduleAnyway constraints; ``SKIP`` when the pod has none (or no nodes exist)."""
        snapshot = getattr(self.handle, "snapshot", None)
        all_nodes = snapshot.list() if snapshot is not None else nodes
        if not all_nodes:
            return Status.skip()
        try:
            table = table_for(self.handle, all_nodes)
            s = scoring.init_pre_score_state(self, pod_info, nodes, all_nodes, table)
        except ValueError as err:
            return Status.from_error(ValueError(f"calculating preScoreState: {err}"))
        if s is None:
            return Status.skip()
        state.write(scoring.PRE_SCORE_STATE_KEY, s)
        return None

    @hookimpl
    def score(self, state: CycleState, node_info: NodeInfo) -> int:
        """The weighted count of matching pods in the node's domains (normalised later)."""
        return scoring.score_node(self, scoring.get_pre_score_state(state), node_info)

    @hookimpl
    def score_nodes(self, state: CycleState, nodes: NodeBatch) -> np.ndarray:
        """``score`` for a batch of nodes, vectorised over their label columns."""
        return scoring.score_batch(self, scoring.get_pre_score_state(state), nodes)

    @hookimpl
    def normalize_score(self, state: CycleState, scores: NodeScores) -> Status | None:
        """Reverse and rescale: the fewest matching pods score 100; ignored nodes 0."""
        scoring.normalize(scoring.get_pre_score_state(state), scores)
        return None

    # -- events -----------------------------------------------------------------------
    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods added, deleted, relabelled or given tolerations, and nodes added, deleted,
        relabelled or retainted, each with upstream's queueing hint."""
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATIONS
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, node_actions),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        """Queue when a bound pod of the namespace that matches (or stopped matching) a
        DoNotSchedule selector came, went or was relabelled, or when the pod itself got
        new tolerations and a constraint honours taints."""
        original, modified = _as_pod(old_obj), _as_pod(new_obj)
        if (modified is not None and not _involved(modified, pod)) or (
            original is not None and not _involved(original, pod)
        ):
            return QueueingHint.SKIP
        constraints = self.get_constraints(pod)
        if modified is not None and original is not None:
            if (
                pod.metadata.uid == modified.metadata.uid
                and modified.spec.tolerations != original.spec.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            old_labels = original.metadata.labels or {}
            new_labels = modified.metadata.labels or {}
            if old_labels == new_labels:
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old_labels) != c.selector.matches(new_labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = modified if modified is not None else original
        if changed is None:
            return QueueingHint.QUEUE
        labels = changed.metadata.labels or {}
        if any(c.selector.matches(labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old_obj: Any, new_obj: Any
    ) -> QueueingHint:
        """Queue when a node with every topology key appeared, disappeared, gained or lost
        them, or changed a topology value or its taints."""
        original, modified = _as_node(old_obj), _as_node(new_obj)
        constraints = self.get_constraints(pod)
        original_matching = original is not None and node_labels_match_spread_constraints(
            original.metadata.labels, constraints
        )
        modified_matching = modified is not None and node_labels_match_spread_constraints(
            modified.metadata.labels, constraints
        )
        if original is not None and modified is not None:
            if original_matching != modified_matching:
                return QueueingHint.QUEUE
            if modified_matching and (
                any(
                    original.metadata.labels.get(c.topology_key, "")
                    != modified.metadata.labels.get(c.topology_key, "")
                    for c in constraints
                )
                or original.spec.taints != modified.spec.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if modified is not None:
            return QueueingHint.QUEUE if modified_matching else QueueingHint.SKIP
        return QueueingHint.QUEUE if original_matching else QueueingHint.SKIP


def _as_pod(obj: Any) -> Pod | None:
    if obj is None or isinstance(obj, Pod):
        return obj
    return getattr(obj, "pod", None)


def _as_node(obj: Any) -> Node | None:
    if obj is None or isinstance(obj, Node):
        return obj
    return getattr(obj, "node", None)


def _involved(incoming: Pod, pod: Pod) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or a bound pod of its namespace."""
    return incoming.metadata.uid == pod.metadata.uid or (
        bool(incoming.spec.node_name)
        and (incoming.metadata.namespace or "default") == (pod.metadata.namespace or "default")
    )
