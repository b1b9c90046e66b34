"""NodeAffinity: nodeSelector and required/preferred node affinity (PreFilter, Filter, Score)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    NodeBatch,
    NodeInfo,
    NodeScores,
    NodeTable,
    PluginArgs,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
    default_normalize_score,
    hookimpl,
)
from kubesched.api import (
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSelectorTermError,
    NodeSelectorTermsMatcher,
    Pod,
    PreferredSchedulingTerm,
    PreferredSchedulingTermsScorer,
    RequiredNodeAffinity,
    aggregate_message,
    selector_from_set,
)
from kubesched.api import NodeAffinity as NodeAffinitySpec
from kubesched_builtin import signers
from kubesched_builtin.names import NODE_AFFINITY

NAME = NODE_AFFINITY

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
"""Filter reason: the node fails the pod's nodeSelector or required node affinity."""
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
"""Filter reason: the node fails the profile's ``addedAffinity``."""
ERR_REASON_CONFLICT = "pod affinity terms conflict"
"""PreFilter reason: every required term names nodes by ``metadata.name`` and no name
satisfies any term."""

OBJECT_NAME_FIELD = "metadata.name"

_REQUIRED_PATH = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
_PREFERRED_PATH = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
_POD_PREFERRED_PATH = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


class NodeAffinityArgs(PluginArgs):
    """``NodeAffinityArgs``: node affinity every pod of the profile must also satisfy."""

    added_affinity: NodeAffinitySpec | None = Field(
        default=None,
        description=(
            "Node affinity added to every pod's: its required terms must match too (nodes "
            "failing them are rejected with \"node(s) didn't match scheduler-enforced node "
            'affinity"), its preferred terms add to the score. Default: none.'
        ),
    )

    @model_validator(mode="after")
    def _validate_added_affinity(self) -> NodeAffinityArgs:
        # Upstream ValidateNodeAffinityArgs: both parts must parse, every error reported.
        affinity = self.added_affinity
        if affinity is None:
            return self
        errors: list[str] = []
        required = affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            matcher = NodeSelectorTermsMatcher(required.node_selector_terms, path=_REQUIRED_PATH)
            errors.extend(matcher.errors)
        preferred = affinity.preferred_during_scheduling_ignored_during_execution
        if preferred:
            try:
                PreferredSchedulingTermsScorer(preferred, path=_PREFERRED_PATH)
            except NodeSelectorTermError as err:
                errors.extend(err.errors)
        if errors:
            # errors.Flatten(errors.NewAggregate(...)): one error alone, several as "[a, b]".
            raise ValueError(aggregate_message(errors))
        return self


# ---------------------------------------------------------------------------------------
# Node selector terms evaluated over the NodeTable's columns
# ---------------------------------------------------------------------------------------

_OTHER = "\x00other"
"""A label value / node name no valid object has: stands for "any value not listed"."""

_Probe = Callable[[str | None], bool]


def _label_codes(table: NodeTable, key: str) -> tuple[np.ndarray, dict[str, int], list[str]]:
    """Label ``key`` factorised: ``(code per row, code of each value, values)``; code 0 is
    "no such label", values have codes 1..n."""
    column = table.label_column(key)
    codes = np.zeros(len(column), dtype=np.intp)
    index: dict[str, int] = {}
    values: list[str] = []
    for row, value in enumerate(column):
        if value is None:
            continue
        code = index.get(value)
        if code is None:
            values.append(value)
            code = index[value] = len(values)
        codes[row] = code
    return codes, index, values


def _names_column(table: NodeTable) -> np.ndarray:
    return np.array(table.names, dtype=object)


