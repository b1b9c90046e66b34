"""Deterministic names, hashes and uids: upstream's formats, without randomness."""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from kubesched.clock import VIRTUAL_EPOCH

__all__ = [
    "EPOCH",
    "compute_hash",
    "deterministic_uid",
    "fnv32a",
    "random_suffix",
    "safe_encode",
    "timestamp",
]

EPOCH = VIRTUAL_EPOCH
"""Virtual time 0 of the embedded cluster: clock seconds count from here."""

# utilrand's alphabet: no vowels (no accidental words) and no 0/1/3 (confusable).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


@functools.lru_cache(maxsize=256)
def timestamp(seconds: float) -> datetime:
    """The datetime of virtual time ``seconds`` (``EPOCH`` + seconds). Cached: the
    objects written at one moment (thousands in a bench) share one immutable value."""
    return EPOCH + timedelta(seconds=seconds)


def safe_encode(s: str) -> str:
    """``rand.SafeEncodeString``: map each byte onto the no-vowel alphabet."""
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in s.encode())


def fnv32a(data: bytes) -> int:
    """The 32-bit FNV-1a hash (``hash/fnv.New32a``)."""
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: Any, collision_count: int | None = None) -> str:
    """``controller.ComputeHash``: FNV-32a of the template, safe-encoded (up to 10 chars).

    Upstream hashes a spew dump of the Go struct, which cannot be reproduced; we hash
    the template's canonical JSON instead, so values differ from a real cluster's but
    are stable and change exactly when the template does.
    """
    data = template.to_dict() if hasattr(template, "to_dict") else template
    payload = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        payload += str(collision_count).encode()
    return safe_encode(str(fnv32a(payload)))


def random_suffix(seed: str, length: int = 5) -> str:
    """A random-looking but deterministic suffix (``utilrand.String(5)`` of generateName)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:length])


def deterministic_uid(seed: str) -> str:
    """A UUID (version 4 layout) derived from ``seed``: same seed, same uid."""
    return str(uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4))
