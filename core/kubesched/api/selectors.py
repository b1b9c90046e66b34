"""Label selector matching with apimachinery's semantics, compiled once and cheap to evaluate.

Compiling validates as apimachinery's ``labels.NewRequirement`` does (keys are qualified
names, values label values, operators and value counts consistent) and fails with its
error text, so that a plugin can report it as upstream does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .meta import LabelSelector
from .validation.field import FieldError, go_quote, invalid, not_supported
from .validation.syntax import is_qualified_name, is_valid_label_value

__all__ = [
    "MATCH_EVERYTHING",
    "MATCH_NOTHING",
    "LabelSelectorError",
    "LabelSelectorMatcher",
    "aggregate_message",
    "compile_label_selector",
    "parse_int64",
    "requirement_errors",
    "selector_from_set",
]

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
_OPERATORS = (_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST)
_CANONICAL_OPS = {op: op for op in _OPERATORS}

_EVERYTHING, _NOTHING, _SELECT = 0, 1, 2


class LabelSelectorMatcher:
    """A compiled label selector (``labels.Selector``).

    Equal matchers compare and hash equal, so they can key caches. Build one with
    :func:`compile_label_selector` or :func:`selector_from_set`.
    """

    __slots__ = ("_exprs", "_hash", "_mode", "_pairs")

    def __init__(
        self,
        pairs: tuple[tuple[str, str], ...] = (),
        exprs: tuple[tuple[str, str, frozenset[str]], ...] = (),
        *,
        nothing: bool = False,
    ) -> None:
        """Build from ``(key, value)`` pairs and ``(key, operator, values)`` requirements."""
        self._pairs = tuple(sorted(pairs))
        canon = []
        for key, op, values in exprs:
            if op not in _CANONICAL_OPS:
                raise ValueError(f"{op!r} is not a valid label selector operator")
            # Canonical operator objects let matches() compare with "is".
            canon.append((key, _CANONICAL_OPS[op], frozenset(values)))
        self._exprs = tuple(sorted(canon, key=lambda e: (e[0], e[1], sorted(e[2]))))
        if nothing:
            self._mode = _NOTHING
        elif not self._pairs and not self._exprs:
            self._mode = _EVERYTHING
        else:
            self._mode = _SELECT
        self._hash = hash((self._mode, self._pairs, self._exprs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every requirement of the selector."""
        mode = self._mode
        if mode == _EVERYTHING:
            return True
        if mode == _NOTHING:
            return False
        for key, value in self._pairs:
            if labels.get(key) != value:
                return False
        for key, op, values in self._exprs:
            if op is _IN:
                v = labels.get(key)
                if v is None or v not in values:
                    return False
            elif op is _NOT_IN:
                v = labels.get(key)
                if v is not None and v in values:
                    return False
            elif op is _EXISTS:
                if key not in labels:
                    return False
            elif key in labels:  # DoesNotExist
                return False
        return True

    __call__ = matches

    @property
    def matches_everything(self) -> bool:
        """True for the empty selector (``labels.Everything()``); ``Empty()`` upstream."""
        return self._mode == _EVERYTHING

    @property
    def matches_nothing(self) -> bool:
        """True for the selector of a nil ``LabelSelector`` (``labels.Nothing()``)."""
        return self._mode == _NOTHING

    @property
    def requirements(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """All requirements as ``(key, operator, sorted values)``, matchLabels as ``In``."""
        reqs = [(k, _IN, (v,)) for k, v in self._pairs]
        reqs += [(k, op, tuple(sorted(vals))) for k, op, vals in self._exprs]
        return tuple(sorted(reqs))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelectorMatcher):
            return NotImplemented
        return (
            self._mode == other._mode
            and self._pairs == other._pairs
            and self._exprs == other._exprs
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        """Upstream's selector string, e.g. ``app=web,tier in (a,b),!legacy``."""
        if self._mode == _NOTHING:
            return "<nothing>"
        parts = []
        for key, op, values in self.requirements:
            if op == _IN and len(values) == 1:
                parts.append(f"{key}={values[0]}")
            elif op == _IN:
                parts.append(f"{key} in ({','.join(values)})")
            elif op == _NOT_IN:
                parts.append(f"{key} notin ({','.join(values)})")
            elif op == _EXISTS:
                parts.append(key)
            else:
                parts.append(f"!{key}")
        return ",".join(parts)

    def __repr__(self) -> str:
        return f"LabelSelectorMatcher({str(self)!r})"


MATCH_EVERYTHING = LabelSelectorMatcher()
"""Matches every label set (an empty selector ``{}``)."""

MATCH_NOTHING = LabelSelectorMatcher(nothing=True)
"""Matches no label set (a nil selector)."""


class LabelSelectorError(ValueError):
    """A label selector that apimachinery refuses to parse; ``str()`` is its error text,
    e.g. ``values[0][app]: Invalid value: "{{.bad-value.}}": a valid label must be ...``."""


EQUALS, GT, LT = "=", "Gt", "Lt"
"""``selection.Equals`` (matchLabels) and the node selector's ``Gt`` / ``Lt``."""
_REQUIREMENT_OPERATORS = ("!", "=", "==", "in", "!=", "notin", "exists", "gt", "lt")
# NewRequirement's validRequirementOperators, as selection.Operator strings.
_SELECTION_OPERATOR = {
    _IN: "in",
    _NOT_IN: "notin",
    _EXISTS: "exists",
    _DOES_NOT_EXIST: "!",
    EQUALS: "=",
    GT: "gt",
    LT: "lt",
}
_INT64_RE = re.compile(r"[+-]?[0-9]+")


def parse_int64(value: str) -> int | None:
    """Go's ``strconv.ParseInt(value, 10, 64)``: an optional sign and decimal digits
    within int64, else None (Gt/Lt requirements and the labels they compare)."""
    if _INT64_RE.fullmatch(value) is None:
        return None
    n = int(value)
    return n if -(2**63) <= n < 2**63 else None


def go_string_slice(values: Sequence[str] | None) -> str:
    """Go's ``%#v`` of a ``[]string``, as a field error shows it: ``[]string{"a", "b"}``,
    ``[]string(nil)`` when there is none."""
    if not values:
        return "[]string(nil)" if values is None else "[]string{}"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


class _GoSlice:
    """A ``[]string`` value of a field error, rendered as Go's ``%#v``."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[str] | None) -> None:
        self.values = values

    def __str__(self) -> str:
        return go_string_slice(self.values)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def requirement_errors(
    key: str, operator: str, values: Sequence[str] | None, path: str = ""
) -> list[FieldError]:
    """Every error apimachinery's ``labels.NewRequirement(key, op, values)`` reports,
    at field paths under ``path`` (``key``, ``values``, ``values[0][key]``).

    ``operator`` is a selector operator (``In``, ``NotIn``, ``Exists``,
    ``DoesNotExist``, ``Gt``, ``Lt``) or ``=`` for a matchLabels pair. ``values`` None
    is Go's nil slice.
    """
    errs: list[FieldError] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(invalid(_child(path, "key"), key, "; ".join(key_errs)))
    value_path = _child(path, "values")
    vals = list(values or ())
    if operator in (_IN, _NOT_IN):
        if not vals:
            errs.append(
                invalid(
                    value_path,
                    _GoSlice(values),
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif operator == EQUALS:
        if len(vals) != 1:
            errs.append(
                invalid(
                    value_path,
                    _GoSlice(values),
                    "exact-match compatibility requires one single value",
                )
            )
    elif operator in (_EXISTS, _DOES_NOT_EXIST):
        if vals:
            errs.append(
                invalid(
                    value_path,
                    _GoSlice(values),
                    "values set must be empty for exists and does not exist",
                )
            )
    elif operator in (GT, LT):
        if len(vals) != 1:
            errs.append(
                invalid(
                    value_path,
                    _GoSlice(values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, v in enumerate(vals):
            if parse_int64(v) is None:
                errs.append(
                    invalid(
                        f"{value_path}[{i}]",
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        errs.append(not_supported(_child(path, "operator"), operator, _REQUIREMENT_OPERATORS))
    for i, v in enumerate(vals):
        value_errs = is_valid_label_value(v)
        if value_errs:
            errs.append(invalid(f"{value_path}[{i}][{key}]", v, "; ".join(value_errs)))
    return errs


def aggregate_message(messages: Sequence[object]) -> str:
    """The text of apimachinery's ``utilerrors.NewAggregate``: one message alone, several
    as ``[a, b]``; repeated messages once."""
    unique = list(dict.fromkeys(str(m) for m in messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def compile_label_selector(sel: LabelSelector | None) -> LabelSelectorMatcher:
    """Compile ``sel`` as ``metav1.LabelSelectorAsSelector`` does.

    ``None`` matches nothing; an empty selector matches everything; matchLabels and
    matchExpressions are ANDed. Each requirement is validated as ``labels.NewRequirement``
    does (matchLabels first, by key, then the expressions in order); the first invalid
    one raises :class:`LabelSelectorError` with upstream's text.
    """
    if sel is None:
        return MATCH_NOTHING
    if not sel.match_labels and not sel.match_expressions:
        return MATCH_EVERYTHING
    labels = sel.match_labels or {}
    for key in sorted(labels):
        errs = requirement_errors(key, EQUALS, [labels[key]])
        if errs:
            raise LabelSelectorError(aggregate_message(errs))
    exprs = []
    for req in sel.match_expressions or ():
        op = req.operator
        if op not in _OPERATORS:
            raise LabelSelectorError(f"{go_quote(op)} is not a valid label selector operator")
        # LabelSelectorAsSelector copies the values into a nil slice: none is nil.
        errs = requirement_errors(req.key, op, req.values or None)
        if errs:
            raise LabelSelectorError(aggregate_message(errs))
        exprs.append((req.key, op, frozenset(req.values or ())))
    return LabelSelectorMatcher(tuple(labels.items()), tuple(exprs))


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelectorMatcher:
    """A selector requiring every ``key=value`` of ``labels`` (``labels.SelectorFromSet``).

    An empty or None set matches everything.
    """
    if not labels:
        return MATCH_EVERYTHING
    return LabelSelectorMatcher(tuple(labels.items()))