@dataclass(frozen=True)
class _Requirement:
    """One requirement of a term, with ``probe`` answering it for one label value or name.

    ``probe`` is the shared matcher (``kubesched.api``) applied to a single value, so the
    columns agree with the per-node path by construction; the column code only decides
    which values to probe.
    """

    field: bool
    key: str
    operator: str
    values: tuple[str, ...]
    probe: _Probe

    def mask(self, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        if self.field:
            # Only the node name is a node field: compare names with the listed values.
            names = table.derived((NAME, "names"), _names_column)[rows]
            default = self.probe(_OTHER)
            out = np.full(len(rows), default, dtype=bool)
            for value in set(self.values):
                hit = self.probe(value)
                if hit != default:
                    out[names == value] = hit
            return out
        key = self.key
        codes, index, uniques = table.derived((NAME, "codes", key), lambda t: _label_codes(t, key))
        if self.operator in ("Gt", "Lt") or _OTHER in self.values:
            # Numeric comparisons depend on every value: probe each distinct one.
            lut = np.fromiter(
                (self.probe(v) for v in (None, *uniques)), dtype=bool, count=len(uniques) + 1
            )
        else:
            # In / NotIn / Exists / DoesNotExist (and invalid operators, which match
            # nothing) answer alike for every value they do not list.
            lut = np.full(len(uniques) + 1, self.probe(_OTHER), dtype=bool)
            lut[0] = self.probe(None)
            for value in self.values:
                code = index.get(value)
                if code is not None:
                    lut[code] = self.probe(value)
        return lut[codes[rows]]


def _expression(req: NodeSelectorRequirement) -> _Requirement:
    matcher = NodeSelectorTermsMatcher([NodeSelectorTerm(match_expressions=[req])])
    key = req.key

    def probe(value: str | None) -> bool:
        return matcher.matches("", {} if value is None else {key: value})

    return _Requirement(False, key, req.operator, tuple(req.values or ()), probe)


def _field(req: NodeSelectorRequirement) -> _Requirement:
    matcher = NodeSelectorTermsMatcher([NodeSelectorTerm(match_fields=[req])])

    def probe(name: str | None) -> bool:
        return matcher.matches(name or "", {})

    return _Requirement(True, req.key, req.operator, tuple(req.values or ()), probe)


def _selector_pair(key: str, wanted: str) -> _Requirement:
    selector = selector_from_set({key: wanted})

    def probe(value: str | None) -> bool:
        return selector.matches({} if value is None else {key: value})

    return _Requirement(False, key, "In", (wanted,), probe)


def _term(term: NodeSelectorTerm) -> tuple[_Requirement, ...]:
    return (
        *(_expression(r) for r in term.match_expressions),
        *(_field(r) for r in term.match_fields),
    )


def _all(reqs: Sequence[_Requirement], table: NodeTable, rows: np.ndarray) -> np.ndarray:
    out = np.ones(len(rows), dtype=bool)
    for req in reqs:
        out &= req.mask(table, rows)
        if not out.any():
            break
    return out


class _ColumnSelector:
    """nodeSelector AND (required terms ORed), evaluated over table columns.

    Terms with neither expressions nor fields are dropped (they match nothing, as in
    ``NodeSelectorTermsMatcher``); ``terms=None`` means no required affinity at all.
    """

    __slots__ = ("_selector", "_terms")

    def __init__(
        self, node_selector: Mapping[str, str] | None, terms: Sequence[NodeSelectorTerm] | None
    ) -> None:
        self._selector = tuple(_selector_pair(k, v) for k, v in (node_selector or {}).items())
        self._terms: tuple[tuple[_Requirement, ...], ...] | None = (
            None
            if terms is None
            else tuple(_term(t) for t in terms if t.match_expressions or t.match_fields)
        )

    def mask(self, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        out = _all(self._selector, table, rows)
        if self._terms is None or not out.any():
            return out
        matched = np.zeros(len(rows), dtype=bool)
        for term in self._terms:
            matched |= _all(term, table, rows)
            if matched.all():
                break
        return out & matched


class _ColumnScorer:
    """Preferred terms evaluated over table columns: the sum of matching terms' weights."""

    __slots__ = ("_terms",)

    def __init__(self, terms: Sequence[PreferredSchedulingTerm]) -> None:
        # The same terms PreferredSchedulingTermsScorer keeps (it validated them).
        self._terms = tuple(
            (_term(t.preference), t.weight)
            for t in terms
            if t.weight and (t.preference.match_expressions or t.preference.match_fields)
        )

    def scores(self, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=np.int64)
        for term, weight in self._terms:
            out += _all(term, table, rows) * weight
        return out


# ---------------------------------------------------------------------------------------
# Cycle state
# ---------------------------------------------------------------------------------------


class _PreFilterState:
    """The pod's required constraints: compiled for per-node matching, and (built on
    first use) for column matching."""

    __slots__ = ("_columns", "pod", "required")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.required = RequiredNodeAffinity(pod)
        self._columns: _ColumnSelector | None = None

    @property
    def columns(self) -> _ColumnSelector:
        if self._columns is None:
            self._columns = _ColumnSelector(self.pod.spec.node_selector, _required_terms(self.pod))
        return self._columns


class _PreScoreState:
    """The pod's preferred terms, compiled for per-node and (lazily) column scoring."""

    __slots__ = ("_columns", "scorer", "terms")

    def __init__(self, terms: Sequence[PreferredSchedulingTerm]) -> None:
        self.terms = terms
        self.scorer = PreferredSchedulingTermsScorer(terms, path=_POD_PREFERRED_PATH)
        self._columns: _ColumnScorer | None = None

    @property
    def columns(self) -> _ColumnScorer:
        if self._columns is None:
            self._columns = _ColumnScorer(self.terms)
        return self._columns


PRE_FILTER_KEY: StateKey[_PreFilterState] = StateKey("PreFilter" + NAME)
PRE_SCORE_KEY: StateKey[_PreScoreState] = StateKey("PreScore" + NAME)


def _required_terms(pod: Pod) -> list[NodeSelectorTerm] | None:
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    required = (
        node_affinity.required_during_scheduling_ignored_during_execution
        if node_affinity is not None
        else None
    )
    return required.node_selector_terms if required is not None else None


def _preferred_terms(pod: Pod) -> list[PreferredSchedulingTerm]:
    affinity = pod.spec.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    if node_affinity is None:
        return []
    return node_affinity.preferred_during_scheduling_ignored_during_execution


def required_node_names(terms: Sequence[NodeSelectorTerm]) -> set[str] | None:
    """The node names the required terms allow through ``metadata.name`` fields.

    ``None`` when some term has no ``metadata.name`` In requirement (that term can match
    any node, and terms are ORed); else the union over terms of the intersection of each
    term's listed names (an empty set: no node can match).
    """
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in term.match_fields:
            if req.key == OBJECT_NAME_FIELD and req.operator == "In":
                values = set(req.values or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return names


def _node_name_and_labels(node_info: NodeInfo) -> tuple[str, Mapping[str, str]]:
    node = node_info.node
    if node is None:
        return "", {}
    return node.metadata.name or "", node.metadata.labels


# ---------------------------------------------------------------------------------------
# The plugin
# ---------------------------------------------------------------------------------------


class NodeAffinity:
    """Required node affinity and nodeSelector as a Filter (UnschedulableAndUnresolvable),
    preferred node affinity as a Score (sum of matching terms' weights, normalised),
    both extended by the profile's ``addedAffinity``."""

    name = NAME
    filter_depends_only_on_node = True
    """Filter reads the Node and the pod, never the pods on the node (preemption skips it)."""
    Args = NodeAffinityArgs

    def __init__(self, args: NodeAffinityArgs | None, handle: Any) -> None:
        self._handle = handle
        self.args = args if args is not None else NodeAffinityArgs()
        added = self.args.added_affinity
        required = (
            added.required_during_scheduling_ignored_during_execution if added is not None else None
        )
        preferred = (
            added.preferred_during_scheduling_ignored_during_execution if added is not None else []
        )
        self._added_selector: NodeSelectorTermsMatcher | None = None
        self._added_columns: _ColumnSelector | None = None
        if required is not None:
            self._added_selector = NodeSelectorTermsMatcher(
                required.node_selector_terms, strict=True, path=_REQUIRED_PATH
            )
            self._added_columns = _ColumnSelector(None, required.node_selector_terms)
        self._added_scorer: PreferredSchedulingTermsScorer | None = None
        self._added_score_columns: _ColumnScorer | None = None
        if preferred:
            self._added_scorer = PreferredSchedulingTermsScorer(preferred, path=_PREFERRED_PATH)
            self._added_score_columns = _ColumnScorer(preferred)
        # Without added affinity, PreFilter answers Skip for a pod with neither a
        # nodeSelector nor node affinity, and PreScore for one without node affinity
        # (no preferred terms): the framework then skips the calls. Added affinity
        # applies to every pod.
        self.skips_pods_without: dict[str, tuple[str, ...]] = {}
        if self._added_selector is None:
            self.skips_pods_without["PreFilter"] = ("node_selector", "node_affinity")
        if self._added_scorer is None:
            self.skips_pods_without["PreScore"] = ("node_affinity",)

    # -- PreFilter / Filter --------------------------------------------------------------

    @hookimpl
    def sign_pod(self, pod: Pod, pod_info: PodInfo) -> list[tuple[str, Any]]:
        """Feasibility and score follow the node selector and node affinity."""
        return signers.node_affinity(pod)

    @hookimpl
    def pre_filter(self, state: CycleState, pod: Pod) -> PreFilterResult | Status | None:
        terms = _required_terms(pod)
        # An empty nodeSelector map selects every node, like an absent one.
        if terms is None and self._added_selector is None and not pod.spec.node_selector:
            return Status.skip()
        state.write(PRE_FILTER_KEY, _PreFilterState(pod))
        if not terms:
            return None
        names = required_node_names(terms)
        if names is None:
            return None
        if not names:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names))

    def _pre_filter_state(self, state: CycleState, pod: Pod) -> _PreFilterState:
        s = state.get(PRE_FILTER_KEY)
        # PreFilter disabled in the profile: compile here, as upstream falls back to.
        return s if s is not None else _PreFilterState(pod)

    @hookimpl
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        name, labels = _node_name_and_labels(node_info)
        if self._added_selector is not None and not self._added_selector.matches(name, labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        if not self._pre_filter_state(state, pod).required.matches_labels(name, labels):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return None

    @hookimpl
    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeBatch
    ) -> Sequence[Status | None]:
        table, rows = nodes.table, nodes.rows
        out = np.full(len(nodes), None, dtype=object)
        ok = np.ones(len(nodes), dtype=bool)
        if self._added_columns is not None:
            ok = self._added_columns.mask(table, rows)
            if not ok.all():
                out[~ok] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        if ok.any():
            rejected = ok & ~self._pre_filter_state(state, pod).columns.mask(table, rows)
            if rejected.any():
                out[rejected] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return out

    # -- PreScore / Score ----------------------------------------------------------------
    @hookimpl
    def pre_score(self, state: CycleState, pod: Pod) -> Status | None:
        terms = _preferred_terms(pod)
        if not terms and self._added_scorer is None:
            return Status.skip()
        try:
            state.write(PRE_SCORE_KEY, _PreScoreState(terms))
        except ValueError as err:
            return Status.from_error(err)
        return None

    def _pre_score_state(self, state: CycleState, pod: Pod) -> _PreScoreState:
        s = state.get(PRE_SCORE_KEY)
        # PreScore disabled in the profile: compile here (an invalid term raises: ERROR).
        return s if s is not None else _PreScoreState(_preferred_terms(pod))

    @hookimpl
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        name, labels = _node_name_and_labels(node_info)
        count = 0
        if self._added_scorer is not None:
            count += self._added_scorer.score(name, labels)
        return count + self._pre_score_state(state, pod).scorer.score(name, labels)

    @hookimpl
    def score_nodes(self, state: CycleState, pod: Pod, nodes: NodeBatch) -> np.ndarray:
        scores = self._pre_score_state(state, pod).columns.scores(nodes.table, nodes.rows)
        if self._added_score_columns is not None:
            scores += self._added_score_columns.scores(nodes.table, nodes.rows)
        return scores

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)

    # -- events --------------------------------------------------------------------------
    def is_schedulable_after_node_change(
        self, pod: Pod, old_obj: Node | None, new_obj: Node
    ) -> QueueingHint:
        """Queue when a node was added matching the pod (and ``addedAffinity``), or
        changed from not matching to matching."""
        if self._added_selector is not None and not self._added_selector.matches_node(new_obj):
            return QueueingHint.SKIP
        required = RequiredNodeAffinity(pod)
        if not required.matches(new_obj):
            return QueueingHint.SKIP
        if old_obj is None:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if required.matches(old_obj) else QueueingHint.QUEUE

    @hookimpl
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]
