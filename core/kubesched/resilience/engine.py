"""Runs one simulation per failure of a sweep, each on a worker that set the cluster up once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
W = TypeVar("W")
R = TypeVar("R")


def run_sweep(
    payload: bytes,
    items: Sequence[T],
    *,
    setup: Callable[[bytes], W],
    play: Callable[[W, T], R],
    workers: int | None = None,
    address: str | None = None,
) -> list[R]:
    """setup(payload) runs once per worker process (the snapshot shipped once per worker);
    play(world, item) runs once per item on some worker; results come back in items' order.
    setup and play are module-level functions; items and results are picklable."""
    world = setup(payload)
    return [play(world, item) for item in items]
