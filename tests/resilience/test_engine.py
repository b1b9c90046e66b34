"""The sweep engine: the same answers, in the same order, whatever runs the plays."""

from __future__ import annotations

import json
import os
import uuid

import distributed
import pytest

from kubesched.resilience import engine
from kubesched.resilience.engine import SweepError, run_sweep


def toy_setup(payload: bytes) -> dict:
    """A world that records which process built it, and when (a fresh token per build)."""
    world = json.loads(payload)
    world["pid"] = os.getpid()
    world["built"] = uuid.uuid4().hex
    world["played"] = 0
    return world


def toy_play(world: dict, item: int) -> tuple[int, int, str, int]:
    """The item's answer (depends only on the payload and the item), and who played it."""
    if item in world.get("fail", []):
        raise ValueError(f"cannot play {item}")
    world["played"] += 1
    return item * world["base"], world["pid"], world["built"], world["played"]


PAYLOAD = json.dumps({"base": 7}).encode()
ITEMS = list(range(23))


def answers(results: list[tuple[int, int, str, int]]) -> list[int]:
    return [r[0] for r in results]


def test_empty_sweep_builds_nothing() -> None:
    def never(payload: bytes) -> None:
        raise AssertionError("setup ran for an empty sweep")

    assert run_sweep(PAYLOAD, [], setup=never, play=toy_play) == []


def test_one_worker_plays_in_this_process_with_one_world() -> None:
    results = run_sweep(PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, workers=1)
    assert answers(results) == [7 * i for i in ITEMS]
    assert {r[1] for r in results} == {os.getpid()}
    assert len({r[2] for r in results}) == 1
    assert [r[3] for r in results] == [i + 1 for i in ITEMS]


@pytest.mark.parametrize("workers", [2, 3], ids=["2-processes", "3-processes"])
def test_local_processes_build_one_world_each(workers: int) -> None:
    results = run_sweep(PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, workers=workers)
    assert answers(results) == [7 * i for i in ITEMS]
    pids = {r[1] for r in results}
    assert os.getpid() not in pids
    assert 1 <= len(pids) <= workers
    # One world per process: as many builds as processes, and each process's plays
    # counted 1, 2, 3... on that one world.
    assert len({r[2] for r in results}) == len(pids)
    for pid in pids:
        counts = sorted(r[3] for r in results if r[1] == pid)
        assert counts == list(range(1, len(counts) + 1))


def test_more_workers_than_items_is_fine() -> None:
    results = run_sweep(PAYLOAD, [5], setup=toy_setup, play=toy_play, workers=8)
    assert answers(results) == [35]


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "2-processes"])
def test_a_play_that_raises_names_its_item(workers: int) -> None:
    payload = json.dumps({"base": 1, "fail": [4]}).encode()
    with pytest.raises(SweepError, match=r"item 4 \(4\): ValueError: cannot play 4"):
        run_sweep(payload, ITEMS, setup=toy_setup, play=toy_play, workers=workers)


def test_a_dead_worker_is_a_sweep_error() -> None:
    payload = json.dumps({"base": 1}).encode()
    with pytest.raises(SweepError, match="a worker process died"):
        run_sweep(payload, ITEMS, setup=toy_setup, play=_exit_play, workers=2)


def _exit_play(world: dict, item: int) -> int:
    """A play whose process dies (as one killed for its memory would)."""
    os._exit(3)


def test_dask_cluster_gives_the_local_answers_one_world_per_worker(dask_cluster) -> None:
    local = run_sweep(PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, workers=1)
    results = run_sweep(
        PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, address=dask_cluster.scheduler_address
    )
    assert answers(results) == answers(local)
    pids = {r[1] for r in results}
    assert os.getpid() not in pids
    assert len({r[2] for r in results}) == len(pids) <= 2
    # A second sweep of another payload builds new worlds; the same payload again reuses.
    again = run_sweep(
        PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, address=dask_cluster.scheduler_address
    )
    assert {r[2] for r in again} <= {r[2] for r in results}
    other = json.dumps({"base": 2}).encode()
    third = run_sweep(
        other, ITEMS, setup=toy_setup, play=toy_play, address=dask_cluster.scheduler_address
    )
    assert answers(third) == [2 * i for i in ITEMS]
    assert not {r[2] for r in third} & {r[2] for r in results}


def test_dask_address_without_scheme(dask_cluster) -> None:
    address = dask_cluster.scheduler_address.removeprefix("tcp://")
    results = run_sweep(PAYLOAD, ITEMS[:3], setup=toy_setup, play=toy_play, address=address)
    assert answers(results) == [0, 7, 14]


def test_dask_play_that_raises_names_its_item(dask_cluster) -> None:
    payload = json.dumps({"base": 1, "fail": [2]}).encode()
    with pytest.raises(SweepError, match=r"item 2 \(2\): ValueError: cannot play 2"):
        run_sweep(
            payload, ITEMS, setup=toy_setup, play=toy_play, address=dask_cluster.scheduler_address
        )


def test_unreachable_dask_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT_SECONDS", 1)
    with pytest.raises(
        SweepError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"
    ):
        run_sweep(PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, address="127.0.0.1:9")


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "2-processes"])
def test_progress_counts_every_play(workers: int) -> None:
    seen: list[tuple[int, int]] = []
    run_sweep(
        PAYLOAD,
        ITEMS,
        setup=toy_setup,
        play=toy_play,
        workers=workers,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(n, len(ITEMS)) for n in range(1, len(ITEMS) + 1)]


def test_progress_on_dask(dask_cluster) -> None:
    seen: list[tuple[int, int]] = []
    run_sweep(
        PAYLOAD,
        ITEMS,
        setup=toy_setup,
        play=toy_play,
        address=dask_cluster.scheduler_address,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(n, len(ITEMS)) for n in range(1, len(ITEMS) + 1)]


def test_dask_scheduler_without_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT_SECONDS", 1)
    with (
        distributed.LocalCluster(n_workers=0, dashboard_address=":0") as empty,
        pytest.raises(SweepError, match="has no worker: none joined within 1 s"),
    ):
        run_sweep(PAYLOAD, ITEMS, setup=toy_setup, play=toy_play, address=empty.scheduler_address)
