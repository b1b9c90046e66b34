"""NodeMetadata: raw scores, args validation and normalisation on the cases of
scheduler-plugins' ``node_metadata_test.go``; Go time layouts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubesched import NodeInfo, NodeScores, PluginArgsError
from kubesched.api import Node
from kubesched.testing import make_framework, make_node, node_batch
from kubesched_contrib.nodemetadata import INVALID_SCORE, NAME, NodeMetadata
from kubesched_contrib.nodemetadata.golayout import RFC3339, LayoutError, compile_layout, parse_time

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(hours: float) -> str:
    return (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, labels=None, annotations=None) -> NodeInfo:
    m = make_node(name).manifest()
    m["metadata"]["labels"] = {**m["metadata"].get("labels", {}), **(labels or {})}
    if annotations:
        m["metadata"]["annotations"] = annotations
    return NodeInfo(Node.model_validate(m))


def plugin(**args):
    return make_framework(NodeMetadata, args={NAME: args}).plugin(NAME)


NUM_LABEL = {"metadataSource": "Label", "metadataType": "Number"}
TS_ANNOTATION = {"metadataSource": "Annotation", "metadataType": "Timestamp"}

CALC_CASES = [
    (
        "numeric label - highest strategy",
        {**NUM_LABEL, "metadataKey": "priority", "scoringStrategy": "Highest"},
        node("node1", labels={"priority": "100"}),
        100,
    ),
    (
        "numeric label - lowest strategy",
        {**NUM_LABEL, "metadataKey": "cost", "scoringStrategy": "Lowest"},
        node("node1", labels={"cost": "50"}),
        -50,
    ),
    (
        "timestamp annotation - newest strategy",
        {**TS_ANNOTATION, "metadataKey": "last-update", "scoringStrategy": "Newest"},
        node("node1", annotations={"last-update": ago(1)}),
        -3600,
    ),
    (
        "missing metadata key",
        {**NUM_LABEL, "metadataKey": "nonexistent", "scoringStrategy": "Highest"},
        node("node1", labels={"other": "10"}),
        INVALID_SCORE,
    ),
    (
        "missing numeric metadata uses default value with highest strategy",
        {
            **NUM_LABEL,
            "metadataKey": "priority",
            "scoringStrategy": "Highest",
            "defaultValue": "100",
        },
        node("node1"),
        100,
    ),
    (
        "missing numeric metadata uses default value with lowest strategy",
        {**NUM_LABEL, "metadataKey": "cost", "scoringStrategy": "Lowest", "defaultValue": "100"},
        node("node1"),
        -100,
    ),
    (
        "missing timestamp metadata uses default value",
        {
            **TS_ANNOTATION,
            "metadataKey": "last-update",
            "scoringStrategy": "Newest",
            "defaultValue": ago(1),
        },
        node("node1"),
        -3600,
    ),
    (
        "invalid numeric value",
        {**NUM_LABEL, "metadataKey": "priority", "scoringStrategy": "Highest"},
        node("node1", labels={"priority": "not-a-number"}),
        INVALID_SCORE,
    ),
    (
        "invalid timestamp format",
        {**TS_ANNOTATION, "metadataKey": "timestamp", "scoringStrategy": "Newest"},
        node("node1", annotations={"timestamp": "not-a-timestamp"}),
        INVALID_SCORE,
    ),
    (
        "fractional number truncates",
        {**NUM_LABEL, "metadataKey": "cost", "scoringStrategy": "Highest"},
        node("node1", labels={"cost": "2.9"}),
        2,
    ),
    (
        "number with blanks is invalid",
        {**NUM_LABEL, "metadataKey": "cost", "scoringStrategy": "Highest"},
        node("node1", labels={"cost": " 2"}),
        INVALID_SCORE,
    ),
]


@pytest.mark.parametrize(
    ("args", "info", "expected"), [c[1:] for c in CALC_CASES], ids=[c[0] for c in CALC_CASES]
)
def test_calculate_score(args, info, expected):
    assert plugin(**args).raw_score(info, now=NOW.timestamp()) == expected


VALID = {**NUM_LABEL, "metadataKey": "priority", "scoringStrategy": "Highest"}
VALIDATE_CASES = [
    ("valid numeric args", VALID, None),
    (
        "valid timestamp args",
        {
            **TS_ANNOTATION,
            "metadataKey": "ts",
            "scoringStrategy": "Newest",
            "timestampFormat": RFC3339,
        },
        None,
    ),
    ("valid default value", {**VALID, "defaultValue": "100"}, None),
    ("invalid numeric default value", {**VALID, "defaultValue": "not-a-number"}, "defaultValue"),
    (
        "invalid timestamp default value",
        {**TS_ANNOTATION, "metadataKey": "ts", "scoringStrategy": "Newest", "defaultValue": "x"},
        "defaultValue",
    ),
    (
        "invalid timestamp format",
        {
            **TS_ANNOTATION,
            "metadataKey": "ts",
            "scoringStrategy": "Newest",
            "timestampFormat": "YYYY-MM-DD",
        },
        "timestampFormat",
    ),
    (
        "missing metadata key",
        {**NUM_LABEL, "scoringStrategy": "Highest"},
        'metadataKey: Invalid value: "": metadataKey cannot be empty',
    ),
    (
        "invalid metadata source",
        {**VALID, "metadataSource": "Invalid"},
        'metadataSource must be either "Label" or "Annotation"',
    ),
    (
        "invalid metadata type",
        {**VALID, "metadataType": "Invalid"},
        'metadataType must be either "Number" or "Timestamp"',
    ),
    (
        "timestamp without format uses default validation path",
        {**TS_ANNOTATION, "metadataKey": "ts", "scoringStrategy": "Newest"},
        None,
    ),
    (
        "numeric with timestamp strategy",
        {**VALID, "scoringStrategy": "Newest"},
        'scoringStrategy "Newest" and "Oldest" are only valid for metadataType "Timestamp"',
    ),
    (
        "timestamp with numeric strategy",
        {**TS_ANNOTATION, "metadataKey": "ts", "scoringStrategy": "Lowest"},
        'scoringStrategy "Highest" and "Lowest" are only valid for metadataType "Number"',
    ),
    (
        "unknown strategy",
        {**VALID, "scoringStrategy": "Biggest"},
        'scoringStrategy must be one of "Highest", "Lowest", "Newest", or "Oldest"',
    ),
]


@pytest.mark.parametrize(
    ("args", "error"), [c[1:] for c in VALIDATE_CASES], ids=[c[0] for c in VALIDATE_CASES]
)
def test_validate_args(args, error):
    if error is None:
        plugin(**args)
        return
    with pytest.raises(PluginArgsError) as err:
        plugin(**args)
    assert error in str(err.value)


def test_timestamp_format_defaults_to_rfc3339():
    args = NodeMetadata.Args.model_validate(
        {**TS_ANNOTATION, "metadataKey": "ts", "scoringStrategy": "Oldest"}
    )
    assert args.timestamp_format == RFC3339


def ranked(args, infos):
    pl = plugin(**args)
    raw = [pl.raw_score(i, now=NOW.timestamp()) for i in infos]
    scores = NodeScores([i.name for i in infos], raw)
    pl.normalize_score(scores=scores)
    return scores


NORMALIZE_CASES = [
    (
        "numeric labels - highest strategy with three nodes",
        {**NUM_LABEL, "metadataKey": "priority", "scoringStrategy": "Highest"},
        [
            ("node-low", {"priority": "10"}),
            ("node-high", {"priority": "100"}),
            ("node-medium", {"priority": "50"}),
        ],
        ["node-high", "node-medium", "node-low"],
    ),
    (
        "numeric labels - lowest strategy with three nodes",
        {**NUM_LABEL, "metadataKey": "cost", "scoringStrategy": "Lowest"},
        [
            ("node-expensive", {"cost": "100"}),
            ("node-cheap", {"cost": "10"}),
            ("node-medium", {"cost": "50"}),
        ],
        ["node-cheap", "node-medium", "node-expensive"],
    ),
    (
        "highest strategy with one valid node and missing metadata nodes",
        {**NUM_LABEL, "metadataKey": "tier", "scoringStrategy": "Highest"},
        [
            ("node-no-metadata-1", {}),
            ("node-with-metadata", {"tier": "100"}),
            ("node-no-metadata-2", {}),
        ],
        ["node-with-metadata", "node-no-metadata-1", "node-no-metadata-2"],
    ),
    (
        "numeric default value ranks missing metadata among labeled nodes",
        {
            **NUM_LABEL,
            "metadataKey": "priority",
            "scoringStrategy": "Highest",
            "defaultValue": "100",
        },
        [
            ("node-low", {"priority": "50"}),
            ("node-missing", {}),
            ("node-high", {"priority": "150"}),
        ],
        ["node-high", "node-missing", "node-low"],
    ),
]


@pytest.mark.parametrize(
    ("args", "nodes", "order"),
    [c[1:] for c in NORMALIZE_CASES],
    ids=[c[0] for c in NORMALIZE_CASES],
)
def test_normalize_order(args, nodes, order):
    scores = ranked(args, [node(n, labels=labels) for n, labels in nodes])
    by_name = scores.as_dict()
    assert sorted(by_name, key=lambda n: (-by_name[n], order.index(n))) == order
    assert all(0 <= v <= 100 for v in by_name.values())


TS_CASES = [
    (
        "timestamp annotations - newest strategy",
        "Newest",
        ["node-newest", "node-medium", "node-old"],
    ),
    (
        "timestamp annotations - oldest strategy",
        "Oldest",
        ["node-old", "node-medium", "node-newest"],
    ),
]


@pytest.mark.parametrize(
    ("strategy", "order"), [c[1:] for c in TS_CASES], ids=[c[0] for c in TS_CASES]
)
def test_normalize_timestamps(strategy, order):
    infos = [
        node("node-old", annotations={"t": ago(72)}),
        node("node-newest", annotations={"t": ago(1)}),
        node("node-medium", annotations={"t": ago(24)}),
    ]
    by_name = ranked(
        {**TS_ANNOTATION, "metadataKey": "t", "scoringStrategy": strategy}, infos
    ).as_dict()
    assert sorted(by_name, key=lambda n: -by_name[n]) == order
    assert by_name[order[0]] == 100 and by_name[order[-1]] == 1


def test_normalize_edges():
    args = {**NUM_LABEL, "metadataKey": "p", "scoringStrategy": "Highest"}
    # All missing: all MinNodeScore. All equal: just above it. Missing: 0.
    assert ranked(args, [node("a"), node("b")]).values.tolist() == [0, 0]
    equal = [node("a", labels={"p": "5"}), node("b", labels={"p": "5"}), node("c")]
    assert ranked(args, equal).values.tolist() == [1, 1, 0]


LAYOUT_CASES = [
    ("rfc3339-utc", RFC3339, "2025-12-04T10:30:00Z", datetime(2025, 12, 4, 10, 30, tzinfo=UTC)),
    (
        "rfc3339-offset",
        RFC3339,
        "2025-12-04T10:30:00+02:00",
        datetime(2025, 12, 4, 10, 30, tzinfo=timezone(timedelta(hours=2))),
    ),
    ("date-only", "2006-01-02", "2025-11-01", datetime(2025, 11, 1, tzinfo=UTC)),
    (
        "custom",
        "2006-01-02 15:04:05",
        "2025-12-04 10:30:00",
        datetime(2025, 12, 4, 10, 30, tzinfo=UTC),
    ),
    (
        "month-name-12h",
        "Jan 2, 2006 3:04PM",
        "Dec 4, 2025 1:30PM",
        datetime(2025, 12, 4, 13, 30, tzinfo=UTC),
    ),
    (
        "fraction",
        "2006-01-02T15:04:05.000Z07:00",
        "2025-12-04T10:30:00.250Z",
        datetime(2025, 12, 4, 10, 30, 0, 250000, tzinfo=UTC),
    ),
]


@pytest.mark.parametrize(
    ("layout", "value", "expected"), [c[1:] for c in LAYOUT_CASES], ids=[c[0] for c in LAYOUT_CASES]
)
def test_go_layouts(layout, value, expected):
    assert parse_time(layout, value) == expected


def test_go_layout_errors():
    with pytest.raises(LayoutError):
        compile_layout("YYYY-MM-DD")
    with pytest.raises(ValueError):
        parse_time("2006-01-02", "2025-13-01")
    with pytest.raises(ValueError):
        parse_time(RFC3339, "2025-12-04")


@pytest.mark.parametrize("strategy", ["Highest", "Lowest"])
def test_batch_scores_equal_single_scores(strategy):
    pl = plugin(
        **{**NUM_LABEL, "metadataKey": "p", "scoringStrategy": strategy, "defaultValue": "7"}
    )
    infos = [
        node("a", labels={"p": "10"}),
        node("b", labels={"p": "-3.7"}),
        node("c"),
        node("d", labels={"p": "x"}),
    ]
    singles = [pl.score(node_info=i) for i in infos]
    assert list(pl.score_nodes(nodes=node_batch(infos))) == singles
    assert singles[3] == INVALID_SCORE


def test_batch_timestamps_are_ages():
    pl = plugin(**{**TS_ANNOTATION, "metadataKey": "t", "scoringStrategy": "Oldest"})
    infos = [node("a", annotations={"t": "2020-01-01T00:00:00Z"}), node("b")]
    ages = pl.score_nodes(nodes=node_batch(infos))
    assert ages[0] == pytest.approx(pl.score(node_info=infos[0]), abs=2)
    assert ages[1] == INVALID_SCORE
