"""The numaplacement codec on k8stopologyawareschedwg/numaplacement's own test vectors
(``leb89_test.go``, ``numaplacement_test.go``; case ids name the upstream cases), and on
how an NRT object carries it."""

from __future__ import annotations

import pytest

from kubesched_contrib.noderesourcetopology import NodeResourceTopology
from kubesched_contrib.noderesourcetopology.numaplacement import (
    ATTRIBUTE_METADATA,
    ATTRIBUTE_VECTOR,
    ERR_CORRUPTED_NUMA_VECTOR,
    ERR_DUPLICATED_NUMA_VECTOR,
    ERR_INCONSISTENT_BUSIEST_NODE,
    ERR_INCONSISTENT_CONTAINER_SET,
    ERR_INCONSISTENT_NUMA_NODES,
    ERR_INCONSISTENT_NUMA_VECTORS,
    ERR_MALFORMED_METADATA,
    ERR_MALFORMED_METADATA_PAIR,
    ERR_MISSING_METADATA_KEY,
    ERR_MISSING_METADATA_VALUE,
    ERR_UNKNOWN_BUSIEST_NODE,
    ERR_UNKNOWN_METADATA,
    ERR_UNSUPPORTED_VECTOR_ENCODING,
    ERR_WRONG_NUMA_AFFINITY,
    UNKNOWN,
    NUMAPlacementError,
    Payload,
    container_hash,
    decode,
    decode_vector,
    encode,
    encode_vector,
    leb89_decode,
    leb89_encode,
    payload_from_nrt,
)


# -- leb89_test.go -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "chars"),
    [
        (0, 1),
        (1, 1),
        (32, 1),
        (63, 1),
        (64, 2),
        (800, 2),
        (1663, 2),
        (1664, 3),
        (2047, 3),
        (40063, 3),
        (40064, 4),
        (100000, 4),
        (1000063, 4),
    ],
    ids=[
        "zero",
        "one",
        "mid_terminal",
        "max_terminal",
        "min_two_char",
        "mid_two_char",
        "max_two_char",
        "min_three_char",
        "offset_2047",
        "max_three_char",
        "min_four_char",
        "large_four_char",
        "range_boundaries_4_chars",
    ],
)
def test_leb89_encode_decode(value, chars):
    encoded = leb89_encode(value)
    assert len(encoded) == chars
    assert leb89_decode(encoded) == (value, chars)


def test_leb89_round_trip_and_alphabet():
    # TestLeb89RoundTrip, TestLeb89OutputIsSafeASCII, TestLeb89TerminalContinuationSplit.
    for value in range(50000):
        encoded = leb89_encode(value)
        assert leb89_decode(encoded) == (value, len(encoded))
        assert not set(encoded) & set('"&<>\\ ')
        assert "!" <= encoded[-1] <= "e"  # a terminal digit ends every number
        assert all("f" <= c <= "~" for c in encoded[:-1])


def test_leb89_decode_multiple_values_mid_string_and_empty():
    values = [0, 7, 63, 64, 500, 1663, 1664, 2047, 40063, 40064]
    s = "".join(leb89_encode(v) for v in values)
    pos, got = 0, []
    while pos < len(s):
        v, pos = leb89_decode(s, pos)
        got.append(v)
    assert got == values
    first = leb89_encode(42)
    both = first + leb89_encode(99)
    assert leb89_decode(both, len(first)) == (99, len(both))
    assert leb89_decode("") == (UNKNOWN, 0)
    with pytest.raises(ValueError, match="non-negative"):
        leb89_encode(-1)


# -- TestPerNUMAVectorRoundTrip, TestDecodePerNUMAVectorKnownStrings ---------------------------
@pytest.mark.parametrize(
    ("offsets", "encoded"),
    [
        ([], ""),
        ([1], None),
        ([1, 3, 7, 42], "#$'H"),
        ([0, 4, 8, 10], "!''$"),
        ([100, 108, 116], "fI++"),
        ([2000, 2008], "gk3+"),
        ([1, 1 << 10], None),
        (list(range(1 << 10)), None),
    ],
    ids=[
        "empty",
        "one element only",
        "small vector",
        "small vector at offset 0",
        "2-char first entry",
        "3-char first entry",
        "practical limit",
        "unrealistically dense",
    ],
)
def test_per_numa_vector(offsets, encoded):
    vector = encode_vector(offsets)
    if encoded is not None:
        assert vector == encoded
    assert decode_vector(vector) == offsets


def test_truncated_vector_decodes_to_an_invalid_offset():
    assert decode_vector("#f") == [1, UNKNOWN]


# -- TestContainerIDHash --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ident", "expected"),
    [(("", "", ""), 11145182160106660097), (("ns", "pod", "cnt"), 9468815510407277218)],
    ids=["empty", "filled"],
)
def test_container_hash(ident, expected):
    assert container_hash(*ident) == expected


