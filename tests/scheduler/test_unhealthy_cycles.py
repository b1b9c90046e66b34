"""A node whose totals cannot be counted is passed over; failing cycles turn the
scheduler's readiness check unhealthy, and the next good one heals it."""

from __future__ import annotations

from kubesched import hookimpl
from kubesched.framework.node_table import NodeTable
from kubesched.scheduler.algorithm import ERR_REASON_NODE_NOT_ACCOUNTED
from kubesched.scheduler.scheduler import UNHEALTHY_AFTER_ERRORS
from kubesched.testing import make_pod
from kubesched_builtin.noderesources.fit import NodeResourcesFit

from .harness import Harness, nodes


def test_a_fenced_node_is_passed_over(monkeypatch) -> None:
    h = Harness([NodeResourcesFit], nodes(2))
    real = NodeTable._write_requested

    def failing(self, i, ni):
        # n0's row cannot be written once a pod runs there.
        if ni.name == "n0" and ni.pods:
            raise OverflowError("cannot write")
        real(self, i, ni)

    monkeypatch.setattr(NodeTable, "_write_requested", failing)
    h.cluster.create(make_pod("bound").req(cpu="100m").node("n0").obj())
    h.cluster.create(make_pod("p").req(cpu="100m").obj())
    h.run()
    assert h.node_of("p") == "n1"
    # Nowhere else to go: the pod waits, saying why.
    h.cluster.create(make_pod("big").req(cpu="1950m").obj())
    h.run()
    assert h.node_of("big") is None
    assert h.records[-1].message == (
        f"0/2 nodes are available: 1 Insufficient cpu, 1 {ERR_REASON_NODE_NOT_ACCOUNTED}."
    )
    assert h.metric("scheduler_cache_update_errors_total") >= 1


class Boom:
    """A Filter plugin that fails while ``broken``."""

    name = "Boom"
    broken = True

    def __init__(self, args, handle):
        pass

    @hookimpl
    def filter(self, node_info):
        if Boom.broken:
            raise RuntimeError("kaput")


def test_errors_in_a_row_turn_the_check_unhealthy_and_a_good_cycle_heals_it() -> None:
    Boom.broken = True
    pods = [make_pod(f"p{i}").obj() for i in range(UNHEALTHY_AFTER_ERRORS)]
    h = Harness([Boom], [*nodes(1), *pods])
    health = h.scheduler.scheduling_health
    assert health() == (True, "")
    h.run()
    assert [r.result for r in h.records] == ["error"] * UNHEALTHY_AFTER_ERRORS
    ok, detail = health()
    assert not ok
    assert detail == (
        f"the last {UNHEALTHY_AFTER_ERRORS} scheduling attempts ended in an error: "
        'running "Boom" filter plugin: kaput'
    )
    Boom.broken = False
    h.step(10)
    h.run()
    assert h.records[-1].result == "scheduled"
    assert health() == (True, "")


def test_unschedulable_pods_are_no_errors() -> None:
    pods = [make_pod(f"p{i}").req(cpu="64").obj() for i in range(UNHEALTHY_AFTER_ERRORS + 2)]
    h = Harness([NodeResourcesFit], [*nodes(1), *pods])
    h.run()
    assert {r.result for r in h.records} == {"unschedulable"}
    assert h.scheduler.scheduling_health() == (True, "")
