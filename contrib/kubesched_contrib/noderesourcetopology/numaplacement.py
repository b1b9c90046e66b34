"""Which NUMA node each container runs on, as the node's agent encodes it in its NRT object.

The k8stopologyawareschedwg ``numaplacement`` format, written by the resource-topology-exporter
(and compatible agents) so that a scheduler can tell which NUMA zone a running container's
exclusive resources sit on (NUMA-aware preemption gives a victim's resources back to that
zone):

* the object's attribute ``topology.node.k8s.io/numaplacement-metadata`` holds
  ``npv0v001::ve=leb89::cc=<containers>::nn=<NUMA nodes>::bn=<busiest NUMA node>``;
* each zone ``node-<id>`` other than the busiest may hold the attribute
  ``topology.node.k8s.io/numaplacement-vector``: the containers placed on that NUMA node,
  as LEB89-encoded, delta-encoded offsets into the sorted list of container hashes (the
  xxhash64 of ``namespace\\0pod\\0container``); the containers no vector names are on the
  busiest node.

Decoding needs the very set of containers the agent encoded (their count must be ``cc``):
the offsets index their sorted hashes. :func:`encode` is the agent's side, used to write
test data and examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import xxhash

from .api import NodeResourceTopology
from .numa import numa_id

__all__ = [
    "ATTRIBUTE_METADATA",
    "ATTRIBUTE_VECTOR",
    "PREFIX",
    "UNKNOWN",
    "VECTOR_ENCODING_LEB89",
    "NUMAPlacementError",
    "Payload",
    "PlacementInfo",
    "container_hash",
    "decode",
    "decode_vector",
    "encode",
    "encode_vector",
    "leb89_decode",
    "leb89_encode",
    "payload_from_nrt",
]

ATTRIBUTE_METADATA = "topology.node.k8s.io/numaplacement-metadata"
"""The NRT top-level attribute with the payload's metadata."""
ATTRIBUTE_VECTOR = "topology.node.k8s.io/numaplacement-vector"
"""The NRT per-zone attribute with the containers placed on that NUMA node."""
PREFIX = "npv0v001"
"""The format's prefix and version, in front of the metadata (and, from some agents, of
each vector)."""
UNKNOWN = -1
"""A metadata field the string does not set."""
VECTOR_ENCODING_LEB89 = "leb89"

_SEPARATOR = "::"

# Upstream's error values (their texts are the library's).
ERR_MALFORMED_METADATA = "malformed metadata"
ERR_UNKNOWN_METADATA = "unknown metadata field"
ERR_MALFORMED_METADATA_PAIR = "malformed metadata pair"
ERR_MISSING_METADATA_KEY = "missing metadata key"
ERR_MISSING_METADATA_VALUE = "missing metadata value"
ERR_INCONSISTENT_CONTAINER_SET = "inconsistent container set"
ERR_INCONSISTENT_BUSIEST_NODE = "inconsistent busiest node data"
ERR_UNKNOWN_BUSIEST_NODE = "unknown busiest node"
ERR_INCONSISTENT_NUMA_NODES = "inconsistent NUMA node count"
ERR_INCONSISTENT_NUMA_VECTORS = "inconsistent NUMA vector data"
ERR_CORRUPTED_NUMA_VECTOR = "corrupted NUMA vector"
ERR_DUPLICATED_NUMA_VECTOR = "duplicated data in multiple NUMA vectors"
ERR_WRONG_NUMA_AFFINITY = "wrong NUMA affinity"
ERR_UNSUPPORTED_VECTOR_ENCODING = "unsupported vector encoding"


class NUMAPlacementError(ValueError):
    """Data that cannot be decoded; the message is one of upstream's error texts."""


# -- LEB89: unsigned integers as JSON-safe printable ASCII ---------------------------------------
# The 89 characters of 0x21..0x7E that JSON never escapes (all but " & < > \): the first 64
# end a number (terminal digits), the last 25 continue it (base-25 high digits).
_ALPHABET = "".join(chr(b) for b in range(0x21, 0x7F) if chr(b) not in '"&<>\\')
_TERMINAL = 64
_CONTINUATION = len(_ALPHABET) - _TERMINAL
_INDEX = {c: i for i, c in enumerate(_ALPHABET)}


def leb89_encode(value: int) -> str:
    """One non-negative integer: 1 character below 64, 2 below 1664, 3 below 40064, ..."""
    if value < 0:
        raise ValueError(f"LEB89 encodes non-negative integers, not {value}")
    if value < _TERMINAL:
        return _ALPHABET[value]
    value -= _TERMINAL
    terminal = value % _TERMINAL
    value //= _TERMINAL
    digits = []
    while True:
        digits.append(_ALPHABET[_TERMINAL + value % _CONTINUATION])
        value //= _CONTINUATION
        if value == 0:
            break
    return "".join(reversed(digits)) + _ALPHABET[terminal]