# -- TestPackMetadata, TestPackUnpackMetadataRoundtrip, TestUnpackMetadataIntoErrors -------------
@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (Payload(0, 0, 0), "npv0v001::ve=leb89::cc=0::nn=0::bn=0"),
        (Payload(4, 2, 1), "npv0v001::ve=leb89::cc=4::nn=2::bn=1"),
        (Payload(-1, -1, -1), "npv0v001::ve=leb89::cc=-1::nn=-1::bn=-1"),
        (Payload(4, 2, 1, "plain"), "npv0v001::ve=plain::cc=4::nn=2::bn=1"),
    ],
    ids=["zeros with leb89", "typical values", "negative values", "plain encoding"],
)
def test_pack_metadata_round_trip(payload, expected):
    assert payload.pack_metadata() == expected
    assert Payload.unpack_metadata(expected) == payload


def test_unpack_metadata_fields_it_omits_are_unknown():
    # TestUnpackMetadataPartialUpdates.
    assert Payload.unpack_metadata("npv0v001::nn=8::bn=3") == Payload(UNKNOWN, 8, 3, "")


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ("", ERR_MALFORMED_METADATA),
        ("XXXXv001::cc=1::nn=2::bn=0", ERR_MALFORMED_METADATA),
        ("npv0v999::cc=1::nn=2::bn=0", ERR_MALFORMED_METADATA),
        ("npv0v001cc=1::nn=2::bn=0", ERR_MALFORMED_METADATA),
        ("npv0v001::cc=1::nn=2::xx=0", ERR_UNKNOWN_METADATA),
        ("npv0v001::cc=abc::nn=2::bn=0", "error while parsing 'cc=abc'"),
        ("npv0v001::cc1::nn=2::bn=0", ERR_MALFORMED_METADATA_PAIR),
        ("npv0v001::cc=::nn=2::bn=0", ERR_MISSING_METADATA_VALUE),
        ("npv0v001::nn=2::bn=0::=5", ERR_MISSING_METADATA_KEY),
    ],
    ids=[
        "empty string",
        "wrong prefix",
        "wrong version",
        "missing separator after prefix",
        "unknown field name",
        "non-numeric value",
        "missing equals sign",
        "missing value after equals",
        "missing key before equals",
    ],
)
def test_unpack_metadata_errors(metadata, error):
    with pytest.raises(NUMAPlacementError, match=error):
        Payload.unpack_metadata(metadata)


# -- TestPayloadValidate (decoder side) -----------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (Payload(0, 1, 0, "other"), ERR_UNSUPPORTED_VECTOR_ENCODING),
        (Payload(0, 2, 0, ""), ERR_UNSUPPORTED_VECTOR_ENCODING),
        (Payload(0, 1, 0), None),
        (Payload(-1, 1, 0), ERR_INCONSISTENT_CONTAINER_SET),
        (Payload(1, 1, -1), ERR_UNKNOWN_BUSIEST_NODE),
        (Payload(1, 8, 8), ERR_INCONSISTENT_BUSIEST_NODE),
        (Payload(1, 0, 0), ERR_INCONSISTENT_BUSIEST_NODE),
        (Payload(0, 1, 0, vectors={0: "#$'H"}), ERR_INCONSISTENT_NUMA_VECTORS),
        (Payload(8, 1, 0, vectors={0: "!#", 1: "$%"}), ERR_INCONSISTENT_NUMA_VECTORS),
        (Payload(8, 2, 0, vectors={2: "!#"}), ERR_CORRUPTED_NUMA_VECTOR),
        (Payload(8, 2, 0, vectors={-1: "!#"}), ERR_CORRUPTED_NUMA_VECTOR),
        (Payload(8, 2, 1, vectors={1: "$%'()*"}), ERR_CORRUPTED_NUMA_VECTOR),
        (Payload(8, 2, 1, vectors={0: ""}), None),
        (Payload(4, 2, 0, vectors={1: "!#"}), None),
        (Payload(8, 4, 0, vectors={1: "!#", 2: "$%", 3: "'("}), None),
        (Payload(5, 1, 0), None),
        (Payload(4, 4, 3, vectors={0: "!#"}), None),
        (Payload(8, 3, 0, vectors={1: "!#", 2: "$%"}), None),
        (Payload(0, 2, 0), None),
        (Payload(2, 2, 0, vectors={0: "!"}), ERR_CORRUPTED_NUMA_VECTOR),
    ],
    ids=[
        "mismatching vector encoding",
        "empty vector encoding",
        "zero containers",
        "negative containers",
        "negative busiest node",
        "oob busiest node",
        "zero NUMA nodes",
        "more vectors than containers",
        "more vectors than NUMA nodes",
        "more vectors than NUMA nodes - highest ID",
        "vector with incorrect key",
        "vector matching busiest node",
        "vector empty string is valid per spec",
        "typical valid payload",
        "valid payload multiple vectors",
        "single NUMA all on busiest",
        "busiest node at max valid",
        "max valid vector count",
        "zero containers nil vectors",
        "vector on the busiest node",
    ],
)
def test_payload_validate(payload, error):
    if error is None:
        payload.validate()
    else:
        with pytest.raises(NUMAPlacementError, match=error):
            payload.validate()


