"""Node selector and node affinity matching (component-helpers' ``nodeaffinity``), precompiled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .core import (
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from .selectors import (
    LabelSelectorMatcher,
    aggregate_message,
    go_string_slice,
    parse_int64,
    requirement_errors,
    selector_from_set,
)
from .validation.field import FieldError, not_supported

__all__ = [
    "NodeSelectorTermError",
    "NodeSelectorTermsMatcher",
    "PreferredSchedulingTermsScorer",
    "RequiredNodeAffinity",
]

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST, _GT, _LT = (
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Lt",
)
_LABEL_OPS = {op: op for op in (_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST, _GT, _LT)}
_FIELD_OPS = {op: op for op in (_IN, _NOT_IN)}
_NODE_NAME_FIELD = "metadata.name"

# A compiled term: (label requirements, field requirements).
# Label requirement: (key, op, frozenset of values | int for Gt/Lt).
_LabelReq = tuple[str, str, "frozenset[str] | int"]
_FieldReq = tuple[str, str, str]
_Term = tuple[tuple[_LabelReq, ...], tuple[_FieldReq, ...]]


_VALID_SELECTOR_OPERATORS = (_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST, _GT, _LT)
_VALID_FIELD_OPERATORS = (_IN, _NOT_IN)


def _label_req_errors(req: NodeSelectorRequirement, path: str) -> list[str]:
    # component-helpers' nodeSelectorRequirementsAsSelector: labels.NewRequirement's
    # checks (key, values, operator arity, Gt/Lt integers) at the requirement's path.
    if req.operator not in _LABEL_OPS:
        return [str(not_supported(f"{path}.operator", req.operator, _VALID_SELECTOR_OPERATORS))]
    # Values absent from the manifest are Go's nil slice.
    return [str(e) for e in requirement_errors(req.key, req.operator, req.values or None, path)]


def _compile_label_req(req: NodeSelectorRequirement) -> _LabelReq:
    op = _LABEL_OPS[req.operator]
    values = req.values or []
    if op in (_GT, _LT):
        return (req.key, op, int(values[0]))
    return (req.key, op, frozenset(values))


def _field_req_errors(req: NodeSelectorRequirement, path: str) -> list[str]:
    # nodeSelectorRequirementsAsFieldSelector.
    if req.operator not in _FIELD_OPS:
        return [str(not_supported(f"{path}.operator", req.operator, _VALID_FIELD_OPERATORS))]
    if len(req.values or ()) != 1:
        return [
            str(
                FieldError(
                    "FieldValueInvalid",
                    f"{path}.values",
                    go_string_slice(req.values or None),
                    "must have one element",
                )
            )
        ]
    return []


class NodeSelectorTermError(ValueError):
    """A node selector term that does not parse; ``errors`` are apimachinery's messages,
    one per problem (``str()`` is their aggregate)."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__(aggregate_message(errors))
        self.errors = tuple(errors)


def _is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def _compile_term(term: NodeSelectorTerm, path: str) -> _Term:
    """The compiled term; ``NodeSelectorTermError`` with every problem when it does not
    parse (upstream's ``newNodeSelectorTerm`` collects them all)."""
    errors = [
        e
        for i, r in enumerate(term.match_expressions)
        for e in _label_req_errors(r, f"{path}.matchExpressions[{i}]")
    ]
    errors += [
        e
        for i, r in enumerate(term.match_fields)
        for e in _field_req_errors(r, f"{path}.matchFields[{i}]")
    ]
    if errors:
        raise NodeSelectorTermError(errors)
    labels = tuple(_compile_label_req(r) for r in term.match_expressions)
    fields = tuple((r.key, _FIELD_OPS[r.operator], r.values[0]) for r in term.match_fields)
    return (labels, fields)


def _term_matches(term: _Term, node_name: str, labels: Mapping[str, str]) -> bool:
    label_reqs, field_reqs = term
    for key, op, arg in label_reqs:
        v = labels.get(key)
        if op is _IN:
            if v is None or v not in arg:  # type: ignore[operator]
                return False
        elif op is _NOT_IN:
            if v is not None and v in arg:  # type: ignore[operator]
                return False
        elif op is _EXISTS:
            if v is None:
                return False
        elif op is _DOES_NOT_EXIST:
            if v is not None:
                return False
        else:
            # Gt / Lt: a missing or non-integer label never matches.
            if v is None:
                return False
            n = parse_int64(v)
            if n is None:
                return False
            if op is _GT:
                if not n > arg:  # type: ignore[operator]
                    return False
            elif not n < arg:  # type: ignore[operator]
                return False
    for key, op, value in field_reqs:
        # Only metadata.name is a node field; any other key reads as "" (fields.Set.Get).
        fv = node_name if key == _NODE_NAME_FIELD else ""
        if (fv == value) is (op is _NOT_IN):
            return False
    return True