def leb89_decode(s: str, pos: int = 0) -> tuple[int, int]:
    """The integer at ``s[pos:]`` and the position after it; ``(-1, position)`` when the
    string ends inside a number or holds a character outside the alphabet."""
    cont = 0
    n_cont = 0
    while pos < len(s):
        idx = _INDEX.get(s[pos], -1)
        pos += 1
        if idx < 0:
            return UNKNOWN, pos
        if idx < _TERMINAL:
            if n_cont == 0:
                return idx, pos
            return _TERMINAL + cont * _TERMINAL + idx, pos
        cont = cont * _CONTINUATION + idx - _TERMINAL
        n_cont += 1
    return UNKNOWN, pos


def encode_vector(sorted_offsets: Iterable[int]) -> str:
    """Ascending offsets: the first as is, then each one's distance from the previous."""
    out = []
    previous = 0
    for i, offset in enumerate(sorted_offsets):
        out.append(leb89_encode(offset if i == 0 else offset - previous))
        previous = offset
    return "".join(out)


def decode_vector(s: str) -> list[int]:
    """The offsets of :func:`encode_vector`'s string."""
    out: list[int] = []
    pos = 0
    while pos < len(s):
        value, pos = leb89_decode(s, pos)
        if value == UNKNOWN:
            out.append(UNKNOWN)  # the decoder rejects it as a corrupted vector
            break
        out.append(value if not out else out[-1] + value)
    return out


def container_hash(namespace: str, pod: str, container: str) -> int:
    """A container's identity in the encoding: xxhash64 of ``namespace\\0pod\\0container``."""
    return xxhash.xxh64_intdigest(f"{namespace}\0{pod}\0{container}".encode())


# -- the payload ---------------------------------------------------------------------------------
@dataclass
class Payload:
    """What the agent writes: the metadata fields and, per NUMA node id, its vector."""

    containers: int = 0
    numa_nodes: int = 1
    busiest_node: int = 0
    vector_encoding: str = VECTOR_ENCODING_LEB89
    vectors: dict[int, str] = field(default_factory=dict)

    def pack_metadata(self) -> str:
        """The metadata attribute's value."""
        fields = (
            f"ve={self.vector_encoding}",
            f"cc={self.containers}",
            f"nn={self.numa_nodes}",
            f"bn={self.busiest_node}",
        )
        return PREFIX + _SEPARATOR + _SEPARATOR.join(fields)

    @classmethod
    def unpack_metadata(cls, metadata: str) -> Payload:
        """The payload the metadata string describes (no vectors); fields it omits are
        :data:`UNKNOWN` (an empty vector encoding)."""
        if not metadata.startswith(PREFIX + _SEPARATOR):
            raise NUMAPlacementError(ERR_MALFORMED_METADATA)
        values: dict[str, int | str] = {"ve": "", "cc": UNKNOWN, "nn": UNKNOWN, "bn": UNKNOWN}
        for raw in metadata[len(PREFIX + _SEPARATOR) :].split(_SEPARATOR):
            key, sep, value = raw.partition("=")
            if not sep:
                raise NUMAPlacementError(ERR_MALFORMED_METADATA_PAIR)
            if not key:
                raise NUMAPlacementError(ERR_MISSING_METADATA_KEY)
            if not value:
                raise NUMAPlacementError(ERR_MISSING_METADATA_VALUE)
            if key == "ve":
                values[key] = value
                continue
            try:
                number = int(value)
            except ValueError:
                raise NUMAPlacementError(f"error while parsing {raw!r}") from None
            if key not in values:
                raise NUMAPlacementError(ERR_UNKNOWN_METADATA)
            values[key] = number
        return cls(
            containers=int(values["cc"]),
            numa_nodes=int(values["nn"]),
            busiest_node=int(values["bn"]),
            vector_encoding=str(values["ve"]),
        )

    def validate(self) -> None:
        """Raise :class:`NUMAPlacementError` unless a LEB89 decoder can use the payload
        (the vectors' contents are checked while decoding)."""
        # The LEB89 encoding leaves the busiest node's vector out.
        if self.vector_encoding != VECTOR_ENCODING_LEB89:
            raise NUMAPlacementError(ERR_UNSUPPORTED_VECTOR_ENCODING)
        if self.busiest_node == UNKNOWN:
            raise NUMAPlacementError(ERR_UNKNOWN_BUSIEST_NODE)
        if not 0 <= self.busiest_node < self.numa_nodes:
            raise NUMAPlacementError(ERR_INCONSISTENT_BUSIEST_NODE)
        if len(self.vectors) >= self.numa_nodes:
            raise NUMAPlacementError(ERR_INCONSISTENT_NUMA_VECTORS)
        if self.busiest_node in self.vectors:
            raise NUMAPlacementError(ERR_CORRUPTED_NUMA_VECTOR)
        if self.containers < 0:
            raise NUMAPlacementError(ERR_INCONSISTENT_CONTAINER_SET)
        if self.numa_nodes <= 0:
            raise NUMAPlacementError(ERR_INCONSISTENT_NUMA_NODES)
        if self.containers == 0 and self.vectors:
            raise NUMAPlacementError(ERR_INCONSISTENT_NUMA_VECTORS)
        if any(not 0 <= nid < self.numa_nodes for nid in self.vectors):
            raise NUMAPlacementError(ERR_CORRUPTED_NUMA_VECTOR)