# -- TestEncoderResult, TestEncoderEncode, TestNewEncoder -----------------------------------------
def _placed(*specs: str) -> list[tuple[tuple[str, str, str], int]]:
    """``"ns1/pod1=0"``: container ``cnt1`` of pod ns1/pod1 on NUMA node 0."""
    out = []
    for spec in specs:
        ident, nid = spec.split("=")
        namespace, pod = ident.split("/")
        out.append(((namespace, pod, "cnt1"), int(nid)))
    return out


@pytest.mark.parametrize(
    ("numa_nodes", "placement", "expected"),
    [
        (2, [], Payload(0, 2, 0)),
        (1, _placed("ns1/pod1=0", "ns1/pod2=0", "ns1/pod3=0"), Payload(3, 1, 0)),
        (2, _placed("ns1/pod1=0", "ns1/pod2=0", "ns1/pod3=0"), Payload(3, 2, 0)),
        (2, _placed("ns1/pod1=0", "ns1/pod2=0", "ns1/pod2=0"), Payload(2, 2, 0)),
        (
            2,
            _placed("ns1/pod1=0", "ns1/pod2=0", "ns1/pod3=0", "ns2/pod1=1"),
            Payload(4, 2, 0, vectors={1: "#"}),
        ),
        (
            2,
            _placed("ns1/pod1=0", "ns1/pod2=0", "ns2/pod1=1", "ns2/pod2=1"),
            Payload(4, 2, 0, vectors={1: "!%"}),
        ),
        (
            2,
            _placed("ns1/pod1=0", "ns2/pod1=1", "ns2/pod2=1", "ns2/pod3=1"),
            Payload(4, 2, 1, vectors={0: "$"}),
        ),
        (
            4,
            _placed("ns1/pod1=0", "ns1/pod2=0", "ns1/pod3=0", "ns2/pod4=1", "ns3/pod5=2"),
            Payload(5, 4, 0, vectors={1: "!", 2: "'"}),
        ),
    ],
    ids=[
        "empty",
        "single NUMA node, degenerate case",
        "all containers on one NUMA",
        "all containers on one NUMA, duplicate container",
        "uneven split",
        "even split tie-break lowest NUMA wins",
        "busiest is not NUMA 0",
        "3-way split across 4 NUMA Nodes",
    ],
)
def test_encoder_result(numa_nodes, placement, expected):
    payload = encode(numa_nodes, placement)
    assert payload == expected
    # The decoder, given the same containers, gives every one its NUMA node back.
    info = decode(payload, [ident for ident, _ in placement])
    for ident, nid in dict(placement).items():
        assert info.numa_affinity(*ident) == nid


@pytest.mark.parametrize(
    ("numa_nodes", "nid", "error"),
    [
        (0, 0, ERR_INCONSISTENT_NUMA_NODES),
        (-1, 0, ERR_INCONSISTENT_NUMA_NODES),
        (1, UNKNOWN, ERR_WRONG_NUMA_AFFINITY),
        (1, -3, ERR_WRONG_NUMA_AFFINITY),
        (4, 15, ERR_WRONG_NUMA_AFFINITY),
    ],
    ids=[
        "zero NUMA Nodes",
        "negative NUMA Nodes",
        "unknown affinity",
        "negative affinity",
        "OOB affinity",
    ],
)
def test_encoder_errors(numa_nodes, nid, error):
    with pytest.raises(NUMAPlacementError, match=error):
        encode(numa_nodes, [(("ns1", "pod1", "cnt1"), nid)])


# -- TestDecoderResult, TestInfoAffinity ----------------------------------------------------------
_FIVE = [
    ("ns1", "pod1", "cnt1"),
    ("ns1", "pod2", "cnt1"),
    ("ns1", "pod3", "cnt1"),
    ("ns2", "pod1", "cnt1"),
    ("ns2", "pod2", "cnt1"),
]


