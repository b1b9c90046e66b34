"""Saturating int64 arithmetic, and the node table's rows for amounts beyond int64."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kubesched.cache.cache as cache_module
from kubesched import (
    INT64_MAX,
    INT64_MIN,
    go_div,
    go_div_array,
    mul_div_array,
    sat_add_array,
    sat_sub_array,
    saturate,
)
from kubesched.api import CPU, MEMORY, node_allocatable, pod_requests
from kubesched.api.quantity import parse_quantity
from kubesched.cache import Cache, CacheError, Snapshot
from kubesched.clock import FakeClock
from kubesched.framework.node_table import NodeTable
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.metrics import Metrics
from kubesched.testing import make_node, make_pod

int64s = st.integers(INT64_MIN, INT64_MAX)
# Amounts near the rails and near zero, where the arithmetic can go wrong.
edgy = st.one_of(
    int64s,
    st.sampled_from([0, 1, -1, INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, 2**62]),
)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0, 0),
        (INT64_MAX, INT64_MAX),
        (INT64_MAX + 1, INT64_MAX),
        (10**30, INT64_MAX),
        (INT64_MIN, INT64_MIN),
        (INT64_MIN - 1, INT64_MIN),
    ],
    ids=["zero", "max", "max+1", "1e30", "min", "min-1"],
)
def test_saturate(x: int, expected: int) -> None:
    assert saturate(x) == expected


@settings(deadline=None)
@given(st.lists(st.tuples(edgy, edgy), min_size=1, max_size=8))
def test_saturating_add_and_sub_are_exact_then_held_at_the_rails(pairs) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    assert sat_add_array(a, b).tolist() == [saturate(x + y) for x, y in pairs]
    assert sat_sub_array(a, b).tolist() == [saturate(x - y) for x, y in pairs]


@settings(deadline=None)
@given(
    st.lists(st.tuples(edgy, edgy.filter(lambda b: b > 0)), min_size=1, max_size=8),
    st.sampled_from([1, 10, 100, 1000]),
)
def test_mul_div_is_go_where_int64_holds_and_exact_where_it_would_overflow(pairs, m) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    got = mul_div_array(a, m, b)
    assert got.tolist() == [saturate(go_div(x * m, y)) for x, y in pairs]
    fits = np.array([INT64_MIN <= x * m <= INT64_MAX for x, _ in pairs])
    # Where the product fits int64, exactly Go's ``a * m / b``.
    assert got[fits].tolist() == go_div_array(a[fits] * m, b[fits]).tolist()


def test_a_score_stays_on_0_to_100_for_any_capacity() -> None:
    capacity = np.array([INT64_MAX, INT64_MAX, 8000, 2**62], dtype=np.int64)
    free = np.array([INT64_MAX - 1000, 0, 4000, 2**62 - 1], dtype=np.int64)
    assert mul_div_array(free, 100, capacity).tolist() == [99, 0, 50, 99]


@pytest.mark.parametrize(
    ("quantity", "milli_cpu"),
    [
        ("1", 1000),
        ("9223372036854775m", 9223372036854775),
        ("9223372036854775807m", INT64_MAX),
        ("9223372036854775808m", INT64_MAX),
        ("10P", INT64_MAX),
        ("9223372036854775807", INT64_MAX),
        ("1e30", INT64_MAX),
        # kube-apiserver stores these as given ("10e99999"): read at once, never raising.
        ("1e100000", INT64_MAX),
        ("1e2147483647", INT64_MAX),
        ("9" * 5000, INT64_MAX),
        ("12345678901234567890123Ei", INT64_MAX),
        ("1e-100000", 1),
        ("0." + "0" * 5000 + "1", 1),
    ],
    ids=[
        "1",
        "max-milli-value",
        "int64-max-m",
        "int64-max+1-m",
        "10P",
        "int64-max",
        "1e30",
        "1e100000",
        "int32-max-exponent",
        "5000-digits",
        "huge-binary",
        "1e-100000",
        "5000-decimals",
    ],
)
def test_quantities_beyond_int64_count_as_its_maximum(quantity: str, milli_cpu: int) -> None:
    assert pod_requests(make_pod().req(cpu=quantity).obj())[CPU] == milli_cpu
    assert node_allocatable(make_node().capacity(cpu=quantity).obj())[CPU] == milli_cpu


@pytest.mark.parametrize("text", ["1e2147483648", "1e-2147483649", "1e18446744073709551615"])
def test_an_exponent_beyond_int32_is_refused_as_upstream_refuses_it(text: str) -> None:
    with pytest.raises(ValueError, match=r"^unable to parse quantity's suffix$"):
        parse_quantity(text)


def _node_info(cpu: str, *pod_cpus: str) -> NodeInfo:
    ni = NodeInfo(make_node("n0").capacity(cpu=cpu, memory="8Ei").obj())
    for i, c in enumerate(pod_cpus):
        ni.add_pod(PodInfo(make_pod(f"p{i}").req(cpu=c, memory="4Ei").node("n0").obj()))
    return ni


def test_totals_past_int64_saturate_and_mark_the_row() -> None:
    ni = _node_info("8", "10P", "10P")
    assert ni.requested.milli_cpu == 2 * INT64_MAX  # the NodeInfo keeps the exact sum
    table = NodeTable([ni, _node_info("8", "1")])
    assert table.requested[CPU].tolist() == [INT64_MAX, 1000]
    # Two pods of 4Ei: 2**63, one past the int64 maximum.
    assert table.requested[MEMORY].tolist() == [INT64_MAX, 4 * 2**60]
    assert table.non_zero_cpu.tolist() == [INT64_MAX, 1000]
    assert table.saturated.tolist() == [True, False]
    # Back within int64 (a pod gone): exact again.
    table.update_row(0, _node_info("8", "1"))
    assert table.requested[CPU].tolist() == [1000, 1000]
    assert table.saturated.tolist() == [False, False]


def test_a_row_that_cannot_be_written_is_fenced_until_an_update_writes_it(monkeypatch) -> None:
    table = NodeTable([_node_info("8", "1"), _node_info("8")])
    real = NodeTable._write_requested

    def failing(self, i, ni):
        if len(ni.pods) == 3:
            raise ValueError("cannot write")
        real(self, i, ni)

    monkeypatch.setattr(NodeTable, "_write_requested", failing)
    assert table.update_row(0, _node_info("8", "1", "1", "1")) is False
    assert table.fenced.tolist() == [True, False]
    assert table.fence_errors == {"n0": "ValueError: cannot write"}
    assert table.update_row(0, _node_info("8", "1", "1")) is True
    assert table.fenced.tolist() == [False, False]
    assert table.fence_errors == {}
    assert table.requested[CPU].tolist() == [2000, 0]


def test_the_cache_reports_a_fenced_node_once_per_failed_write(monkeypatch, caplog) -> None:
    metrics = Metrics()
    cache = Cache(FakeClock(), metrics=metrics)
    cache.add_node(make_node("n0").capacity(cpu="8").obj())
    cache.add_node(make_node("n1").capacity(cpu="8").obj())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    monkeypatch.setattr(
        NodeTable, "_write_requested", lambda self, i, ni: (_ for _ in ()).throw(OverflowError("x"))
    )
    cache.add_pod(PodInfo(make_pod("p").req(cpu="1").node("n0").obj()))
    with caplog.at_level(logging.ERROR, logger="kubesched.cache.cache"):
        cache.update_snapshot(snapshot)
    table = snapshot.table
    assert table.fenced[table.index["n0"]] and not table.fenced[table.index["n1"]]
    assert "'n0': its totals could not be written" in caplog.text
    value = metrics.registry.get_sample_value("scheduler_cache_update_errors_total")
    assert value == 1


def test_a_snapshot_update_that_raises_half_way_is_rebuilt(monkeypatch) -> None:
    metrics = Metrics()
    cache = Cache(FakeClock(), metrics=metrics)
    for name in ("n0", "n1"):
        cache.add_node(make_node(name).capacity(cpu="8").obj())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    real = cache_module._patch_row_list
    calls = []

    def once(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("half-way")
        return real(*args)

    monkeypatch.setattr(cache_module, "_patch_row_list", once)
    cache.add_pod(PodInfo(make_pod("a").req(cpu="1").node("n0").obj()))
    cache.add_pod(PodInfo(make_pod("b").req(cpu="2").node("n1").obj()))
    with pytest.raises(CacheError, match="updating the snapshot failed"):
        cache.update_snapshot(snapshot)
    table = snapshot.table
    # Both rows current although the patch stopped at the first one.
    assert {name: int(table.requested[CPU][i]) for name, i in table.index.items()} == {
        "n0": 1000,
        "n1": 2000,
    }
    assert metrics.registry.get_sample_value("scheduler_cache_update_errors_total") == 1
    cache.add_pod(PodInfo(make_pod("c").req(cpu="1").node("n1").obj()))
    cache.update_snapshot(snapshot)
    assert int(snapshot.table.requested[CPU][snapshot.table.index["n1"]]) == 3000
