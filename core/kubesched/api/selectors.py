"""Label selector matching with apimachinery's semantics, compiled once and cheap to evaluate."""

from __future__ import annotations

from collections.abc import Mapping

from .meta import LabelSelector

__all__ = [
    "MATCH_EVERYTHING",
    "MATCH_NOTHING",
    "LabelSelectorMatcher",
    "compile_label_selector",
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


def compile_label_selector(sel: LabelSelector | None) -> LabelSelectorMatcher:
    """Compile ``sel`` as ``metav1.LabelSelectorAsSelector`` does.

    ``None`` matches nothing; an empty selector matches everything; matchLabels and
    matchExpressions are ANDed. An unknown operator, In/NotIn without values or
    Exists/DoesNotExist with values raise ``ValueError``.
    """
    if sel is None:
        return MATCH_NOTHING
    if not sel.match_labels and not sel.match_expressions:
        return MATCH_EVERYTHING
    pairs = tuple((sel.match_labels or {}).items())
    exprs = []
    for i, req in enumerate(sel.match_expressions or ()):
        op = req.operator
        where = f"matchExpressions[{i}]"
        if op not in _OPERATORS:
            raise ValueError(f"{where}: {op!r} is not a valid label selector operator")
        values = frozenset(req.values or ())
        if op in (_IN, _NOT_IN) and not values:
            raise ValueError(
                f"{where}.values: for 'in', 'notin' operators, values set can't be empty"
            )
        if op in (_EXISTS, _DOES_NOT_EXIST) and values:
            raise ValueError(
                f"{where}.values: values set must be empty for exists and does not exist"
            )
        exprs.append((req.key, op, values))
    return LabelSelectorMatcher(pairs, tuple(exprs))


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelectorMatcher:
    """A selector requiring every ``key=value`` of ``labels`` (``labels.SelectorFromSet``).

    An empty or None set matches everything.
    """
    if not labels:
        return MATCH_EVERYTHING
    return LabelSelectorMatcher(tuple(labels.items()))