class NodeSelectorTermsMatcher:
    """Compiled ``nodeSelectorTerms``: terms ORed, each term's expressions and fields ANDed.

    A term with neither expressions nor fields matches nothing, and so does an empty
    list of terms. As upstream's ``LazyErrorNodeSelector``, an invalid term (bad
    operator, wrong number of values, non-integer Gt/Lt value, a key or value that is
    no valid label key or value) matches no node and its errors are kept in ``errors``;
    with ``strict=True`` (``NewNodeSelector``) it raises ``NodeSelectorTermError``.
    """

    __slots__ = ("_terms", "errors")

    def __init__(
        self,
        terms: Sequence[NodeSelectorTerm] | None,
        *,
        strict: bool = False,
        path: str = "nodeSelectorTerms",
    ) -> None:
        """Compile ``terms``; ``path`` prefixes the field paths in error messages."""
        compiled = []
        errors = []
        for i, term in enumerate(terms or ()):
            if _is_empty_term(term):
                continue
            try:
                compiled.append(_compile_term(term, f"{path}[{i}]"))
            except NodeSelectorTermError as e:
                if strict:
                    raise
                errors.extend(e.errors)
        self._terms: tuple[_Term, ...] = tuple(compiled)
        self.errors: tuple[str, ...] = tuple(errors)

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether a node with this name and these labels satisfies any term."""
        # A plain loop: any() over a generator costs noticeably more on this per-node path.
        for term in self._terms:  # noqa: SIM110
            if _term_matches(term, node_name, labels):
                return True
        return False

    def matches_node(self, node: Node) -> bool:
        """:meth:`matches` for a Node object."""
        return self.matches(node.metadata.name or "", node.metadata.labels)


class RequiredNodeAffinity:
    """What a node must satisfy for a pod: ``nodeSelector`` AND required node affinity.

    Mirrors ``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``, plus a profile's
    ``addedAffinity`` (NodeAffinity plugin args), which must hold as well.
    """

    __slots__ = ("_added", "_label_selector", "_node_selector")

    def __init__(self, pod: Pod, added_affinity: NodeAffinity | None = None) -> None:
        """Compile the pod's constraints (and ``added_affinity``'s required terms)."""
        spec = pod.spec
        self._label_selector: LabelSelectorMatcher | None = (
            selector_from_set(spec.node_selector) if spec.node_selector else None
        )
        required = None
        if spec.affinity is not None and spec.affinity.node_affinity is not None:
            required = (
                spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            )
        self._node_selector: NodeSelectorTermsMatcher | None = (
            NodeSelectorTermsMatcher(
                required.node_selector_terms,
                path="spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms",
            )
            if required is not None
            else None
        )
        added = (
            added_affinity.required_during_scheduling_ignored_during_execution
            if added_affinity is not None
            else None
        )
        # The added affinity was validated with the configuration: compile it strictly.
        self._added: NodeSelectorTermsMatcher | None = (
            NodeSelectorTermsMatcher(added.node_selector_terms, strict=True)
            if added is not None
            else None
        )

    @property
    def errors(self) -> tuple[str, ...]:
        """Errors of invalid terms in the pod's required node affinity (those terms never match)."""
        return self._node_selector.errors if self._node_selector is not None else ()

    def matches_labels(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether a node with this name and these labels satisfies every constraint."""
        if self._added is not None and not self._added.matches(node_name, labels):
            return False
        if self._label_selector is not None and not self._label_selector.matches(labels):
            return False
        return self._node_selector is None or self._node_selector.matches(node_name, labels)

    def matches(self, node: Node) -> bool:
        """Whether ``node`` satisfies nodeSelector, required affinity and added affinity."""
        return self.matches_labels(node.metadata.name or "", node.metadata.labels)


class PreferredSchedulingTermsScorer:
    """Sums the weights of the preferred terms a node matches (NodeAffinity's score).

    Terms with weight 0 and empty terms are skipped, as upstream; invalid terms raise
    ``NodeSelectorTermError`` with every problem of every term (upstream's
    ``NewPreferredSchedulingTerms`` returns their flattened aggregate).
    """

    __slots__ = ("_terms",)

    def __init__(
        self,
        terms: Sequence[PreferredSchedulingTerm] | None,
        *,
        path: str = "preferredSchedulingTerms",
    ) -> None:
        """Compile ``terms``; ``path`` prefixes the field paths in error messages."""
        compiled = []
        errors: list[str] = []
        for i, t in enumerate(terms or ()):
            if t.weight == 0 or _is_empty_term(t.preference):
                continue
            try:
                compiled.append((_compile_term(t.preference, f"{path}[{i}]"), t.weight))
            except NodeSelectorTermError as e:
                errors.extend(e.errors)
        if errors:
            raise NodeSelectorTermError(errors)
        self._terms: tuple[tuple[_Term, int], ...] = tuple(compiled)

    def __bool__(self) -> bool:
        return bool(self._terms)

    def score(self, node_name: str, labels: Mapping[str, str]) -> int:
        """The sum of the weights of the terms matching this node."""
        total = 0
        for term, weight in self._terms:
            if _term_matches(term, node_name, labels):
                total += weight
        return total

    def score_node(self, node: Node) -> int:
        """:meth:`score` for a Node object."""
        return self.score(node.metadata.name or "", node.metadata.labels)