@dataclass(frozen=True)
class PlacementInfo:
    """The decoded placement: container hash -> NUMA node id."""

    numa_of: Mapping[int, int]

    @property
    def containers(self) -> int:
        """How many containers it places."""
        return len(self.numa_of)

    def numa_affinity(self, namespace: str, pod: str, container: str) -> int | None:
        """The NUMA node the container runs on, or None for a container it does not know."""
        return self.numa_of.get(container_hash(namespace, pod, container))


def encode(numa_nodes: int, placement: Iterable[tuple[tuple[str, str, str], int]]) -> Payload:
    """The agent's side: ``((namespace, pod, container), NUMA node)`` pairs as a payload
    (a container given twice keeps its last NUMA node)."""
    if numa_nodes <= 0:
        raise NUMAPlacementError(ERR_INCONSISTENT_NUMA_NODES)
    numa_of: dict[int, int] = {}
    for ident, nid in placement:
        if not 0 <= nid < numa_nodes:
            raise NUMAPlacementError(ERR_WRONG_NUMA_AFFINITY)
        numa_of[container_hash(*ident)] = nid
    payload = Payload(containers=len(numa_of), numa_nodes=numa_nodes)
    per_numa: dict[int, list[int]] = {}
    for offset, h in enumerate(sorted(numa_of)):
        per_numa.setdefault(numa_of[h], []).append(offset)
    if per_numa:
        # The busiest node (the lowest id among equals) goes without a vector.
        payload.busiest_node = max(sorted(per_numa), key=lambda nid: len(per_numa[nid]))
    payload.vectors = {
        nid: encode_vector(offsets)
        for nid, offsets in sorted(per_numa.items())
        if nid != payload.busiest_node
    }
    return payload


def decode(payload: Payload, containers: Iterable[tuple[str, str, str]]) -> PlacementInfo:
    """The placement of ``containers`` — ``(namespace, pod, container)``, exactly the set the
    agent encoded — or :class:`NUMAPlacementError`."""
    payload.validate()
    hashes = sorted({container_hash(*ident) for ident in containers})
    if len(hashes) != payload.containers:
        raise NUMAPlacementError(ERR_INCONSISTENT_CONTAINER_SET)
    numa_of: dict[int, int] = {}
    for nid, vector in payload.vectors.items():
        for offset in decode_vector(vector):
            if not 0 <= offset < len(hashes):
                raise NUMAPlacementError(ERR_CORRUPTED_NUMA_VECTOR)
            if hashes[offset] in numa_of:
                raise NUMAPlacementError(ERR_DUPLICATED_NUMA_VECTOR)
            numa_of[hashes[offset]] = nid
    for h in hashes:
        numa_of.setdefault(h, payload.busiest_node)
    return PlacementInfo(numa_of)


def payload_from_nrt(nrt: NodeResourceTopology) -> Payload | None:
    """The payload an NRT object carries (None without the metadata attribute).

    A vector may carry the :data:`PREFIX` in front (as the resource-topology-exporter
    writes it) or not; an empty one, and zones not named ``node-<id>``, are ignored.
    """
    metadata = next((a.value for a in nrt.attributes if a.name == ATTRIBUTE_METADATA), None)
    if not metadata:
        return None
    payload = Payload.unpack_metadata(metadata)
    for zone in nrt.zones:
        nid = numa_id(zone.name)
        if nid is None:
            continue
        vector = next((a.value for a in zone.attributes if a.name == ATTRIBUTE_VECTOR), None)
        vector = (vector or "").removeprefix(PREFIX)
        if vector:  # an empty vector places nothing
            payload.vectors[nid] = vector
    return payload
