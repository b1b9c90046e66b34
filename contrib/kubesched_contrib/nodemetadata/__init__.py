"""NodeMetadata: rank nodes by a number or timestamp in a node label or annotation (Score).

Follows kubernetes-sigs/scheduler-plugins ``pkg/nodemetadata``. The raw score of a node
is the value of its label or annotation ``metadataKey``: a ``Number`` (truncated to an
integer; negated for ``Lowest``) or a ``Timestamp`` read with ``timestampFormat`` (a Go
layout, RFC 3339 by default) as its age in whole seconds (negated for ``Newest``). A
node without the key takes ``defaultValue`` if set. NormalizeScore maps the valid raw
scores linearly onto 1..100 (all equal: 1) and gives 0 to the nodes whose value is
missing or unreadable, so that they rank after every node with a value.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from kubesched import (
    INT64_MIN,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ArgsError,
    NodeBatch,
    NodeInfo,
    NodeScores,
    PluginArgs,
    hookimpl,
    invalid,
    raise_args_errors,
)

from .golayout import RFC3339, LayoutError, compile_layout, parse_time

__all__ = ["INVALID_SCORE", "NAME", "NodeMetadata", "NodeMetadataArgs"]

NAME = "NodeMetadata"

INVALID_SCORE = INT64_MIN
"""The raw score of a node whose value is missing or unreadable."""

LABEL, ANNOTATION = "Label", "Annotation"
NUMBER, TIMESTAMP = "Number", "Timestamp"
HIGHEST, LOWEST, NEWEST, OLDEST = "Highest", "Lowest", "Newest", "Oldest"


class NodeMetadataArgs(PluginArgs):
    """``NodeMetadataArgs`` (scheduler-plugins ``apis/config``): every field but
    ``timestampFormat`` and ``defaultValue`` is required."""

    metadata_key: str = Field(default="", description="The label or annotation to read.")
    metadata_source: str = Field(default="", description='"Label" or "Annotation".')
    metadata_type: str = Field(default="", description='"Number" or "Timestamp".')
    scoring_strategy: str = Field(
        default="",
        description='"Highest" or "Lowest" for numbers, "Newest" or "Oldest" for timestamps.',
    )
    timestamp_format: str = Field(
        default="",
        description="Go time layout of the timestamps (default RFC 3339).",
    )
    default_value: str = Field(
        default="", description="The value of a node without the key (empty: none)."
    )

    @model_validator(mode="after")
    def _validate(self) -> NodeMetadataArgs:
        # New(): a timestamp without a format is RFC 3339.
        if self.metadata_type == TIMESTAMP and not self.timestamp_format:
            object.__setattr__(self, "timestamp_format", RFC3339)
        # ValidateNodeMetadataArgs (upstream's messages).
        errors: list[ArgsError] = []
        if not self.metadata_key:
            errors.append(invalid(("metadataKey",), "", "metadataKey cannot be empty"))
        if self.metadata_source not in (LABEL, ANNOTATION):
            errors.append(
                invalid(
                    ("metadataSource",),
                    self.metadata_source,
                    'metadataSource must be either "Label" or "Annotation"',
                )
            )
        if self.metadata_type not in (NUMBER, TIMESTAMP):
            errors.append(
                invalid(
                    ("metadataType",),
                    self.metadata_type,
                    'metadataType must be either "Number" or "Timestamp"',
                )
            )
        strategy = self.scoring_strategy
        if strategy not in (HIGHEST, LOWEST, NEWEST, OLDEST):
            errors.append(
                invalid(
                    ("scoringStrategy",),
                    strategy,
                    'scoringStrategy must be one of "Highest", "Lowest", "Newest", or "Oldest"',
                )
            )
        elif self.metadata_type == NUMBER and strategy in (NEWEST, OLDEST):
            errors.append(
                invalid(
                    ("scoringStrategy",),
                    strategy,
                    'scoringStrategy "Newest" and "Oldest" are only valid for metadataType '
                    '"Timestamp"',
                )
            )
        elif self.metadata_type == TIMESTAMP and strategy in (HIGHEST, LOWEST):
            errors.append(
                invalid(
                    ("scoringStrategy",),
                    strategy,
                    'scoringStrategy "Highest" and "Lowest" are only valid for metadataType '
                    '"Number"',
                )
            )
        errors.extend(self._value_errors())
        raise_args_errors("NodeMetadataArgs", errors)
        return self

    def _value_errors(self) -> list[ArgsError]:
        if self.metadata_type == TIMESTAMP:
            try:
                compile_layout(self.timestamp_format)
            except LayoutError as err:
                return [invalid(("timestampFormat",), self.timestamp_format, str(err))]
        if not self.default_value or self.metadata_type not in (NUMBER, TIMESTAMP):
            return []
        try:
            _parse(self, self.default_value)
        except ValueError as err:
            return [invalid(("defaultValue",), self.default_value, str(err))]
        return []


def _parse(args: NodeMetadataArgs, value: str) -> float:
    """A number, or a timestamp as Unix seconds; ``ValueError`` when unreadable."""
    if args.metadata_type == NUMBER:
        # Go's ParseFloat takes no blanks or digit separators; a non-finite value has no
        # integer score.
        if value != value.strip() or "_" in value:
            raise ValueError(f"invalid number {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"invalid number {value!r}")
        return number
    return parse_time(args.timestamp_format, value).timestamp()


class NodeMetadata:
    """Ranks nodes by a numeric or timestamp label or annotation (Score, NormalizeScore)."""

    name = NAME
    sdk_version = "1.0"
    Args = NodeMetadataArgs

    def __init__(self, args: NodeMetadataArgs | None, handle: Any) -> None:
        # The args have required fields: the plugin cannot run on defaults.
        self.args = args or NodeMetadataArgs.model_validate({})

    def raw_score(self, node_info: NodeInfo, now: float | None = None) -> int:
        """The node's raw score, or ``INVALID_SCORE``."""
        args = self.args
        parsed = self._parsed(node_info)
        if math.isnan(parsed):
            return INVALID_SCORE
        if args.metadata_type == NUMBER:
            score = int(parsed)  # Go's int64(float64): truncation
            return -score if args.scoring_strategy == LOWEST else score
        age = int((time.time() if now is None else now) - parsed)
        return -age if args.scoring_strategy == NEWEST else age

    def _parsed(self, node_info: NodeInfo) -> float:
        """The node's value as a number or Unix seconds; NaN when missing or unreadable."""
        args = self.args
        node = node_info.node
        if node is None:
            return math.nan
        meta = node.metadata
        source = meta.labels if args.metadata_source == LABEL else meta.annotations
        value = (source or {}).get(args.metadata_key)
        if value is None:
            if not args.default_value:
                return math.nan
            value = args.default_value
        try:
            return _parse(args, value)
        except ValueError:
            return math.nan

    @hookimpl
    def score(self, node_info: NodeInfo) -> int:
        return self.raw_score(node_info)

    @hookimpl
    def score_nodes(self, nodes: NodeBatch) -> np.ndarray:
        # The parsed values are derived once per Node object change; only a timestamp's
        # age depends on the moment.
        table = nodes.table
        values = table.derived(
            (NAME, self.args),
            lambda t: np.array([self._parsed(ni) for ni in t.infos], dtype=np.float64),
        )[nodes.rows]
        valid = ~np.isnan(values)
        safe = np.where(valid, values, 0.0)
        if self.args.metadata_type == NUMBER:
            raw = np.trunc(safe).astype(np.int64)
            raw = -raw if self.args.scoring_strategy == LOWEST else raw
        else:
            age = np.trunc(time.time() - safe).astype(np.int64)
            raw = -age if self.args.scoring_strategy == NEWEST else age
        return np.where(valid, raw, INVALID_SCORE)

    @hookimpl
    def normalize_score(self, scores: NodeScores) -> None:
        values = scores.values
        valid = values != INVALID_SCORE
        if not valid.any():
            values[:] = MIN_NODE_SCORE
            return
        lowest, highest = int(values[valid].min()), int(values[valid].max())
        # MinNodeScore is kept for the nodes without a value.
        floor = MIN_NODE_SCORE + 1
        if highest == lowest:
            out = np.full(len(values), floor, dtype=np.int64)
        else:
            out = (values - lowest) * (MAX_NODE_SCORE - floor) // (highest - lowest) + floor
        values[:] = np.where(valid, out, MIN_NODE_SCORE)