@pytest.mark.parametrize(
    ("payload", "containers", "error"),
    [
        (Payload(0, 1, 0), [("ns1", "pod1", "cnt1")], ERR_INCONSISTENT_CONTAINER_SET),
        (Payload(2, 2, 0, vectors={1: "!"}), [], ERR_INCONSISTENT_CONTAINER_SET),
        (Payload(1, 2, 0, vectors={1: "$"}), _FIVE[:1], ERR_CORRUPTED_NUMA_VECTOR),
        (Payload(5, 2, 0, vectors={1: "#!"}), _FIVE, ERR_DUPLICATED_NUMA_VECTOR),
        (Payload(5, 4, 0, vectors={1: "#", 2: "#", 3: "%"}), _FIVE, ERR_DUPLICATED_NUMA_VECTOR),
        (Payload(5, 2, 0, vectors={1: "#f"}), _FIVE, ERR_CORRUPTED_NUMA_VECTOR),
    ],
    ids=[
        "error path: inconsistent hashesSet and Containers - excess containers",
        "error path: inconsistent hashesSet and Containers - excess payload",
        "error path: forged data: tampered vector encoding - inconsistent indexing",
        "error path: forged data: tampered vector encoding - duplicate offset, same vector",
        "error path: forged data: tampered vector encoding - duplicate offset, different vector",
        "truncated vector",
    ],
)
def test_decoder_errors(payload, containers, error):
    with pytest.raises(NUMAPlacementError, match=error):
        decode(payload, containers)


def test_decoder_empty_and_unknown_containers():
    info = decode(Payload(0, 1, 0), [])
    assert info.containers == 0
    assert info.numa_affinity("ns", "pod", "cnt") is None
    info = decode(encode(8, [(("ns", "pod", "app"), 1)]), [("ns", "pod", "app")])
    assert info.numa_affinity("ns", "pod", "sidecar") is None
    assert info.numa_affinity("ns", "pod", "app") == 1


# -- how an NRT object carries it (scheduler-plugins' TestNRTStoreUpdateWithPods) -----------------
def _nrt(metadata: str | None, vectors: dict[str, str]) -> NodeResourceTopology:
    attributes = [{"name": ATTRIBUTE_METADATA, "value": metadata}] if metadata else []
    return NodeResourceTopology.model_validate(
        {
            "metadata": {"name": "node-0"},
            "attributes": attributes,
            "zones": [
                {
                    "name": zone,
                    "type": "Node",
                    "attributes": (
                        [{"name": ATTRIBUTE_VECTOR, "value": vectors[zone]}]
                        if zone in vectors
                        else []
                    ),
                }
                for zone in ("node-0", "node-1", "socket-0")
            ],
        }
    )


@pytest.mark.parametrize(
    ("nrt", "expected"),
    [
        (_nrt(None, {"node-0": "!"}), None),
        (
            _nrt("npv0v001::ve=leb89::cc=3::nn=2::bn=1", {"node-0": "!"}),
            Payload(3, 2, 1, vectors={0: "!"}),
        ),
        (
            _nrt("npv0v001::ve=leb89::cc=3::nn=2::bn=1", {"node-0": "npv0v001!"}),
            Payload(3, 2, 1, vectors={0: "!"}),
        ),
        (
            _nrt("npv0v001::ve=leb89::cc=3::nn=2::bn=1", {"node-0": "!", "node-1": ""}),
            Payload(3, 2, 1, vectors={0: "!"}),
        ),
        (_nrt("npv0v001::ve=leb89::cc=3::nn=2::bn=1", {"socket-0": "!"}), Payload(3, 2, 1)),
    ],
    ids=[
        "no metadata",
        "vector on node-0",
        "vector with the format's prefix",
        "empty vector",
        "zone that is no NUMA node",
    ],
)
def test_payload_from_nrt(nrt, expected):
    assert payload_from_nrt(nrt) == expected


def test_decode_from_nrt_as_the_scheduler_store():
    payload = payload_from_nrt(_nrt("npv0v001::ve=leb89::cc=3::nn=2::bn=1", {"node-0": "!"}))
    info = decode(
        payload,
        [
            ("ns-0", "pod-0", "container-0"),
            ("ns-0", "pod-1", "container-1"),
            ("ns-0", "pod-1", "container-2"),
        ],
    )
    assert info.containers == 3
    assert info.numa_affinity("ns-0", "pod-0", "container-0") == 1
    assert info.numa_affinity("ns-0", "pod-1", "container-1") == 0
    assert info.numa_affinity("ns-0", "pod-1", "container-2") == 1
    # cnt0 gone: the agent writes cc=2 and no vector on node-0.
    payload = payload_from_nrt(_nrt("npv0v001::ve=leb89::cc=2::nn=2::bn=1", {}))
    info = decode(payload, [("ns-0", "pod-1", "container-1"), ("ns-0", "pod-1", "container-2")])
    assert info.numa_affinity("ns-0", "pod-0", "container-0") is None
    assert info.numa_affinity("ns-0", "pod-1", "container-1") == 1
