"""Runs a sweep: one independent play per item, over local processes or a Dask cluster.

A sweep is many plays of the same world: the world is built once per worker from a
``payload`` (the cluster snapshot, as bytes) by ``setup``, then ``play(world, item)``
runs for each item on whichever worker is free. Results come back in the items' order,
so a sweep's answer never depends on how many workers shared it, provided ``play``
answers for an item what it would answer alone (the caller's contract; a play that
changes its world must undo it or work on a copy).

Three ways to run, by the arguments:

* ``workers=1``: in this process, one play after another;
* ``workers=N`` (default: every core): ``N`` local processes forked from this one, each
  building its world once;
* ``address="host:port"``: the workers of the Dask distributed scheduler there. The
  payload is shipped once to every worker (``scatter(..., broadcast=True)``) and each
  worker process builds its world once, kept under the payload's digest; plays run one
  at a time per worker process whatever its thread count, because a play works on the
  one world its process holds. The workers must have kubesched installed (``setup`` and
  ``play`` travel by name).

Dask rather than Ray: a Dask scheduler and its workers are two pip-installable commands
(``dask scheduler``, ``dask worker ADDRESS``) with no daemon, object store or cluster
config, and ``distributed.LocalCluster`` runs the same code on one machine for tests;
docs/architecture.md says more.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from kubesched.errors import KubeschedError

T = TypeVar("T")
W = TypeVar("W")
R = TypeVar("R")

Progress = Callable[[int, int], None]
"""Told ``(plays done, plays in all)`` as a sweep goes."""

CONNECT_TIMEOUT_SECONDS = 30
"""How long to wait for the Dask scheduler at ``--address`` to answer."""


class SweepError(KubeschedError):
    """A sweep could not run: no engine at the address, a worker that died, a play that
    raised (named by its item's position)."""


def default_workers() -> int:
    """The local worker count when none is given: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def run_sweep(
    payload: bytes,
    items: Sequence[T],
    *,
    setup: Callable[[bytes], W],
    play: Callable[[W, T], R],
    workers: int | None = None,
    address: str | None = None,
    progress: Progress | None = None,
) -> list[R]:
    """``play(setup(payload), item)`` for every item, in the items' order.

    ``setup`` runs once per worker process, ``play`` once per item; both are module-level
    functions, and items and results are picklable. ``workers`` is the local process
    count (default: every core; 1 plays in this process); ``address`` is a Dask
    scheduler's (``tcp://host:8786`` or ``host:8786``), and then ``workers`` is ignored:
    the cluster's workers are used. ``progress(done, total)`` is called as plays finish.
    """
    if not items:
        return []
    report = progress or (lambda done, total: None)
    if address:
        return _dask_sweep(payload, items, setup, play, address, report)
    count = min(workers or default_workers(), len(items))
    if count <= 1:
        world = setup(payload)
        results = []
        for index, item in enumerate(items):
            results.append(_play_one(play, world, index, item))
            report(index + 1, len(items))
        return results
    return _local_sweep(payload, items, setup, play, count, report)


def _play_one(play: Callable[[W, T], R], world: W, index: int, item: T) -> R:
    """One play, its exception turned into a :class:`SweepError` naming the item."""
    try:
        return play(world, item)
    except KubeschedError:
        raise
    except Exception as exc:
        raise SweepError(f"item {index} ({item!r}): {type(exc).__name__}: {exc}") from exc


# -- local processes --------------------------------------------------------------------

_local_world: Any = None
"""The world of a local worker process, built by :func:`_local_init` when it starts."""

_local_play: Callable[[Any, Any], Any] | None = None


def _local_init(
    setup: Callable[[bytes], Any], play: Callable[[Any, Any], Any], payload: bytes
) -> None:
    """A local worker's start: build its world once."""
    global _local_world, _local_play
    _local_world = setup(payload)
    _local_play = play


def _local_task(index: int, item: Any) -> Any:
    """One item on a local worker."""
    assert _local_play is not None, "the worker was started without _local_init"
    return _play_one(_local_play, _local_world, index, item)


def _local_sweep(
    payload: bytes,
    items: Sequence[T],
    setup: Callable[[bytes], W],
    play: Callable[[W, T], R],
    count: int,
    report: Progress,
) -> list[R]:
    """The sweep over ``count`` forked processes (fork: the payload and the imported
    modules are inherited, not pickled or imported again)."""
    context = multiprocessing.get_context("fork")
    try:
        with ProcessPoolExecutor(
            max_workers=count,
            mp_context=context,
            initializer=_local_init,
            initargs=(setup, play, payload),
        ) as pool:
            # One item per task: plays differ in cost, so a free worker takes the next.
            futures = [pool.submit(_local_task, i, item) for i, item in enumerate(items)]
            try:
                for done, future in enumerate(as_completed(futures), 1):
                    future.result()
                    report(done, len(items))
            except BaseException:
                # The first failure stops the sweep: the plays not started are dropped.
                for future in futures:
                    future.cancel()
                raise
            return [future.result() for future in futures]
    except BrokenProcessPool as exc:
        raise SweepError(
            f"a worker process died during the sweep ({exc}); "
            "with large clusters this is usually the memory limit: try fewer --workers"
        ) from exc


# -- Dask distributed -------------------------------------------------------------------

_dask_worlds: dict[str, Any] = {}
"""The worlds a Dask worker process holds, by their payload's digest."""

_dask_lock = threading.Lock()
"""Held while a Dask worker process builds or plays its world: one play at a time per
process, whatever its thread count."""


def _dask_task(
    digest: str,
    payload: bytes,
    setup: Callable[[bytes], Any],
    play: Callable[[Any, Any], Any],
    index: int,
    item: Any,
) -> Any:
    """One item on a Dask worker: its world built on the first item, then reused."""
    with _dask_lock:
        world = _dask_worlds.get(digest)
        if world is None:
            # A worker keeps only the newest sweep's world: an older one is garbage.
            _dask_worlds.clear()
            world = _dask_worlds[digest] = setup(payload)
        return _play_one(play, world, index, item)


def _dask_sweep(
    payload: bytes,
    items: Sequence[T],
    setup: Callable[[bytes], W],
    play: Callable[[W, T], R],
    address: str,
    report: Progress,
) -> list[R]:
    """The sweep on the Dask cluster whose scheduler is at ``address``."""
    from distributed import Client
    from distributed import as_completed as dask_as_completed

    if "://" not in address:
        address = f"tcp://{address}"
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_SECONDS)
    except OSError as exc:
        raise SweepError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    with client:
        if not client.scheduler_info().get("workers"):
            try:
                client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_SECONDS)
            except TimeoutError as exc:
                raise SweepError(
                    f"the Dask scheduler at {address} has no worker: none joined within "
                    f"{CONNECT_TIMEOUT_SECONDS} s (start some with `dask worker {address}`)"
                ) from exc
        digest = hashlib.sha256(payload).hexdigest()
        shipped = client.scatter(payload, broadcast=True, hash=False)
        futures = client.map(
            _dask_task,
            [digest] * len(items),
            [shipped] * len(items),
            [setup] * len(items),
            [play] * len(items),
            range(len(items)),
            items,
            pure=False,
        )
        try:
            for done, future in enumerate(dask_as_completed(futures), 1):
                future.result()  # the first failure stops the sweep
                report(done, len(items))
            return client.gather(futures)
        finally:
            client.cancel([*futures, shipped])
